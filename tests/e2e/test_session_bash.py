"""bash sessions through `codecell shell --lang bash --json`: one result
object per statement.  The working directory, variables, functions and
aliases persist; a failing command, a timeout and Ctrl-C each give a clear
error and leave a working session, and `exit` ends the shell as in bash
(through the API the session lives on with a fresh bash); multi-line statements are
collected whole; cells see the session's environment and no fd of the
kernel's."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, HANG_S, JsonShell, await_descendants, await_empty, check, codecell,  # noqa: E402
                    descendants_running, eq, main, snapshot, still_running, test)


class BashShell(JsonShell):
    """A live `codecell shell --lang bash --json`."""

    def __init__(self, *args):
        super().__init__(*args, lang="bash")

    def out(self, stmt):
        """stdout of a statement that must succeed."""
        r = self.run(stmt)
        eq(r["status"], "ok", "status of %r: %r" % (stmt, r))
        return r["logs"]["stdout"]


def bash_kernel_pids(sh):
    """This shell's bash kernel: found below the shell's own pid, never by
    name or uid across the host, where another codecell's sessions may
    run."""
    return descendants_running(sh.p.pid, "bash --noprofile --norc --noediting")


@test
def cwd_persists_after_cd():
    sh = BashShell()
    eq(sh.out("pwd"), "/home/user\n")
    eq(sh.run("mkdir -p work/deep && cd work/deep")["status"], "ok")
    eq(sh.out("pwd"), "/home/user/work/deep\n")
    eq(sh.out("touch here.txt; cd ..; ls deep; echo \"$OLDPWD\""),
       "here.txt\n/home/user/work/deep\n")
    eq(sh.out("pwd"), "/home/user/work\n")
    eq(sh.close(), 0)


@test
def variables_functions_and_aliases_persist():
    sh = BashShell()
    sh.run("export GREETING=hello")
    sh.run("plain=local-only")
    sh.run("shout() { echo \"${1^^}!\"; }")
    sh.run("alias say='echo said:'")
    sh.run("set -- first second")
    eq(sh.out("echo \"$GREETING $plain\""), "hello local-only\n")
    eq(sh.out("shout $GREETING"), "HELLO!\n")
    eq(sh.out("say it"), "said: it\n")
    eq(sh.out("echo \"$# $2\""), "2 second\n")
    # exported variables reach child processes, plain ones do not
    eq(sh.out("bash -c 'echo \"${GREETING-unset} ${plain-unset}\"'"), "hello unset\n")
    sh.close()


@test
def output_lands_in_logs_and_is_complete_before_the_result():
    sh = BashShell()
    r = sh.run("echo to-out; echo to-err >&2; printf 'no newline'")
    eq((r["logs"]["stdout"], r["logs"]["stderr"]), ("to-out\nno newline", "to-err\n"))
    eq(r["results"], [])
    # a pipeline of child processes: every byte is in before "done"
    r = sh.run("seq 1 200000 | cat | tail -c 1000000; seq 1 3 | sed 's/^/e/' >&2")
    eq(r["logs"]["stdout"], "".join("%d\n" % i for i in range(1, 200001))[-1000000:])
    eq(r["logs"]["stderr"], "e1\ne2\ne3\n")
    # the next result has only its own output
    r = sh.run("echo next")
    eq((r["logs"]["stdout"], r["logs"]["stderr"]), ("next\n", ""))
    sh.close()


@test
def failing_command_gives_its_exit_status_and_the_session_lives_on():
    sh = BashShell()
    sh.run("keep=yes; cd /tmp")
    r = sh.run("false")
    eq((r["status"], r["error"]), ("error", {"name": "ExitStatus", "value": "exit status 1",
                                             "traceback": ""}))
    r = sh.run("ls /no/such/dir")
    eq((r["status"], r["error"]["name"], r["error"]["value"]),
       ("error", "ExitStatus", "exit status 2"))
    check("No such file or directory" in r["logs"]["stderr"], r)
    r = sh.run("no_such_command_here")
    eq(r["error"]["value"], "exit status 127")
    check("no_such_command_here: command not found" in r["logs"]["stderr"], r)
    r = sh.run("sh -c 'kill -9 $$'")
    eq(r["error"]["value"], "exit status 137 (SIGKILL)")
    # only the last command's status counts, as in a script
    eq(sh.run("false; true")["status"], "ok")
    # `return N` ends a cell early with N
    r = sh.run("echo before; return 4; echo not-reached")
    eq((r["status"], r["error"]["value"], r["logs"]["stdout"]),
       ("error", "exit status 4", "before\n"))
    eq(sh.out("echo \"$keep $PWD\""), "yes /tmp\n")
    eq(sh.close(), 0)


@test
def syntax_error_and_unset_variable_end_the_cell_not_the_shell():
    sh = BashShell()
    sh.run("v=kept")
    r = sh.run("echo )")
    eq(r["status"], "error")
    check("syntax error" in r["logs"]["stderr"], r)
    r = sh.run("set -u; echo \"$no_such_var\"; echo not-reached")
    eq((r["status"], r["logs"]["stdout"]), ("error", ""))
    check("no_such_var: unbound variable" in r["logs"]["stderr"], r)
    eq(sh.out("set +u; echo $v"), "kept\n")
    sh.close()


@test
def timeout_interrupts_the_cell_and_keeps_the_shell():
    sh = BashShell("--timeout", "1")
    sh.run("total=41; cd /tmp")
    r = sh.run("sleep 600; echo not-reached")
    eq(r["status"], "timeout", r)
    eq(r["error"]["name"], "KeyboardInterrupt")
    check("exit status 130" in r["error"]["value"] and "kept" in r["error"]["value"], r)
    eq(r["restarted"], False)
    check("wall_time" in r["limits_hit"], r)
    # a sleep not interrupted would last 600 s
    check(sh.elapsed < HANG_S, "interrupted in time: %.1f s" % sh.elapsed)
    eq(r["logs"]["stdout"], "")
    eq(sh.out("echo $((total + 1)) $PWD"), "42 /tmp\n")
    # a loop of builtins only (no child to kill) stops too
    r = sh.run("i=0; while :; do i=$((i + 1)); done; echo not-reached")
    eq((r["status"], r["error"]["name"], r["logs"]["stdout"]),
       ("timeout", "KeyboardInterrupt", ""))
    check(int(sh.out("echo $i").strip()) > 0, "the loop ran")
    # and a compound statement over several lines
    r = sh.run("if true; then\n  sleep 100\n  echo not-reached\nfi")
    eq((r["status"], r["logs"]["stdout"]), ("timeout", ""))
    eq(sh.close(), 124, "the shell's status is the last statement's")


@test
def interrupt_spares_background_jobs():
    sh = BashShell("--timeout", "1")
    eq(sh.run("sleep 600 & echo $! > /tmp/bg.pid")["status"], "ok")
    eq(sh.run("sleep 100")["status"], "timeout")
    eq(sh.out("kill -0 $(cat /tmp/bg.pid) && echo alive"), "alive\n")
    sh.close()


@test
def ctrl_c_interrupts_the_cell_and_keeps_the_shell():
    sh = BashShell()
    sh.run("v=9")
    sh.send("sleep 600; echo not-reached")
    # Ctrl-C once the cell runs, not after a pause a loaded machine may outlast
    check(await_descendants(sh.p.pid, "sleep 600", HANG_S), "the cell did not start")
    sh.p.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    r = sh.result()
    check(time.monotonic() - t0 < HANG_S, "the cell stopped")
    eq((r["status"], r["error"]["name"], r["restarted"], r["logs"]["stdout"]),
       ("error", "KeyboardInterrupt", False, ""))
    eq(sh.out("echo $v"), "9\n")
    eq(sh.close(), 0)


@test
def multi_line_statements_are_collected_whole():
    sh = BashShell()
    r = sh.run("for x in a b c\ndo\n  echo \"item $x\"\ndone")
    eq(r["logs"]["stdout"], "item a\nitem b\nitem c\n")
    r = sh.run("name=world\ncat <<EOF\nhello $name\n  indented\nfi\nEOF")
    eq(r["logs"]["stdout"], "", "the assignment is a statement of its own")
    r = sh.result()
    eq(r["logs"]["stdout"], "hello world\n  indented\nfi\n")
    r = sh.run("if [ -n \"$name\" ]; then\n  echo yes\nelse\n  echo no\nfi")
    eq(r["logs"]["stdout"], "yes\n")
    r = sh.run("echo one \\\n  two \\\n  three")
    eq(r["logs"]["stdout"], "one two three\n")
    r = sh.run("greet() {\n  echo \"hi $1\"\n}")
    eq(r["status"], "ok")
    r = sh.run("echo 'a\nb' |\n  tr a-z A-Z")
    eq(r["logs"]["stdout"], "A\nB\n")
    # a comment that ends in a backslash continues nothing
    r = sh.run("echo done # no continuation \\")
    eq(r["logs"]["stdout"], "done\n")
    eq(sh.out("greet you"), "hi you\n")
    sh.close()


class Api:
    """A `codecell serve` on a free loopback port, for what the shell
    does not show: a session that lives on after bash exits."""

    def __init__(self):
        self.p = subprocess.Popen([CODECELL, "serve", "--listen", "127.0.0.1:0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        check(line.startswith("codecell serve: listening on http://"), line)
        self.port = int(line.split()[4].rstrip("/").rsplit(":", 1)[1])

    def post(self, path, body):
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        j = json.loads(r.read())
        c.close()
        return j

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        return self.p.wait(timeout=30)


@test
def exit_ends_the_shell_with_its_status():
    sh = BashShell()
    sh.run("echo kept > file.txt")
    r = sh.run("echo bye; exit 3; echo not-reached")
    eq((r["status"], r["error"]["name"], r["logs"]["stdout"]), ("error", "BashExited", "bye\n"))
    check("status 3" in r["error"]["value"], r["error"])
    sh.send("echo not-run")
    eq(sh.close(), 3)
    eq(sh.p.stdout.read(), "")
    # set -e: a failing command ends bash, and the shell, too
    sh = BashShell()
    r = sh.run("set -e; false; echo not-reached")
    eq((r["error"]["name"], r["logs"]["stdout"]), ("BashExited", ""))
    check("set -e" in r["error"]["value"], r["error"])
    eq(sh.close(), 1)


@test
def exit_in_an_api_session_starts_a_fresh_bash_and_says_so():
    api = Api()
    try:
        sid = api.post("/v1/sessions", {"language": "bash"})["id"]
        run = lambda code: api.post("/v1/sessions/%s/execute" % sid, {"code": code})  # noqa: E731
        run("cd /tmp; v=1; echo kept > /home/user/file.txt")
        r = run("echo bye; exit 3; echo not-reached")
        eq((r["status"], r["error"]["name"], r["restarted"], r["logs"]["stdout"]),
           ("error", "BashExited", False, "bye\n"))
        value = r["error"]["value"]
        check("status 3" in value and "new bash" in value and "/home/user" in value, value)
        n = r["execution_count"]
        r = run("echo \"${v-unset} $PWD $(cat file.txt)\"")
        eq(r["logs"]["stdout"], "unset /home/user kept\n")
        eq(r["execution_count"], n + 1)
        r = run("set -e; false; echo not-reached")
        eq((r["error"]["name"], r["logs"]["stdout"]), ("BashExited", ""))
        eq(run("echo alive")["logs"]["stdout"], "alive\n")
    finally:
        eq(api.stop(), 0)


@test
def a_bash_killed_between_cells_is_replaced_and_the_cell_not_run():
    sh = BashShell()
    sh.run("cd /tmp")
    kernel = snapshot(bash_kernel_pids(sh))
    check(kernel, "bash running")
    eq(sh.run("(sleep 0.3; kill -9 $$) &")["status"], "ok")
    # the next cell once bash is dead, however long a loaded machine takes
    # (the snapshot may hold more than the one bash the cell kills)
    eq(await_empty(lambda: [] if len(still_running(kernel)) < len(kernel) else
                   still_running(kernel), HANG_S), [], "bash killed")
    r = sh.run("echo ran > /home/user/ran.txt")
    eq((r["status"], r["error"]["name"]), ("error", "BashExited"))
    check("SIGKILL" in r["error"]["value"] and "not run" in r["error"]["value"], r["error"])
    eq(sh.out("ls /home/user/ran.txt 2>/dev/null || echo absent; pwd"), "absent\n/home/user\n")
    sh.close()


@test
def execution_count_grows_by_one_per_statement():
    sh = BashShell("--timeout", "1")
    counts = [sh.run(s)["execution_count"]
              for s in ("true", "false", "sleep 5", "echo x", "(exit 1)", "echo y")]
    eq(counts, [1, 2, 3, 4, 5, 6])
    sh.close()


@test
def cells_have_no_stdin_and_none_of_the_kernels_fds():
    sh = BashShell()
    r = sh.run("read -r line; echo \"rc=$? line=[$line]\"; cat; echo cat-done")
    eq(r["logs"]["stdout"], "rc=1 line=[]\ncat-done\n")
    eq(sh.out("ls /proc/self/fd | sort -n | tr '\\n' ' '"), "0 1 2 3 ")
    eq(sh.out("sleep 30 & sleep 0.3; ls /proc/$!/fd | sort -n | tr '\\n' ' '; kill $!"),
       "0 1 2 ")
    sh.close()


@test
def cells_see_the_sessions_environment_and_nothing_of_the_driver():
    one_shot = codecell("run", "--lang", "bash", "--env", "FOO=bar", "-", stdin="env | sort\n")
    eq(one_shot.status, 0, one_shot.stderr)
    sh = BashShell("--env", "FOO=bar")
    eq(sh.out("env | sort"), one_shot.stdout)
    eq(sh.out("echo \"${PS1-unset}\""), "unset\n")
    sh.close()


@test
def stderr_redirections_last_a_cell_and_stdout_ones_persist():
    sh = BashShell()
    r = sh.run("exec 2>/dev/null; echo hidden >&2; echo shown")
    eq((r["logs"]["stdout"], r["logs"]["stderr"]), ("shown\n", ""))
    eq(sh.run("echo back >&2")["logs"]["stderr"], "back\n")
    eq(sh.run("exec 3>&1 >/tmp/log.txt; echo to-log")["logs"]["stdout"], "")
    eq(sh.out("exec >&3 3>&-; cat /tmp/log.txt"), "to-log\n")
    sh.close()


@test
def a_fork_bomb_is_cleaned_up_and_bash_keeps_its_state():
    """After a cell hits the pids limit the init kills every process but
    the kernel; bash (a process group leader started by the driver) is
    spared, so its variables and cwd survive and no fresh bash is needed,
    while the bomb's copies (in bash's group) are gone."""
    sh = BashShell("--pids", "32", "--timeout", "4")
    sh.run("kept=9; mkdir -p d && cd d")
    before = snapshot(bash_kernel_pids(sh))
    check(before, "bash running")
    r = sh.run("b() { b | b & }; b; sleep 2")
    check("pids" in r["limits_hit"], "the bomb hit the pids limit: %r" % r)
    r = sh.run("echo \"$kept $PWD\"")
    eq((r["status"], r["logs"]["stdout"]), ("ok", "9 /home/user/d\n"), r)
    eq(still_running(before), sorted(before), "the same bash")
    # nothing of the bomb is left: the shell forks freely again
    eq(sh.out("for i in $(seq 20); do sleep 0.5 & done; wait; echo forked"), "forked\n")
    eq(sh.close(), 0)


@test
def closing_leaves_no_bash_behind():
    sh = BashShell()
    sh.run("sleep 300 &")
    kernel = snapshot(bash_kernel_pids(sh))
    check(kernel, "bash running during the session")
    sleeper = snapshot(await_descendants(sh.p.pid, "sleep 300", HANG_S))
    check(sleeper, "the background sleep running during the session")
    eq(sh.close(), 0)
    # gone soon after; how soon is the machine's load (a hang bound only)
    eq(await_empty(lambda: still_running(kernel), HANG_S), [], "bash gone")
    eq(await_empty(lambda: still_running(sleeper), HANG_S), [], "the background sleep gone")


if __name__ == "__main__":
    main()

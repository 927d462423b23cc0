#!/usr/bin/python3
"""Run the escape corpus (tests/escape/<class>/*.{py,sh,js}) against a
sandbox and judge every attack by oracles outside it (oracles.py).

  run.py --security            codecell (run, session, fork, files) and the
                               control; exit 1 on any escape, hang or an
                               oracle the control could not fire
  run.py --runner R [--modes M,...]   one runner: codecell, control, plain,
                               bwrap, firejail, runsc
  run.py --compare             plain, bwrap, firejail, runsc and codecell
                               side by side, with start-up latency

Verdicts: blocked (no oracle fired), escaped (one did), hung (the runner
had to kill it), n/a (the attack does not apply to this runner or mode).
The control runs each attack with no isolation: every attack must escape
there (or say why it cannot, `control: n/a`), which shows its oracles can
fire.
"""
import argparse
import atexit
import concurrent.futures
import http.client
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import oracles  # noqa: E402

BUILD = os.environ.get("CODECELL_BUILD", "build")
CODECELL = os.path.join(ROOT, BUILD, "codecell")
LANGS = {".py": "python", ".sh": "bash", ".js": "javascript"}
INTERP = {"python": ["/usr/bin/python3", "-"], "bash": ["/bin/bash", "-s"],
          "javascript": ["/usr/bin/node", "-"]}
OUTPUT_CAP = 4 << 20
RESOURCE_CLASSES = ("resources",)

# The exact command lines of the runners compared (README table).
RUNNER_LINES = {
    "plain": [],
    "bwrap": ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
              "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"],
    "firejail": ["firejail", "--quiet", "--noprofile", "--net=none", "--private"],
    "runsc": ["runsc", "--network=none", "do"],
}


# ---- the corpus --------------------------------------------------------

class Attack:
    def __init__(self, path):
        self.path = path
        self.klass = os.path.basename(os.path.dirname(path))
        self.name = self.klass + "/" + os.path.basename(path)
        self.lang = LANGS[os.path.splitext(path)[1]]
        with open(path) as f:
            self.source = f.read()
        self.meta = {}
        for line in self.source.splitlines()[:20]:
            m = re.match(r"^(?:#|//)\s*([a-z-]+):\s*(.*)$", line)
            if m:
                self.meta.setdefault(m.group(1), []).append(m.group(2).strip())
        for inc in self.meta.get("include", []):
            # a part several attacks share (a name starting with '_',
            # which load_corpus skips), appended to the attack's code
            with open(os.path.join(os.path.dirname(path), inc)) as f:
                self.source += "\n" + f.read()
        for key in ("class", "tries", "oracle"):
            if key not in self.meta:
                raise SystemExit("%s: the header has no '%s:' line" % (path, key))
        if self.meta["class"][0] != self.klass:
            raise SystemExit("%s: class %r is not its directory" % (path, self.meta["class"][0]))
        self.timeout = float(self.meta.get("timeout", ["10"])[0])
        self.modes = self.meta.get("modes", ["run session fork"])[0].split()
        self.steps = self.meta.get("step", [])
        control = self.meta.get("control", [""])[0]
        self.control_na = control[4:].strip() if control.startswith("n/a") else None
        self.resource = self.klass in RESOURCE_CLASSES

    def get(self, key, default=""):
        return self.meta.get(key, [default])[0]


def load_corpus(only=None):
    attacks = []
    for klass in sorted(os.listdir(HERE)):
        d = os.path.join(HERE, klass)
        if not os.path.isdir(d) or klass.startswith(("_", ".")):
            continue
        for name in sorted(os.listdir(d)):
            if os.path.splitext(name)[1] in LANGS and not name.startswith("_"):
                a = Attack(os.path.join(d, name))
                if not only or only in a.name:
                    attacks.append(a)
    return attacks


# ---- running a process under a cap -------------------------------------

def run_capped(cmd, stdin_text, timeout, env=None, cwd=None, pass_fds=()):
    """(output text, hung): stdout+stderr, capped; the whole process group
    killed when it runs past timeout."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True,
                         pass_fds=pass_fds)
    out = bytearray()
    hung = False

    def feed():
        try:
            p.stdin.write(stdin_text.encode())
            p.stdin.close()
        except OSError:
            pass

    def drain():
        while True:
            b = p.stdout.read1(65536)
            if not b:
                break
            if len(out) < OUTPUT_CAP:
                out.extend(b[:OUTPUT_CAP - len(out)])

    threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
    threads[1].join(5)
    return out.decode("utf-8", "replace"), hung


def launcher_env(world_secret):
    """The environment a launcher (codecell, bwrap, ...) gets from its
    caller: it holds a secret, which a sandbox that passes the
    environment through leaks."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM")}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    env["ESCAPE_CANARY_ENV"] = world_secret + "-launcher"
    return env


def result_text(j):
    """Everything a result object carries back from the sandbox."""
    if not isinstance(j, dict):
        return str(j)
    parts = [j.get("logs", {}).get("stdout", ""), j.get("logs", {}).get("stderr", "")]
    err = j.get("error") or {}
    parts += [str(err.get("value", "")), str(err.get("traceback", ""))]
    for r in j.get("results") or []:
        parts.append(json.dumps(r))
    parts.append("STATUS=%s" % j.get("status"))
    return "\n".join(parts)


# ---- runners -----------------------------------------------------------

class Verdict:
    def __init__(self, attack, runner, mode, kind, fired=(), note="", output=""):
        self.attack, self.runner, self.mode, self.kind = attack, runner, mode, kind
        self.fired, self.note, self.output = list(fired), note, output


class Base:
    """A runner: execute(attack, world) -> (output, hung) or raises NA."""
    name = "?"
    modes = ("run",)

    def start(self):
        pass

    def stop(self):
        pass

    def applies(self, attack, mode):
        if mode == "files":
            return None if "files" in attack.modes else "not a file-API attack"
        if "files" in attack.modes:
            return "a file-API attack (its own mode)"
        if mode not in attack.modes:
            return "not an attack on %s" % mode
        return None


class NA(Exception):
    pass


class Bare(Base):
    """No isolation, or one of the compared sandboxes, on the attack's
    code fed to the interpreter's stdin."""

    def __init__(self, name):
        self.name = name
        self.prefix = RUNNER_LINES["plain" if name == "control" else name]

    def available(self):
        return not self.prefix or subprocess.run(["which", self.prefix[0]],
                                                 capture_output=True).returncode == 0

    def applies(self, attack, mode):
        why = Base.applies(self, attack, mode)
        if why:
            return why
        if self.name in ("control", "plain") and attack.control_na is not None:
            return attack.control_na or "not applicable without isolation"
        if attack.get("host-risk"):
            return "not run outside codecell: " + attack.get("host-risk")
        return None

    def execute(self, attack, world, net, mode):
        code = world.substitute(attack.source)
        cmd = net.wrap(self.prefix + INTERP[attack.lang])
        env = launcher_env(world.secret)
        env["HOME"] = world.ws
        return run_capped(cmd, code, attack.timeout + (2 if self.name == "control" else 10),
                          env=env, cwd=world.ws,
                          pass_fds=world.leaked)

    def files(self, attack, world, net):
        """The file API with no isolation: a naive server that follows
        whatever the code planted, so the oracles can fire."""
        code = world.substitute(attack.source)
        out, hung = run_capped(net.wrap(INTERP["python"]), code, attack.timeout + 2,
                               env=launcher_env(world.secret), cwd=world.ws)
        if hung:
            return out, hung
        for step in expand(attack.steps):
            out += "\n" + naive_step(world.ws, step, world)
        return out, False


def expand(steps):
    """'get r x40' is 'get r' forty times."""
    out = []
    for s in steps:
        m = re.match(r"^(.*) x(\d+)$", s)
        out += [m.group(1)] * int(m.group(2)) if m else [s]
    return out


def naive_step(ws, step, world):
    verb, _, arg = step.partition(" ")
    p = os.path.join(ws, world.substitute(arg))
    try:
        if verb == "get":
            with open(p, "rb") as f:
                return f.read(1 << 20).decode("utf-8", "replace")
        if verb == "put":
            with open(p, "wb") as f:
                f.write(b"upload " + secrets.token_hex(8).encode())
            return "put ok"
        if verb == "list":
            return json.dumps(sorted(os.listdir(p)))
        if verb == "delete":
            os.unlink(p)
            return "deleted"
        if verb == "wait":
            time.sleep(float(arg))
            return ""
    except OSError as e:
        return "error %s" % e
    return "bad step %r" % step


def allowlist_args(attack):
    """`# net: allowlist`: the allowlist network, whose proxy may reach only
    example.invalid (a name that never resolves): every host listener
    stays out of reach."""
    if attack.get("net") != "allowlist":
        return []
    path = os.path.join(tempfile.gettempdir(), "codecell-escape-egress-%d.ini" % os.getpid())
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("[default]\negress = example.invalid\n")
        atexit.register(os.unlink, path)
    return ["--net", "allowlist", "--policy", path]


class Codecell(Base):
    """codecell: one-shot runs (`codecell run`), and sessions, forked
    sessions and the file API through a `codecell serve` started here."""
    name = "codecell"

    def __init__(self, modes):
        self.modes = modes
        self.srv = None

    def start(self):
        if set(self.modes) & {"session", "fork", "files"}:
            self.serve_secret = "ESC" + secrets.token_hex(16)
            self.net = oracles.NetCgroup("serve-%d" % os.getpid())
            env = launcher_env(self.serve_secret)
            self.srv_err = tempfile.TemporaryFile()
            self.srv = subprocess.Popen(
                self.net.wrap([CODECELL, "serve", "--listen", "127.0.0.1:0", "--pool", "2",
                               "--max-sessions", "32"]),
                stdout=subprocess.PIPE, stderr=self.srv_err, env=env, text=True)
            line = self.srv.stdout.readline()
            if not line.startswith("codecell serve: listening on http://"):
                raise SystemExit("codecell serve did not start: %r" % line)
            self.port = int(line.split()[4].rstrip("/").rsplit(":", 1)[1])
            self.wait_pool()

    def wait_pool(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                st, j = self.req("GET", "/healthz")
                if st == 200 and j.get("pool_ready", 0) >= 1:
                    return
            except OSError:
                pass
            time.sleep(0.2)

    def stop(self):
        if self.srv:
            self.srv.terminate()
            try:
                self.srv.wait(30)
            except subprocess.TimeoutExpired:
                self.srv.kill()
                self.srv.wait()
            self.net.close()

    def req(self, method, path, body=None, timeout=60, raw=False):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {}
            if isinstance(body, dict):
                body = json.dumps(body)
                headers["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read(OUTPUT_CAP)
        finally:
            c.close()
        if raw:
            return r.status, data
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, {"raw": data.decode("utf-8", "replace")}

    def applies(self, attack, mode):
        why = Base.applies(self, attack, mode)
        if why:
            return why
        if mode == "fork" and attack.lang != "python":
            return "fork is for Python sessions"
        return None

    def execute(self, attack, world, net, mode):
        code = world.substitute(attack.source)
        if mode == "run":
            cmd = net.wrap([CODECELL, "run", "--json", "--lang", attack.lang,
                            "--timeout", "%g" % attack.timeout] + allowlist_args(attack) + ["-"])
            out, hung = run_capped(cmd, code, attack.timeout + 30, env=launcher_env(world.secret),
                                   cwd="/", pass_fds=world.leaked)
            try:
                return result_text(json.loads(out)) + "\n" + out, hung
            except ValueError:
                return out, hung
        return self.in_session(attack, world, code, mode)

    def new_session(self, lang):
        st, j = self.req("POST", "/v1/sessions", {"language": lang})
        if st != 201:
            raise RuntimeError("session: %s %s" % (st, j))
        return j["id"]

    def in_session(self, attack, world, code, mode):
        ids = []
        try:
            sid = self.new_session(attack.lang)
            ids.append(sid)
            if mode == "fork":
                self.req("POST", "/v1/sessions/%s/execute" % sid, {"code": "warm = 1"})
                st, j = self.req("POST", "/v1/sessions/%s/fork" % sid)
                if st != 201:
                    raise RuntimeError("fork: %s %s" % (st, j))
                sid = j["id"]
                ids.append(sid)
            try:
                st, j = self.req("POST", "/v1/sessions/%s/execute" % sid,
                                 {"code": code, "timeout": attack.timeout},
                                 timeout=attack.timeout + 30)
            except (TimeoutError, OSError) as e:
                return "execute: %s" % e, True
            if st != 200 or "status" not in j:
                raise RuntimeError("execute: %s %s" % (st, str(j)[:300]))
            out = result_text(j)
            if attack.lang == "javascript":
                # a cell returns before its callbacks run: give them time
                # (they still run in the session's kernel) before judging
                time.sleep(1)
                st, j = self.req("POST", "/v1/sessions/%s/execute" % sid, {"code": "1"})
                out += "\n" + result_text(j)
            if mode == "files":
                for step in expand(attack.steps):
                    out += "\n" + self.file_step(sid, step, world)
            return out, False
        finally:
            for i in ids:
                try:
                    self.req("DELETE", "/v1/sessions/%s" % i, timeout=60)
                except OSError:
                    pass

    def file_step(self, sid, step, world):
        verb, _, arg = step.partition(" ")
        path = "/v1/sessions/%s/files/%s" % (sid, world.substitute(arg))
        if verb == "get":
            st, data = self.req("GET", path, raw=True)
            return "GET %s\n%s" % (st, data.decode("utf-8", "replace"))
        if verb == "put":
            st, data = self.req("PUT", path, body=b"upload " + secrets.token_hex(8).encode(), raw=True)
            return "PUT %s %s" % (st, data[:200])
        if verb == "list":
            st, data = self.req("GET", path, raw=True)
            return "LIST %s %s" % (st, data.decode("utf-8", "replace"))
        if verb == "delete":
            st, data = self.req("DELETE", path, raw=True)
            return "DELETE %s %s" % (st, data[:200])
        if verb == "wait":
            time.sleep(float(arg))
            return ""
        return "bad step %r" % step

    def files(self, attack, world, net):
        return self.in_session(attack, world, world.substitute(attack.source), "files")


# ---- the latency probe -------------------------------------------------

class LatencyProbe:
    """Host-side: how long spawning /bin/true takes while an attack runs.
    Reported, never asserted (the machine is shared)."""

    def __init__(self):
        self.samples = []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop_ev.wait(0.1):
            t0 = time.monotonic()
            try:
                subprocess.run(["/bin/true"], timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.samples.append((time.monotonic() - t0) * 1000)

    def stop(self):
        self.stop_ev.set()
        self.t.join(35)
        s = sorted(self.samples)
        if not s:
            return "no samples"
        return "spawn of /bin/true: median %.1f ms, max %.1f ms (%d samples)" % (
            statistics.median(s), s[-1], len(s))


# ---- one attack --------------------------------------------------------

IDENT = oracles.host_identity()


def run_one(runner, attack, mode):
    why = runner.applies(attack, mode)
    if why:
        return Verdict(attack, runner.name, mode, "n/a", note=why)
    shared_srv = isinstance(runner, Codecell) and mode != "run"
    world = oracles.World(extra_secrets=[runner.serve_secret] if shared_srv else [])
    net = runner.net if shared_srv else oracles.NetCgroup("%d-%s" % (os.getpid(), secrets.token_hex(4)))
    net.fired()  # a fresh baseline
    probe = LatencyProbe() if attack.resource else None
    try:
        try:
            if mode == "files":
                out, hung = runner.files(attack, world, net)
            else:
                out, hung = runner.execute(attack, world, net, mode)
        except (RuntimeError, OSError) as e:
            return Verdict(attack, runner.name, mode, "error", note=str(e))
        note = probe.stop() if probe else ""
        probe = None
        time.sleep(0.05)  # a last datagram or connection reaches a listener
        fired = world.judge(out, IDENT, os.getpid()) + net.fired()
        if not shared_srv:
            left = net.members()
            for _ in range(20):
                if not left:
                    break
                time.sleep(0.05)
                left = net.members()
            if left:
                fired.append(("survivor", "%d processes outlived the run" % len(left)))
        kind = "hung" if hung else ("escaped" if fired else "blocked")
        return Verdict(attack, runner.name, mode, kind, fired, note, out)
    finally:
        if probe:
            probe.stop()
        if not shared_srv:
            net.close()
        world.close()


def run_all(runner, attacks, modes, jobs):
    """Verdicts of every attack in every mode; resource attacks one at a
    time after the rest, so that the safety net and the latency probe see
    only them."""
    # file-API attacks run only in the files mode, the rest never there
    todo = [(a, m) for m in modes for a in attacks if ("files" in a.modes) == (m == "files")]
    light = [t for t in todo if not t[0].resource]
    heavy = [t for t in todo if t[0].resource]
    verdicts = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        verdicts += list(ex.map(lambda t: run_one(runner, *t), light))
    # two at a time where each has its own safety net; one at a time in a
    # shared server, whose net is judged by its change during the attack
    own_net = [t for t in heavy if not (isinstance(runner, Codecell) and t[1] != "run")]
    with concurrent.futures.ThreadPoolExecutor(min(jobs, 2)) as ex:
        verdicts += list(ex.map(lambda t: run_one(runner, *t), own_net))
    for t in heavy:
        if t not in own_net:
            verdicts.append(run_one(runner, *t))
    return verdicts


# ---- reports -----------------------------------------------------------

def table(verdicts, title):
    print("\n== %s ==" % title)
    classes = sorted(set(v.attack.klass for v in verdicts))
    hdr = "%-14s %8s %8s %8s %6s %6s %6s" % ("class", "attacks", "blocked", "escaped", "hung", "n/a", "error")
    print(hdr)
    tot = [0] * 6
    for c in classes:
        vs = [v for v in verdicts if v.attack.klass == c]
        row = [len(vs)] + [sum(1 for v in vs if v.kind == k)
                           for k in ("blocked", "escaped", "hung", "n/a", "error")]
        tot = [a + b for a, b in zip(tot, row)]
        print("%-14s %8d %8d %8d %6d %6d %6d" % tuple([c] + row))
    print("%-14s %8d %8d %8d %6d %6d %6d" % tuple(["total"] + tot))


def details(verdicts, kinds):
    for v in verdicts:
        if v.kind in kinds:
            print("  %-8s %-9s %-5s %s: %s %s" % (v.kind.upper(), v.runner, v.mode, v.attack.name,
                                                "; ".join(d for _, d in v.fired), v.note))
            if (v.kind in ("escaped", "error", "hung") and v.runner == "codecell") or (
                    v.kind in ("blocked", "hung", "error") and v.runner == "control"):
                print("           tries: %s" % v.attack.get("tries"))
                print("           output: %r" % v.output[-600:])


def latency_report(verdicts):
    for v in verdicts:
        if v.attack.resource and v.note and v.kind != "n/a":
            print("  %-8s %-5s %-36s %s" % (v.runner, v.mode, v.attack.name, v.note))


def security(args):
    attacks = load_corpus(args.only)
    print("escape corpus: %d attacks in %d classes" % (len(attacks), len(set(a.klass for a in attacks))))
    binaries_before = oracles.host_binaries([CODECELL])
    control = Bare("control")
    t0 = time.monotonic()
    cv = run_all(control, attacks, ["run", "files"], args.jobs)
    table(cv, "control: no isolation (every attack must escape, or be n/a)")
    # a hang is what the hang attacks do without isolation
    silent = [v for v in cv if v.kind not in ("escaped", "hung", "n/a")]
    if silent:
        print("attacks whose oracle did not fire without isolation (a broken attack or oracle):")
        details(silent, ("blocked", "hung", "error"))
    print("control took %.0f s" % (time.monotonic() - t0), flush=True)
    t0 = time.monotonic()
    if not runs_code([CODECELL, "run", "-"]):
        print("codecell cannot run code here: %s run -" % CODECELL)
        return 1
    cc = Codecell(args.modes.split(","))
    cc.start()
    try:
        v = run_all(cc, attacks, cc.modes, args.jobs)
    finally:
        cc.stop()
    print("codecell took %.0f s" % (time.monotonic() - t0))
    for m in cc.modes:
        table([x for x in v if x.mode == m], "codecell, %s" % m)
    print("\nresource attacks, host latency while they ran (not asserted):")
    latency_report(v + cv)
    bad = [x for x in v if x.kind in ("escaped", "hung", "error")]
    binaries_after = oracles.host_binaries([CODECELL])
    changed = [p for p in binaries_before if binaries_before[p] != binaries_after[p]]
    # a mount of a world left on the host (by the control, or an escape)
    changed += ["mount: " + l for l in oracles.read_text("/proc/self/mountinfo").splitlines()
                if "/codecell-escape-" in l]
    if changed:
        print("HOST BINARIES CHANGED OR MOUNTS LEFT: %s" % ", ".join(changed))
    if bad:
        print("\ncodecell findings:")
        details(bad, ("escaped", "hung", "error"))
    kn = [x for x in bad if x.attack.get("known")]
    if kn:
        print("(%d of them are known findings, listed in the attack's 'known:' header)" % len(kn))
    ok = not bad and not silent and not changed
    print("\nescape corpus: %d attacks; codecell %d verdicts: %d escaped, %d hung, %d errors; "
          "control: %d oracles that did not fire" % (
              len(attacks), len(v), sum(x.kind == "escaped" for x in v),
              sum(x.kind == "hung" for x in v), sum(x.kind == "error" for x in v), len(silent)))
    return 0 if ok else 1


def runs_code(launch):
    """Does the runner run code at all?  Else every attack would look
    blocked."""
    try:
        p = subprocess.run(launch, input=b"print('RUNS' + 'OK')\n", capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"RUNSOK" in p.stdout


def startup_ms(prefix_cmd, n):
    """Median wall time of n one-shot runs of print(1)."""
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        subprocess.run(prefix_cmd, input=b"print(1)\n", stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        times.append((time.monotonic() - t0) * 1000)
    return statistics.median(times)


def compare(args):
    attacks = load_corpus(args.only)
    names = ["plain", "bwrap", "firejail", "runsc", "codecell"]
    rows = []
    all_v = {}
    for n in names:
        r = Codecell(["run"]) if n == "codecell" else Bare(n)
        if n != "codecell" and not r.available():
            print("%s: not installed, skipped (scripts/setup.sh installs it)" % n)
            continue
        if n == "codecell":
            launch = [CODECELL, "run", "--lang", "python", "-"]
        else:
            launch = r.prefix + INTERP["python"]
        print("%s: %s" % (n, " ".join(launch)), flush=True)
        if not runs_code(launch):
            print("%s: cannot run code here, skipped: %s" % (n, " ".join(launch)))
            continue
        t0 = time.monotonic()
        vs = run_all(r, attacks, ["run"], args.jobs) + [
            Verdict(a, n, "files", "n/a", note="the file API is codecell's") for a in attacks
            if "files" in a.modes]
        all_v[n] = vs
        rows.append([n, vs, launch, time.monotonic() - t0])
        table(vs, n)
        details(vs, ("hung", "error"))
        esc = [v.attack.name for v in vs if v.kind == "escaped"]
        print("escaped under %s: %s" % (n, ", ".join(esc) if esc else "none"))
    # start-up: round robin over the runners, so that a change in the
    # machine's load falls on all of them alike
    launches = [r[2] for r in rows] + [["/usr/bin/python3", "-"]]
    times = [[] for _ in launches]
    for _ in range(args.startup_runs):
        for i, launch in enumerate(launches):
            times[i].append(startup_ms(launch, 1))
    for i, r in enumerate(rows):
        r[2] = statistics.median(times[i])
    base = statistics.median(times[-1])
    classes = sorted(set(a.klass for a in attacks))
    print("\n== side by side: escapes (hangs) per class; n/a not counted ==")
    print("| class | attacks | " + " | ".join(r[0] for r in rows) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in rows) + " |")
    for c in classes:
        if all(v.kind == "n/a" for _, vs, _, _ in rows for v in vs if v.attack.klass == c):
            print("| %s | %d | %s |" % (c, sum(a.klass == c for a in attacks),
                                        " | ".join("n/a" for _ in rows)))
            continue
        cells = []
        for _, vs, _, _ in rows:
            cv = [v for v in vs if v.attack.klass == c]
            e = sum(v.kind == "escaped" for v in cv)
            h = sum(v.kind == "hung" for v in cv)
            na = sum(v.kind == "n/a" for v in cv)
            cells.append("%d%s%s" % (e, " (%d hung)" % h if h else "", " [%d n/a]" % na if na else ""))
        print("| %s | %d | %s |" % (c, sum(a.klass == c for a in attacks), " | ".join(cells)))
    tot = []
    for _, vs, _, _ in rows:
        tot.append("%d of %d" % (sum(v.kind == "escaped" for v in vs), sum(v.kind != "n/a" for v in vs)))
    print("| **escaped, total** | %d | %s |" % (len(attacks), " | ".join(tot)))
    print("| **hung, total** | | %s |" % " | ".join(str(sum(v.kind == "hung" for v in vs))
                                                for _, vs, _, _ in rows))
    print("| start-up, median of %d `print(1)` (ms) | | %s |" % (
        args.startup_runs, " | ".join("%.1f" % r[2] for r in rows)))
    print("\nno sandbox, python3 - with print(1) on stdin: %.1f ms (same run, same rounds)" % base)
    print("\nrunner lines (the code goes to the interpreter's stdin: python3 -, bash -s, node -):")
    for n, _, _, secs in rows:
        line = ([CODECELL, "run", "--json", "--lang", "LANG", "--timeout", "T", "-"]
                if n == "codecell" else RUNNER_LINES[n] + ["INTERPRETER"])
        print("  %-9s %s   (corpus took %.0f s)" % (n, " ".join(line) if line else "(none)", secs))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--security", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--runner", default=None)
    ap.add_argument("--modes", default="run,session,fork,files")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--only", default=None, help="only attacks whose name holds this")
    ap.add_argument("--startup-runs", type=int, default=15)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run.py: run as root (the oracles plant files and cgroups; "
                         "the control runs attacks with no isolation)")
    if args.compare:
        return compare(args)
    if args.runner:
        r = Codecell(args.modes.split(",")) if args.runner == "codecell" else Bare(args.runner)
        r.start()
        try:
            vs = run_all(r, load_corpus(args.only),
                         args.modes.split(",") if args.runner == "codecell" else ["run", "files"],
                         args.jobs)
        finally:
            r.stop()
        for m in sorted(set(v.mode for v in vs)):
            table([x for x in vs if x.mode == m], "%s, %s" % (r.name, m))
        details(vs, ("escaped", "hung", "error") if args.verbose or r.name == "codecell"
                else ("hung", "error", "blocked"))
        latency_report(vs)
        return 0
    return security(args)


if __name__ == "__main__":
    sys.exit(main())

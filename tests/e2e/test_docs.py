"""Every command block of README.md and of every page in docs/, run the way
a user would run it, with what it shows checked, so the docs cannot drift
from the program (issues 16 and 33).

Which blocks run:
  ```sh       each line is a command (a trailing backslash joins the next
              line; `# ...` after it is a comment, for bash as for us).  A
              line `# -> TEXT` just after a command is what that command
              prints, compared loosely (below).
  ```console  lines that start with `$ ` are commands; the lines up to the
              next `$ ` are what it prints, compared loosely.
  Other blocks (json, plain text: benchmark figures) are not run.

How they run: in a scratch directory that holds a copy of the repository's
examples/ and nothing else, as the top of a checkout would (the docs say
the examples run from there): a file an example needs is either in
examples/ or made by the docs themselves, so a user pasting them has it
too.  `codecell` is on PATH as the built binary; each command runs
through bash.  Each command must exit 0.  `[X]` (an optional part in the
synopsis) is taken as X.  `codecell serve ...` is started with
`--listen 127.0.0.1:0` instead of its address (a test binds no fixed
port), a token file of its own for /etc/codecell/token, and must print its
listening line and stop with 0 on SIGTERM.  Commands that talk to
localhost:8080 get a `codecell serve` this test started (with its pool
ready) on a free port; `3f0c...` is the id of the session the block
created last.  `codecell shell` without a pipe gets an empty stdin (the
REPL ends at once).

Loose comparison: output that is JSON (after `, ...` is dropped) matches
when every key shown is there with a matching value: an id shown short
(hex digits and `...`, as "3f0c...") matches any id, another string
ending in `...` or `…` any string with that start, a number any number,
other values exactly; keys not shown are allowed.  Any other output
matches when each line shown appears in order, with `...`/`…` matching
any text and every number any number.

Blocks that cannot run in a test are skipped by their first command
(SKIP, with why); blocks known to be wrong today are in KNOWN_WRONG: they
must still fail (so the entry is removed when the docs are fixed)."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, ROOT, Serve, check, eq, main, test  # noqa: E402

def doc_pages():
    """README.md and every page of docs/ (ARCHITECTURE.md has no command
    blocks: it describes the code)."""
    pages = sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                   if f.endswith(".md") and f != "ARCHITECTURE.md")
    return ["README.md"] + pages


DOCS = doc_pages()

# first command of a block -> why it is not run
SKIP = {
    "make run": "installs packages and serves on port 8080 until stopped",
    "export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 CODECELL_MODEL=local":
        "needs a model endpoint (tests/e2e/test_agent.py drives the loop with a stand-in)",
    "codecell run --policy policy.ini --net allowlist - <<EOF":
        "reaches hosts on the internet (tests/e2e/test_egress.py runs the mode against servers "
        "it starts on loopback)",
}

# first command of a block -> what is wrong with it today (the block must
# fail; fix the docs, then remove the entry)
KNOWN_WRONG = {}

# the same for the example objects (```json blocks), keyed by their kind
KNOWN_WRONG_JSON = {
}



# ---- reading the docs --------------------------------------------------------

def blocks(path):
    """(line, kind, body) of each ```sh and ```console block."""
    text = open(os.path.join(ROOT, path)).read()
    for m in re.finditer(r"^```(\w*)[ \t]*\n(.*?)^```", text, re.S | re.M):
        if m.group(1) in ("sh", "console"):
            yield text[:m.start()].count("\n") + 1, m.group(1), m.group(2)


def commands(kind, body):
    """[(command, expected output or None)] of a block."""
    out = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if kind == "console":
            if not line.startswith("$ "):
                continue
            cmd, shown = line[2:], []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            out.append([cmd, "\n".join(shown).strip() or None])
            continue
        if line.startswith("# -> ") and out:
            out[-1][1] = line[5:]
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cmd = line
        while cmd.rstrip().endswith("\\") and i < len(lines):
            cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        out.append([cmd, None])
    return [tuple(c) for c in out]


def first_words(cmd):
    """A block's key: its first command without its comment."""
    return " ".join(shlex.split(cmd, comments=True))


# ---- loose comparison --------------------------------------------------------

def loads_loose(text):
    t = re.sub(r",\s*(\.\.\.|…)\s*(?=[}\]])", "", text.strip())
    return json.loads(t)


def json_matches(shown, got):
    if isinstance(shown, dict):
        return isinstance(got, dict) and all(k in got and json_matches(v, got[k])
                                             for k, v in shown.items())
    if isinstance(shown, list):
        return isinstance(got, list) and len(shown) <= len(got) and all(
            json_matches(a, b) for a, b in zip(shown, got))
    if isinstance(shown, str):
        if re.fullmatch(r"[0-9a-f]+(\.\.\.|…)", shown):  # an id, shortened
            return isinstance(got, str) and re.fullmatch(r"[0-9a-f]+", got) is not None
        for ell in ("...", "…"):
            if shown.endswith(ell):
                return isinstance(got, str) and got.startswith(shown[:-len(ell)])
        return shown == got
    if isinstance(shown, bool) or shown is None:
        return shown is got
    if isinstance(shown, (int, float)):
        return isinstance(got, (int, float)) and not isinstance(got, bool)
    return shown == got


def line_pattern(line):
    parts = re.split(r"(\.\.\.|…|\d+(?:\.\d+)?)", line.strip())
    rx = ""
    for p in parts:
        if p in ("...", "…"):
            rx += ".*"
        elif re.fullmatch(r"\d+(?:\.\d+)?", p or "x"):
            rx += r"\d+(?:\.\d+)?"
        else:
            rx += re.escape(p)
    return re.compile(rx)


def output_matches(shown, got):
    try:
        want = loads_loose(shown)
    except ValueError:
        want = None
    if want is not None:
        try:
            return json_matches(want, json.loads(got))
        except ValueError:
            return False
    pos = 0
    for line in shown.splitlines():
        if not line.strip():
            continue
        m = line_pattern(line).search(got, pos)
        if not m:
            return False
        pos = m.end()
    return True


# ---- running them -------------------------------------------------------------

class Runner:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cctest-docs-")
        os.chmod(self.dir, 0o755)
        self.bin = os.path.join(self.dir, ".bin")
        os.mkdir(self.bin)
        os.symlink(os.path.abspath(CODECELL), os.path.join(self.bin, "codecell"))
        shutil.copytree(os.path.join(ROOT, "examples"), os.path.join(self.dir, "examples"))
        self.token = os.path.join(self.dir, ".token")
        with open(self.token, "w") as f:
            f.write("docs-test-token-0123456789\n")
        os.chmod(self.token, 0o600)
        self.env = dict(os.environ, PATH=self.bin + ":/usr/bin:/bin", HOME=self.dir)
        self.srv = None
        self.session = None

    def server(self):
        if self.srv is None:
            self.srv = Serve()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                st, h = self.srv.request("GET", "/healthz")
                if h.get("pool_ready", 0) >= 1:
                    break
                time.sleep(0.2)
        return self.srv

    def close(self):
        if self.srv is not None:
            eq(self.srv.stop(), 0, "the test's server exit")
        shutil.rmtree(self.dir, ignore_errors=True)

    def substitute(self, cmd):
        cmd = re.sub(r"\[(--[^\]]*)\]", r"\1", cmd)
        if re.search(r"(localhost|127\.0\.0\.1):8080", cmd):
            port = self.server().port
            cmd = re.sub(r"(localhost|127\.0\.0\.1):8080", "127.0.0.1:%d" % port, cmd)
        if "3f0c..." in cmd:
            check(self.session, "the block uses a session id before it created one: %r" % cmd)
            cmd = cmd.replace("3f0c...", self.session)
        return cmd

    def run(self, cmd):
        """(exit status, stdout, stderr) of a command line as written."""
        words = shlex.split(cmd, comments=True)
        if words[:2] == ["codecell", "serve"]:
            return self.serve(words)
        stdin = subprocess.DEVNULL
        p = subprocess.run(["bash", "-c", self.substitute(cmd)], cwd=self.dir, env=self.env,
                           stdin=stdin, capture_output=True, text=True, timeout=120)
        m = re.search(r"/v1/sessions\s", cmd + " ")
        if m and "-d" in words:
            try:
                self.session = json.loads(p.stdout)["id"]
            except (ValueError, KeyError, TypeError):
                pass
        return p.returncode, p.stdout, p.stderr

    def serve(self, words):
        """codecell serve as written, on a free loopback port: it must say
        where it listens and stop cleanly."""
        args, i = [], 2
        while i < len(words):
            if words[i] == "--listen":
                i += 2
                continue
            args.append(self.token if words[i] == "/etc/codecell/token" else words[i])
            i += 1
        errf = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen([CODECELL, "serve", "--listen", "127.0.0.1:0"] + args,
                             cwd=self.dir, stdout=subprocess.PIPE, stderr=errf, text=True)
        try:
            line = p.stdout.readline()
        finally:
            p.send_signal(signal.SIGTERM)
            rc = p.wait(60)
            errf.seek(0)
            err = errf.read()
        if not line.startswith("codecell serve: listening on http://"):
            return rc or 1, line, err
        return rc, line, err


def run_block(r, path, line, kind, body):
    """None if the block does what it shows, else what went wrong."""
    for cmd, shown in commands(kind, body):
        rc, out, err = r.run(cmd)
        print("# %s:%d exit %d: %s" % (path, line, rc, cmd))
        if rc != 0:
            return "%s:%d: %r exited %d: %s" % (path, line, cmd, rc, (err or out).strip()[-600:])
        if shown is not None and not output_matches(shown, out):
            return "%s:%d: %r printed %r, the docs show %r" % (path, line, cmd, out[-600:], shown)
    return None


@test
def every_command_block_of_the_docs_runs_as_shown():
    r = Runner()
    ran, wrong, problems = 0, [], []
    try:
        for path in DOCS:
            for line, kind, body in blocks(path):
                cmds = commands(kind, body)
                if not cmds:
                    continue
                key = first_words(cmds[0][0])
                if key in SKIP:
                    print("# skip %s:%d %r: %s" % (path, line, key, SKIP[key]))
                    continue
                why = run_block(r, path, line, kind, body)
                ran += 1
                if key in KNOWN_WRONG:
                    if why is None:
                        problems.append("%s:%d %r is listed as wrong (%s) but runs as shown: "
                                        "remove it from KNOWN_WRONG" % (path, line, key,
                                                                        KNOWN_WRONG[key]))
                    else:
                        wrong.append(why)
                elif why:
                    problems.append(why)
    finally:
        r.close()
    for w in wrong:
        print("# known wrong: " + w.replace("\n", " "))
    check(ran >= 5, "only %d blocks ran" % ran)
    check(not problems, "\n".join(problems))


@test
def a_wrong_command_or_output_in_a_block_is_caught():
    r = Runner()
    try:
        check(run_block(r, "t", 1, "sh", "codecell run examples/hello.py\n") is None, "a good block")
        why = run_block(r, "t", 1, "sh", "codecell run --no-such-option examples/hello.py\n")
        check(why and "exited 125" in why, why)
        why = run_block(r, "t", 1, "console", "$ codecell run examples/hello.py\nhello from app.js\n")
        check(why and "the docs show" in why, why)
        check(run_block(r, "t", 1, "console",
                        "$ codecell run examples/hello.py\nHello from ...\n") is None, "loosely")
        # a file no example made and examples/ does not ship is not there
        why = run_block(r, "t", 1, "sh", "codecell run --lang sql --db data.sqlite -\n")
        check(why and "exited 125" in why, why)
    finally:
        r.close()


# ---- the example objects ----------------------------------------------------

def json_blocks(path):
    text = open(os.path.join(ROOT, path)).read()
    for m in re.finditer(r"^```json[ \t]*\n(.*?)^```", text, re.S | re.M):
        try:
            obj = json.loads(m.group(1).replace("…", "..."))
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield text[:m.start()].count("\n") + 1, obj


def kind_of(obj):
    if "status" in obj and "logs" in obj:
        return "result"
    if "startup_ms" in obj and "language" in obj:
        return "session"
    return None


def key_drift(shown, got, where=""):
    """What differs between the keys of a documented object and a real
    one (a documented object with a "..." key may leave keys out)."""
    out = []
    if not isinstance(shown, dict) or not isinstance(got, dict):
        return out
    for k in shown:
        if k != "..." and k not in got:
            out.append("%s%s is documented but not in the real object" % (where, k))
    if "..." not in shown:
        for k in got:
            if k not in shown:
                out.append("%s%s is in the real object but not documented" % (where, k))
    for k in shown:
        if k in got:
            out += key_drift(shown[k], got[k], where + k + ".")
    return out


def real_objects():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.py")
        with open(path, "w") as f:
            f.write("print('hi')\nx = 1/0\n")
        p = subprocess.run([CODECELL, "run", "--json", path], capture_output=True, text=True,
                           timeout=120)
        result = json.loads(p.stdout)
    srv = Serve("--pool", "0")
    try:
        st, session = srv.request("POST", "/v1/sessions", {"preload": "json"})
        eq(st, 201, session)
    finally:
        eq(srv.stop(), 0, "server exit")
    return {"result": result, "session": session}


@test
def the_example_objects_have_the_real_keys():
    real = real_objects()
    problems, seen = [], 0
    for path in DOCS:
        for line, obj in json_blocks(path):
            kind = kind_of(obj)
            if kind is None:
                continue
            seen += 1
            drift = key_drift(obj, real[kind])
            known = KNOWN_WRONG_JSON.get((path, kind))
            if known and not drift:
                problems.append("%s:%d (%s) is listed as wrong (%s) but is right: remove it from "
                                "KNOWN_WRONG_JSON" % (path, line, kind, known))
            elif known:
                print("# known wrong: %s:%d: %s" % (path, line, "; ".join(drift)))
            elif drift:
                problems.append("%s:%d (%s): %s" % (path, line, kind, "; ".join(drift)))
    check(seen >= 2, "the result and session examples were not found")
    check(not problems, "\n".join(problems))


@test
def the_comparison_rules():
    eq(output_matches('{"id": "3f0c...", "pooled": true, "startup_ms": 0.4, ...}',
                      '{"id": "3f0cab", "pooled": true, "startup_ms": 12.5, "x": 1}'), True, "json")
    eq(output_matches('{"id": "3f0c...", "pooled": true, ...}',
                      '{"id": "3f0cab", "pooled": false}'), False, "a value shown differs")
    eq(output_matches('{"id": "3f0c...", "v": "Trace..."}', '{"id": "99ab", "v": "Traceback"}'),
       True, "a short id is any id; another string ending in ... a prefix")
    eq(output_matches('{"v": "Trace..."}', '{"v": "Error"}'), False, "a prefix")
    eq(output_matches('{"id": "3f0c...", "pooled": true}', '{"id": "99"}'), False, "a key missing")
    eq(output_matches("ready in 41 ms\n...\n42", "x\nready in 7.5 ms; more\nfoo\n42\n"), True, "text")
    eq(output_matches("42\nready", "ready\n42\n"), False, "text in order")
    eq(commands("sh", "a \\\n  b  # note\n# -> out\n\n# a comment\nc\n"),
       [("a  b  # note", "out"), ("c", None)], "sh lines")
    eq(commands("console", "$ a\nout 1\nout 2\n$ b\n"), [("a", "out 1\nout 2"), ("b", None)], "console")


# ---- --help against the docs ------------------------------------------------

# each command -> the pages that document its options
HELP_PAGES = {
    "run": ["docs/cli.md"],
    "shell": ["docs/sessions.md", "docs/cli.md"],
    "serve": ["docs/API.md", "docs/http.md"],
    "mcp": ["docs/mcp.md"],
    "agent": ["docs/agent.md"],
    "audit": ["docs/policy.md"],
    "approvals": ["docs/policy.md"],
    "diff": ["docs/project.md"],
    "check": ["docs/cli.md"],
}

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")


def help_text(cmd):
    p = subprocess.run([CODECELL, cmd, "--help"], capture_output=True, text=True, timeout=30)
    eq(p.returncode, 0, "codecell %s --help exit" % cmd)
    return p.stdout


def table_rows(text):
    """(option, row) of each table row that starts with an option."""
    for m in re.finditer(r"^\| `(--[a-z][a-z0-9-]*)[^|]*\|.*$", text, re.M):
        yield m.group(1), m.group(0)


def help_block(text, opt):
    """The lines of --help that describe opt (up to the next option)."""
    m = re.search(r"^  %s\b.*?(?=^  -|\Z)" % re.escape(opt), text, re.M | re.S)
    return m.group(0) if m else ""


def help_drift(cmd, text, pages):
    """What differs between `codecell CMD --help` and the docs' pages."""
    docs = "".join(open(os.path.join(ROOT, p)).read() for p in pages)
    shown = set(OPTION.findall(text)) - {"--help"}
    out = ["%s --help lists %s, which %s does not" % (cmd, o, " or ".join(pages))
           for o in sorted(shown) if o not in set(OPTION.findall(docs))]
    # the first page's table of options, if the command has options at all
    rows = table_rows(open(os.path.join(ROOT, pages[0])).read()) if shown else []
    for opt, row in rows:
        if opt not in shown:
            out.append("%s lists %s in a table, which codecell %s --help does not"
                       % (pages[0], opt, cmd))
            continue
        want = re.search(r"\((\d[\d.]*) to (\d[\d.]*)", row)
        block = help_block(text, opt)
        got = re.search(r"(\d[\d.]*) to (\d[\d.]*)\)", block)
        if want and got and want.groups() != got.groups():
            out.append("%s: %s says %s to %s, codecell %s --help %s to %s"
                       % (pages[0], opt, want.group(1), want.group(2), cmd, got.group(1),
                          got.group(2)))
    return out


@test
def every_option_of_help_is_in_the_docs_and_back():
    problems = []
    for cmd, pages in HELP_PAGES.items():
        problems += help_drift(cmd, help_text(cmd), pages)
    check(not problems, "\n".join(problems))


@test
def a_drift_between_help_and_the_docs_is_caught():
    text = help_text("run")
    why = help_drift("run", text + "  --no-such-flag       x\n", ["docs/cli.md"])
    check(any("--no-such-flag" in w for w in why), why)
    wrong = text.replace("(default 1; 0.01 to 64)", "(default 1; 0.01 to 1024)")
    check(wrong != text, "the --cpus range is in codecell run --help")
    why = help_drift("run", wrong, ["docs/cli.md"])
    check(any("--cpus" in w for w in why), why)


@test
def help_command_is_the_commands_own_help():
    for cmd in ("run", "mcp", "audit", "apply"):
        p = subprocess.run([CODECELL, "help", cmd], capture_output=True, text=True, timeout=30)
        eq(p.returncode, 0, "codecell help %s" % cmd)
        eq(p.stdout, subprocess.run([CODECELL, cmd, "--help"], capture_output=True, text=True,
                                    timeout=30).stdout, "codecell help %s" % cmd)
    p = subprocess.run([CODECELL, "help", "nope"], capture_output=True, text=True, timeout=30)
    eq(p.returncode, 125, "an unknown command")
    check("unknown command 'nope'" in p.stderr, p.stderr)


if __name__ == "__main__":
    main()

"""The audit log by default (issue 33, "defaults a user expects"): `serve`
and `mcp` write one to $XDG_STATE_HOME/codecell/audit.jsonl unless told
`--audit off` or another FILE; the CLI's run and shell keep it opt-in;
`codecell audit` reads the default log, or FILE given as an argument.
Each test has a state directory of its own (XDG_STATE_HOME)."""
import json
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, Serve, check, codecell, eq, main, run_code, test, tmpdir  # noqa: E402


def state_env(d):
    e = dict(os.environ)
    e["XDG_STATE_HOME"] = d
    return e


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@test
def serve_writes_the_audit_log_by_default_in_the_state_directory():
    d = tmpdir()
    s = Serve(env=state_env(d))
    try:
        st, j = s.post("/v1/execute", {"code": "print(6 * 7)"})
        eq(st, 200, j)
    finally:
        eq(s.stop(), 0)
    log = os.path.join(d, "codecell", "audit.jsonl")
    recs = records(log)
    check(any(r["tool"] == "run" and r["door"] == "api" and r["status"] == "ok"
              for r in recs), recs)
    # the log says what code ran: only its owner reads it
    eq(stat.S_IMODE(os.stat(log).st_mode), 0o600)
    eq(stat.S_IMODE(os.stat(os.path.dirname(log)).st_mode), 0o700)
    # and `codecell audit` finds it without being told where
    r = codecell("audit", "--status", "ok", env=state_env(d))
    eq(r.status, 0, r.stderr)
    check('"tool":"run"' in r.stdout.replace(" ", ""), r.stdout)


@test
def serve_audit_off_writes_none_and_another_file_is_used_instead():
    d = tmpdir()
    s = Serve("--audit", "off", env=state_env(d))
    try:
        eq(s.post("/v1/execute", {"code": "1"})[0], 200)
    finally:
        eq(s.stop(), 0)
    check(not os.path.exists(os.path.join(d, "codecell", "audit.jsonl")),
          "--audit off wrote the default log")
    other = os.path.join(d, "mine.jsonl")
    s = Serve("--audit", other, env=state_env(d))
    try:
        eq(s.post("/v1/execute", {"code": "1"})[0], 200)
    finally:
        eq(s.stop(), 0)
    check(records(other), "nothing in --audit FILE")
    check(not os.path.exists(os.path.join(d, "codecell", "audit.jsonl")),
          "--audit FILE also wrote the default log")
    # FILE as an argument, as `codecell audit FILE` reads
    r = codecell("audit", other, env=state_env(d))
    eq(r.status, 0, r.stderr)
    eq(len(r.stdout.splitlines()), len(records(other)))
    r = codecell("audit", other, other + ".x", env=state_env(d))
    eq(r.status, 125, r.stderr)
    check("one audit log at a time" in r.stderr, r.stderr)


@test
def mcp_writes_the_audit_log_by_default():
    d = tmpdir()
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "run_code", "arguments": {"code": "print(1)"}}}]
    # stdin ends after the call: the server answers what it read, then exits
    p = subprocess.run([CODECELL, "mcp"], input="".join(json.dumps(m) + "\n" for m in msgs),
                       capture_output=True, text=True, timeout=120, env=state_env(d))
    eq(p.returncode, 0, p.stderr)
    replies = [json.loads(line) for line in p.stdout.splitlines()]
    check(any(r.get("id") == 2 and "result" in r for r in replies), replies)
    recs = records(os.path.join(d, "codecell", "audit.jsonl"))
    check(any(r["door"] == "mcp" for r in recs), recs)


@test
def the_cli_keeps_the_audit_log_opt_in():
    d = tmpdir()
    r = run_code("print(1)", env=state_env(d))
    eq(r.status, 0, r.stderr)
    check(not os.path.exists(os.path.join(d, "codecell", "audit.jsonl")),
          "codecell run wrote an audit log nobody asked for")
    r = codecell("audit", env=state_env(d))
    eq(r.status, 125)
    check("no audit log" in r.stderr, r.stderr)


@test
def a_default_log_that_cannot_be_opened_is_said_and_the_server_goes_on():
    d = tmpdir()
    # the state home is a file: no directory can be made under it
    blocker = os.path.join(d, "state")
    open(blocker, "w").close()
    s = Serve(env=state_env(blocker))
    try:
        eq(s.post("/v1/execute", {"code": "1"})[0], 200)
    finally:
        eq(s.stop(), 0)
    check("no audit log: the default one cannot be opened" in s.stderr
          and "--audit off" in s.stderr, s.stderr)
    # a log the user named is another matter: no server without it
    p = subprocess.run([CODECELL, "serve", "--listen", "127.0.0.1:0", "--audit",
                        os.path.join(blocker, "x.jsonl")], capture_output=True, text=True,
                       timeout=60)
    eq(p.returncode, 125, p.stderr)
    check("--audit" in p.stderr, p.stderr)


if __name__ == "__main__":
    main()

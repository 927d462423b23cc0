"""POST /v1/agent on `codecell serve`: the agent loop over HTTP, its steps
streamed as NDJSON, against a stand-in chat-completions server on
loopback (tests/lib/llm_standin.py).  The server finds its model in its
environment (OPENAI_BASE_URL, CODECELL_MODEL), as `codecell agent` does."""
import contextlib
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import Serve, check, descendants, eq, main, test  # noqa: E402
from llm_standin import StandIn, tool_call  # noqa: E402


@contextlib.contextmanager
def serve_with_model(standin, *args):
    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "CODECELL_MODEL", "OPENAI_API_KEY")}
    os.environ.pop("OPENAI_API_KEY", None)
    if standin:
        os.environ["OPENAI_BASE_URL"] = standin.url
        os.environ["CODECELL_MODEL"] = "standin"
    else:
        os.environ.pop("OPENAI_BASE_URL", None)
        os.environ.pop("CODECELL_MODEL", None)
    try:
        s = Serve(*args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        yield s
    finally:
        s.stop()


def events(srv, body, headers=None):
    st, data = srv.request("POST", "/v1/agent", body, headers=headers)
    eq(st, 200, data)
    return [json.loads(line) for line in data.decode().splitlines()]


@test
def the_loop_streams_its_steps_as_ndjson():
    with StandIn(["<execute_python>import math\nmath.squrt(2)</execute_python>",
                  "<execute_python>print(round(math.sqrt(2), 4))</execute_python>",
                  "About 1.4142."]) as m, serve_with_model(m) as srv:
        evs = events(srv, {"question": "sqrt 2?", "max_steps": 5})
        eq([e["type"] for e in evs], ["start", "code", "observation", "code", "observation", "done"])
        eq(evs[0]["max_steps"], 5)
        eq(evs[2]["status"], "error")
        check("AttributeError" in evs[2]["observation"], evs[2])
        eq(evs[2]["result"]["error"]["name"], "AttributeError")
        eq(evs[4]["status"], "ok")
        eq(evs[-1]["outcome"], "answered")
        eq(evs[-1]["answer"], "About 1.4142.")
        check("AttributeError" in m.requests[1]["messages"][-1]["content"])


@test
def tool_calls_and_the_budget_over_http():
    with StandIn([{"content": None, "tool_calls": [tool_call("1")]},
                  {"content": None, "tool_calls": [tool_call("2", call_id="c2")]}]) as m, \
            serve_with_model(m) as srv:
        evs = events(srv, {"question": "q", "max_steps": 1})
        eq(evs[-1]["outcome"], "budget_exhausted")
        eq(evs[-1]["steps"], 1)


@test
def llm_errors_end_the_stream_with_the_error():
    with StandIn([{"status": 401, "body": {"error": {"message": "bad key"}}}]) as m, \
            serve_with_model(m) as srv:
        evs = events(srv, {"question": "q"})
        eq(evs[-1]["outcome"], "llm_error")
        check("API key" in evs[-1]["error"], evs[-1])


@test
def without_a_model_endpoint_the_route_says_how_to_get_one():
    with serve_with_model(None) as srv:
        st, j = srv.request("POST", "/v1/agent", {"question": "q"})
        eq(st, 404, j)
        eq(j["error"]["code"], "agent_not_configured")
        check("OPENAI_BASE_URL" in j["error"]["message"])


@test
def bad_requests_are_refused_before_anything_runs():
    with StandIn([]) as m, serve_with_model(m) as srv:
        for body in ({}, {"question": ""}, {"question": "q", "max_steps": 0},
                     {"question": "q", "max_steps": 101}, {"question": "q", "language": "cobol"},
                     {"question": "q", "preload": "os; rm"}, {"question": "q", "bogus": 1}, [1]):
            st, j = srv.request("POST", "/v1/agent", body)
            eq(st, 400, (body, j))
        st, j = srv.request("GET", "/v1/agent")
        eq(st, 405, j)
        eq(m.requests, [])


@test
def the_servers_token_and_origin_rules_apply():
    with StandIn(["hi"]) as m, serve_with_model(m) as srv:
        st, j = srv.request("POST", "/v1/agent", {"question": "q"},
                            headers={"Origin": "http://evil.example"})
        eq(st, 403, j)
        st, j = srv.request("POST", "/v1/agent", {"question": "q"},
                            headers={"Host": "evil.example"})
        eq(st, 403, j)
        eq(m.requests, [])


@test
def a_client_that_goes_away_stops_the_loop_and_its_session():
    with StandIn(["<execute_python>import time\ntime.sleep(300)</execute_python>", "x"]) as m, \
            serve_with_model(m, "--pool", "0") as srv:
        # no warm pool: nothing else starts or ends below the server
        before = len(descendants(srv.pid))
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.request("POST", "/v1/agent", body=json.dumps({"question": "q"}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        seen = b""
        while b'"type":"code"' not in seen:
            line = r.fp.readline()
            check(line, "stream ended: %r" % seen)
            seen += line
        check(len(descendants(srv.pid)) > before, "no session started")
        r.close()   # the response holds the socket open too
        c.close()
        deadline = time.monotonic() + 60
        while len(descendants(srv.pid)) > before:
            check(time.monotonic() < deadline, "the session outlived its client")
            time.sleep(0.2)
        eq(len(m.requests), 1)


def read_until(r, needle):
    seen = b""
    while needle not in seen:
        line = r.fp.readline()
        check(line, "stream ended: %r" % seen)
        seen += line
    return seen


def by_door(srv, door):
    st, text = srv.request("GET", "/metrics")
    eq(st, 200)
    for line in text.decode().splitlines():
        if line.startswith('codecell_sessions_by_door{door="%s"} ' % door):
            return int(line.split()[-1])
    check(False, "no codecell_sessions_by_door for %s" % door)


@test
def the_runs_session_is_listed_counted_and_a_delete_ends_the_run():
    with StandIn(["<execute_python>import time\ntime.sleep(300)</execute_python>", "x"]) as m, \
            serve_with_model(m, "--pool", "0", "--max-sessions", "1") as srv:
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.request("POST", "/v1/agent", body=json.dumps({"question": "q"}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        read_until(r, b'"type":"code"')
        # one of the server's sessions: listed with its door, counted
        st, j = srv.request("GET", "/v1/sessions")
        eq(st, 200, j)
        eq([s["door"] for s in j["sessions"]], ["agent"], j)
        sid = j["sessions"][0]["id"]
        eq(by_door(srv, "agent"), 1)
        st, j = srv.request("POST", "/v1/sessions", {"language": "python"})
        eq(st, 429, j)     # it holds the one place --max-sessions allows
        # a delete from /v1 kills the running cell and ends the run
        st, j = srv.request("DELETE", "/v1/sessions/" + sid)
        check(st in (200, 204), (st, j))
        # the stream read raw, as above: its chunks' size lines skipped
        rest = read_until(r, b'"type":"done"').decode()
        c.close()
        evs = [json.loads(line) for line in rest.splitlines() if line.startswith("{")]
        eq(evs[-1]["type"], "done", evs)
        eq(evs[-1]["outcome"], "stopped", evs[-1])
        check("closed by another client" in evs[-1]["error"], evs[-1])
        eq(len(m.requests), 1)      # the model is not asked again
        st, j = srv.request("GET", "/v1/sessions")
        eq(j["sessions"], [], j)
        eq(by_door(srv, "agent"), 0)
        st, j = srv.request("GET", "/healthz")
        eq(st, 200, j)
        eq(j["sessions"], 0, j)


main()

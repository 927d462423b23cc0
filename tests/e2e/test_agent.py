"""`codecell agent`: the generate -> execute -> fix loop, against a
stand-in chat-completions server on loopback (tests/lib/llm_standin.py)
that replays scripted model turns and records what it receives.  Code
in tags, fences and tool calls; state across steps; the reflection turn;
the budget; a model that never writes code; malformed, truncated and
oversized replies; HTTP errors, retries and timeouts; Ctrl-C."""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, HANG_S, WORK_S, check, codecell, descendants, eq, main,  # noqa: E402
                    snapshot, still_running, test, tmpdir, write)
from llm_standin import StandIn, completion, tool_call  # noqa: E402


def agent(standin, *args, env=None, timeout=90, stdin=None):
    e = dict(os.environ, OPENAI_BASE_URL=standin.url if standin else "", CODECELL_MODEL="standin")
    e.pop("OPENAI_API_KEY", None)
    e.update(env or {})
    return codecell("agent", *args, env=e, timeout=timeout, stdin=stdin)


def last_user_text(req):
    return req["messages"][-1]["content"]


@test
def a_wrong_call_is_fixed_from_its_traceback_and_the_answer_printed():
    with StandIn(["Let me compute it.\n<execute_python>\nimport math\nmath.squrt(2)\n</execute_python>",
                  "<execute_python>\nimport math\nprint(round(math.sqrt(2), 6))\n</execute_python>",
                  "The square root of 2 is about 1.414214."]) as s:
        r = agent(s, "what is the square root of 2?")
        eq(r.status, 0, r)
        eq(r.stdout, "The square root of 2 is about 1.414214.\n")
        eq(len(s.requests), 3)
        first = s.requests[0]["messages"]
        eq([m["role"] for m in first], ["system", "user"])
        check("<execute_python>" in first[0]["content"], first[0]["content"])
        eq(first[1]["content"], "what is the square root of 2?")
        eq(s.requests[0]["model"], "standin")
        fix = last_user_text(s.requests[1])
        check("AttributeError: module 'math' has no attribute 'squrt'" in fix, fix)
        check("Traceback" in fix and "math.squrt(2)" in fix, fix)
        check("Fix the error" in fix, fix)
        # the model's own turn goes back as it was
        eq(s.requests[1]["messages"][2]["role"], "assistant")
        check("math.squrt" in s.requests[1]["messages"][2]["content"])
        ok = last_user_text(s.requests[2])
        check("1.414214" in ok and "Fix the error" not in ok, ok)


@test
def code_in_a_fenced_block_runs():
    with StandIn(["Here:\n```python\nprint(6 * 7)\n```\n", "42"]) as s:
        r = agent(s, "--json", "six times seven")
        eq(r.status, 0, r)
        eq(r.json["outcome"], "answered")
        eq(r.json["answer"], "42")
        eq(r.json["steps"][0]["source"], "fence")
        eq(r.json["steps"][0]["code"], "print(6 * 7)")
        check("42" in last_user_text(s.requests[1]))


@test
def fences_of_other_languages_and_prose_are_not_run():
    # a bash fence in a Python session is prose: the reply is the answer
    with StandIn(["Run this yourself:\n```bash\nrm -rf /\n```\nDone."]) as s:
        r = agent(s, "--json", "q")
        eq(r.status, 0, r)
        eq(r.json["steps_run"], 0)
        eq(len(s.requests), 1)


@test
def native_tool_calls_run_and_their_results_go_back_as_tool_messages():
    with StandIn([{"content": None, "tool_calls": [tool_call("y = 5\ny * 3", call_id="call_a")],
                   "finish_reason": "tool_calls"},
                  "It is 15."]) as s:
        r = agent(s, "--json", "compute")
        eq(r.status, 0, r)
        eq(r.json["answer"], "It is 15.")
        eq(r.json["steps"][0]["source"], "tool")
        req = s.requests[0]
        eq(req["tools"][0]["function"]["name"], "execute_python")
        msgs = s.requests[1]["messages"]
        eq(msgs[2]["role"], "assistant")
        eq(msgs[2]["tool_calls"][0]["id"], "call_a")
        eq(msgs[3]["role"], "tool")
        eq(msgs[3]["tool_call_id"], "call_a")
        check("15" in msgs[3]["content"], msgs[3])


@test
def a_failed_tool_call_is_asked_to_be_called_again():
    with StandIn([{"content": None, "tool_calls": [tool_call("1/0")]}, "infinite"]) as s:
        r = agent(s, "q")
        eq(r.status, 0, r)
        fix = s.requests[1]["messages"][-1]
        eq(fix["role"], "tool")
        check("ZeroDivisionError" in fix["content"] and "with the execute_python tool" in fix["content"],
              fix)


@test
def a_tool_call_with_bad_arguments_is_told_so():
    with StandIn([{"content": "", "tool_calls": [tool_call(None, raw_args="{not json")]},
                  {"content": "", "tool_calls": [tool_call(None, name="rm_rf", call_id="c2")]},
                  "ok"]) as s:
        r = agent(s, "q")
        eq(r.status, 0, r)
        check("arguments of execute_python" in s.requests[1]["messages"][-1]["content"])
        check("no tool 'rm_rf'" in s.requests[2]["messages"][-1]["content"])


@test
def state_persists_between_steps():
    with StandIn(["<execute_python>data = [3, 1, 2]\nimport statistics</execute_python>",
                  "<execute_python>print(statistics.median(data) * 100)</execute_python>",
                  "The median is 2."]) as s:
        r = agent(s, "median?")
        eq(r.status, 0, r)
        check("200" in last_user_text(s.requests[2]), last_user_text(s.requests[2]))


@test
def the_budget_stops_a_model_that_never_answers():
    turns = ["<execute_python>print('step')</execute_python>"] * 5
    with StandIn(turns) as s:
        r = agent(s, "--max-steps", "2", "--json", "loop forever")
        eq(r.status, 2, r)
        eq(r.json["outcome"], "budget_exhausted")
        eq(r.json["steps_run"], 2)
        eq(len(s.requests), 3)
        check("last step" in last_user_text(s.requests[2]), last_user_text(s.requests[2]))
        check("--max-steps 2" in r.json["error"], r.json)
        check("no answer" in r.stderr, r.stderr)


@test
def the_budget_counts_tool_calls_not_replies():
    # one reply with 16 tool calls under --max-steps 1: one runs, the
    # others are answered "not run" (every tool_call_id gets its message)
    calls = [tool_call("print(%d)" % i, call_id="c%d" % i) for i in range(16)]
    with StandIn([{"content": None, "tool_calls": calls, "finish_reason": "tool_calls"},
                  {"content": None, "tool_calls": [tool_call("print('more')",
                                                             call_id="d0")]}]) as s:
        r = agent(s, "--max-steps", "1", "--json", "spray")
        eq(r.status, 2, r)
        eq(r.json["outcome"], "budget_exhausted")
        eq(r.json["steps_run"], 1)
        eq(len(r.json["steps"]), 1)
        eq(len(s.requests), 2)
        tools = [m for m in s.requests[1]["messages"] if m["role"] == "tool"]
        eq([m["tool_call_id"] for m in tools], ["c%d" % i for i in range(16)])
        check("last step" in tools[0]["content"], tools[0])
        for m in tools[1:]:
            check("not run" in m["content"].lower() and "--max-steps 1" in m["content"], m)


@test
def a_model_that_never_writes_code_is_answered_at_once():
    with StandIn(["Paris."]) as s:
        r = agent(s, "--json", "capital of France?")
        eq(r.status, 0, r)
        eq(r.json["answer"], "Paris.")
        eq(r.json["steps"], [])
        eq(len(s.requests), 1)


@test
def empty_replies_are_asked_again_then_an_error():
    with StandIn(["", "  ", ""]) as s:
        r = agent(s, "q")
        eq(r.status, 3, r)
        check("empty replies" in r.stderr, r.stderr)
        eq(len(s.requests), 3)


@test
def a_reply_cut_off_inside_the_tags_is_reported_to_the_model():
    with StandIn([{"content": "<execute_python>\nfor i in range(10):\n    pri", "finish_reason": "length"},
                  "Sorry: 45."]) as s:
        r = agent(s, "q")
        eq(r.status, 0, r)
        check("cut off before </execute_python>" in last_user_text(s.requests[1]))


@test
def a_reply_that_is_not_json_is_a_clear_error():
    with StandIn([{"raw": b"<html>hello</html>"}]) as s:
        r = agent(s, "q")
        eq(r.status, 3, r)
        check("not JSON" in r.stderr and "<html>hello</html>" in r.stderr, r.stderr)


@test
def json_that_is_not_a_chat_completion_is_a_clear_error():
    for body, needle in ((b'{"choices": []}', "no choices[0].message"),
                         (b'{"choices": [{"message": {"content": 5}}]}', "neither a string"),
                         (b'{"error": {"message": "backend crashed"}}', "backend crashed")):
        with StandIn([{"raw": body}]) as s:
            r = agent(s, "q")
            eq(r.status, 3, r)
            check(needle in r.stderr, r.stderr)


@test
def a_truncated_reply_is_a_clear_error():
    with StandIn([{"content": "x" * 200, "truncate": 60}]) as s:
        r = agent(s, "q")
        eq(r.status, 3, r)
        check("cut off" in r.stderr, r.stderr)


@test
def an_oversized_reply_is_refused():
    with StandIn(["x" * (5 << 20)]) as s:
        r = agent(s, "q")
        eq(r.status, 3, r)
        check("larger than 4 MiB" in r.stderr, r.stderr)


@test
def a_bad_key_is_a_clear_error_and_the_key_is_sent():
    with StandIn([{"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}]) as s:
        r = agent(s, "q", env={"OPENAI_API_KEY": "sk-wrong"})
        eq(r.status, 3, r)
        check("refused the API key" in r.stderr and "Incorrect API key" in r.stderr, r.stderr)
        check("OPENAI_API_KEY" in r.stderr, r.stderr)
        eq(s.headers[0]["authorization"], "Bearer sk-wrong")
        eq(len(s.requests), 1)


@test
def an_unknown_model_is_a_clear_error():
    with StandIn([{"status": 404, "body": {"error": {"message": "model 'nosuch' not found"}}}]) as s:
        r = agent(s, "--model", "nosuch", "q")
        eq(r.status, 3, r)
        check("no model 'nosuch'" in r.stderr and "--model" in r.stderr, r.stderr)
        eq(s.requests[0]["model"], "nosuch")


@test
def a_wrong_url_is_a_clear_error():
    with StandIn([]) as s:
        r = agent(s, "q", env={"OPENAI_BASE_URL": "http://127.0.0.1:%d/api" % s.port})
        eq(r.status, 3, r)
        check("should end in /v1" in r.stderr, r.stderr)
    # nobody listening
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    r = agent(None, "q", env={"OPENAI_BASE_URL": "http://127.0.0.1:%d/v1" % port})
    eq(r.status, 3, r)
    check("cannot connect" in r.stderr and "OPENAI_BASE_URL" in r.stderr, r.stderr)
    r = agent(None, "q", env={"OPENAI_BASE_URL": "ftp://127.0.0.1/v1"})
    eq(r.status, 125, r)
    check("invalid OPENAI_BASE_URL" in r.stderr, r.stderr)


@test
def rate_limits_and_server_errors_are_retried():
    with StandIn([{"status": 429, "body": {"error": {"message": "slow down"}},
                   "headers": {"Retry-After": "0"}},
                  {"status": 500, "body": "oops"},
                  "fine"]) as s:
        r = agent(s, "--json", "--verbose", "q")
        eq(r.status, 0, r)
        eq(r.json["answer"], "fine")
        eq(len(s.requests), 3)
        eq(s.requests[0], s.requests[2])
        check("HTTP 429" in r.stderr and "HTTP 500" in r.stderr, r.stderr)
        # the 500 had no Retry-After: the backoff (1 s, doubled) was waited
        check(s.times[2] - s.times[1] >= 0.9, s.times)


@test
def retries_end_with_a_clear_error():
    with StandIn([{"status": 503, "body": {"error": {"message": "overloaded"}},
                   "headers": {"Retry-After": "0"}}] * 3) as s:
        r = agent(s, "--retries", "1", "q")
        eq(r.status, 3, r)
        check("HTTP 503" in r.stderr and "overloaded" in r.stderr and "after 2 attempts" in r.stderr,
              r.stderr)
        eq(len(s.requests), 2)


@test
def a_client_error_is_not_retried():
    with StandIn([{"status": 422, "body": {"detail": "bad field"}}]) as s:
        r = agent(s, "--tools", "off", "q")
        eq(r.status, 3, r)
        check("HTTP 422" in r.stderr and "bad field" in r.stderr, r.stderr)
        eq(len(s.requests), 1)


@test
def a_slow_endpoint_times_out():
    with StandIn([{"delay": 4, "content": "late"}]) as s:
        r = agent(s, "--llm-timeout", "1", "q")
        eq(r.status, 3, r)
        check("within 1 s" in r.stderr and "--llm-timeout" in r.stderr, r.stderr)


@test
def an_endpoint_that_refuses_tools_is_asked_again_without():
    with StandIn([{"status": 400, "body": {"error": {"message": "model does not support tools"}}},
                  "<execute_python>print(1+1)</execute_python>", "2"]) as s:
        r = agent(s, "q")
        eq(r.status, 0, r)
        check("tools" in s.requests[0], s.requests[0])
        check("tools" not in s.requests[1] and "tools" not in s.requests[2], s.requests[1])
        check("call the tool" not in s.requests[1]["messages"][0]["content"])


@test
def long_output_is_cut_head_and_tail():
    with StandIn(["<execute_python>print('A' * 50000 + 'END')</execute_python>", "done"]) as s:
        r = agent(s, "q")
        eq(r.status, 0, r)
        obs = last_user_text(s.requests[1])
        check("bytes left out" in obs and "END" in obs and "AAAA" in obs, obs[:300])
        check(len(obs) < 6000, len(obs))


@test
def figures_are_described():
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"
    with StandIn(["<execute_python>%s</execute_python>" % code, "a line"]) as s:
        # matplotlib's import on a loaded machine can outlast the default
        # step timeout, which is not what this is about
        r = agent(s, "--timeout", str(WORK_S), "plot", timeout=2 * WORK_S)
        eq(r.status, 0, r)
        obs = last_user_text(s.requests[1])
        check("[image: image/png" in obs, obs)
        check("iVBOR" not in obs, "the base64 was sent")


@test
def files_and_preloads_are_in_the_session():
    d = tmpdir()
    path = os.path.join(d, "data.csv")
    write(path, "a,b\n1,2\n3,4\n")
    with StandIn(["<execute_python>print(json.dumps(open('data.csv').read().splitlines()))"
                  "</execute_python>", "two rows"]) as s:
        r = agent(s, "--file", path, "--preload", "json", "rows?")
        eq(r.status, 0, r)
        system = s.requests[0]["messages"][0]["content"]
        check("data.csv" in system and "json" in system, system)
        check('["a,b", "1,2", "3,4"]' in last_user_text(s.requests[1]), last_user_text(s.requests[1]))


@test
def other_languages_where_asked():
    with StandIn(["<execute_javascript>let n = 6;</execute_javascript>",
                  "```js\nconsole.log(n * 7)\n```", "42"]) as s:
        r = agent(s, "--lang", "javascript", "--json", "q")
        eq(r.status, 0, r)
        check("<execute_javascript>" in s.requests[0]["messages"][0]["content"])
        eq(s.requests[0]["tools"][0]["function"]["name"], "execute_javascript")
        check("42" in last_user_text(s.requests[2]), last_user_text(s.requests[2]))


@test
def the_question_can_come_from_stdin():
    with StandIn(["yes"]) as s:
        r = agent(s, "-", stdin="is this\na question?")
        eq(r.status, 0, r)
        eq(s.requests[0]["messages"][1]["content"], "is this\na question?")


@test
def usage_errors_say_what_to_do():
    r = agent(None, "q")
    eq(r.status, 125, r)
    check("OPENAI_BASE_URL" in r.stderr, r.stderr)
    r = agent(None, "q", env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "CODECELL_MODEL": ""})
    eq(r.status, 125, r)
    check("--model" in r.stderr, r.stderr)
    r = agent(None, env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
    eq(r.status, 125, r)
    check("no question" in r.stderr, r.stderr)
    for bad in (["--max-steps", "0"], ["--max-steps", "101"], ["--tools", "maybe"],
                ["--llm-timeout", "soon"], ["--bogus"]):
        r = agent(None, *bad, "q", env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
        eq(r.status, 125, (bad, r))
    r = codecell("agent", "--help")
    eq(r.status, 0)
    check("exit status" in r.stdout and "OPENAI_BASE_URL" in r.stdout)


@test
def ctrl_c_stops_the_running_step_and_closes_the_session():
    # the step runs until Ctrl-C: its own timeout must not end it first
    with StandIn(["<execute_python>import time\ntime.sleep(3600)</execute_python>", "never"]) as s:
        env = dict(os.environ, OPENAI_BASE_URL=s.url, CODECELL_MODEL="standin")
        p = subprocess.Popen([CODECELL, "agent", "-v", "--timeout", "3600", "q"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = b""
        deadline = time.monotonic() + HANG_S
        while b"step 1: python code" not in err:
            check(time.monotonic() < deadline, "no step shown: %r" % err)
            r, _, _ = select.select([p.stderr], [], [], 1)
            if r:
                chunk = os.read(p.stderr.fileno(), 65536)
                check(chunk, "agent ended: %r" % err)
                err += chunk
        # pid and start time: a pid reused by another process is not ours
        kids = snapshot(descendants(p.pid))
        check(kids, "no sandbox under the agent")
        p.send_signal(signal.SIGINT)
        out, rest = p.communicate(timeout=60)
        eq(p.returncode, 130, rest)
        check(b"stopped; the session is closed" in rest, rest)
        deadline = time.monotonic() + 30
        while still_running(kids):
            check(time.monotonic() < deadline, "left behind: %r" % still_running(kids))
            time.sleep(0.1)
        eq(len(s.requests), 1)


@test
def ctrl_c_stops_a_request_the_model_is_slow_to_answer():
    with StandIn([{"delay": 60, "content": "too late"}]) as s:
        env = dict(os.environ, OPENAI_BASE_URL=s.url, CODECELL_MODEL="standin")
        p = subprocess.Popen([CODECELL, "agent", "q"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not s.requests:
            check(time.monotonic() < deadline and p.poll() is None, "no request came")
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        eq(p.returncode, 128 + signal.SIGTERM, err)
        check(b"stopped; the session is closed" in err, err)
        eq(out, b"")



@test
def a_session_the_policy_refuses_is_recorded_and_the_model_is_not_asked():
    """codecell agent --policy: the session is made through the engine's
    pipeline, so a refusal is said, recorded in the audit log, and comes
    before any request to the model."""
    d = tmpdir()
    pol = write(os.path.join(d, "p.ini"), "[default]\nlanguages = javascript\n")
    audit = os.path.join(d, "audit.jsonl")
    with StandIn(["<execute_python>\nprint(1)\n</execute_python>", "1"]) as s:
        r = agent(s, "--policy", pol, "--audit", audit, "q")
        eq(r.status, 125, r)
        check("rejected by policy" in r.stderr and "python" in r.stderr, r.stderr)
        eq(len(s.requests), 0, "the model was asked")
    recs = [json.loads(x) for x in open(audit)]
    eq([(x["tool"], x["decision"], x["rule"]) for x in recs],
       [("session_create", "rejected", "languages")], recs)


main()

"""codecell.Client against a live `codecell serve` (conftest.py starts it)."""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

import codecell
from conftest import CAREFUL_KEY, TOKEN

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_run_one_shot_output_in_order(client):
    r = client.run("import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')")
    assert r.ok and r.status == "ok" and r.exit_code == 0
    assert r.stdout == "a\nc\n" and r.stderr == "b\n"
    assert [(o.stream, o.text) for o in r.outputs] == [
        ("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")]


def test_run_other_language_and_limits(client):
    r = client.run("echo $((6*7))", "bash", memory="256M", cpus=0.5, timeout=20)
    assert r.ok and r.stdout == "42\n"
    with pytest.raises(TypeError, match="unknown argument 'memroy'"):
        client.run("1", memroy="256M")


def test_run_error_has_its_traceback(client):
    r = client.run("def f():\n    return 1/0\nf()")
    assert r.status == "error" and not r.ok
    assert isinstance(r.error, codecell.ExecutionError)
    assert r.error.name == "ZeroDivisionError" and r.error.value == "division by zero"
    assert "return 1/0" in r.error.traceback and "in f" in r.error.traceback
    with pytest.raises(codecell.ExecutionError) as e:
        r.raise_for_error()
    assert e.value is r.error


def test_session_keeps_state_and_returns_the_last_value(client):
    with client.create_session() as s:
        assert s.info.language == "python" and len(s.id) == 32
        s.execute("x = 6")
        r = s.execute("x * 7")
        assert r.text == "42" and r.main_result is not None and r.main_result.is_main_result
        assert r.execution_count == 2
        assert s.refresh().executions == 2


def test_session_error_traceback_on_the_result(client):
    with client.create_session() as s:
        errors = []
        r = s.execute("import json\njson.loads('{')", on_error=errors.append)
        assert r.status == "error" and r.error is not None
        assert r.error.name == "JSONDecodeError"
        assert "json.loads('{')" in r.error.traceback and "<cell-1>" in r.error.traceback
        assert [e.name for e in errors] == ["JSONDecodeError"]
        # the session goes on after an error
        assert s.execute("1 + 1").text == "2"


def test_streaming_callbacks_in_order(client):
    code = ("import sys\nimport matplotlib.pyplot as plt\nprint('one')\n"
            "print('two', file=sys.stderr)\nplt.plot([1, 3, 2])\nplt.show()\nprint('three')\n'end'")
    events = []
    with client.create_session() as s:
        r = s.execute(code, on_stdout=lambda t: events.append(("stdout", t)),
                      on_stderr=lambda t: events.append(("stderr", t)),
                      on_result=lambda x: events.append(("result", x)))
    assert r.ok
    out = "".join(t for k, t in events if k == "stdout")
    assert out == "one\nthree\n"
    assert "".join(t for k, t in events if k == "stderr") == "two\n"
    results = [x for k, x in events if k == "result"]
    assert [x.is_main_result for x in results] == [False, True]
    assert results[0].png.startswith(PNG_MAGIC) and results[1].text == "'end'"
    # the whole record, in order, is the result's: stdout and stderr come
    # from two pipes, so only `outputs` orders them against each other
    assert [(o.stream, o.text) for o in r.outputs] == [
        ("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\n")]
    assert [x.mimes for x in r.results] == [x.mimes for x in results]


def test_streaming_is_live(client):
    """on_stdout runs while the cell runs: the callback interrupts the cell
    that printed, which would otherwise sleep to its timeout. The interrupt
    is sent again until the cell ends: one sent in the first instant after
    the cell's first output is sometimes lost by the server (reported)."""
    with client.create_session() as s:
        seen, started, done = [], [], threading.Event()

        def keep_interrupting():
            while not done.wait(0.2):
                s.interrupt()

        def on_stdout(text):
            seen.append(text)
            if "ready" in "".join(seen) and not started:
                started.append(threading.Thread(target=keep_interrupting, daemon=True))
                started[0].start()

        try:
            r = s.execute("import time\nprint('ready', flush=True)\ntime.sleep(600)",
                          timeout=60, on_stdout=on_stdout)
        finally:
            done.set()
            for t in started:
                t.join(60)
        assert r.error is not None and r.error.name == "KeyboardInterrupt", r
        assert r.status == "error" and "wall_time" not in r.limits_hit


def test_plot_png_as_bytes_with_its_mime(client):
    with client.create_session() as s:
        r = s.execute("import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(2, 1))\n"
                      "plt.plot([0, 1])\nfig")
    assert r.ok
    pngs = [x for x in r.results if "image/png" in x.mimes]
    assert pngs, r.results
    png = pngs[-1].get("image/png")
    assert isinstance(png, bytes) and png.startswith(PNG_MAGIC) and png == pngs[-1].png
    width, height = struct.unpack(">II", png[16:24])
    assert width > 50 and height > 20
    assert isinstance(pngs[-1].get("text/plain"), str)


def test_files_round_trip(client):
    blob = bytes(range(256)) * 40
    with client.create_session() as s:
        w = s.files.write("data/blob.bin", blob)
        assert (w.path, w.size, w.replaced) == ("data/blob.bin", len(blob), False)
        assert s.files.write("data/blob.bin", blob).replaced is True
        assert s.files.read("data/blob.bin") == blob
        # what the client wrote, the code sees; what the code wrote, the client reads
        assert s.execute("len(open('data/blob.bin', 'rb').read())").text == str(len(blob))
        s.execute("open('from code #1.txt', 'w').write('héllo')")
        assert s.files.read_text("from code #1.txt") == "héllo"
        s.files.write("note.txt", "text é")
        assert s.files.read("note.txt") == "text é".encode()
        names = {e.name: e for e in s.files.list()}
        assert {"data", "from code #1.txt", "note.txt"} <= set(names)
        assert names["data"].type == "directory" and names["note.txt"].size == len("text é".encode())
        assert [(e.name, e.type, e.size) for e in s.files.list("data")] == [
            ("blob.bin", "file", len(blob))]
        with pytest.raises(IsADirectoryError):
            s.files.read("data")
        with pytest.raises(codecell.Conflict) as e:
            s.files.write("data", b"x")
        assert e.value.status == 409 and e.value.code == "is_a_directory"
        s.files.delete("data")
        with pytest.raises(codecell.NotFound) as e:
            s.files.read("data/blob.bin")
        assert e.value.code == "file_not_found"
        with pytest.raises(codecell.BadRequest):
            s.files.read("../etc/passwd")


def test_fork_is_isolated(client):
    with client.create_session() as parent:
        parent.execute("x = 1")
        parent.files.write("f.txt", "parent")
        with parent.fork() as child:
            assert child.id != parent.id and child.info.forked_from == parent.id
            assert child.execute("x").text == "1"
            assert child.files.read("f.txt") == b"parent"
            child.execute("x = 2")
            child.files.write("f.txt", "child")
            child.files.write("only-child.txt", "c")
            assert parent.execute("x").text == "1"
            assert parent.files.read("f.txt") == b"parent"
            assert "only-child.txt" not in {e.name for e in parent.files.list()}
            assert child.execute("x").text == "2"


def test_interrupt_restart_close(client):
    s = client.create_session()
    assert s.interrupt() is False
    s.execute("y = 5")
    s.files.write("kept.txt", "k")
    info = s.restart()
    assert info.id == s.id
    r = s.execute("y")
    assert r.error is not None and r.error.name == "NameError"
    assert s.files.read("kept.txt") == b"k"
    assert s.id in {i.id for i in client.list_sessions()}
    assert client.get_session(s.id).info.executions >= 1
    s.close()
    s.close()  # closing twice is not an error
    with pytest.raises(codecell.NotFound) as e:
        client.get_session(s.id)
    assert e.value.status == 404 and e.value.code == "session_not_found"
    assert "sessions end when deleted" in e.value.message


def test_context_manager_closes_the_session(client):
    with client.create_session() as s:
        sid = s.id
    with pytest.raises(codecell.NotFound):
        client.get_session(sid)


def test_policy_rejection_is_an_exception(client):
    with pytest.raises(codecell.PolicyRejected) as e:
        client.run("1", memory="2G")
    err = e.value
    assert isinstance(err, codecell.Forbidden) and isinstance(err, codecell.PolicyForbidden)
    assert err.status == 403 and err.code == "rejected" and err.rule == "limits.memory"
    assert "the most allowed is 1G" in err.message
    with client.create_session() as s:
        with pytest.raises(codecell.PayloadTooLarge) as e2:
            s.files.write("big.bin", b"x" * (257 * 1024))
        assert isinstance(e2.value, codecell.PolicyRejected)
        assert e2.value.status == 413 and e2.value.rule == "max_file"


def test_token_from_the_environment_and_401(server, monkeypatch):
    monkeypatch.delenv("CODECELL_TOKEN", raising=False)
    with pytest.raises(codecell.Unauthorized) as e:
        codecell.Client(server.url).list_sessions()
    assert e.value.status == 401 and e.value.code == "unauthorized"
    with pytest.raises(codecell.Unauthorized):
        codecell.Client(server.url, token="wrong-token-0123456789").list_sessions()
    monkeypatch.setenv("CODECELL_TOKEN", TOKEN)
    assert codecell.Client(server.url).run("print(7)").stdout == "7\n"


def test_bad_request(client):
    with pytest.raises(codecell.BadRequest) as e:
        client.run("1", "cobol")
    assert e.value.status == 400 and e.value.code == "invalid_value"
    with pytest.raises(codecell.BadRequest) as e:
        client.run("   ")
    assert e.value.code == "rejected" and not isinstance(e.value, codecell.PolicyRejected)


def test_too_many_sessions_is_429(server_one):
    cc = codecell.Client(server_one.url, token=TOKEN)
    with cc.create_session(timeout=10):
        with pytest.raises(codecell.RateLimited) as e:
            cc.create_session()
        assert e.value.status == 429 and e.value.code == "too_many_sessions"
        assert not isinstance(e.value, codecell.PolicyRejected)
    with cc.create_session() as s:  # the slot is free again
        assert s.execute("3").text == "3"


def test_approval_pending_then_approved(server, client):
    careful = codecell.Client(server.url, token=CAREFUL_KEY, respond_async=True)
    with careful.create_session() as s:
        s.files.write("doomed.txt", "bye")
        with pytest.raises(codecell.ApprovalPending) as e:
            s.files.delete("doomed.txt")
        aid = e.value.approval_id
        assert e.value.status == 202 and aid
        assert s.files.read("doomed.txt") == b"bye"
        pending = careful.get_approval(aid)
        assert pending.state == "pending" and pending.action == "delete_file"
        assert pending.arguments["path"] == "doomed.txt"
        # only the operator decides
        with pytest.raises(codecell.Forbidden):
            careful.decide_approval(aid, True)
        assert client.decide_approval(aid, True).state == "approved"
        assert careful.wait_for_approval(aid, timeout=60).state == "approved"
        s.files.delete("doomed.txt", approval_id=aid)
        with pytest.raises(codecell.NotFound):
            s.files.read("doomed.txt")
        with pytest.raises(codecell.Conflict):
            client.decide_approval(aid, False)


def test_held_call_waits_for_the_decision(server, client):
    """Without respond_async the call waits; denied, it is a PolicyRejected
    with rule 'approval'."""
    careful = codecell.Client(server.url, token=CAREFUL_KEY)
    with careful.create_session() as s:
        s.files.write("kept.txt", "k")
        box = {}

        def delete():
            try:
                s.files.delete("kept.txt")
            except codecell.APIError as e:
                box["error"] = e

        t = threading.Thread(target=delete)
        t.start()
        try:
            deadline = time.monotonic() + 60  # "never held", not a timing check
            held = []
            while not held and time.monotonic() < deadline:
                held = [a for a in client.list_approvals()
                        if a.state == "pending" and a.arguments.get("session") == s.id]
                time.sleep(0.05)
            assert held, "the delete was never held for approval"
            aid = held[0].id
            client.decide_approval(aid, False)
        finally:
            t.join(120)
        err = box["error"]
        assert isinstance(err, codecell.PolicyRejected) and err.status == 403
        assert err.rule == "approval"
        assert s.files.read("kept.txt") == b"k"


def test_tools(client):
    assert "sql" in {t.name for t in client.list_tools()}
    sql = [t for t in client.list_tools() if t.name == "sql"][0]
    assert "query" in sql.input_schema["required"]
    with client.create_session() as s:
        s.execute("import sqlite3\nc = sqlite3.connect('t.db')\n"
                  "c.execute('create table p (id integer, name text)')\n"
                  "c.execute(\"insert into p values (7, 'alice')\")\nc.commit()\nc.close()")
        r = client.call_tool("sql", {"database": "t.db", "query": "select id, name from p "
                                     "where id = ?", "params": [7]}, session_id=s.id)
        assert r["rows"] == [[7, "alice"]] and [c["name"] for c in r["columns"]] == ["id", "name"]
        bad = client.call_tool("sql", {"database": "t.db", "query": "select nope from p"},
                               session_id=s.id)
        assert bad["error"]["name"] == "SQLError"
    with pytest.raises(codecell.NotFound) as e:
        client.call_tool("nope", {})
    assert e.value.code == "tool_not_found"
    with pytest.raises(codecell.BadRequest):
        client.call_tool("sql", {"query": "select 1"})


def test_health(client):
    h = client.health()
    assert h["status"] in ("ok", "degraded") and "sessions" in h


def test_unreachable_server_is_a_transport_error():
    """A listener of the test's own that closes every connection at once."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4)
    lsock.settimeout(60)  # the thread ends even if the client never came

    def slam():
        try:
            conn, _ = lsock.accept()
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=slam)
    t.start()
    try:
        cc = codecell.Client("http://127.0.0.1:%d" % lsock.getsockname()[1], token="x", timeout=30)
        with pytest.raises(codecell.TransportError):
            cc.health()
    finally:
        lsock.close()
        t.join(30)
    with pytest.raises(ValueError, match="http:// or https://"):
        codecell.Client("127.0.0.1:8080")

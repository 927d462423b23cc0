"""codecell.AsyncClient against a live `codecell serve`. Each test runs its
own event loop (asyncio.run), so pytest needs no plugin."""
from __future__ import annotations

import asyncio

import pytest

import codecell
from conftest import CAREFUL_KEY, TOKEN

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(coro):
    return asyncio.run(coro)


def test_async_run_and_error_traceback(aclient):
    async def go():
        r = await aclient.run("import sys\nprint('a')\nprint('b', file=sys.stderr)")
        assert r.ok and r.stdout == "a\n" and r.stderr == "b\n"
        r = await aclient.run("raise ValueError('bad input')")
        assert r.status == "error" and r.error.name == "ValueError"
        assert r.error.value == "bad input" and "raise ValueError" in r.error.traceback
        r = await aclient.run("console.log(6 * 7)", "javascript")
        assert r.stdout == "42\n"
    run(go())


def test_async_session_streaming_png_and_order(aclient):
    async def go():
        events = []

        async def on_stdout(t):
            await asyncio.sleep(0)
            events.append(("stdout", t))

        async with aclient.create_session() as s:
            r = await s.execute(
                "import sys\nimport matplotlib.pyplot as plt\nprint('one')\n"
                "print('two', file=sys.stderr)\nplt.plot([1, 2])\nplt.show()\nprint('three')\n6*7",
                on_stdout=on_stdout, on_stderr=lambda t: events.append(("stderr", t)),
                on_result=lambda x: events.append(("result", x)))
            sid = s.id
        assert r.ok and r.text == "42"
        assert "".join(t for k, t in events if k == "stdout") == "one\nthree\n"
        assert "".join(t for k, t in events if k == "stderr") == "two\n"
        results = [x for k, x in events if k == "result"]
        assert [x.is_main_result for x in results] == [False, True]
        assert results[0].png.startswith(PNG_MAGIC)
        assert results[0].get("image/png") == r.results[0].png
        assert [(o.stream, o.text) for o in r.outputs] == [
            ("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\n")]
        # `async with` closed it
        with pytest.raises(codecell.NotFound):
            await aclient.get_session(sid)
    run(go())


def test_async_streaming_is_live(aclient):
    """As test_client.test_streaming_is_live: the callback, run while the
    cell runs, interrupts it (again until it ends)."""
    async def go():
        s = await aclient.create_session()
        irq, seen = [], []

        async def keep_interrupting():
            while True:
                await s.interrupt()
                await asyncio.sleep(0.2)

        async def on_stdout(t):
            seen.append(t)
            if "ready" in "".join(seen) and not irq:
                irq.append(asyncio.ensure_future(keep_interrupting()))

        try:
            r = await s.execute("import time\nprint('ready', flush=True)\ntime.sleep(600)",
                                timeout=60, on_stdout=on_stdout)
            assert r.error is not None and r.error.name == "KeyboardInterrupt"
            assert "wall_time" not in r.limits_hit
        finally:
            for t in irq:
                t.cancel()
            await asyncio.gather(*irq, return_exceptions=True)
            await s.close()
    run(go())


def test_async_files_fork_restart(aclient):
    async def go():
        blob = bytes(range(256)) * 800  # 200K: several reads of the answer
        async with aclient.create_session() as s:
            w = await s.files.write("d/b.bin", blob)
            assert w.size == len(blob) and not w.replaced
            assert await s.files.read("d/b.bin") == blob
            assert [e.name for e in await s.files.list("d")] == ["b.bin"]
            await s.execute("v = 'parent'")
            child = await s.fork()
            try:
                assert child.info.forked_from == s.id
                await child.execute("v = 'child'")
                await child.files.write("d/b.bin", b"child")
                assert (await s.execute("v")).text == "'parent'"
                assert await s.files.read("d/b.bin") == blob
                assert (await child.execute("v")).text == "'child'"
            finally:
                await child.close()
            await s.restart()
            assert (await s.execute("v")).error.name == "NameError"
            await s.files.write("d/t.txt", "héllo")
            assert await s.files.read_text("d/t.txt") == "héllo"
            await s.files.delete("d")
            with pytest.raises(codecell.NotFound):
                await s.files.read("d/b.bin")
            with pytest.raises(IsADirectoryError):
                await s.files.read("")
    run(go())


def test_async_errors_as_exceptions(server, aclient):
    async def go():
        with pytest.raises(codecell.PolicyRejected) as e:
            await aclient.run("1", memory="4G")
        assert e.value.status == 403 and e.value.rule == "limits.memory"
        with pytest.raises(codecell.NotFound):
            await aclient.get_session("0" * 32)
        with pytest.raises(codecell.Unauthorized):
            await codecell.AsyncClient(server.url, token="nope-nope-nope-nope").list_sessions()
        careful = codecell.AsyncClient(server.url, token=CAREFUL_KEY, respond_async=True)
        async with careful.create_session() as s:
            await s.files.write("x.txt", "x")
            with pytest.raises(codecell.ApprovalPending) as p:
                await s.files.delete("x.txt")
            aid = p.value.approval_id
            assert (await aclient.decide_approval(aid, True)).state == "approved"
            assert (await careful.wait_for_approval(aid, timeout=60)).state == "approved"
            await s.files.delete("x.txt", approval_id=aid)
            assert [e.name for e in await s.files.list()] == []
    run(go())


def test_async_tools(aclient):
    async def go():
        assert "sql" in [t.name for t in await aclient.list_tools()]
        async with aclient.create_session() as s:
            await s.execute("import sqlite3\nc = sqlite3.connect('a.db')\n"
                            "c.execute('create table t (n integer)')\n"
                            "c.executemany('insert into t values (?)', [(1,), (2,)])\nc.commit()")
            r = await aclient.call_tool("sql", {"database": "a.db",
                                                "query": "select sum(n) as s from t"},
                                        session_id=s.id)
            assert r["rows"] == [[3]]
    run(go())


def test_async_client_reads_the_token_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("CODECELL_TOKEN", TOKEN)
    sessions = run(codecell.AsyncClient(server.url).list_sessions())
    assert isinstance(sessions, list)

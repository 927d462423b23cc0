"""The sql tool (engine/tool_sql.c) through every door: the HTTP API
(GET /v1/tools, POST /v1/tools/sql), MCP (tools/list, tools/call) and
`codecell agent` against a stand-in model.  Against a real PostgreSQL the
test starts (Debian's initdb into a temporary directory, a unix socket
only, run as nobody, stopped and removed at the end) and SQLite files in
a session's workspace: injection through parameters, texts of several
statements, writes under a read-only policy, a query that runs forever,
results over the row and byte caps, symlinks out of the workspace, and a
password that must appear nowhere."""
import atexit
import http.client
import json
import os
import pwd
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, Serve, check, codecell, eq, main, test  # noqa: E402
from llm_standin import StandIn, tool_call  # noqa: E402



class Mcp:
    """A live `codecell mcp`, initialized; one JSON-RPC line each way."""

    def __init__(self, *args):
        self.p = subprocess.Popen([CODECELL, "mcp"] + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.next_id = 0
        self.stderr = ""
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "1"}})
        check("result" in r, r)
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                           + "\n")

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        check(line, "codecell mcp closed stdout")
        r = json.loads(line)
        eq(r.get("id"), self.next_id, r)
        return r

    def call(self, tool, **arguments):
        r = self.request("tools/call", {"name": tool, "arguments": arguments})
        check("result" in r, r)
        return r["result"]

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        self.stderr = self.p.stderr.read()
        self.p.stdout.close()
        return rc

PG_BIN = "/usr/lib/postgresql/15/bin"
PASSWORD = "Pw-s3cret-7731"       # the policy's; must never come back
WRONG = "Wr0ng-s3cret-9924"      # a connection that fails must not quote it


class Postgres:
    """A PostgreSQL server of this test's own: a temporary directory owned
    by nobody (or the caller when not root), a unix socket in it, no TCP."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cc-pg-")
        self.port = random.randint(20000, 60000)  # names the socket file only
        self.proc = None
        self.pid = None
        root = os.geteuid() == 0
        if root:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.dir, nobody.pw_uid, nobody.pw_gid)
        pw = os.path.join(self.dir, "pw")
        with open(pw, "w") as f:
            f.write(PASSWORD + "\n")
        if root:
            os.chown(pw, nobody.pw_uid, nobody.pw_gid)
        self.as_user = ["runuser", "-u", "nobody", "--"] if root else []
        subprocess.run(self.as_user + [PG_BIN + "/initdb", "-D", self.dir + "/data", "-U",
                                       "postgres", "--auth=scram-sha-256", "--pwfile=" + pw,
                                       "-E", "UTF8", "--no-sync", "-N"],
                       check=True, capture_output=True, cwd="/", timeout=120)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(self.as_user + [PG_BIN + "/postgres", "-D", self.dir + "/data",
                                                     "-k", self.dir, "-c", "listen_addresses=",
                                                     "-p", str(self.port), "-c", "fsync=off"],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd="/")
        sock = os.path.join(self.dir, ".s.PGSQL.%d" % self.port)
        deadline = time.monotonic() + 60
        while not self.ready(sock):
            check(time.monotonic() < deadline and self.proc.poll() is None,
                  "postgres did not start: " + open(self.log.name).read()[-2000:])
            time.sleep(0.1)
        with open(self.dir + "/data/postmaster.pid") as f:
            self.pid = int(f.readline())
        self.psql("CREATE TABLE people (id int, name text, photo bytea, score float8, "
                  "active bool, info jsonb, balance numeric);"
                  "INSERT INTO people VALUES (1, 'alice', '\\x0102ff', 1.5, true, '{\"k\": [1]}', 10.25),"
                  " (2, 'bob', NULL, NULL, false, NULL, NULL);")
        self.psql("CREATE DATABASE latin ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' "
                  "TEMPLATE template0")
        # the tool connects as an ordinary role; postgres (a superuser),
        # runner (may run programs on this host) and maker (CREATEROLE,
        # which before PostgreSQL 16 grants itself any role, that one
        # too) are refused by default
        self.psql("CREATE ROLE agent LOGIN PASSWORD '%s';"
                  "GRANT SELECT, INSERT, DELETE ON people TO agent;"
                  "CREATE ROLE runner LOGIN PASSWORD '%s';"
                  "GRANT pg_execute_server_program TO runner;"
                  "CREATE ROLE maker LOGIN CREATEROLE PASSWORD '%s'"
                  % (PASSWORD, PASSWORD, PASSWORD))

    def ready(self, sock):
        if not os.path.exists(sock):
            return False
        r = subprocess.run(["psql", "-h", self.dir, "-p", str(self.port), "-U", "postgres",
                            "-Atc", "SELECT 1", "postgres"], capture_output=True, text=True,
                           env=dict(os.environ, PGPASSWORD=PASSWORD), timeout=30)
        return r.returncode == 0

    def psql(self, sql):
        r = subprocess.run(["psql", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p", str(self.port),
                            "-U", "postgres", "-Atc", sql, "postgres"], capture_output=True,
                           text=True, env=dict(os.environ, PGPASSWORD=PASSWORD), timeout=60)
        check(r.returncode == 0, "psql %r: %r" % (sql, r.stderr))
        return r.stdout

    def conninfo(self, password=PASSWORD, user="agent"):
        return "host=%s port=%d dbname=postgres user=%s password=%s" % (
            self.dir, self.port, user, password)

    def backends(self, where):
        """How many backends but psql's own match the condition."""
        return int(self.psql("SELECT count(*) FROM pg_stat_activity WHERE (%s) AND "
                             "pid <> pg_backend_pid()" % where).strip())

    def stop(self):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGINT)  # fast shutdown
            except ProcessLookupError:
                pass
        if self.proc:
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGQUIT)
                self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_pg = None


def pg():
    """The server, started by the first test that needs it."""
    global _pg
    if _pg is None:
        _pg = Postgres()
        atexit.register(_pg.stop)
    return _pg


def have_postgres():
    return os.path.exists(PG_BIN + "/initdb") and shutil.which("psql")


def policy_file(text):
    fd, path = tempfile.mkstemp(prefix="cc-sql-", suffix=".ini")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


def audit_path():
    """A path for an audit log, removed at exit whatever happens."""
    path = tempfile.mktemp(prefix="cc-sql-audit-")
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


def pg_policy(extra=""):
    p = pg()
    return policy_file("""[default]
tools = sql
sql.databases = pg, pgw, slow, small, bad, latin, long
%s
[database pg]
driver = postgresql
connection = %s
max_rows = 5
max_bytes = 4K
[database pgw]
driver = postgresql
connection = postgresql://agent:%s@/postgres?host=%s&port=%d
writes = on
[database slow]
driver = postgresql
connection = %s
timeout = 1s
[database small]
driver = postgresql
connection = %s
max_bytes = 2K
[database secret]
driver = postgresql
connection = %s
[database bad]
driver = postgresql
connection = %s
[database latin]
driver = postgresql
connection = %s
[database long]
driver = postgresql
connection = %s
timeout = 1h
""" % (extra, p.conninfo(), PASSWORD, p.dir, p.port, p.conninfo(), p.conninfo(), p.conninfo(),
       p.conninfo(WRONG), p.conninfo().replace("dbname=postgres", "dbname=latin"), p.conninfo()))


def sql(srv, database, query, params=None, session=None, status=200):
    args = {"database": database, "query": query}
    if params is not None:
        args["params"] = params
    body = {"arguments": args}
    if session:
        body["session_id"] = session
    st, j = srv.post("/v1/tools/sql", body)
    eq(st, status, "%s %r: %r" % (database, query, j))
    return j


def sql_error(j, sqlstate=None):
    check("error" in j and j["error"]["name"] == "SQLError", j)
    if sqlstate:
        eq(j["error"]["sqlstate"], sqlstate, j)
    return j["error"]["value"]


def skip_without_postgres(fn):
    def wrapper():
        if not have_postgres():
            print("# skip %s: %s/initdb or psql is missing (apt-get install postgresql)"
                  % (fn.__name__, PG_BIN))
            return
        fn()
    wrapper.__name__ = fn.__name__
    return wrapper


# ---- the framework ----

@test
def no_tools_without_a_policy_that_enables_them():
    srv = Serve()
    try:
        st, j = srv.request("GET", "/v1/tools")
        eq((st, j), (200, {"tools": []}))
        st, j = srv.post("/v1/tools/sql", {"arguments": {"database": "x", "query": "SELECT 1"}})
        eq(st, 403, j)
        check("rule 'tools'" in j["error"]["message"], j)
        st, j = srv.post("/v1/tools/nope", {"arguments": {}})
        eq(st, 404, j)
    finally:
        srv.stop()


@test
def the_api_lists_the_tool_and_checks_its_arguments():
    pol = policy_file("[default]\ntools = sql\n")
    srv = Serve("--policy", pol)
    try:
        st, j = srv.request("GET", "/v1/tools")
        eq(st, 200)
        eq([t["name"] for t in j["tools"]], ["sql"])
        eq(j["tools"][0]["input_schema"]["required"], ["database", "query"])
        for args, want in (({"query": "SELECT 1"}, "needs the argument 'database'"),
                           ({"database": "x", "query": 5}, "wrong type"),
                           ({"database": "x", "query": "q", "extra": 1}, "unknown argument 'extra'")):
            st, j = srv.post("/v1/tools/sql", {"arguments": args})
            eq(st, 400, j)
            check(want in j["error"]["message"], j)
        # no session: a path is no database
        st, j = srv.post("/v1/tools/sql", {"arguments": {"database": "data.db", "query": "SELECT 1"}})
        eq(st, 403, j)
        check("give session_id" in j["error"]["message"], j)
    finally:
        srv.stop()


# ---- PostgreSQL ----

@test
@skip_without_postgres
def postgres_values_are_typed_and_parameters_are_never_sql():
    audit = audit_path()
    srv = Serve("--policy", pg_policy(), "--audit", audit)
    try:
        j = sql(srv, "pg", "SELECT * FROM people WHERE id >= $1 ORDER BY id", [0])
        eq([c["name"] for c in j["columns"]],
           ["id", "name", "photo", "score", "active", "info", "balance"])
        eq([c["type"] for c in j["columns"]][:5], ["integer", "text", "bytea", "double precision",
                                                   "boolean"])
        eq(j["rows"], [[1, "alice", {"base64": "AQL/"}, 1.5, True, {"k": [1]}, "10.25"],
                       [2, "bob", None, None, False, None, None]])
        eq(j["truncated"], {"rows": False, "bytes": False})
        # the classic injections, as values: they match nothing and run nothing
        for evil in ("alice' OR '1'='1", "x'; DROP TABLE people; --", "1 OR 1=1"):
            j = sql(srv, "pg", "SELECT id FROM people WHERE name = $1", [evil])
            eq(j["rows"], [], evil)
        j = sql(srv, "pg", "SELECT name FROM people WHERE name = $1", ["alice"])
        eq(j["rows"], [["alice"]])
        # a LATIN1 database's text comes back as text (client_encoding UTF8)
        eq(sql(srv, "latin", "SELECT $1::text || chr(233)", ["caf"])["rows"], [["café"]])
        eq(pg().psql("SELECT count(*) FROM people").strip(), "2")
        # PostgreSQL has no named parameters
        st, j = srv.post("/v1/tools/sql", {"arguments": {"database": "pg", "query": "SELECT $1",
                                                         "params": {"a": 1}}})
        eq(st, 400, j)
        # the server's /mcp: the same tool, through the same protocol.c
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        c.request("POST", "/mcp", body=json.dumps(init), headers=h)
        r = c.getresponse()
        r.read()
        h.update({"Mcp-Session-Id": r.getheader("Mcp-Session-Id"),
                  "MCP-Protocol-Version": "2025-06-18"})
        c.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                   "params": {"name": "sql", "arguments": {
                                                       "database": "pg", "query": "SELECT 40 + $1",
                                                       "params": [2]}}}), headers=h)
        j = json.loads(c.getresponse().read())
        c.close()
        eq(j["result"]["structuredContent"]["rows"], [[42]], j)
    finally:
        # 0: a clean exit (under ASan, no leak either)
        eq(srv.stop(), 0, srv.log())
    lines = [json.loads(x) for x in open(audit)]
    os.unlink(audit)
    check(lines and all(x["tool"] == "sql" for x in lines), lines)
    eq([x["door"] for x in lines][-2:], ["api", "mcp"])
    eq(lines[0]["arguments"]["database"], "pg")
    eq(lines[0]["status"], "ok")


@test
@skip_without_postgres
def postgres_refuses_a_second_statement_and_writes_when_read_only():
    srv = Serve("--policy", pg_policy())
    try:
        for text in ("SELECT 1; DROP TABLE people", "SELECT 1; SELECT 2",
                     "DELETE FROM people; SELECT 1"):
            sql_error(sql(srv, "pg", text), "42601")
        sql_error(sql(srv, "pg", "DELETE FROM people"), "25006")
        sql_error(sql(srv, "pg", "CREATE TABLE t2 (x int)"), "25006")
        # a writable CTE is a write too
        sql_error(sql(srv, "pg", "WITH d AS (DELETE FROM people RETURNING id) SELECT * FROM d"),
                  "25006")
        eq(pg().psql("SELECT count(*) FROM people").strip(), "2")
        # the same statement where the policy allows writes
        j = sql(srv, "pgw", "INSERT INTO people (id, name) VALUES ($1, $2)", [3, "carol'); --"])
        eq(j["rows_changed"], 1, j)
        eq(pg().psql("SELECT name FROM people WHERE id = 3").strip(), "carol'); --")
        sql(srv, "pgw", "DELETE FROM people WHERE id = $1", [3])
        sql_error(sql(srv, "pg", "SELEC 1"), "42601")
        # COPY would leave the connection in a state libpq never leaves
        sql_error(sql(srv, "pg", "COPY people TO STDOUT"), "0A000")
        sql_error(sql(srv, "pgw", "COPY people FROM STDIN"), "0A000")
        eq(sql(srv, "pg", "SELECT count(*) FROM people")["rows"], [[2]])
        # a notice goes nowhere (it went to the server's stderr)
        sql(srv, "pgw", "DO $$ BEGIN RAISE NOTICE 'noticed-by-codecell'; END $$")
    finally:
        srv.stop()
    check("noticed-by-codecell" not in srv.log(), srv.log())


@test
@skip_without_postgres
def postgres_caps_time_rows_and_bytes():
    srv = Serve("--policy", pg_policy())
    try:
        j = sql(srv, "slow", "SELECT pg_sleep(600)")
        sql_error(j, "57014")
        eq(j["truncated"], {"time": True})
        j = sql(srv, "slow", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                             "SELECT count(*) FROM c")
        sql_error(j, "57014")
        j = sql(srv, "pg", "SELECT g FROM generate_series(1, 10000000) g")
        eq(j["rows"], [[1], [2], [3], [4], [5]])
        eq(j["truncated"], {"rows": True, "bytes": False})
        j = sql(srv, "small", "SELECT repeat('x', 500) FROM generate_series(1, 100)")
        eq(j["truncated"], {"rows": False, "bytes": True})
        check(0 < len(j["rows"]) < 5, len(j["rows"]))
        eq(j["limits"]["max_bytes"], 2048)
        # a client that hangs up stops its query (its time cap is an hour)
        sleeping = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(3600)%'"
        body = json.dumps({"arguments": {"database": "long", "query": "SELECT pg_sleep(3600) -- x"}})
        conn = socket.create_connection(("127.0.0.1", srv.port))
        conn.sendall(("POST /v1/tools/sql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
        deadline = time.monotonic() + 60
        while pg().psql(sleeping).strip() != "1":
            check(time.monotonic() < deadline, "the query never started")
            time.sleep(0.1)
        conn.close()
        while pg().psql(sleeping).strip() != "0":
            check(time.monotonic() < deadline, "the query went on after its client hung up")
            time.sleep(0.2)
        # the server is fine afterwards
        eq(sql(srv, "pg", "SELECT 1 AS one")["rows"], [[1]])
    finally:
        srv.stop()


@test
@skip_without_postgres
def postgres_a_statement_that_catches_its_cancel_is_gone_at_the_cap():
    """A DO block that catches query_canceled goes on after the statement
    timeout and the client's cancel: its backend is terminated, and gone
    when the call returns, every time."""
    pol = policy_file("[default]\ntools = sql\nsql.databases = capped\n"
                      "[database capped]\ndriver = postgresql\nconnection = %s\ntimeout = 1s\n"
                      % pg().conninfo())
    srv = Serve("--policy", pol)
    try:
        for i in range(3):
            j = sql(srv, "capped", "DO $$ BEGIN LOOP BEGIN PERFORM pg_sleep(3600); "
                                   "EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$ "
                                   "-- cc-outlives-%d" % i)
            sql_error(j, "57014")
            eq(j["truncated"], {"time": True})
            eq(pg().backends("query LIKE '%cc-outlives-%'"), 0, "after call %d" % (i + 1))
        # the role's connection slots are all there
        eq(sql(srv, "capped", "SELECT 1")["rows"], [[1]])
    finally:
        srv.stop()


@test
@skip_without_postgres
def postgres_holds_at_most_max_connections_backends():
    pol = policy_file("[default]\ntools = sql\nsql.databases = few\n"
                      "[database few]\ndriver = postgresql\nconnection = %s application_name=cc-few\n"
                      "timeout = 1h\nmax_connections = 2\n" % pg().conninfo())
    srv = Serve("--policy", pol)
    conns = []
    try:
        body = json.dumps({"arguments": {"database": "few", "query": "SELECT pg_sleep(3600)"}})
        for _ in range(2):
            c = socket.create_connection(("127.0.0.1", srv.port))
            c.sendall(("POST /v1/tools/sql HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                       "application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
            conns.append(c)
        few = "application_name = 'cc-few'"
        deadline = time.monotonic() + 60
        while pg().backends(few + " AND query LIKE 'SELECT pg_sleep%'") != 2:
            check(time.monotonic() < deadline, "the two queries never started")
            time.sleep(0.1)
        # a third is refused, and opens no backend
        j = sql(srv, "few", "SELECT 1")
        check("max_connections" in sql_error(j, "53300"), j)
        eq(pg().backends(few), 2)
        for c in conns:
            c.close()
        while pg().backends(few) != 0:
            check(time.monotonic() < deadline, "the queries went on after their clients hung up")
            time.sleep(0.1)
        # the backends are gone a moment before their calls give the slots
        # back (the call verifies, closes its second connection, then
        # returns the slot): a call made in that moment is refused, later
        # ones are not
        while True:
            j = sql(srv, "few", "SELECT 1")
            if "rows" in j or time.monotonic() >= deadline:
                break
            check("max_connections" in sql_error(j, "53300"), j)
            time.sleep(0.1)
        eq(j.get("rows"), [[1]], j)
    finally:
        for c in conns:
            c.close()
        srv.stop()


@test
@skip_without_postgres
def postgres_refuses_a_role_that_can_run_programs_on_the_database_host():
    copied = os.path.join(pg().dir, "copied")
    pol = policy_file("[default]\ntools = sql\nsql.databases = su, runner, maker, suok\n"
                      "[database su]\ndriver = postgresql\nconnection = %s\n"
                      "[database runner]\ndriver = postgresql\nconnection = %s\n"
                      "[database maker]\ndriver = postgresql\nconnection = %s\n"
                      "[database suok]\ndriver = postgresql\nconnection = %s\nsuperuser = on\n"
                      % (pg().conninfo(user="postgres"), pg().conninfo(user="runner"),
                         pg().conninfo(user="maker"),
                         pg().conninfo(user="postgres")))
    srv = Serve("--policy", pol)
    try:
        for db in ("maker", "su", "runner"):
            for q in ("COPY (SELECT 'x') TO '%s'" % copied,
                      "COPY (SELECT 'x') TO PROGRAM 'touch %s'" % copied, "SELECT 1"):
                j = sql(srv, db, q)
                msg = sql_error(j, "42501")
                check("superuser = on" in msg and "rows" not in j, (db, q, j))
            check(not os.path.exists(copied), "COPY ran as %s" % db)
        check("pg_execute_server_program" in msg, msg)
        # where the policy says so, the role is used as it is
        eq(sql(srv, "suok", "SELECT current_user::text")["rows"], [["postgres"]])
    finally:
        srv.stop()


@test
@skip_without_postgres
def the_password_appears_in_no_output_and_no_audit_line():
    audit = audit_path()
    srv = Serve("--policy", pg_policy(), "--audit", audit)
    seen = []
    try:
        seen.append(json.dumps(srv.request("GET", "/v1/tools")[1]))
        j = sql(srv, "bad", "SELECT 1")
        msg = sql_error(j, "08001")
        check("password authentication failed" in msg, msg)
        seen.append(json.dumps(j))
        # a database the policy does not name
        seen.append(json.dumps(sql(srv, "secret", "SELECT 1", status=403)))
        for q in ("SELECT current_setting('password')", "SHOW ALL", "SELEC 1",
                  "SELECT pg_sleep(1); x"):
            seen.append(json.dumps(sql(srv, "pg", q)))
        seen.append(json.dumps(sql(srv, "pgw", "SELECT $1::text", ["hello"])))
    finally:
        srv.stop()
        seen.append(srv.log())
    seen.append(open(audit).read())
    os.unlink(audit)
    text = "\n".join(seen)
    check(PASSWORD not in text, "the password leaked")
    check(WRONG not in text, "the wrong password leaked")
    # nor the socket's path on this host (libpq names it in its errors)
    check(pg().dir not in text and ".s.PGSQL" not in text, "a host path leaked")
    check("hello" in text)  # the audit log does record arguments


@test
@skip_without_postgres
def mcp_lists_the_tool_and_calls_it():
    m = Mcp("--policy", pg_policy())
    try:
        r = m.request("tools/list")
        tools = {t["name"]: t for t in r["result"]["tools"]}
        check("run_code" in tools and "sql" in tools, list(tools))
        eq(tools["sql"]["inputSchema"]["required"], ["database", "query"])
        r = m.call("sql", database="pg", query="SELECT name FROM people WHERE id = $1", params=[2])
        eq(r["isError"], False, r)
        eq(r["structuredContent"]["rows"], [["bob"]])
        eq(json.loads(r["content"][0]["text"])["rows"], [["bob"]])
        r = m.call("sql", database="pg", query="DELETE FROM people")
        eq(r["isError"], True, r)
        eq(r["structuredContent"]["error"]["sqlstate"], "25006")
        r = m.call("sql", database="secret", query="SELECT 1")
        eq(r["isError"], True, r)
        check("does not allow database 'secret'" in r["content"][0]["text"], r)
    finally:
        eq(m.close(), 0)
    check(PASSWORD not in m.stderr)


@test
@skip_without_postgres
def mcp_without_the_tool_in_its_policy_lists_none():
    m = Mcp()
    try:
        r = m.request("tools/list")
        check("sql" not in [t["name"] for t in r["result"]["tools"]], r)
        r = m.call("sql", database="pg", query="SELECT 1")
        eq(r["isError"], True, r)
        check("rule 'tools'" in r["content"][0]["text"], r)
    finally:
        m.close()


@test
@skip_without_postgres
def the_agent_is_offered_the_tool_and_reads_its_result():
    call = tool_call(None, name="sql", call_id="call_sql",
                     raw_args=json.dumps({"database": "pg", "query":
                                          "SELECT name FROM people WHERE id = $1", "params": [1]}))
    with StandIn([{"content": None, "tool_calls": [call], "finish_reason": "tool_calls"},
                  "The first person is alice."]) as s:
        e = dict(os.environ, OPENAI_BASE_URL=s.url, CODECELL_MODEL="standin")
        e.pop("OPENAI_API_KEY", None)
        audit = audit_path()
        r = codecell("agent", "--policy", pg_policy(), "--audit", audit, "--json", "-v",
                     "who is first?", env=e, timeout=120)
        eq(r.status, 0, r)
        check("step 1: the sql tool" in r.stderr, r.stderr)
        eq(r.json["answer"], "The first person is alice.")
        names = [t["function"]["name"] for t in s.requests[0]["tools"]]
        eq(names, ["execute_python", "sql"])
        msg = s.requests[1]["messages"][-1]
        eq((msg["role"], msg["tool_call_id"]), ("tool", "call_sql"))
        check('"rows":[["alice"]]' in msg["content"], msg)
        eq(r.json["steps"][0]["tool"], "sql")
        lines = [json.loads(x) for x in open(audit).read().splitlines()]
        os.unlink(audit)
        # the session's start and end are recorded around it
        eq([(x["tool"], x["door"], x["status"]) for x in lines],
           [("session_create", "cli", "ok"), ("sql", "cli", "ok"),
            ("session_close", "cli", "ok")], lines)
        check(PASSWORD not in r.stdout + r.stderr + json.dumps(s.requests))


# ---- SQLite in a session's workspace ----

def make_db(srv, sid, name="data.db"):
    srv.execute(sid, "import sqlite3\n"
                     "c = sqlite3.connect(%r)\n"
                     "c.executescript(\"CREATE TABLE t (id INTEGER, name TEXT, b BLOB, f REAL);"
                     "INSERT INTO t VALUES (1, 'alice', x'00ff', 0.5), (2, 'bob', NULL, NULL)\")\n"
                     "c.commit(); c.close()" % name)


@test
def sqlite_in_the_workspace_is_read_only_single_statement_and_bound():
    host = tempfile.mkdtemp(prefix="cc-sql-host-")
    hostdb = os.path.join(host, "host.db")
    c = sqlite3.connect(hostdb)
    c.execute("CREATE TABLE secret (v TEXT)")
    c.execute("INSERT INTO secret VALUES ('host-only')")
    c.commit()
    c.close()
    pol = policy_file("[default]\ntools = sql\nsql.databases = slow\n[database slow]\n"
                      "driver = sqlite\nconnection = %s\ntimeout = 1s\n" % hostdb)
    srv = Serve("--policy", pol)
    try:
        sid = srv.session()
        make_db(srv, sid)
        j = sql(srv, "data.db", "SELECT * FROM t WHERE id >= ? ORDER BY id", [0], session=sid)
        eq(j["columns"], [{"name": "id", "type": "INTEGER"}, {"name": "name", "type": "TEXT"},
                          {"name": "b", "type": "BLOB"}, {"name": "f", "type": "REAL"}])
        eq(j["rows"], [[1, "alice", {"base64": "AP8="}, 0.5], [2, "bob", None, None]])
        eq(sql(srv, "/home/user/data.db", "SELECT name FROM t WHERE name = :n", {"n": "bob"},
               session=sid)["rows"], [["bob"]])
        # session_id among the arguments, as MCP takes it
        st, j = srv.post("/v1/tools/sql", {"arguments": {"database": "data.db", "session_id": sid,
                                                         "query": "SELECT count(*) FROM t"}})
        eq((st, j.get("rows")), (200, [[2]]), j)
        for evil in ("alice' OR '1'='1", "x'; DELETE FROM t; --"):
            eq(sql(srv, "data.db", "SELECT id FROM t WHERE name = ?", [evil], session=sid)["rows"], [])
        check("more than one statement" in sql_error(
            sql(srv, "data.db", "SELECT 1; DELETE FROM t", session=sid)))
        for text in ("DELETE FROM t", "INSERT INTO t (id) VALUES (3)", "DROP TABLE t"):
            check("read-only" in sql_error(sql(srv, "data.db", text, session=sid)), text)
        check("ATTACH" in sql_error(sql(srv, "data.db", "ATTACH '%s' AS h" % hostdb, session=sid)))
        sql_error(sql(srv, "data.db", "VACUUM INTO '%s/copy.db'" % host, session=sid))
        check(not os.path.exists(host + "/copy.db"), "VACUUM INTO wrote a host file")
        eq(srv.execute(sid, "import sqlite3; sqlite3.connect('data.db').execute("
                            "'SELECT count(*) FROM t').fetchone()[0]"), "2")
        # symlinks out of the workspace: absolute, relative, through a directory
        srv.execute(sid, "import os\nos.symlink(%r, 'abs.db')\nos.symlink('../../../../../../..%s', "
                         "'rel.db')\nos.symlink(%r, 'dir')" % (hostdb, hostdb, host))
        for path in ("abs.db", "rel.db", "dir/host.db", "../host.db"):
            st, j = srv.post("/v1/tools/sql", {"arguments": {"database": path,
                                                             "query": "SELECT * FROM secret"},
                                               "session_id": sid})
            eq(st, 400, (path, j))
            check("host-only" not in json.dumps(j), j)
        # a FIFO is not opened (it would block)
        srv.execute(sid, "import os; os.mkfifo('pipe.db')")
        st, j = srv.post("/v1/tools/sql", {"arguments": {"database": "pipe.db", "query": "SELECT 1"},
                                           "session_id": sid})
        eq(st, 400, j)
        # the time cap, on a named SQLite database
        j = sql(srv, "slow", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                             "SELECT count(*) FROM c")
        sql_error(j, "57014")
        eq(j["truncated"], {"time": True})
    finally:
        srv.stop()
        shutil.rmtree(host)


@test
def sqlite_writes_where_the_policy_allows_them_and_caps_rows_and_bytes():
    pol = policy_file("[default]\ntools = sql\nsql.writes = on\n")
    srv = Serve("--policy", pol)
    try:
        sid = srv.session()
        make_db(srv, sid)
        j = sql(srv, "data.db", "INSERT INTO t (id, name) VALUES (?, ?)", [3, "carol"], session=sid)
        eq(j["rows_changed"], 1, j)
        eq(srv.execute(sid, "import sqlite3; sqlite3.connect('data.db').execute("
                            "'SELECT name FROM t WHERE id = 3').fetchone()[0]"), "'carol'")
        check("transactions" in sql_error(sql(srv, "data.db", "BEGIN", session=sid)))
        host = tempfile.mkdtemp(prefix="cc-sql-host-")
        sql_error(sql(srv, "data.db", "VACUUM INTO '%s/copy.db'" % host, session=sid))
        check(not os.path.exists(host + "/copy.db"), "VACUUM INTO wrote a host file")
        os.rmdir(host)
        j = sql(srv, "data.db", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                                "LIMIT 5000) SELECT x FROM c", session=sid)
        eq(len(j["rows"]), 1000)
        eq(j["truncated"], {"rows": True, "bytes": False})
        j = sql(srv, "data.db", "SELECT zeroblob(400000) FROM (SELECT 1 UNION ALL SELECT 2 "
                                "UNION ALL SELECT 3 UNION ALL SELECT 4)", session=sid)
        eq(j["truncated"], {"rows": False, "bytes": True})
        eq(len(j["rows"]), 1)
        # a value over the byte cap is never made in the server's memory
        check("too big" in sql_error(sql(srv, "data.db", "SELECT length(randomblob(200000000))",
                                         session=sid)))
    finally:
        eq(srv.stop(), 0, srv.log())


@test
def sqlite_fts3_tokenizer_is_off():
    """fts3_tokenizer('simple') returns the address of SQLite's tokenizer
    (a pointer into the server's memory): refused, the name bound or not."""
    pol = policy_file("[default]\ntools = sql\n")
    srv = Serve("--policy", pol)
    try:
        sid = srv.session()
        make_db(srv, sid)
        for q, params in (("SELECT hex(fts3_tokenizer('simple'))", None),
                          ("SELECT hex(fts3_tokenizer(?))", ["simple"]),
                          ("SELECT hex(FTS3_TOKENIZER(:n))", {"n": "porter"})):
            j = sql(srv, "data.db", q, params, session=sid)
            check("fts3_tokenizer" in sql_error(j).lower() and "rows" not in j, (q, j))
        # other queries still run
        j = sql(srv, "data.db", "SELECT count(*) FROM t WHERE name = ?", ["alice"], session=sid)
        eq(j["rows"], [[1]])
    finally:
        srv.stop()


@test
def a_call_the_policy_holds_waits_for_a_person_and_is_audited():
    import threading
    audit = audit_path()
    host = tempfile.mkdtemp(prefix="cc-sql-host-")
    c = sqlite3.connect(host + "/a.db")
    c.execute("CREATE TABLE t (v TEXT)")
    c.execute("INSERT INTO t VALUES ('approved value')")
    c.commit()
    c.close()
    pol = policy_file("[default]\ntools = sql\nsql.databases = a\napproval = sql\n"
                      "[database a]\ndriver = sqlite\nconnection = %s/a.db\n" % host)
    srv = Serve("--policy", pol, "--audit", audit)
    try:
        for decision, want in (("approve", 200), ("deny", 403)):
            out = {}
            t = threading.Thread(target=lambda: out.update(r=srv.post("/v1/tools/sql", {
                "arguments": {"database": "a", "query": "SELECT v FROM t"}})))
            t.start()
            pending = srv.await_pending()
            eq(pending[0]["action"], "sql", pending)
            eq(pending[0]["arguments"]["query"], "SELECT v FROM t", pending)
            st, j = srv.post("/v1/approvals/" + pending[0]["id"], {"decision": decision})
            eq(st, 200, j)
            t.join(60)
            st, j = out["r"]
            eq(st, want, j)
            if want == 200:
                eq(j["rows"], [["approved value"]])
            else:
                check("denied" in j["error"]["message"], j)
        # at once with Prefer: respond-async, then again with the approval's id
        body = {"arguments": {"database": "a", "query": "SELECT v FROM t"}}
        st, j = srv.request("POST", "/v1/tools/sql", body, {"Prefer": "respond-async"})
        eq((st, j["status"]), (202, "pending"), j)
        aid = j["approval_id"]
        st, j = srv.request("POST", "/v1/tools/sql", body, {"X-Approval-Id": aid})
        eq(st, 202, j)  # not decided yet
        eq(srv.post("/v1/approvals/" + aid, {"decision": "approve"})[0], 200)
        st, j = srv.request("POST", "/v1/tools/sql", body, {"X-Approval-Id": aid})
        eq((st, j.get("rows")), (200, [["approved value"]]), j)
        st, j = srv.request("POST", "/v1/tools/sql", body, {"X-Approval-Id": aid})
        eq(st, 403, j)  # good for one call
        check("used already" in j["error"]["message"], j)
    finally:
        srv.stop()
        shutil.rmtree(host)
    lines = [json.loads(x) for x in open(audit)]
    os.unlink(audit)
    eq([(x["decision"], x["approval"]["state"]) for x in lines],
       [("allowed", "approved"), ("rejected", "denied"), ("pending", "pending"),
        ("pending", "pending"), ("allowed", "approved"), ("rejected", "used")])


@test
def mcp_cannot_hold_a_call_for_approval_so_it_is_refused():
    pol = policy_file("[default]\ntools = sql\napproval = sql\n")
    m = Mcp("--policy", pol)
    try:
        r = m.call("sql", database="x.db", query="SELECT 1")
        eq(r["isError"], True, r)
        check("rule 'approval'" in r["content"][0]["text"], r)
    finally:
        m.close()


if __name__ == "__main__":
    main()

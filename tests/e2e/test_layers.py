"""The layers hold: engine/ is the one way in for every door (STYLE.md,
"a door never calls another door or session_*").  A door's C file
includes no header of session/ or sandbox/ and calls none of their
functions; what it needs of them is behind an engine function
(engine/sessions.h, engine/setup.h, ...).  The types those tiers define
(struct session_opts, struct run_result) still reach the doors through
the engine's headers: only includes and calls are checked here."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import ROOT, check, main, test  # noqa: E402

DOORS = ("cli", "api", "mcp", "agent", "e2b", "http")
LOWER = ("session", "sandbox")
# The one part of the lower tiers a door may call: the result object
# (session/result.h, reached through engine/engine.h), which every door
# turns into its own answer.  Its functions read, convert and free a
# result the engine handed over; none reaches a session or a sandbox.
SHARED = re.compile(r"^run_result_\w+$")


def door_files():
    for d in DOORS:
        for path in sorted(glob.glob(os.path.join(ROOT, "src", d, "*.[ch]"))):
            yield os.path.relpath(path, ROOT)


def lower_functions():
    """The public functions of session/ and sandbox/: the names their
    headers declare."""
    names = set()
    decl = re.compile(r"^[a-z_][\w \t*]*?\b((?:session|sandbox|changes|ws|workspace|run_result)"
                      r"_\w+)\s*\(", re.M)
    for tier in LOWER:
        for h in glob.glob(os.path.join(ROOT, "src", tier, "*.h")):
            with open(h) as f:
                names.update(decl.findall(f.read()))
    return names


def violations(path, funcs):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    bad = ['#include "%s/' % t for t in LOWER if '#include "%s/' % t in text]
    # a door's own static helpers may share the prefix: only the lower
    # tiers' declared names count
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    called = set(re.findall(r"\b(\w+)\s*\(", code))
    bad += sorted(f for f in called & funcs if not SHARED.match(f))
    return bad


@test
def no_door_includes_or_calls_the_session_or_sandbox_tiers():
    funcs = lower_functions()
    check(len(funcs) > 20, "no declarations found in src/session, src/sandbox: %r" % funcs)
    found = {}
    for path in door_files():
        bad = violations(path, funcs)
        if bad:
            found[path] = bad
    check(not found, "doors reaching below the engine (route them through engine/): %r" % found)


def code_of(path):
    """A C file's text without its comments and string literals."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


@test
def the_transport_knows_no_doors_routes():
    """Each door declares its route ids and resolves its own paths
    (http/door.h's resolve hook): src/http/ names none of them, and
    includes no header of a door."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "http", "*.[ch]"))):
        rel = os.path.relpath(path, ROOT)
        code = code_of(rel)
        bad = sorted(set(re.findall(r"\bAPI_R_\w+", code)))
        bad += re.findall(r'#include "(?:api|e2b|mcp)/[^"]+"', open(path).read())
        if bad:
            found[rel] = bad
    check(not found, "the transport names a door's routes: %r" % found)


@test
def the_transport_shapes_no_doors_stream():
    """An execution's NDJSON events in E2B's shape (Jupyter's lines,
    results, end) are made in src/e2b/ behind the door's stream hook:
    http/exec.c reads the output and hands it over, naming no door."""
    found = sorted(set(re.findall(r"\b(?:e2b|E2B)\w*", code_of("src/http/exec.c"))))
    check(not found, "http/exec.c shapes E2B's events itself: %r" % found)


@test
def every_c_file_under_src_includes_banned_h():
    """util/banned.h turns a call of strcpy, sprintf, atoi, system, ...
    into a compile error, but only in a file that includes it: one that
    misses it may call them unnoticed (STYLE.md, "a banned list")."""
    missing = []
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True)):
        with open(path) as f:
            if '#include "util/banned.h"' not in f.read():
                missing.append(os.path.relpath(path, ROOT))
    check(missing == [], "include \"util/banned.h\" (last) in: %r" % missing)


main()

"""matplotlib's font cache in a fresh sandbox: built once on the host by
scripts/mpl-fontcache.sh (`make setup`), copied into MPLCONFIGDIR by the
sandbox's sitecustomize on the first import of matplotlib, so that no
sandbox opens every system font again.  Not used when the fonts changed.

matplotlib's own log says which happened: "Using fontManager instance
from PATH" (a cache read) or "generated new fontManager" (the fonts
scanned, a cache written).  No timings: the outcome is the check."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import HANG_S, JsonShell, check, eq, main, run_code, test  # noqa: E402

PREBUILT = "/usr/local/share/codecell/matplotlib"
READ = "Using fontManager instance from /tmp/.matplotlib/fontlist-v"
BUILT = "generated new fontManager"

# matplotlib's font_manager logger to stdout, then the import
LOGGED_IMPORT = ("import logging, sys\n"
                 "logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, "
                 "format='%(name)s %(message)s')\n"
                 "import matplotlib.pyplot\n")


# importing matplotlib.pyplot takes 0.3 s of CPU even with the cache: on
# a loaded machine far longer than the default 30 s cell timeout
SLOW = ("--timeout", str(4 * HANG_S))


def run(code):
    return run_code(code, *SLOW, timeout=5 * HANG_S)


def prebuilt():
    check(os.path.exists(os.path.join(PREBUILT, "stamp.json")),
          "no prebuilt font cache in %s: run make setup (scripts/mpl-fontcache.sh)" % PREBUILT)


@test
def a_one_shot_import_reads_the_prebuilt_cache():
    prebuilt()
    r = run(LOGGED_IMPORT + "print('done')\n")
    eq(r.json["status"], "ok", r)
    out = r.json["logs"]["stdout"]
    check(READ in out and BUILT not in out, "the fonts were scanned: %r" % out[-2000:])


@test
def a_cold_session_reads_it_and_its_copy_is_writable():
    prebuilt()
    sh = JsonShell(*SLOW)
    try:
        r = sh.run(LOGGED_IMPORT.replace("\n", "; ").rstrip("; "))
        eq(r["status"], "ok", r)
        out = r["logs"]["stdout"]
        check(READ in out and BUILT not in out, "the fonts were scanned: %r" % out[-2000:])
        # matplotlib rewrites it when a font it names is gone: a copy the
        # sandbox owns, not the host's file
        r = sh.run("import os; os.access(matplotlib.get_cachedir() + '/fontlist-v%d.json' % "
                   "matplotlib.font_manager.FontManager.__version__, os.W_OK)")
        eq(r["results"][0]["text/plain"], "True", r)
    finally:
        sh.close()


@test
def a_font_added_in_home_is_found_not_hidden_by_the_cache():
    """A font the cache does not know (here in ~/.fonts; on the host, one
    installed after the cache was built): matplotlib scans, as without a
    cache, and finds it."""
    prebuilt()
    r = run("import os, shutil\n"
                 "os.makedirs(os.path.expanduser('~/.fonts'))\n"
                 "shutil.copy('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',"
                 " os.path.expanduser('~/.fonts/codecell-test.ttf'))\n"
                 + LOGGED_IMPORT +
                 "import json\n"
                 "print(json.dumps([f.fname for f in matplotlib.font_manager.fontManager.ttflist]))\n")
    eq(r.json["status"], "ok", r)
    out = r.json["logs"]["stdout"]
    check(BUILT in out, "the cache hid the new font: %r" % out[-2000:])
    names = json.loads(out.splitlines()[-1])
    check("/home/user/.fonts/codecell-test.ttf" in names, names)


@test
def a_run_that_never_imports_matplotlib_gets_nothing():
    prebuilt()
    r = run("import os, numpy\nprint(os.path.exists(os.environ['MPLCONFIGDIR']))\n")
    eq((r.json["status"], r.json["logs"]["stdout"]), ("ok", "False\n"), r)


if __name__ == "__main__":
    main()

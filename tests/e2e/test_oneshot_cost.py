"""What a one-shot run costs beyond the program, checked by what it does,
never by its time (the figures are bench/bench_run.py's): Python in the
sandbox loads codecell's sitecustomize from a compiled .pyc instead of
compiling the source on every start, and that .pyc is the same code (the
seed option still seeds); and `codecell run --help` says what --cpus
does to the CPUs the tree may use."""
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import check, codecell, eq, main, run_code, test  # noqa: E402

# python3 -v says where each module's code object came from
VERBOSE = "python3 -v -c pass 2>&1 | grep sitecustomize\n"


def host_site_pyc():
    """The host's compiled sitecustomize of /usr/bin/python3 (Debian's),
    which the sandbox's is bound over; None where there is none."""
    ver = os.path.basename(os.path.realpath("/usr/bin/python3"))  # python3.11
    minor = ver.split(".")[-1]
    path = "/usr/lib/%s/__pycache__/sitecustomize.cpython-3%s.pyc" % (ver, minor)
    link = "/usr/lib/%s/sitecustomize.py" % ver
    return path if os.path.isfile(path) and os.path.islink(link) else None


@test
def python_loads_the_sitecustomize_from_its_pyc():
    pyc = host_site_pyc()
    if not pyc:
        print("# skip: no Debian sitecustomize .pyc on this host")
        return
    r = run_code(VERBOSE, lang="bash")
    eq(r.json["status"], "ok", r)
    out = r.json["logs"]["stdout"]
    # before: "# bytecode is stale for 'sitecustomize'" and the code
    # object came from the .py, compiled on every start
    check("code object from '%s'" % pyc in out, "sitecustomize compiled again: %r" % out)
    check("stale" not in out, out)


@test
def the_pyc_is_read_only_and_still_seeds():
    if not host_site_pyc():
        print("# skip: no Debian sitecustomize .pyc on this host")
        return
    code = ("import random, sys\n"
            "pyc = sys.modules['sitecustomize'].__spec__.cached\n"
            "try:\n"
            "    open(pyc, 'ab')\n"
            "    print('writable')\n"
            "except OSError as e:\n"
            "    print(e.errno)\n"
            "print(random.random())\n")
    a = run_code(code, "--seed", "7")
    b = run_code(code, "--seed", "7")
    eq(a.json["status"], "ok", a)
    lines = a.json["logs"]["stdout"].split()
    check(lines[0] != "writable", "the sandbox could write the .pyc: %r" % lines)
    eq(a.json["logs"]["stdout"], b.json["logs"]["stdout"], "the same seed, the same numbers")


@test
def run_help_says_the_tree_is_pinned_to_ceil_cpus():
    r = codecell("run", "--help")
    eq(r.status, 0, r)
    text = " ".join(r.stdout.split())
    check("pinned to ceil(N)" in text, "--cpus help: %r" % text)


if __name__ == "__main__":
    main()

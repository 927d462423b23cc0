"""The Python client (clients/python/): its pytest tests, each file run
against servers it starts itself (clients/python/tests/conftest.py), with
the pytest pinned by clients/python/requirements-test.lock, which
scripts/setup.sh installs into clients/python/.test-deps. Without that
pytest, or with another version, these tests fail: they do not skip.
Also: `pip install` of the package gives an importable, typed `codecell`,
and its source parses as Python 3.9."""
import ast
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, PYTHON, ROOT, check, main, scratch, test  # noqa: E402

PKG = os.path.join(ROOT, "clients", "python")
SRC = os.path.join(PKG, "src")
DEPS = os.path.join(PKG, ".test-deps")
LOCK = os.path.join(PKG, "requirements-test.lock")


def pinned_pytest():
    with open(LOCK) as f:
        m = re.search(r"^pytest==(\S+)", f.read(), re.M)
    check(m, "no pytest== line in %s" % LOCK)
    return m.group(1)


def pytest_env():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, DEPS]), CODECELL_BIN=CODECELL,
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("CODECELL_TOKEN", None)
    return env


def run_pytest(name):
    """Run one test file of the client's; fail with pytest's report."""
    want = pinned_pytest()
    probe = subprocess.run([PYTHON, "-c", "import pytest; print(pytest.__version__)"],
                           capture_output=True, text=True, env=pytest_env(), timeout=60)
    check(probe.returncode == 0,
          "pytest is not importable for %s: install the pinned one with\n  %s -m pip install "
          "--require-hashes --no-deps --target %s -r %s\n(scripts/setup.sh does this)\n%s"
          % (PYTHON, PYTHON, DEPS, LOCK, probe.stderr[-1000:]))
    got = probe.stdout.strip()
    check(got == want, "pytest %s is installed, the lock pins %s: install %s again" % (got, want, LOCK))
    p = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
                        os.path.join(PKG, "tests", name)], capture_output=True, text=True,
                       env=pytest_env(), cwd=PKG, timeout=900)
    for line in p.stdout.splitlines()[-3:]:
        print("# " + line, flush=True)
    check(p.returncode == 0, "pytest %s failed (exit %d):\n%s\n%s" % (
        name, p.returncode, p.stdout[-6000:], p.stderr[-2000:]))
    check(re.search(r"\d+ passed", p.stdout), "pytest ran no test: %s" % p.stdout[-2000:])


@test
def sync_client_against_a_live_server():
    run_pytest("test_client.py")


@test
def async_client_against_a_live_server():
    run_pytest("test_async.py")


@test
def client_decodes_streams_and_errors():
    run_pytest("test_decode.py")


@test
def pip_install_gives_an_importable_typed_package():
    """`pip install ./clients/python`, offline (the build backend as the
    system has it), from a copy so that the tree gets no build files."""
    with scratch() as d:
        src = os.path.join(d, "src")
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(".test-deps", "__pycache__",
                                                                "*.egg-info", "build"))
        target = os.path.join(d, "site")
        p = subprocess.run([PYTHON, "-m", "pip", "install", "--quiet", "--no-deps",
                            "--no-build-isolation", "--no-index", "--target", target, src],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, "pip install failed: %s %s" % (p.stdout[-2000:], p.stderr[-3000:]))
        env = dict(os.environ, PYTHONPATH=target)
        q = subprocess.run([PYTHON, "-c", "import codecell, os; print(codecell.__file__); "
                            "print(os.path.exists(os.path.join(os.path.dirname(codecell.__file__), "
                            "'py.typed'))); print(codecell.Client, codecell.AsyncClient)"],
                           capture_output=True, text=True, env=env, cwd=d, timeout=60)
        check(q.returncode == 0, "import codecell failed: %s" % q.stderr[-2000:])
        lines = q.stdout.splitlines()
        check(lines[0].startswith(target), "codecell imported from %s, not the install" % lines[0])
        check(lines[1] == "True", "py.typed is not installed")


@test
def client_source_parses_as_python_3_9():
    """The client promises Python >= 3.9: no newer syntax, and annotations
    kept unevaluated (`X | None` would fail at import on 3.9 otherwise)."""
    pkg = os.path.join(SRC, "codecell")
    names = sorted(n for n in os.listdir(pkg) if n.endswith(".py"))
    check("__init__.py" in names and "aio.py" in names, names)
    for n in names:
        with open(os.path.join(pkg, n)) as f:
            text = f.read()
        tree = ast.parse(text, n, feature_version=(3, 9))
        if n != "__init__.py":
            check("from __future__ import annotations" in text, "%s lacks the annotations "
                  "future import" % n)
        for node in ast.walk(tree):
            check(not isinstance(node, ast.Match), "%s uses match (3.10)" % n)


if __name__ == "__main__":
    main()

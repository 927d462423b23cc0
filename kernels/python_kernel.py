# codecell session kernel for Python: a long-lived process that runs cells
# like a notebook kernel.  Started inside the sandbox as
#   /usr/bin/python3 -u -c <this file> [--preload mod1,mod2,...] [--template]
# (a plain interpreter: site, the user site directory, and the flags that
# multiprocessing passes to its children are those of `python3`)
# With --template it is a warm pool's template instead (see _template): it
# imports the preloads, says ready, and forks a kernel for each spawn
# message; each such kernel then behaves as below.
# Requests come on fd 3 and events go to fd 4, both newline-delimited JSON
# (one object a line, UTF-8).  The user's stdout and stderr are fd 1 and 2.
# Standard library only.
#
# Requests:
#   {"op":"execute","id":N,"code":"..."}   run a cell
#   {"op":"complete","id":N,"code":"..."}  is it a complete statement?
#   {"op":"names","id":N,"text":"pd.rea"}  Tab completion: what the name
#                                          or dotted name text can become
#   {"op":"reseed","id":N}                 fresh random streams
#   {"op":"init","id":N,"env":{"K":"V"}}   set environment variables (a
#                                          kernel from a warm pool)
#   {"op":"snapshot","id":N}               the user's variables, serialized
#                                          (session fork)
#   {"op":"restore","id":N,"data":B64}     take them over (the fork); with
#                                          "wait":true, not before the next
#   {"op":"go","id":N}                     request, sent once the fork's
#                                          workspace is copied; anything
#                                          else there is consumed, and the
#                                          restore refused (error, done
#                                          with status "error")
#   {"op":"warm","id":N}                   a restore of a sample, thrown
#                                          away (the fork's new kernel,
#                                          while the source serializes)
#   {"op":"reap","id":N}                   reap dead children (after the
#                                          supervisor killed a fork bomb's
#                                          copies; zombies count as pids)
# Events:
#   {"type":"ready","preloaded":[...],"failed":{"name":"error"}}  once, first
#   {"type":"started","id":N}               a cell's code begins: SIGINT
#                                          interrupts it from here on
#   {"type":"display","id":N,"data":{"image/png":B64,"text/plain":...}}
#   {"type":"result","id":N,"is_main_result":true,"data":{"text/plain":...}}
#   {"type":"error","id":N,"name":...,"value":...,"traceback":...}
#   {"type":"complete","id":N,"status":"complete"|"incomplete"|"invalid"}
#   {"type":"names","id":N,"names":["pd.read_csv(", ...]}  (at most 200)
#   {"type":"done","id":N,"execution_count":K,"status":"ok"|"error"}
#   {"type":"snapshot","id":N,"data":B64,"skipped":{"name":"why"}}
#   restore answers "done" with "skipped" too
# An execute gives its displays and result in the order they happen
# (plt.show() displays before the result, figures left open after it),
# then at most one error, then "done", always last.  A request that is not
# understood gets an error named InvalidRequest (KernelError for a fault of
# the kernel) and a "done" with status "error"; execution_count is left.
# complete takes lines that each end in a newline (see _complete_status).
#
# The kernel's code lives in this module's globals; the user gets a fresh
# __main__ module.  Frames whose globals are these globals are the
# kernel's, and are cut out of the user's tracebacks.
#
# SIGINT interrupts a running cell (KeyboardInterrupt, reported as the
# cell's error) and is ignored between cells.  An event line is never cut
# by it: a SIGINT that arrives while one is being written takes effect just
# after the write.

import builtins

# the kernel's functions keep the builtins as they are now, whatever user
# code later does to the builtins module
globals()["__builtins__"] = dict(vars(builtins))

import sys  # noqa: E402
import _signal  # noqa: E402
import _thread  # noqa: E402
import posix  # noqa: E402


class _State:
    busy = False      # a cell is running: SIGINT raises KeyboardInterrupt
    crit = 0          # the main thread is writing an event: SIGINT waits
    pending = False   # a SIGINT arrived during such a write
    count = 0         # execution_count of the last execute
    cur_id = None     # id of the request being served
    quiet = False     # the template's warm-up runs cells: no events
    flags = 0         # __future__ flags that cells have turned on
    loop = None       # asyncio loop for cells that use top-level await
    pid = posix.getpid()
    main_thread = _thread.get_ident()
    lock = _thread.allocate_lock()


_S = _State


def _sigint(signum, frame):
    if _S.busy:
        if _S.crit:
            _S.pending = True
        else:
            raise KeyboardInterrupt
    # idle: ignored


# before anything slow, so that an early SIGINT does not kill the kernel
_signal.signal(_signal.SIGINT, _sigint)

import _ast    # noqa: E402
import io      # noqa: E402
import json    # noqa: E402
import linecache  # noqa: E402

_KERNEL_GLOBALS = globals()
_KERNEL_MODULE = sys.modules["__main__"]  # kept alive with its globals
_TEXT_CAP = 1 << 20        # characters of text/plain, text/html, value, traceback
_PNG_CAP = 8 << 20         # bytes of one PNG, before base64
_CO_COROUTINE = 0x80
_TOP_LEVEL_AWAIT = _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_FUTURE_MASK = 0
for _name in __import__("__future__").all_feature_names:
    _FUTURE_MASK |= getattr(__import__("__future__"), _name).compiler_flag
del _name


# ---- text limits ------------------------------------------------------------

def _lines(text):
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def _clean(s, cap=_TEXT_CAP):
    """s as text that encodes to UTF-8 (lone surrogates escaped), at most
    cap characters: a longer one keeps its head and tail around a
    "[... N characters cut ...]" marker.  NUL becomes the text \\x00 (many
    JSON parsers, jansson among them, refuse \\u0000)."""
    if not isinstance(s, str):
        s = str(s)
    if "\0" in s:
        s = s.replace("\0", "\\x00")
    for _ in range(2):
        if len(s) > cap:
            keep = cap - 64  # room for the marker
            head = keep // 2
            s = "%s\n[... %d characters cut ...]\n%s" % (
                s[:head], len(s) - keep, s[len(s) - (keep - head):])
        try:
            s.encode("utf-8")
            break
        except UnicodeEncodeError:
            # escaping can lengthen it: cap once more
            s = s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s


def _safe_str(e):
    try:
        return str(e)
    except Exception:
        return "<unprintable %s>" % type(e).__name__


# ---- events -----------------------------------------------------------------

def _emit(obj):
    """Write one event line to fd 4.  A forked child of user code writes
    nothing.  SIGINT cannot cut the line: it is held until the write ends."""
    if posix.getpid() != _S.pid:
        return
    data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8", "backslashreplace")
    if _S.quiet:
        return
    main = _thread.get_ident() == _S.main_thread
    if main:
        _S.crit += 1
    try:
        with _S.lock:
            view = memoryview(data)
            while view:
                view = view[posix.write(4, view):]
    except OSError:
        # the supervisor is gone (or user code closed fd 4): nothing to
        # report to
        posix._exit(1)
    finally:
        if main:
            _S.crit -= 1
    if main and _S.pending and _S.busy and not _S.crit:
        _S.pending = False
        raise KeyboardInterrupt


def _flush_std():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except BaseException:
            pass


# ---- what user code sees ----------------------------------------------------

class _Quitter:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "Use %s() or Ctrl-D (i.e. EOF) to exit" % self.name

    def __call__(self, code=None):
        raise SystemExit(code) if code is not None else SystemExit()


def _setup_interpreter():
    v = "%d.%d" % sys.version_info[:2]
    for d in ("/usr/local/lib/python%s/dist-packages" % v,
              "/usr/lib/python3/dist-packages",
              "/usr/lib/python%s/dist-packages" % v):
        if d not in sys.path:
            sys.path.append(d)
    # -c put "" (the current directory) first: make it the workspace, as
    # the one-shot driver does
    if sys.path and sys.path[0] == "":
        sys.path[0] = posix.getcwd()
    builtins.exit = _Quitter("exit")
    builtins.quit = _Quitter("quit")
    try:
        import _sitebuiltins
        builtins.help = _sitebuiltins._Helper()
    except Exception:
        pass
    sys.dont_write_bytecode = True
    # the request and event pipes stay with this process, not its children;
    # and all four pipes block, as Python code expects of them
    for fd in (3, 4):
        posix.set_inheritable(fd, False)
        posix.set_blocking(fd, True)
    for fd in (1, 2):
        try:
            posix.set_blocking(fd, True)
        except OSError:
            pass

    _ordered_std()
    main = type(sys)("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    _KERNEL_MODULE_NS[0] = main.__dict__
    # the notebook's names: display(), and what rewritten cells call
    builtins.display = display
    for name in ("_nb_shell", "_nb_line_magic", "_nb_cell_magic"):
        setattr(builtins, name, globals()[name])
    _make_backend()
    return main.__dict__


def _ordered_std():
    """stdout and stderr are two pipes: a write to one waits until the
    supervisor has read what the other holds, so that the result's
    outputs[] keep the order they were written in.  The writer is the
    sandbox's sitecustomize's (src/sandbox/sitecustomize.py), which site
    imported before this kernel started: one copy, already compiled.  A
    kernel run outside a sandbox, without it, keeps its streams."""
    order = getattr(sys.modules.get("sitecustomize"), "_codecell_ordered_std", None)
    if order is not None:
        order(dunder=False)


# ---- matplotlib: the codecell_inline backend --------------------------------

def _make_backend():
    """MPLBACKEND=module://codecell_inline selects this module.  It imports
    nothing from matplotlib until matplotlib asks it for its FigureCanvas."""
    mod = type(sys)("codecell_inline")
    mod.__doc__ = "codecell's inline matplotlib backend: figures become display events."

    def __getattr__(name):
        if name == "FigureCanvas":
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            mod.FigureCanvas = FigureCanvasAgg
            mod.FigureManager = FigureCanvasAgg.manager_class
            mod.__dict__.pop("__getattr__", None)
            return FigureCanvasAgg
        raise AttributeError("module 'codecell_inline' has no attribute %r" % (name,))

    def show(*args, **kwargs):
        """Send every open figure as a display event, and close them."""
        if _S.busy:  # not from a thread outside any cell: the next cell shows them
            _emit_figures(collect=False)

    mod.__getattr__ = __getattr__
    mod.show = show
    sys.modules["codecell_inline"] = mod


def _emit_figures(collect):
    """Render each open pyplot figure to a display event and close it.
    collect: return the first exception instead of raising it (and go on)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None:
        return None
    first = None
    for manager in list(helpers.Gcf.get_all_fig_managers()):
        try:
            try:
                _emit_figure(manager.canvas.figure)
            finally:
                helpers.Gcf.destroy(manager)
        except Exception as e:
            if not collect:
                raise
            if first is None:
                first = e
    return first


def _emit_figure(fig):
    if not fig.axes and not fig.lines:
        return  # an empty figure: nothing to see (as IPython does)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    png = buf.getvalue()
    try:
        text = repr(fig)
    except Exception:
        text = "<Figure>"
    if len(png) > _PNG_CAP:
        data = {"text/plain": _clean("%s\n[PNG of %d bytes not sent: over the %d-byte limit]"
                                     % (text, len(png), _PNG_CAP))}
    else:
        import binascii
        data = {"image/png": binascii.b2a_base64(png, newline=False).decode("ascii"),
                "text/plain": _clean(text)}
    _emit({"type": "display", "id": _S.cur_id, "data": data})


def _flush_figures():
    """End of cell: figures still open are shown, if the inline backend is
    the one in use (a user who switched to Agg keeps their figures)."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None or "matplotlib._pylab_helpers" not in sys.modules:
        return None
    try:
        backend = dict.__getitem__(mpl.rcParams, "backend")
    except Exception:
        return None
    if backend != "module://codecell_inline":
        return None
    return _emit_figures(collect=True)


# ---- randomness -------------------------------------------------------------

def _reseed():
    # a module not imported yet seeds itself from os.urandom when it is
    r = sys.modules.get("random")
    if r is not None:
        try:
            r.seed(posix.urandom(32))
        except Exception:
            pass
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        try:
            b = posix.urandom(32)
            npr.seed([int.from_bytes(b[i:i + 4], "little") for i in range(0, 32, 4)])
        except Exception:
            pass


def _seed_from_env():
    # CODECELL_SEED (the request's seed option): random and numpy.random
    # start from it; numpy is seeded when it is imported (a hook on the
    # import, so that a seed costs no numpy import to code without it)
    os = sys.modules.get("os")  # init sets os.environ, not posix.environ
    s = os.environ.get("CODECELL_SEED") if os is not None else None
    if s is None:
        s = posix.environ.get(b"CODECELL_SEED")
    if s is None:
        return
    try:
        n = int(s)
    except ValueError:
        return
    import random
    random.seed(n)
    _seed_numpy(n)


def _seed_numpy(n):
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        npr.seed(n % 2**32)
        return

    class _SeedNumpy:
        def find_spec(self, name, path=None, target=None):
            if name != "numpy.random":
                return None
            sys.meta_path.remove(self)
            import importlib.util
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(m):
                run(m)
                m.seed(n % 2**32)
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _SeedNumpy())


# ---- notebook idioms --------------------------------------------------------
#
# Models trained on notebooks write IPython's syntax: `!ls`, `x = !ls`,
# `%time f()`, `%%bash` cells, `display(df)`.  A cell that does not compile
# as Python is rewritten line for line (so line numbers stay right, and
# tracebacks quote the lines as typed) into calls of _nb_* functions, and
# compiled again; if that fails too, the original SyntaxError stands.  Code
# that is valid Python is never rewritten.

_NB_CELL_MAGICS = ("bash", "sh", "time", "timeit", "writefile", "capture", "html", "markdown")
_NB_LINE_MAGICS = ("cd", "env", "ls", "matplotlib", "pip", "pwd", "time", "timeit", "who")


def _nb_string_lines(code):
    """Numbers (1-based) of the lines that start inside a multi-line string:
    a `!` or `%` there is text, not syntax."""
    inside = set()
    try:
        import tokenize
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except Exception:
        pass  # what cannot be tokenized is rewritten as it is
    return inside


def _nb_rewrite(code):
    """The cell in Python, or None when it uses none of the idioms."""
    lines = code.splitlines(True)
    if not lines:
        return None
    first = lines[0].strip()
    if first.startswith("%%"):
        name, _, arg = first[2:].partition(" ")
        body = "".join(lines[1:])
        # one call on the first line; the body's lines stay as blank lines
        return "_nb_cell_magic(%r, %r, %r)\n" % (name, arg.strip(), body) + "\n" * (len(lines) - 1)
    inside = _nb_string_lines(code)
    out, changed = [], False
    for n, line in enumerate(lines, 1):
        stripped = line.lstrip(" \t")
        indent = line[:len(line) - len(stripped)]
        body = stripped.rstrip("\r\n")
        target = ""
        if n not in inside and body[:1] not in ("!", "%") and "=" in body:
            # x = !cmd, x = %magic
            lhs, _, rhs = body.partition("=")
            rhs = rhs.lstrip(" \t")
            if lhs.strip().isidentifier() and rhs[:1] in ("!", "%") and rhs[:2] != "%%":
                target, body = lhs.strip() + " = ", rhs
        if n in inside or body[:1] not in ("!", "%") or body[:2] == "%%":
            out.append(line)
            continue
        if body[0] == "!":
            call = "_nb_shell(%r, %s)" % (body[1:], "True" if target else "False")
        else:
            name, _, arg = body[1:].partition(" ")
            call = "_nb_line_magic(%r, %r)" % (name, arg.strip())
        out.append(indent + target + call + ("\n" if line.endswith("\n") else ""))
        changed = True
    return "".join(out) if changed else None


def _nb_expand(cmd, ns):
    """IPython's expansion in `!` lines: {expr} is a Python expression of
    the cell's namespace, $name a variable of it ($$ and unknown names are
    left to the shell)."""
    import re

    def brace(m):
        if m.group(0).startswith("{{"):
            return m.group(0)[1:-1]
        try:
            return str(eval(m.group(1), ns))
        except Exception:
            return m.group(0)

    def dollar(m):
        name = m.group(1)
        return str(ns[name]) if name in ns else m.group(0)

    cmd = re.sub(r"\{\{[^{}]*\}\}|\{([^{}]+)\}", brace, cmd)
    return re.sub(r"(?<!\$)\$([A-Za-z_]\w*)", dollar, cmd)


def _nb_ns():
    return _KERNEL_MODULE_NS[0]


def _nb_shell(cmd, capture=False):
    """!cmd: bash runs it in the sandbox, its output goes to the cell's
    stdout and stderr in order.  x = !cmd: its stdout as a list of lines."""
    import subprocess
    cmd = _nb_expand(cmd, _nb_ns())
    _flush_std()
    if capture:
        p = subprocess.run(["/bin/bash", "-c", cmd], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        return p.stdout.decode("utf-8", "replace").splitlines()
    subprocess.run(["/bin/bash", "-c", cmd], stdin=subprocess.DEVNULL)
    return None


class UsageError(Exception):
    """A magic used wrongly (IPython's name for it)."""


def _nb_fmt_time(s):
    """Seconds as IPython prints them: 1.23 s, 4.56 ms, 7.89 µs, 12 ns."""
    if s >= 1:
        return "%.3g s" % s
    for unit, scale in (("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if s * scale >= 1 or unit == "ns":
            return "%.3g %s" % (s * scale, unit)
    return "0 ns"


def _nb_time(src):
    """%time: run once, print CPU and wall time; an expression's value is
    returned (so `x = %time f()` works)."""
    ns = _nb_ns()
    import time
    try:
        co, mode = _compile(src, "<timed>", "eval"), "eval"
    except SyntaxError:
        co, mode = _compile(_nb_rewrite(src) or src, "<timed>", "exec"), "exec"
    t0, c0 = time.perf_counter(), posix.times()
    try:
        value = _run_code(co, ns)
    finally:
        c1, t1 = posix.times(), time.perf_counter()
        user, system = c1.user - c0.user, c1.system - c0.system
        print("CPU times: user %s, sys: %s, total: %s\nWall time: %s" % (
            _nb_fmt_time(user), _nb_fmt_time(system), _nb_fmt_time(user + system),
            _nb_fmt_time(t1 - t0)))
    return value if mode == "eval" else None


def _nb_timeit(arg, body=None):
    """%timeit [-n N] [-r R] stmt: the mean and spread of R runs of N loops,
    N chosen so that a run takes at least 0.2 s (as IPython does)."""
    import timeit
    words = arg.split()
    loops, runs = 0, 7
    while words and words[0] in ("-n", "-r") and len(words) > 1:
        try:
            n = int(words[1])
        except ValueError:
            raise UsageError("%%timeit %s takes a number, not %r" % (words[0], words[1])) from None
        if n < 1:
            raise UsageError("%%timeit %s takes a number of at least 1" % words[0])
        if words[0] == "-n":
            loops = n
        else:
            runs = n
        words = words[2:]
    setup, stmt = "pass", " ".join(words) if body is None else body
    if body is not None and words:
        setup = " ".join(words)
    if not stmt.strip():
        raise UsageError("%timeit needs a statement to time")
    t = timeit.Timer(stmt, setup, globals=_nb_ns())
    if not loops:
        loops = 1
        while True:
            if t.timeit(loops) >= 0.2 or loops >= 10 ** 9:
                break
            loops *= 10
    times = [x / loops for x in t.repeat(runs, loops)]
    mean = sum(times) / len(times)
    dev = (sum((x - mean) ** 2 for x in times) / len(times)) ** 0.5
    print("%s ± %s per loop (mean ± std. dev. of %d run%s, %s loop%s each)" % (
        _nb_fmt_time(mean), _nb_fmt_time(dev), runs, "" if runs == 1 else "s",
        "{:,}".format(loops), "" if loops == 1 else "s"))


def _nb_pip(arg):
    """%pip: pip for the user's site directory, when the sandbox has a way
    out; a clear error when it has none (there is no use waiting for pip's
    retries to fail)."""
    import subprocess
    proxied = any(posix.environ.get(k) for k in (b"HTTPS_PROXY", b"https_proxy", b"HTTP_PROXY", b"http_proxy"))
    routed = False
    try:
        with open("/proc/net/route") as f:
            routed = any(line.split()[0] != "lo" for line in f.readlines()[1:] if line.split())
    except OSError:
        pass
    words = arg.split()
    if words[:1] in (["install"], ["download"]) and not (proxied or routed):
        raise OSError("%%pip %s: this sandbox has no network (it is loopback only), so nothing can "
                      "be downloaded. What is installed can be imported: see %%pip list" % arg)
    try:
        import importlib.util
        has_pip = importlib.util.find_spec("pip") is not None
    except Exception:
        has_pip = False
    if not has_pip:
        raise ModuleNotFoundError("%pip: pip is not installed in this sandbox")
    _flush_std()
    if words[:1] == ["install"] and "--user" not in words:
        words.insert(1, "--user")
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check"] + words,
                   stdin=subprocess.DEVNULL)


def _nb_line_magic(name, arg):
    ns = _nb_ns()
    if name in ("time",):
        return _nb_time(arg)
    if name == "timeit":
        return _nb_timeit(arg)
    if name in ("pip", "conda"):
        return _nb_pip(arg)
    if name == "matplotlib":
        # figures are always inline here; other backends have no screen
        if arg not in ("", "inline"):
            print("%%matplotlib %s: ignored, figures are shown inline" % arg, file=sys.stderr)
        return None
    if name == "cd":
        import os
        os.chdir(os.path.expanduser(arg or "~"))
        print(os.getcwd())
        return None
    if name == "pwd":
        return posix.getcwd()
    if name == "ls":
        return _nb_shell("ls " + arg)
    if name == "env":
        # %env, %env NAME, %env NAME=value (or NAME value)
        import os
        if not arg:
            return dict(os.environ)
        key, _, value = arg.replace("=", " ", 1).partition(" ")
        if not value and "=" not in arg:
            return os.environ.get(key)
        os.environ[key] = value.strip()
        return None
    if name == "who":
        names = sorted(k for k, v in ns.items() if not k.startswith("_") and not isinstance(v, type(sys)))
        print("  ".join(names) if names else "Interactive namespace is empty.")
        return None
    raise UsageError("Line magic function `%%%s` not found. codecell has: %s" % (
        name, ", ".join("%" + m for m in _NB_LINE_MAGICS)))


def _nb_cell_magic(name, arg, body):
    ns = _nb_ns()
    if name in ("bash", "sh"):
        _nb_shell(body)
        return None
    if name == "time":
        return _nb_time(body)
    if name == "timeit":
        return _nb_timeit(arg, body)
    if name == "writefile":
        words = arg.split()
        append = "-a" in words or "--append" in words
        path = [w for w in words if not w.startswith("-")]
        if len(path) != 1:
            raise UsageError("%%writefile needs one file name")
        import os
        exists = os.path.exists(path[0])
        with open(path[0], "a" if append else "w") as f:
            f.write(body)
        print("%s %s" % ("Appending to" if append else "Overwriting" if exists else "Writing", path[0]))
        return None
    if name == "capture":
        import contextlib
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            _run_code(_compile(_nb_rewrite(body) or body, "<captured>", "exec"), ns)
        return None
    if name in ("html", "markdown"):
        key = "text/html" if name == "html" else "text/markdown"
        _emit({"type": "display", "id": _S.cur_id, "data": {key: _clean(body), "text/plain": _clean(body)}})
        return None
    raise UsageError("Cell magic `%%%%%s` not found. codecell has: %s" % (
        name, ", ".join("%%" + m for m in _NB_CELL_MAGICS)))


def display(*objs, **kwargs):
    """Show each object now, as a notebook does: a figure as PNG, anything
    else as its text (and HTML, for a DataFrame), in order with the output."""
    _flush_std()
    for obj in objs:
        if type(obj).__name__ == "Figure" and hasattr(obj, "savefig"):
            _emit_figure(obj)
        else:
            _emit({"type": "display", "id": _S.cur_id, "data": _bundle(obj)})


_KERNEL_MODULE_NS = [None]  # the user's namespace, set by _setup_interpreter


# ---- running a cell ---------------------------------------------------------

def _compile(source, filename, mode):
    co = compile(source, filename, mode, _S.flags | _TOP_LEVEL_AWAIT, dont_inherit=True)
    _S.flags |= co.co_flags & _FUTURE_MASK
    return co


def _run_code(co, ns):
    if not co.co_flags & _CO_COROUTINE:
        return eval(co, ns)
    # top-level await: one loop for the session, so that loop-bound
    # objects survive from cell to cell
    import asyncio
    if _S.loop is None or _S.loop.is_closed():
        _S.loop = asyncio.new_event_loop()
    task = _S.loop.create_task(eval(co, ns))
    try:
        return _S.loop.run_until_complete(task)
    except BaseException:
        task.cancel()
        raise


def _bundle(value):
    """The data of a result: text/plain, and text/html when the value has
    a _repr_html_ that gives a string."""
    try:
        text = repr(value)
    except Exception as e:
        text = "<repr() of %s object failed: %s: %s>" % (
            type(value).__name__, type(e).__name__, _safe_str(e))
    data = {"text/plain": _clean(text)}
    html = None
    try:
        # not for classes (their _repr_html_ is unbound), nor for objects
        # that make up any attribute asked for
        if not isinstance(value, type) and not hasattr(value, "_codecell_no_such_attribute_"):
            meth = getattr(value, "_repr_html_", None)
            if callable(meth):
                html = meth()
                if isinstance(html, tuple) and html:
                    html = html[0]
    except Exception:
        html = None
    if isinstance(html, str):
        data["text/html"] = _clean(html)
    return data


def _parse_cell(code, filename):
    """The cell's syntax tree; notebook idioms rewritten (see _nb_rewrite)
    when the cell is not Python as it stands."""
    flags = _ast.PyCF_ONLY_AST | _S.flags | _TOP_LEVEL_AWAIT
    try:
        return compile(code, filename, "exec", flags, dont_inherit=True)
    except SyntaxError as e:
        alt = _nb_rewrite(code)
        if alt is None:
            raise
        try:
            return compile(alt, filename, "exec", flags, dont_inherit=True)
        except SyntaxError:
            raise e from None


def _run_cell(code, filename, ns):
    """Compile and run one cell; emit its result, if any."""
    tree = _parse_cell(code, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    _run_code(_compile(tree, filename, "exec"), ns)
    if last is not None:
        value = _run_code(_compile(last, filename, "eval"), ns)
        if value is not None:
            builtins._ = value
            _emit({"type": "result", "id": _S.cur_id, "is_main_result": True,
                   "data": _bundle(value)})


def _format_error(e):
    """(name, value, traceback) of an exception, without the kernel's frames."""
    name = type(e).__name__
    value = _safe_str(e)
    try:
        import traceback
        te = traceback.TracebackException(type(e), e, e.__traceback__)
        todo = [(te, e)]
        while todo:
            t, x = todo.pop()
            if x is None:
                continue
            frames = [f for f, _ in traceback.walk_tb(x.__traceback__)]
            if len(frames) == len(t.stack):
                pairs = list(zip(frames, t.stack))
                # what ran before the first cell frame is the kernel's
                # machinery (and asyncio's, for top-level await)
                for i, (f, fs) in enumerate(pairs):
                    if fs.filename.startswith("<cell-"):
                        pairs = pairs[i:]
                        break
                keep = [fs for f, fs in pairs if f.f_globals is not _KERNEL_GLOBALS]
            else:  # cannot happen; be safe anyway
                keep = list(t.stack)
                while keep and keep[0].filename == "<string>":
                    keep.pop(0)
            t.stack = traceback.StackSummary.from_list(keep)
            if t.__cause__ is not None:
                todo.append((t.__cause__, x.__cause__))
            if t.__context__ is not None:
                todo.append((t.__context__, x.__context__))
            for sub_t, sub_x in zip(getattr(t, "exceptions", None) or (),
                                    getattr(x, "exceptions", None) or ()):
                todo.append((sub_t, sub_x))
        text = "".join(te.format())
    except Exception as fe:
        text = "%s: %s\n[traceback unavailable: %s: %s]\n" % (
            name, value, type(fe).__name__, _safe_str(fe))
    return name, value, text


def _user_site():
    """The user site directory (pip install --user) on sys.path once it
    exists, as site puts it there at start-up: a kernel started before
    the first install (or forked from a pool's template) sees it too."""
    site = sys.modules.get("site")
    if site is None or not site.ENABLE_USER_SITE:
        return
    try:
        d = site.getusersitepackages()
        if d not in sys.path and posix.stat(d):
            site.addsitedir(d)
    except Exception:
        pass


def _execute(req, ns):
    _user_site()
    code = req.get("code")
    if not isinstance(code, str):
        return _invalid(req, "execute needs a string \"code\"")
    _S.count += 1
    filename = "<cell-%d>" % _S.count
    # register the source so that tracebacks quote its lines (mtime None:
    # linecache.checkcache leaves such entries alone)
    # (the last line ends in a newline: Python 3.11's traceback module puts
    # its carets a column too far right on a last line without one)
    linecache.cache[filename] = (len(code), None, _lines(code), filename)
    err = None
    _S.pending = False
    try:
        _S.busy = True
        try:
            try:
                # from here a SIGINT interrupts the cell: the supervisor
                # holds back an interrupt asked for before it reads this
                _emit({"type": "started", "id": _S.cur_id})
                _run_cell(code, filename, ns)
            except BaseException as e:
                err = e
            fig_err = _flush_figures()
            if err is None:
                err = fig_err
        finally:
            _S.busy = False
    except BaseException as e:
        # a SIGINT that came in the instant the cell ended
        if err is None:
            err = e
    if posix.getpid() != _S.pid:
        _child_exit(err)
    _restore_sigint()
    if err is not None:
        sys.last_type, sys.last_value, sys.last_traceback = type(err), err, err.__traceback__
        name, value, text = _format_error(err)
        err = None
        _flush_std()
        _emit({"type": "error", "id": _S.cur_id, "name": _clean(name),
               "value": _clean(value), "traceback": _clean(text)})
        status = "error"
    else:
        status = "ok"
    _flush_std()
    _emit({"type": "done", "id": _S.cur_id, "execution_count": _S.count, "status": status})


def _child_exit(err):
    """A fork made by user code finished the cell: it must not serve
    requests.  It ends as a script would."""
    code = 0
    if isinstance(err, SystemExit):
        code = err.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            try:
                sys.stderr.write(_safe_str(code) + "\n")
            except BaseException:
                pass
            code = 1
    elif err is not None:
        try:
            sys.stderr.write(_format_error(err)[2])
        except BaseException:
            pass
        code = 1
    _flush_std()
    posix._exit(code & 0xff)


def _restore_sigint():
    # user code may have replaced the handler; between cells it must be ours
    try:
        if _signal.getsignal(_signal.SIGINT) is not _sigint:
            _signal.signal(_signal.SIGINT, _sigint)
    except Exception:
        pass


# ---- the other requests -----------------------------------------------------

def _complete_status(code):
    """codeop's answer, as the interactive interpreter gives it: a block
    (if, def, for...) is complete only once a blank line ends it.  Several
    statements are judged whole, then by their last one.

    code is lines that each end in a newline (as codecell shell sends
    them; the newline of the last line may be left out): "if x:\n  y\n"
    is incomplete, "if x:\n  y\n\n" complete.  The interactive
    interpreter joins its lines with newlines instead, so for codeop
    itself the first one is already complete: drop the last line's
    newline before asking it.  A last line of blanks counts as empty."""
    import codeop
    import warnings

    if code.endswith("\n"):
        code = code[:-1]
        head, sep, last = code.rpartition("\n")
        if sep and last and not last.strip(" \t\r\f"):
            code = head + "\n"

    def judge(src, symbol):
        cc = codeop.CommandCompiler()
        cc.compiler.flags |= _TOP_LEVEL_AWAIT | (_S.flags & _FUTURE_MASK)
        return cc(src, "<input>", symbol)

    errors = (SyntaxError, OverflowError, ValueError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "complete" if judge(code, "single") is not None else "incomplete"
        except errors as e:
            if not (isinstance(e, SyntaxError) and "multiple statements" in str(e.msg)):
                return "invalid"
        try:
            if judge(code, "exec") is None:
                return "incomplete"
        except errors:
            return "invalid"
        try:
            tree = compile(code, "<input>", "exec", _ast.PyCF_ONLY_AST | _TOP_LEVEL_AWAIT,
                           dont_inherit=True)
            last = tree.body[-1]
            start = min([last.lineno] + [d.lineno for d in getattr(last, "decorator_list", ())])
            tail = "\n".join(code.split("\n")[start - 1:])
            return "complete" if judge(tail, "single") is not None else "incomplete"
        except Exception:
            return "complete"


def _invalid(req, why, name="InvalidRequest"):
    rid = req.get("id") if isinstance(req, dict) else None
    _emit({"type": "error", "id": rid, "name": name, "value": _clean(why),
           "traceback": ""})
    _emit({"type": "done", "id": rid, "execution_count": _S.count, "status": "error"})


def _exit_kernel(ns):
    """fd 3 closed: end as a script would, but without waiting for threads
    user code left running: atexit handlers, then the namespace goes (so
    files still open are flushed and closed), then exit 0."""
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    try:
        ns.clear()
        import gc
        gc.collect()
    except BaseException:
        pass
    _flush_std()
    posix._exit(0)


def _preload(items, ns):
    """Import each item and bind it in the user's namespace, as the import
    statement would: "pandas as pd" binds pd, "matplotlib.pyplot" binds
    matplotlib.  The C side checked the syntax (engine_preload_check)."""
    loaded, failed = [], {}
    for item in items:
        words = item.split()
        name = words[0]
        try:
            top = __import__(name)
            if len(words) == 3 and words[1] == "as":
                ns[words[2]] = sys.modules[name]
            else:
                ns[name.partition(".")[0]] = top
            loaded.append(" ".join(words))
        except BaseException as e:
            failed[_clean(" ".join(words))] = _clean("%s: %s" % (type(e).__name__, _safe_str(e)))
    return loaded, failed


def _main():
    preload = []
    template = False
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--preload" and i + 1 < len(args):
            preload += args[i + 1].split(",")
            i += 1
        elif a.startswith("--preload="):
            preload += a[len("--preload="):].split(",")
        elif a == "--template":
            template = True
        i += 1
    sys.argv = [""]  # as the interactive interpreter has it
    ns = _setup_interpreter()
    loaded, failed = _preload([p.strip() for p in preload if p.strip()], ns)
    _restore_sigint()
    if template:
        _template(ns, loaded, failed)
        # a kernel forked from the template: the template's pages that
        # every cell's request, run and answer write (refcounts, the
        # interpreter's state) are copied now, before it is ready, not in
        # the session's first cell (about 0.5 ms of copy-on-write faults)
        _quietly(["1 + 1"])
    _serve(ns, loaded, failed)


# ---- the template of a warm pool --------------------------------------------

def _template(ns, loaded, failed):
    """A warm pool's template: the preloads are imported; now make a cell
    for each spawn message on fd 3 (a SOCK_SEQPACKET socket from the
    supervisor: a spec and fds), by forking and calling
    codecell_cell_enter() of cell.so (fd 5) in the child.  It returns in
    the cell's worker, locked down, with fds 0..4 the session's; that
    process goes on as the session's kernel.  The template itself never
    runs a cell: it reads only the supervisor's messages, and nothing of a
    session (code, environment, files) passes through it, since every cell
    starts as a copy of its memory."""
    import ctypes
    import gc
    import socket

    lib = ctypes.PyDLL("/proc/self/fd/5")  # PyDLL: the GIL stays held
    posix.close(5)
    enter = lib.codecell_cell_enter
    enter.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int),
                      ctypes.c_int]
    enter.restype = ctypes.c_int
    joins = lib.codecell_cell_joins
    joins.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    joins.restype = ctypes.c_int
    ctl = socket.socket(fileno=3)
    # a fork of a session serializes and restores its state with dill:
    # imported here once, not in each kernel a fork touches (~40 ms each)
    try:
        import dill  # noqa: F401
    except ImportError:
        pass
    # and goes through a snapshot and a restore once, so that what they
    # set up on first use is made here, not in the first fork of each
    # session; the sample is kept for the "warm" request (below)
    try:
        _WARM[0] = _snapshot(_warm_sample())[0]
        _warm()
    except Exception:
        _WARM[0] = None
    _first_use()
    # objects of the preloads (and of the warm-up) move to a generation
    # the collector leaves alone, so it does not write to (and unshare)
    # their pages in cells
    gc.collect()
    gc.freeze()
    _flush_std()
    # the supervisor watches us through a pidfd: it learns of our death
    # at once, and finds our pid (tests kill us with it)
    me = posix.pidfd_open(posix.getpid())
    socket.send_fds(ctl, [b"pidfd"], [me])
    posix.close(me)
    _emit({"type": "ready", "preloaded": loaded, "failed": failed, "template": True})
    # nobody reads the template's own output from now on
    null = posix.open("/dev/null", posix.O_WRONLY)
    posix.dup2(null, 1)
    posix.dup2(null, 2)
    posix.close(null)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 4096, 16)
        except InterruptedError:
            continue
        if not msg:
            posix._exit(0)  # the supervisor closed the pool
        if _make_cell(ctl, enter, joins, msg, fds):
            return  # in the cell's worker: go on as the session's kernel


# Cells the template runs once, through the same path as a session's (the
# result's repr and _repr_html_, an error's traceback, the figures' PNG),
# for the modules it preloaded.  Generic on purpose: what any first cell,
# describe() or plot sets up on first use (lazy imports of pandas'
# formatters, numpy's arrayprint and the PNG writer, matplotlib's backend,
# text and tick caches, the kernel's own compile and traceback code).
# Not the fonts: matplotlib empties its font cache in every forked child
# (FT2Font is not fork-safe), so each session opens its fonts again.
_FIRST_USE = (
    (None, "1 + 1"),
    (None, "1 / 0"),
    ("numpy", "import numpy as _np\n_np.arange(6).reshape(2, 3) * 1.5"),
    ("pandas", "import pandas as _pd\n"
               "_df = _pd.DataFrame({'a': [1.0, 2.5, None], 'b': [1, 2, 3], 'c': ['x', 'y', 'z']})\n"
               "_df.describe()"),
    ("pandas", "_df"),
    ("pandas", "_df['c']"),
    ("matplotlib.pyplot", "import matplotlib.pyplot as _plt\n"
                          "_plt.plot([1, 3, 2], label='l')\n"
                          "_plt.title('t')\n_plt.xlabel('x')\n_plt.legend()"),
)


def _quietly(cells, figures=False):
    """Run each of cells (code strings) as an execute request would, in a
    namespace of its own, with no events.  Leaves nothing a session can
    see: no names, builtins._, the execution count, the __future__ flags
    and the cells' source lines as they were, no warning registered as
    shown (the filters are reset on the way out).  With figures (the
    template's warm-up): the open figures rendered and closed (the next
    is Figure 1 again), and the namespace and the figures kept in _KEPT,
    never freed.  Freed, they would leave free slots all over the
    template's heap, which the cells' first allocations would take, each
    copying its page: 0.5 MiB more PSS per idle session, measured.  What
    the cells imported stays imported, as after a session's own first
    plot."""
    import warnings
    b = vars(builtins)
    had, old = "_" in b, b.get("_")
    count, flags = _S.count, _S.flags
    last = {k: v for k, v in vars(sys).items() if k in ("last_type", "last_value", "last_traceback")}
    ns = {"__name__": "__main__", "__builtins__": builtins}
    kept = [ns]
    _S.quiet = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for code in cells:
                # through the decoder, as a request comes
                _execute(json.loads(json.dumps({"op": "execute", "id": 0, "code": code})), ns)
            # the inline backend's rendering, whichever backend is set
            if figures:
                helpers = sys.modules.get("matplotlib._pylab_helpers")
                if helpers is not None:
                    kept.extend(m.canvas.figure for m in helpers.Gcf.get_all_fig_managers())
                _emit_figures(collect=True)
    except BaseException:
        pass  # a warm-up, never a reason for the template to fail
    finally:
        _S.quiet = False
        for n in range(count + 1, _S.count + 1):
            linecache.cache.pop("<cell-%d>" % n, None)
        _S.count, _S.flags = count, flags
        for name in ("last_type", "last_value", "last_traceback"):
            if name in last:
                setattr(sys, name, last[name])
            elif hasattr(sys, name):
                delattr(sys, name)
        if had:
            b["_"] = old
        else:
            b.pop("_", None)
        plt = sys.modules.get("matplotlib.pyplot")
        if figures and plt is not None:
            try:
                plt.close("all")
            except Exception:
                pass
        if figures:
            _KEPT.append(kept)
        else:
            ns.clear()


_KEPT = []  # what _first_use made, never freed (see _quietly)


def _first_use():
    """What a session's first cells set up on first use, made once in the
    template and shared with every cell: _FIRST_USE for what it preloaded."""
    _quietly([code for module, code in _FIRST_USE if module is None or module in sys.modules],
             figures=True)


def _join(fds):
    """Move this thread (only) into the cgroups whose "tasks" files these
    are (cgroup v1: "0" is the writer itself, and it skips the global
    lock that moving a process takes).  True if every write took."""
    ok = True
    for fd in fds:
        try:
            posix.write(fd, b"0")
        except OSError:
            ok = False
    return ok


def _make_cell(ctl, enter, joins, msg, fds):
    """Fork one cell.  The fork runs from inside the cell's cgroups (the
    spec's join fds), so the page tables, namespaces and init it makes
    are charged to the cell, not to us; then we go back to our own.
    True in the cell's worker, False in the template."""
    import ctypes
    n = joins(msg, len(msg))
    keep = fds if n <= 0 else fds[:len(fds) - 2 * n]
    cell_cg, own_cg = fds[len(keep):len(keep) + max(n, 0)], fds[len(keep) + max(n, 0):]
    _join(cell_cg)  # if it did not take, the fork is charged to us, as before
    pid = posix.fork()
    if pid == 0:
        try:
            ctl.detach()
            for fd in cell_cg + own_cg:
                posix.close(fd)
            arr = (ctypes.c_int * len(keep))(*keep)
            r = enter(msg, len(msg), arr, len(keep))
        except BaseException:
            r = -1
        if r != 0:
            posix._exit(127)
        _S.pid = posix.getpid()  # the cell's worker
        return True
    if cell_cg and not _join(own_cg):
        posix._exit(126)  # stuck in a cell's cgroup: better a new template
    for fd in fds:
        posix.close(fd)
    while True:
        try:
            posix.waitpid(pid, 0)  # it exits as soon as the cell's init is forked
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            break


# ---- serving requests -------------------------------------------------------

def _init(req):
    """A kernel from a warm pool gets its session's environment here (the
    template had the common one): set each KEY to VALUE."""
    env = req.get("env")
    if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ValueError("init needs an \"env\" object of strings")
    import os
    for k, v in env.items():
        os.environ[k] = v
    _seed_from_env()


# ---- fork: the user's variables, serialized ----------------------------------

_SNAPSHOT_CAP = 16 << 20  # bytes of serialized state, before base64


def _pickler():
    # dill serializes functions, classes and lambdas defined in cells by
    # value; plain pickle would refer to __main__, which the fork lacks
    try:
        import dill
        return dill, {"recurse": True}
    except ImportError:
        import pickle
        return pickle, {}


def _dumps(value, pickler, kw):
    """(data, plain): plain pickle first, dill for what it cannot do.  A
    fork's caller waits on this, and the C pickler is about ten times
    faster (a DataFrame: 0.01 ms, against 0.24 with dill).  What refers to
    __main__ by name (functions, classes and their instances defined in
    cells) is dill's too: the fork's kernel has no such names, dill copies
    them by value.  Such an object is serialized twice."""
    import pickle
    if pickler is not pickle and getattr(type(value), "__module__", None) != "__main__":
        try:
            data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
            if b"__main__" not in data:
                return data, True
        except Exception:
            pass  # dill's turn; a KeyboardInterrupt is not caught
    return pickler.dumps(value, **kw), False


def _snapshot(ns):
    import base64
    import pickle
    import types
    pickler, kw = _pickler()
    modules, state, skipped, size, plain = {}, {}, {}, 0, []
    for name, value in list(ns.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        if isinstance(value, io.IOBase):
            # dill would reopen it in the fork with its mode: "w" would
            # truncate the file the fork was just given
            skipped[_clean(name)] = "a file object: open the file again in the fork"
            continue
        try:
            data, is_plain = _dumps(value, pickler, kw)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            skipped[_clean(name)] = _clean("%s: %s" % (type(e).__name__, _safe_str(e)), 200)
            continue
        if size + len(data) > _SNAPSHOT_CAP:
            skipped[_clean(name)] = "over the %d-byte limit of a fork" % _SNAPSHOT_CAP
            continue
        size += len(data)
        state[name] = data
        if is_plain:
            plain.append(name)
    blob = pickle.dumps({"modules": modules, "state": state, "plain": plain,
                         "count": _S.count, "flags": _S.flags})
    return base64.b64encode(blob).decode("ascii"), skipped


def _restore(ns, data):
    import base64
    import importlib
    import pickle
    pickler, _ = _pickler()
    snap = pickle.loads(base64.b64decode(data))
    skipped = {}
    for name, mod in snap["modules"].items():
        try:
            ns[name] = importlib.import_module(mod)
        except BaseException as e:
            skipped[_clean(name)] = _clean("%s: %s" % (type(e).__name__, _safe_str(e)), 200)
    plain = set(snap.get("plain", ()))
    for name, value in snap["state"].items():
        try:
            ns[name] = (pickle if name in plain else pickler).loads(value)
        except BaseException as e:
            skipped[_clean(name)] = _clean("%s: %s" % (type(e).__name__, _safe_str(e)), 200)
    _S.count = snap["count"]
    _S.flags = snap["flags"]
    return skipped


def _warm_sample():
    """A namespace like a session's, for _WARM: a list, a dict, a function
    defined in a "cell" (dill's), and an array and a DataFrame when the
    preloads have numpy and pandas."""
    ns = {"__name__": "__main__", "items": list(range(100)), "d": {"a": 1.5, "b": "x"}}
    exec("def f(v):\n    return v + 1\n", ns)
    if "numpy" in sys.modules:
        ns["a"] = sys.modules["numpy"].arange(10)
    if "pandas" in sys.modules:
        ns["df"] = sys.modules["pandas"].DataFrame({"a": range(10)})
    return ns


_WARM = [None]  # the sample's snapshot, made by the template


def _warm():
    """Restore the template's sample into a namespace that is thrown away.
    A kernel forked from the template runs a restore's code for the first
    time: every page it touches is copied then (~1.9 MiB, ~1.5 ms for a
    DataFrame and a function).  A fork sends this to its new kernel while
    the source serializes, so that the restore finds them copied.  Leaves
    nothing: the counter and flags that _restore sets are put back."""
    if _WARM[0] is None:
        return
    count, flags = _S.count, _S.flags
    try:
        _restore({"__name__": "__main__"}, _WARM[0])
    finally:
        _S.count, _S.flags = count, flags


_NAMES_MAX = 200


def _names(text, ns):
    """What python3's own prompt offers on Tab (rlcompleter) for text, a
    name or a dotted name: the user's variables, builtins and keywords,
    attributes after a dot (evaluating what is before the dot, as
    rlcompleter does; "name(" for callables).  Sorted, at most _NAMES_MAX."""
    if not text or len(text) > 1000:
        return []
    import rlcompleter
    c = rlcompleter.Completer(ns)
    try:
        found = c.attr_matches(text) if "." in text else c.global_matches(text)
    except BaseException:
        return []
    out = sorted(set(m for m in found if isinstance(m, str) and m.startswith(text)))
    # names that start with _ only when asked for (as rlcompleter does after a dot)
    if not text.rsplit(".", 1)[-1].startswith("_"):
        out = [m for m in out if not m[len(text) - len(text.rsplit(".", 1)[-1]):].startswith("_")]
    return out[:_NAMES_MAX]


def _await_go(requests, req, ns):
    """The restore's "go": the state's code (reconstructors, imports of
    the session's own modules) may read the workspace, which the
    supervisor copies after sending the restore.  False, with the error
    answered, for any other line."""
    line = b""
    while not line.strip():  # blank lines are skipped, as _serve does
        line = requests.readline()
        if not line:
            _exit_kernel(ns)
    try:
        go = json.loads(line)
    except Exception:
        go = None
    if not isinstance(go, dict) or go.get("op") != "go" or go.get("id") != req.get("id"):
        _invalid(req, "a restore that waits needs {\"op\":\"go\"} with its id next")
        return False
    return True


def _serve(ns, loaded, failed):
    _reseed()
    _seed_from_env()
    _flush_std()
    _emit({"type": "ready", "preloaded": loaded, "failed": failed})

    requests = io.open(3, "rb", closefd=False)
    while True:
        line = requests.readline()
        if not line:
            _exit_kernel(ns)
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request is a JSON object")
        except Exception as e:
            _invalid(None, "%s: %s" % (type(e).__name__, _safe_str(e)))
            continue
        try:
            _S.cur_id = req.get("id")
            op = req.get("op")
            if op == "execute":
                _execute(req, ns)
            elif op == "complete":
                code = req.get("code")
                if not isinstance(code, str):
                    _invalid(req, "complete needs a string \"code\"")
                else:
                    _emit({"type": "complete", "id": _S.cur_id,
                           "status": _complete_status(code)})
            elif op == "names":
                text = req.get("text")
                if not isinstance(text, str):
                    _invalid(req, "names needs a string \"text\"")
                else:
                    _emit({"type": "names", "id": _S.cur_id, "names": _names(text, ns)})
            elif op == "snapshot":
                data, skipped = _snapshot(ns)
                _emit({"type": "snapshot", "id": _S.cur_id, "data": data,
                       "skipped": skipped})
            elif op == "restore":
                if not isinstance(req.get("data"), str):
                    _invalid(req, "restore needs a string \"data\"")
                    continue
                if req.get("wait") is True and not _await_go(requests, req, ns):
                    continue
                skipped = _restore(ns, req["data"])
                _emit({"type": "done", "id": _S.cur_id, "execution_count": _S.count,
                       "status": "ok", "skipped": skipped})
            elif op == "warm":
                _warm()
                _emit({"type": "done", "id": _S.cur_id, "execution_count": _S.count,
                       "status": "ok"})
            elif op == "init":
                try:
                    _init(req)
                except ValueError as e:
                    _invalid(req, _safe_str(e))
                    continue
                _emit({"type": "done", "id": _S.cur_id, "execution_count": _S.count,
                       "status": "ok"})
            elif op == "reseed":
                _reseed()
                _emit({"type": "done", "id": _S.cur_id, "execution_count": _S.count,
                       "status": "ok"})
            elif op == "reap":
                while True:
                    try:
                        pid, _ = posix.waitpid(-1, posix.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                _emit({"type": "done", "id": _S.cur_id, "execution_count": _S.count,
                       "status": "ok"})
            else:
                _invalid(req, "unknown op %r" % (op,))
        except BaseException as e:
            # a fault of the kernel itself (user code can break what it
            # relies on): answer and go on serving
            _S.busy = False
            if posix.getpid() != _S.pid:
                posix._exit(1)
            _invalid(req, "%s: %s" % (type(e).__name__, _safe_str(e)), "KernelError")


_main()

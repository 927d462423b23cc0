# codecell's sitecustomize: the seed option (CODECELL_SEED) seeds random
# and, once imported, numpy.random; nothing else
def _codecell_seed():
    import os
    import sys
    n = os.environ.get('CODECELL_SEED', '')
    if not n.isdigit():
        return
    n = int(n)
    import random
    random.seed(n)

    class _SeedNumpy:
        def find_spec(self, name, path=None, target=None):
            if name != 'numpy.random':
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


_codecell_seed()
del _codecell_seed


# stdout and stderr are two pipes, so codecell can read "A" on stderr, "B"
# on stdout and "C" on stderr in any order.  This makes sys.stdout and
# sys.stderr wait, on a write to one, (half a second at most) until
# codecell has read what the other holds: it then reads them in the order
# they were written (the result's outputs).  A child process writing to
# fd 1 and 2 itself is not ordered.  One copy for both users: a one-shot
# program (below) and the Python kernel (kernels/python_kernel.py), which
# finds it in this module, imported by site before the kernel starts.
# dunder: sys.__stdout__ and sys.__stderr__ too (the kernel keeps its own).
def _codecell_ordered_std(dunder=True):
    import io
    import sys
    last = [0]

    def drained(fd):
        import fcntl
        import time
        n = bytearray(4)
        deadline, delay = None, 0.00005
        while True:
            try:
                fcntl.ioctl(fd, 0x541B, n)  # FIONREAD: bytes not yet read
            except OSError:
                return
            if not int.from_bytes(n, sys.byteorder):
                return
            now = time.monotonic()
            if deadline is None:
                deadline = now + 0.5
            elif now > deadline:
                return
            time.sleep(delay)
            delay = min(delay * 2, 0.002)

    class _Ordered(io.FileIO):
        def write(self, b):
            fd = self.fileno()
            if last[0] and last[0] != fd:
                drained(last[0])
            last[0] = fd
            return io.FileIO.write(self, b)

    for name, fd in (('stdout', 1), ('stderr', 2)):
        old = getattr(sys, name)
        if old is None:
            continue
        try:
            raw = _Ordered(fd, 'wb', closefd=False)
        except (OSError, ValueError):
            continue
        new = io.TextIOWrapper(raw, encoding=old.encoding, errors=old.errors,
                               line_buffering=old.line_buffering, write_through=True)
        setattr(sys, name, new)
        if dunder:
            setattr(sys, '__%s__' % name, new)


# a one-shot program (python3 FILE, the init's child) with both streams
# on codecell's pipes
def _codecell_order():
    import os
    import stat
    import sys
    if os.getppid() != 1 or not sys.argv or sys.argv[0] in ('', '-c', '-m'):
        return
    try:
        if not all(stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (1, 2)):
            return
    except OSError:
        return
    _codecell_ordered_std()


_codecell_order()
del _codecell_order


# matplotlib's font cache, built once by scripts/mpl-fontcache.sh (run by
# `make setup`): a fresh sandbox's matplotlib would otherwise open every
# system font on its first import to build its own (0.3 s of CPU at idle, 30 s
# on a loaded host).  On the first import of matplotlib, and only then,
# the cache is copied into MPLCONFIGDIR, which matplotlib needs writable
# (it rebuilds a cache that names a font file since removed), provided the
# font directories are as they were when it was built: new fonts on the
# host or in ~/.fonts make matplotlib build its own, as without it.
_CODECELL_MPL = '/usr/local/share/codecell/matplotlib'


def _codecell_font_stamp(roots):
    """{directory: mtime_ns} of every directory under roots: a font
    added or removed anywhere below changes one."""
    import os
    out = {}
    for root in roots:
        for d, _, _ in os.walk(root):
            try:
                out[d] = os.stat(d).st_mtime_ns
            except OSError:
                pass
    return out


def _codecell_font_cache():
    import json
    import os
    dst = os.environ.get('MPLCONFIGDIR')
    if not dst:
        return
    try:
        with open(_CODECELL_MPL + '/stamp.json') as f:
            stamp = json.load(f)
        if _codecell_font_stamp(stamp['roots']) != stamp['dirs']:
            return
        os.makedirs(dst, exist_ok=True)
        for n in os.listdir(_CODECELL_MPL):
            to = os.path.join(dst, n)
            if n.startswith('fontlist-') and n.endswith('.json') and not os.path.exists(to):
                with open(os.path.join(_CODECELL_MPL, n), 'rb') as f:
                    data = f.read()
                tmp = '%s.%d.tmp' % (to, os.getpid())
                with open(tmp, 'wb') as f:
                    f.write(data)
                os.rename(tmp, to)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return


# (it stays in sys.meta_path: removing itself while the import system
# walks the list would skip the next finder)
class _CodecellFontCache:
    done = False

    def find_spec(self, name, path=None, target=None):
        if name == 'matplotlib' and not self.done:
            self.done = True
            _codecell_font_cache()
        return None


__import__('sys').meta_path.insert(0, _CodecellFontCache())

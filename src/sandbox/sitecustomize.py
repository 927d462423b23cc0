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

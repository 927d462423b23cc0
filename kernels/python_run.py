# codecell one-shot driver for Python, run inside the sandbox as
#   /usr/bin/python3 -s -c <this file> FILENAME [ARGS...]
# The code comes on fd 3; a structured error, if any, goes to fd 4 as one
# JSON line {"error": {"name", "value", "traceback"}}.  Standard library only.
def _codecell_main():
    # everything local: the __main__ namespace is emptied for the user
    import json
    import os
    import sys
    import traceback

    filename = sys.argv[1]
    with os.fdopen(3, "rb") as f:
        source = f.read()
    report = os.fdopen(4, "w", encoding="utf-8")
    os.set_inheritable(report.fileno(), False)
    sys.argv = [filename] + sys.argv[2:]
    # like `python3 script.py`: the script's directory (the workspace) first
    sys.path[0] = os.getcwd()
    main = sys.modules["__main__"]
    for name in list(vars(main)):
        if name not in ("__name__", "__builtins__", "__spec__", "__loader__"):
            delattr(main, name)
    main.__doc__ = None

    def trim(te):
        # drop this driver's frames (they come first, from "<string>")
        frames = list(te.stack)
        while frames and frames[0].filename == "<string>":
            frames.pop(0)
        te.stack = traceback.StackSummary.from_list(frames)
        for nxt in (te.__cause__, te.__context__):
            if nxt is not None:
                trim(nxt)
        return te

    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        del source
        exec(code, vars(main))
    except SystemExit:
        raise
    except BaseException as e:
        te = trim(traceback.TracebackException(type(e), e, e.__traceback__))
        text = "".join(te.format())
        try:
            sys.stdout.flush()
        except Exception:
            pass
        sys.stderr.write(text)
        sys.stderr.flush()
        try:
            value = str(e)
        except Exception:
            value = "<unprintable %s>" % type(e).__name__
        record = {"name": type(e).__name__, "value": value, "traceback": text}
        report.write(json.dumps({"error": record}) + "\n")
        report.flush()
        os._exit(1)
    finally:
        try:
            report.close()
        except Exception:
            pass


_codecell_main()

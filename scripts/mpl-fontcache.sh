#!/bin/sh
# mpl-fontcache.sh [DIR]: build matplotlib's font cache for the sandboxes
# with the host's /usr/bin/python3 (Debian's python3-matplotlib, the one
# the sandbox runs) into DIR (default /usr/local/share/codecell/matplotlib,
# which every sandbox sees read-only under /usr), with stamp.json: the
# font directories' mtimes when it was built.
#
# Why: MPLCONFIGDIR is fresh in every sandbox, so matplotlib opened every
# system font to build its cache on each first import (0.3 s of CPU at idle,
# 30 s on a loaded host).  The sandbox's sitecustomize copies this cache
# into MPLCONFIGDIR when matplotlib is first imported, if the stamp still
# matches (src/sandbox/sitecustomize.py).  Run again (make setup does)
# after fonts change; until then sandboxes build their own, as before.
# Does nothing when the cache is up to date.
set -eu
dir=${1:-/usr/local/share/codecell/matplotlib}
site=$(dirname "$0")/../src/sandbox/sitecustomize.py
py=/usr/bin/python3
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
	echo "mpl-fontcache: no matplotlib for $py: nothing to build" >&2
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# HOME and MPLCONFIGDIR as in a sandbox: the user font directories
# matplotlib looks in are under HOME (/home/user)
set +e
HOME=/home/user MPLCONFIGDIR=$work/cache XDG_DATA_HOME= "$py" - "$site" "$dir" "$work" <<'EOF'
import json
import os
import sys

site, dest, work = sys.argv[1:4]
ns = {"__name__": "codecell_site"}
exec(compile(open(site).read(), site, "exec"), ns)  # its _codecell_font_stamp
stamp_of = ns["_codecell_font_stamp"]
ns["_CodecellFontCache"].done = True  # build the cache here, copy nothing in

from matplotlib import cbook  # noqa: E402
import matplotlib.font_manager as fm  # noqa: E402  (without a cache: builds it)

roots = sorted({str(cbook._get_data_path("fonts")), *fm.X11FontDirectories, "/etc/fonts"})
stamp = {"roots": roots, "dirs": stamp_of(roots)}
try:
    with open(os.path.join(dest, "stamp.json")) as f:
        if json.load(f) == stamp:
            sys.exit(3)  # up to date
except (OSError, ValueError):
    pass
cache = os.path.join(work, "cache")
names = [n for n in os.listdir(cache) if n.startswith("fontlist-") and n.endswith(".json")]
if not names or stamp_of(roots) != stamp["dirs"]:
    sys.exit("mpl-fontcache: the fonts changed while the cache was built; run it again")
with open(os.path.join(cache, "stamp.json"), "w") as f:
    json.dump(stamp, f)
for n in names + ["stamp.json"]:
    os.chmod(os.path.join(cache, n), 0o644)
EOF
rc=$?
set -e
[ $rc -eq 3 ] && exit 0
[ $rc -eq 0 ] || exit 1
mkdir -p "$(dirname "$dir")"
rm -rf "$dir.new"
mkdir -m 755 "$dir.new"
cp "$work"/cache/fontlist-*.json "$work"/cache/stamp.json "$dir.new"/
rm -rf "$dir.old"
[ -d "$dir" ] && mv "$dir" "$dir.old"
mv "$dir.new" "$dir"
rm -rf "$dir.old"
echo "mpl-fontcache: built $dir"

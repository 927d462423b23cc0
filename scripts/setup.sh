#!/bin/sh
# Install what codecell needs to build, run and test, from Debian's
# packages.  Idempotent: does nothing when everything is there.  Used by
# `make run`, `make test` and .ci/run.
set -eu

build_pkgs="gcc make pkg-config libc6-dev libseccomp-dev libjansson-dev libmicrohttpd-dev libcmocka-dev libedit-dev"
# libedit2: line editing in `codecell shell` (loaded when a shell starts on a terminal);
# runtimes the sandbox offers, with the Python libraries agents expect
# python3-dill: session fork copies functions and classes defined in cells
runtime_pkgs="libedit2 python3 python3-numpy python3-pandas python3-matplotlib python3-dill nodejs sqlite3 bash"
# tests and benchmarks: setpriv (util-linux) for the ordinary-user runs,
# clang and its libFuzzer runtime for `make fuzz`,
# bwrap and hyperfine as benchmark baselines, iproute2 for network checks,
# chromium (and a font) for the playground test of `codecell serve`
# codecell agent: libcurl4 is loaded when it starts (src/agent/llm.c), its
# headers build it
agent_pkgs="libcurl4-openssl-dev libcurl4"
# the sql tool: libsqlite3 and libpq are loaded when a query comes
# (src/engine/tool_sql*.c), their headers build it; postgresql (initdb,
# postgres) for tests/e2e/test_tool_sql.py's own server
sql_pkgs="libsqlite3-dev libpq-dev postgresql"
# clang-format: `make format-check` (.clang-format), which CI runs;
# python3-pip installs the Python client's test dependencies (below)
test_pkgs="python3-pip util-linux bubblewrap hyperfine iproute2 procps time clang clang-format libclang-rt-14-dev chromium fonts-dejavu-core"
# curl: tests/e2e/test_docs.py runs the docs' curl examples as written
first_pkgs="curl"
# `make compare` only (`setup.sh compare`): the sandboxes the escape corpus
# is compared with.  Not installed otherwise: firejail is setuid root.
compare_pkgs=""
if [ "${1:-}" = compare ]; then
	compare_pkgs="firejail runsc"
fi

# A host id range for sandboxes (codecell as root maps each sandbox to an
# id of its own from it, see src/sandbox/ids.h): a "codecell" entry in
# /etc/subuid and /etc/subgid, 65536 ids placed above every range and
# every user and group id already there (never 65534 or 0).  Only root
# needs it: an ordinary user's sandboxes map to that user.
add_id_range() {
	if [ "$(id -u)" -ne 0 ]; then
		return 0
	fi
	if grep -q '^codecell:' /etc/subuid 2>/dev/null && grep -q '^codecell:' /etc/subgid 2>/dev/null; then
		return 0
	fi
	touch /etc/subuid /etc/subgid
	# the first multiple of 65536 at or above 1048576 and above every id
	# in use or reserved (nobody, 65534, and nfsnobody, 4294967294, aside)
	base=$( { awk -F: 'NF >= 3 { print $2 + $3 }' /etc/subuid /etc/subgid
		  getent passwd | awk -F: '$3 != 65534 && $3 < 4294967294 { print $3 + 1 }'
		  getent group | awk -F: '$3 != 65534 && $3 < 4294967294 { print $3 + 1 }'
		} | awk 'BEGIN { m = 1048576 } $1 > m { m = $1 } END { printf "%.0f\n", int((m + 65535) / 65536) * 65536 }')
	if [ "$base" -gt 4294836224 ]; then
		echo "setup: no room for a codecell id range above the ids in use; add 'codecell:BASE:65536' to /etc/subuid and /etc/subgid by hand" >&2
		exit 1
	fi
	for f in /etc/subuid /etc/subgid; do
		if ! grep -q '^codecell:' "$f"; then
			echo "codecell:$base:65536" >> "$f"
			echo "setup: added codecell:$base:65536 to $f"
		fi
	done
}
add_id_range

missing=""
# make compat: CPython's own regression tests, run inside and outside
compat_pkgs="libpython3.11-testsuite python3-joblib"
for p in $build_pkgs $runtime_pkgs $test_pkgs $first_pkgs $agent_pkgs $sql_pkgs $compat_pkgs $compare_pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
if [ -n "$missing" ]; then
	echo "setup: installing:$missing"
	if [ "$(id -u)" -ne 0 ]; then
		SUDO=sudo
	else
		SUDO=
	fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
	echo "setup: done"
fi

# The official MCP client the tests drive `codecell mcp` with
# (tests/e2e/test_mcp_sdk.py), pinned by tests/node/package-lock.json and
# installed again only when the lock file changes.
node_dir=$(dirname "$0")/../tests/node
if ! command -v npm >/dev/null 2>&1; then
	echo "setup: no npm: tests/e2e/test_mcp_sdk.py will fail (install Node.js 20 or later with npm)" >&2
elif ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.codecell-installed" 2>/dev/null; then
	echo "setup: npm ci in tests/node"
	(cd "$node_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) &&
		cp "$node_dir/package-lock.json" "$node_dir/node_modules/.codecell-installed"
fi

# pytest for tests/e2e/test_python_client.py (the Python client's tests),
# pinned with hashes by clients/python/requirements-test.lock, installed
# for Debian's python3 into clients/python/.test-deps, again only when the
# lock file changes
py_lock=$(dirname "$0")/../clients/python/requirements-test.lock
py_deps=$(dirname "$0")/../clients/python/.test-deps
if ! cmp -s "$py_lock" "$py_deps/.codecell-installed" 2>/dev/null; then
	echo "setup: pip install clients/python/requirements-test.lock"
	/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --require-hashes --no-deps \
		--upgrade --target "$py_deps" -r "$py_lock" && cp "$py_lock" "$py_deps/.codecell-installed"
fi

# matplotlib's font cache for the sandboxes, rebuilt only when the fonts
# changed (scripts/mpl-fontcache.sh says why)
if [ "$(id -u)" -eq 0 ]; then
	sh "$(dirname "$0")/mpl-fontcache.sh"
else
	sudo sh "$(dirname "$0")/mpl-fontcache.sh"
fi

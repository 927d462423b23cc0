#!/bin/sh
# Run every test: unit tests (cmocka, one process per test), then the
# end-to-end and security scripts (TAP).  Ends with "N passed, N failed".
# CODECELL_BUILD selects the build directory (build-san for `make sanitize`).
set -u
cd "$(dirname "$0")/.."
build=${CODECELL_BUILD:-build}
out=tests/out/$build
mkdir -p "$out"
pass=0
fail=0
failed_names=""
failed_logs=""
exited_logs=""

ended() { # name logfile rc
	# a test file that failed without a "not ok" line is one failure; one
	# killed (timeout's 124, a signal) is named so, whatever it printed;
	# both get the end of their output printed
	why=""
	[ "$3" -eq 124 ] && why="timed out (exited 124)"
	[ "$3" -gt 128 ] && why="killed by signal $(($3 - 128))"
	if [ "$3" -ne 0 ] && ! grep -q '^not ok ' "$2"; then
		fail=$((fail + 1))
		[ -n "$why" ] || why="exited $3"
	fi
	if [ -n "$why" ]; then
		failed_names="$failed_names\n  $1: $why"
		exited_logs="$exited_logs $2"
	fi
}

count() { # name logfile
	p=$(grep -c '^ok ' "$2" || true)
	f=$(grep -c '^not ok ' "$2" || true)
	pass=$((pass + p))
	fail=$((fail + f))
	if [ "$f" -gt 0 ]; then
		failed_names="$failed_names\n  $1: $(grep '^not ok ' "$2" | sed 's/^not ok [0-9]* - //' | tr '\n' ' ')"
		failed_logs="$failed_logs $2"
	fi
}

for t in "$build"/tests/test-*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	log="$out/$name.log"
	CMOCKA_MESSAGE_OUTPUT=TAP timeout 300 "$t" > "$log" 2>&1
	rc=$?
	count "$name" "$log"
	ended "$name" "$log" $rc
	echo "unit     $name: $(grep -c '^ok ' "$log") ok, $(grep -c '^not ok ' "$log") not ok"
done

for t in tests/e2e/test_*.py tests/security/test_*.py; do
	[ -f "$t" ] || continue
	name=$(basename "$(dirname "$t")")/$(basename "$t" .py)
	log="$out/$(echo "$name" | tr / _).log"
	t0=$(date +%s)
	CODECELL_BUILD=$build timeout 900 /usr/bin/python3 "$t" > "$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - t0 ))
	count "$name" "$log"
	ended "$name" "$log" $rc
	printf '%-8s %s: %s ok, %s not ok (%ss)\n' "$(dirname "$t" | xargs basename)" "$(basename "$t" .py)" \
		"$(grep -c '^ok ' "$log")" "$(grep -c '^not ok ' "$log")" "$secs"
done

if [ "$fail" -gt 0 ]; then
	# why, where CI shows only the end of the output: the first 12
	# lines of each failed test's diagnostics, at most 40 lines a file
	# (its log has them all)
	for log in $failed_logs; do
		echo "--- $log"
		awk '/^not ok /{f=1; n=0} /^ok /{f=0} f && /^not ok |^#/{if (n++ < 12) print}' "$log" | cut -c1-300 | tail -n 40
	done
	# a crash or a timeout may say no "not ok": the end of its output
	for log in $exited_logs; do
		echo "--- $log (its last 20 lines)"
		tail -n 20 "$log" | cut -c1-300
	done
	printf 'failures (logs in %s/):%b\n' "$out" "$failed_names"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

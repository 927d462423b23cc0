#!/bin/sh
# make run: the short tour of codecell (runs examples/ through the sandbox).
set -u
cd "$(dirname "$0")/.."
cc=./build/codecell
ws=$(mktemp -d /tmp/codecell-demo-XXXXXX)
trap 'rm -rf "$ws"' EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; echo "[exit status $?]"; }

step $cc check
step $cc run examples/hello.py one two
step $cc run --file examples/data/sales.csv --workspace "$ws" examples/analysis.py
ls -la "$ws"
step $cc run --lang javascript examples/fib.js
step $cc run --lang bash examples/job.sh
step $cc run --lang sql examples/query.sql
printf '\n\033[1m$ echo "1/0" | codecell run --json -\033[0m\n'
echo "1/0" | $cc run --json - | /usr/bin/python3 -m json.tool
step $cc run --timeout 1 examples/escape.py
printf '\n\033[1m$ echo "while True: pass" | codecell run --timeout 1 -\033[0m\n'
echo "while True: pass" | $cc run --timeout 1 -
echo "[exit status $?]"

#!/bin/sh
# make bench: figures for the README, each against a baseline measured in
# the same run.  Not a test: it prints numbers and asserts nothing.
set -eu
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/bench_run.py "$@"

#!/usr/bin/env bash
# `make test`: set-up, lint, type-check, then the tests; says how long each phase took.
# The tests' own summary (with the 15 slowest tests) closes the output; the phase times are
# printed just before it (tests/conftest.py reads them from $IWR_TEST_PHASES).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
phases=""

phase() {  # phase NAME COMMAND...: run COMMAND, add "NAME=SECONDS" to $phases
  local name=$1 start took
  shift
  start=$EPOCHREALTIME
  "$@"
  took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  printf 'test: %s took %s s\n' "$name" "$took"
  phases="${phases:+$phases,}$name=$took"
}

phase setup bash scripts/setup.sh
phase lint make -s --no-print-directory lint  # (each make target re-checks set-up: about a second)
phase typecheck make -s --no-print-directory typecheck
export IWR_TEST_PHASES="$phases"
# Test files run in parallel workers (a file's tests stay together, so a module's browser pool or
# recorded task is built once): the tests mostly wait on browsers, subprocesses and Ray.
# Tests marked `long` (long real-backend runs) are left out here: `make test-long` runs them.
exec "$BIN/python" -m pytest -n "${IWR_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder --durations=15 -m "${IWR_TEST_MARKS:-not long}" ${PYTEST_ARGS:-}

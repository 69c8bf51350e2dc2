#!/bin/sh
# Run every Check program in BUILD/tests, in order, and total the results.
# Usage: tests/run-tests.sh BUILD_DIR [PATTERN]
# The programs are those of tests/check_PATTERN*.c: one not built is a
# failure, as is a PATTERN that names none.
# KNOB_TEST_REVERSE=1 takes the programs in reverse order, and
# KNOB_TEST_SKIP="check_a check_b" leaves those out.
# Each program prints Check's "N%: Checks: X, Failures: Y, Errors: Z" line
# (tests/run-lib.sh runs it); the last line is the total "N passed, N failed".
set -u
build=${1:-build}
pattern=${2:-check_}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/run-lib.sh"
results=$(mktemp /tmp/knob-results.XXXXXX)
trap 'rm -f "$results"' EXIT
start=$(date +%s)
order=sort
[ -n "${KNOB_TEST_REVERSE:-}" ] && order="sort -r"
for src in $(ls "$here/$pattern"*.c 2>/dev/null | $order); do
	name=$(basename "$src" .c)
	case $name in check_*) ;; *) continue ;; esac
	case " ${KNOB_TEST_SKIP:-} " in *" $name "*) continue ;; esac
	run_prog "$build" "$name" "$results"
	[ -z "$stopping" ] || break
done
[ -s "$results" ] || [ -n "$stopping" ] || echo "no program matches tests/$pattern*.c"
reap_stale_tmp
[ -z "$stopping" ] || { echo "stopped"; exit "$stopping"; }
suite_summary "$build" "$results" $(($(date +%s) - start)) ""

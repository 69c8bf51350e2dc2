#!/bin/sh
# Run every Check program in BUILD/tests, in order, and total the results.
# Usage: tests/run-tests.sh BUILD_DIR [PATTERN]
# KNOB_TEST_REVERSE=1 takes the programs in reverse order, and
# KNOB_TEST_SKIP="check_a check_b" leaves those out (run-suites.sh).
# Each program prints Check's "N%: Checks: X, Failures: Y, Errors: Z" line;
# the last line is the plain total "N passed, N failed".
set -u
build=${1:-build}
pattern=${2:-check_}
KNOB_BIN=$(cd "$build" && pwd)
export KNOB_BIN
# Sanitizer builds: fail hard on the first report; leaks are reported too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120}
passed=0 failed=0 badprog="" ran=""
start=$(date +%s)
order=sort
[ -n "${KNOB_TEST_REVERSE:-}" ] && order="sort -r"
for t in $(ls -d "$build"/tests/${pattern}* | $order); do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=$(basename "$t")
	case " ${KNOB_TEST_SKIP:-} " in *" $name "*) continue ;; esac
	ran="$ran $name"
	log="$build/tests/$name.log"
	t0=$(date +%s)
	rm -f "$build/tests/$name.xml"
	CK_XML_LOG_FILE_NAME="$build/tests/$name.xml" "$t" >"$log" 2>&1
	rc=$?
	t1=$(date +%s)
	line=$(grep -E '^[0-9]+%: Checks: ' "$log" | tail -n 1)
	checks=$(echo "$line" | sed -n 's/.*Checks: \([0-9]*\).*/\1/p')
	fails=$(echo "$line" | sed -n 's/.*Failures: \([0-9]*\).*/\1/p')
	errs=$(echo "$line" | sed -n 's/.*Errors: \([0-9]*\).*/\1/p')
	checks=${checks:-0}; fails=${fails:-0}; errs=${errs:-0}
	bad=$((fails + errs))
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		bad=1	# crashed or sanitizer report outside a test case
	fi
	passed=$((passed + checks - fails - errs))
	failed=$((failed + bad))
	printf '%-28s %s  (%ss, exit %s)\n' "$name" "${line:-no Check summary}" $((t1 - t0)) "$rc"
	if [ "$rc" -ne 0 ] || [ "$bad" -ne 0 ]; then
		badprog="$badprog $name"
		echo "---- $log (failures) ----"
		grep -E ':[EF]:|ERROR|runtime error|Sanitizer' "$log" | head -n 40
		echo "----"
	fi
done
# a test that failed exited without its teardown: its temp dir goes now
# (the harness names it after the test's pid; KNOB_KEEP_TMP keeps them)
if [ -z "${KNOB_KEEP_TMP:-}" ]; then
	for d in /tmp/knob-test.kt*.*; do
		[ -d "$d" ] || continue
		p=${d#/tmp/knob-test.kt}
		p=${p%%.*}
		kill -0 "$p" 2>/dev/null || rm -rf "$d"
	done
fi
echo "suite $build: $(( $(date +%s) - start ))s; slowest tests:"
# Check's XML log has each test's duration (what to cut when the suite grows)
for n in $ran; do
	x="$build/tests/$n.xml"
	[ -f "$x" ] || continue
	awk -v p="$(basename "$x" .xml)" -F'[<>]' '
	    $2 == "id" { id = $3 }
	    $2 == "duration" && id != "" { print p, id, $3; id = "" }' "$x"
done | sort -k3 -g -r | head -n 10 | awk '{ printf "  %7.1fs  %s %s\n", $3, $1, $2 }'

[ -n "$badprog" ] && echo "failing programs:$badprog"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

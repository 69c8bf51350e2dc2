#!/bin/sh
# Run every libFuzzer target in BUILD/fuzz for SECONDS each, one at a time.
# Usage: tests/run-fuzz.sh BUILD_DIR SECONDS [TARGET...]
# Inputs: the seeds in tests/fuzz/corpus/TARGET/ (every crash ever found is
# kept there as a regression input) plus what earlier runs added to
# BUILD/fuzz/corpus/TARGET/.  A crash, leak, sanitizer report or timeout
# fails the run (one input running over 120 s is a timeout); the input is
# saved as BUILD/fuzz/TARGET-crash-* (or -leak-, -timeout-).
# Prints the executions of each target and a total line.
# FUZZ_SEED=N (N > 0) fixes libFuzzer's random seed, so that a short smoke
# (make check) runs the same mutations on every machine and cannot fail by
# luck; unset or 0 draws a new seed per run (exploratory runs).
set -u
build=${1:-build-fuzz}
secs=${2:-60}
shift 2 2>/dev/null || shift $#
targets=${*:-$(for b in "$build"/fuzz/fuzz_*; do basename "$b" | sed 's/^fuzz_//'; done)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
seed=${FUZZ_SEED:-0}
failed=0
for t in $targets; do
	bin="$build/fuzz/fuzz_$t"
	work="$build/fuzz/corpus/$t"
	log="$build/fuzz/$t.log"
	mkdir -p "$work" "tests/fuzz/corpus/$t"
	case $t in
	profile|inventory|journal|play|sweep) maxlen=16384 ;;
	*) maxlen=4096 ;;
	esac
	"$bin" -seed="$seed" -max_total_time="$secs" -max_len=$maxlen -timeout=120 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix="$build/fuzz/$t-" \
	    "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	used=$(sed -n 's/^INFO: Seed: *//p' "$log" | head -n 1)
	printf 'fuzz %-10s %10s executions in %ss  (seed %s, exit %s)\n' "$t" "${execs:-?}" \
	    "$secs" "${used:-?}" "$rc"
	if [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		echo "---- $log ----"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==' "$log" | head -n 30
	fi
done
echo "fuzz: $failed target(s) failed"
[ "$failed" -eq 0 ]

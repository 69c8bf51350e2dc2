# Sourced by tests/run-tests.sh and tests/suite-worker.sh: running one Check
# program (or any command) as a job of its own, and a build's totals.
#
# A job runs in a session of its own (setsid), so that nothing it does to
# its process group reaches the runner: Check's runner, on SIGTERM, sends
# SIGTERM to its own process group.  A runner that receives SIGINT or
# SIGTERM stops its job's whole session with SIGTERM (the harness tears its
# namespaces and agents down on SIGTERM), waits up to 20 s for the session
# to empty, then kills what is left.
#
# Results: run_prog appends "NAME PASSED FAILED EXIT SECONDS" to a results
# file, one line per program; suite_summary totals them.

# Sanitizer builds: fail hard on the first report; leaks are reported too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120}
job="" stopping=""

# On INT or TERM: stop the running job; $stopping: the exit status to end with.
trap 'stop_job 130' INT
trap 'stop_job 143' TERM

# Stop the job's session: SIGTERM, up to 20 s to finish, then SIGKILL.
stop_job() {
	local end=$(($(date +%s) + 20))
	stopping=${stopping:-$1}
	[ -n "$job" ] || return 0
	pkill -TERM -s "$job" 2>/dev/null
	while session_alive "$job" && [ "$(date +%s)" -lt $end ]; do
		sleep 0.2
	done
	pkill -KILL -s "$job" 2>/dev/null
	return 0
}

# Whether a process of session SID is still running (zombies do not count:
# the job's own is reaped after stop_job).
session_alive() {
	ps -e -o sid=,stat= | awk -v s="$1" '$1 == s && $2 !~ /^Z/ { f = 1 } END { exit !f }'
}

# Run CMD... as a job (its own session) and wait for it, also across a
# trapped signal; the job's exit status.
run_job() {
	local rc
	setsid -w "$@" &
	job=$!
	[ -z "$stopping" ] || stop_job "$stopping"
	while :; do
		wait "$job"
		rc=$?
		kill -0 "$job" 2>/dev/null || break	# reaped: rc is the job's
	done
	job=""
	return $rc
}

# Run BUILD/tests/NAME, print its line (and what failed), append its
# record to RESULTS and its wall time to BUILD/tests/NAME.secs (the next
# run's estimate, run-suites.sh).  Returns 1 if it failed: a failed check,
# no Check summary (a crash), an exit status other than 0, or no program.
run_prog() {
	local build=$1 name=$2 results=$3 t log t0 rc secs line checks fails errs bad passed
	t=$build/tests/$name
	log=$t.log
	if ! [ -f "$t" ] || ! [ -x "$t" ]; then
		printf '%-28s %s\n' "$name" "missing: $t not built"
		echo "$name 0 1 missing 0" >> "$results"
		return 1
	fi
	rm -f "$t.xml"
	t0=$(date +%s)
	KNOB_BIN=$(cd "$build" && pwd) CK_XML_LOG_FILE_NAME=$t.xml run_job "$t" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	[ -n "$stopping" ] || echo "$secs" > "$t.secs"
	line=$(grep -E '^[0-9]+%: Checks: ' "$log" | tail -n 1)
	checks=$(echo "$line" | sed -n 's/.*Checks: \([0-9]*\).*/\1/p')
	fails=$(echo "$line" | sed -n 's/.*Failures: \([0-9]*\).*/\1/p')
	errs=$(echo "$line" | sed -n 's/.*Errors: \([0-9]*\).*/\1/p')
	bad=$((${fails:-0} + ${errs:-0}))
	passed=$((${checks:-0} - bad))
	[ "$rc" -eq 0 ] || [ "$bad" -ne 0 ] || bad=1	# crashed, or a report outside a test
	echo "$name $passed $bad $rc $secs" >> "$results"
	printf '%-28s %s  (%ss, exit %s)\n' "$name" "${line:-no Check summary}" "$secs" "$rc"
	[ "$bad" -ne 0 ] || return 0
	echo "---- $log (failures) ----"
	grep -E ':[EF]:|ERROR|runtime error|Sanitizer' "$log" | head -n 40
	[ -n "$line" ] || tail -n 5 "$log"	# no summary: how it ended
	echo "----"
	return 1
}

# BUILD's totals from RESULTS, its time being SECONDS (LABEL says what
# time): the slowest tests (Check's XML logs), the failing programs, the
# "N passed, N failed" line.  Returns 1 if any program failed.
suite_summary() {
	local build=$1 results=$2 secs=$3 label=$4 n x
	echo "suite $build: ${secs}s$label; slowest tests:"
	# Check's XML log has each test's duration (what to cut when the suite grows)
	for n in $(awk '{ print $1 }' "$results"); do
		x="$build/tests/$n.xml"
		[ -f "$x" ] || continue
		awk -v p="$n" -F'[<>]' '
		    $2 == "id" { id = $3 }
		    $2 == "duration" && id != "" { print p, id, $3; id = "" }' "$x"
	done | sort -k3 -g -r | head -n 10 | awk '{ printf "  %7.1fs  %s %s\n", $3, $1, $2 }'
	awk '$3 != 0 { bad = bad " " $1 } END { if (bad != "") print "failing programs:" bad }' \
	    "$results"
	awk '{ passed += $2; failed += $3 }
	    END { printf "%d passed, %d failed\n", passed, failed; exit failed != 0 || NR == 0 }' \
	    "$results"
}

# A test that failed exited without its teardown: its temp dir goes now
# (the harness and cu_mkdtemp name it kt<pid><tag>.*, after the pid and
# $KNOB_TEST_NS_TAG; KNOB_KEEP_TMP keeps them).  The pid is the digits
# only: with a tag, "<pid><tag>" is no pid, and a live test's dir went.
reap_stale_tmp() {
	local d p
	[ -z "${KNOB_KEEP_TMP:-}" ] || return 0
	for d in /tmp/knob-test.kt*.*; do
		[ -d "$d" ] || continue
		p=${d#/tmp/knob-test.kt}
		p=${p%%[!0-9]*}
		[ -n "$p" ] || continue
		kill -0 "$p" 2>/dev/null && continue
		release_below "$d"
		rm -rf "$d"
	done
}

# Lazily unmount what is mounted below dir $1, deepest first (a stat on a
# hung FUSE mount would hang rm), and detach the loop devices whose backing
# file lies below it.
release_below() {
	local m
	awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
	    while read -r m; do umount -l "$m" 2>/dev/null; done
	losetup -l -n -O NAME,BACK-FILE 2>/dev/null |
	    awk -v d="$1/" 'index($2, d) == 1 { print $1 }' |
	    while read -r m; do losetup -d "$m" 2>/dev/null; done
}

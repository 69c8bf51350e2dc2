#!/bin/sh
# Run the suite's plain pass and its sanitizer pass as one queue of jobs
# shared by two workers, so that both finish at about the same time.
# Usage: tests/run-suites.sh PLAIN_BUILD SAN_BUILD [EXTRA...]
# EXTRA (a command: make check's fuzz smoke) is one more job in the queue.
#
# The jobs: every tests/check_* program in PLAIN_BUILD, every one in
# SAN_BUILD but check_pkg, and EXTRA; a program not built is a failed job.
# The queue holds them longest first (LPT): a job's time in the last run
# (BUILD/tests/NAME.secs, written by tests/run-lib.sh), else its line in
# tests/suite-times (a clean clone, as in CI), else 999 s (first).  Each
# worker (tests/suite-worker.sh) takes the first job of the build it
# prefers, else the first job left, until none is left: worker A prefers
# the plain build's programs and EXTRA, worker B the sanitizer build's.  So
# a sanitizer program mostly runs beside a plain one, as when the two
# passes ran side by side, and two of them together only at the end: with
# pure LPT the long sanitizer programs ran two at a time, and the timing
# bounds of check_ssh ssh_slow_names_do_not_hold_others (bootstrap under
# 4 s: 5.2 s and 4.1 s) and check_attack idle_flood_pings_get_through
# failed; they had passed beside plain programs (3.3 s).
#
# Most of a job is waiting (agents, timeouts, child processes): two at a
# time on two cores take little more than the longer alone (measured in
# doc/measurements.md, "The test suite's time").  What keeps them apart:
# - worker A runs in the host's network stack, worker B in one of its own
#   (own_net: unshare -n): the addresses and ports the tests use outside
#   their per-test namespaces (sshd on 127.0.0.1:2222, Slurm's
#   17660-17664, knob-sim's 127.77.1.x, ...) are the same numbers in two
#   separate stacks.  Besides loopback B's stack has one veth with a
#   documentation address (192.0.2.1/24, nothing on the other end), because
#   a host with loopback alone is not a host to every resolver: slurmd's
#   getaddrinfo(AI_ADDRCONFIG) finds no address there;
# - everything else a test makes is named after its own pid (temp dirs,
#   named namespaces, loop devices' backing files, FUSE mounts), so a
#   program's plain and sanitizer runs may overlap, and either worker may
#   run either build's programs.
# check_pkg is left out of the sanitizer build: the .deb it installs and
# boots holds the plain build's binaries, so it would test the same package
# twice.  It is not tied to worker A: dpkg, lintian and man use no network
# and its container gets a network namespace of its own (it passes in B's
# stack, 54 s).  SOLO programs assert verdicts measured from timing (a
# canary's "worse" compares bench figures): they run afterwards in the host
# stack, one build at a time, on a quiet machine.
# Each job's lines are tagged with its build (or "extra") and its worker;
# each build's totals come last, then each worker's busy time.  Exit 0 only
# when every job passed.  INT or TERM stops both workers, each stopping its
# job's session (tests/run-lib.sh), and removes the temp dir.
set -u
plain=${1:-build}
san=${2:-build-san}
shift 2
SOLO="check_canary"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/run-lib.sh"
dir=$(mktemp -d /tmp/knob-suites.XXXXXX)
touch "$dir/done" "$dir/plain.results" "$dir/san.results"
workers=""
trap 'rm -rf "$dir"' EXIT
trap 'stop_workers 130' INT
trap 'stop_workers 143' TERM

# On INT or TERM: stop the workers (each stops its job), wait, exit STATUS.
stop_workers() {
	trap '' INT TERM
	[ -z "$workers" ] || kill -TERM $workers 2>/dev/null
	wait
	echo "stopped"
	exit "$1"
}

# The queue's jobs, one a line: "plain check_x", "san check_x", "extra -"
# (the last if N, the number of EXTRA words, is not 0).
list_jobs() {
	for src in "$here"/check_*.c; do
		n=$(basename "$src" .c)
		case " $SOLO " in *" $n "*) continue ;; esac
		echo "plain $n"
		[ "$n" = check_pkg ] || echo "san $n"
	done
	[ "$1" -eq 0 ] || echo "extra -"
}

# Job KIND NAME's expected seconds (see above).
estimate() {
	case $1 in
	plain) f=$plain/tests/$2.secs ;;
	san) f=$san/tests/$2.secs ;;
	*) f=$plain/tests/extra.secs ;;
	esac
	if [ -s "$f" ]; then
		cat "$f"
	else
		awk -v k="$1" -v n="$2" '$1 == k && $2 == n { s = $3; f = 1 }
		    END { print f ? s : 999 }' "$here/suite-times"	# 0 s is known too
	fi
}

# Start worker NAME on queue Q, preferring kinds PREFER, EXTRA... its extra
# command, in the host's network stack, in the background (run as:
# host_worker Q NAME PREFER EXTRA...).
host_worker() {
	sh "$here/suite-worker.sh" "$dir" "$plain" "$san" "$@" &
	workers="$workers $!"
}

# The same in a network stack of its own (see above); run it with & (it
# execs, so that $! is the worker).
own_net_worker() {
	exec unshare -n sh -c 'ip link set lo up &&
	    ip link add knobci0 type veth peer name knobci1 &&
	    ip addr add 192.0.2.1/24 dev knobci0 &&
	    ip link set knobci0 up && ip link set knobci1 up && exec "$@"' sh \
	    sh "$here/suite-worker.sh" "$dir" "$plain" "$san" "$@"
}

# Wait for the workers started; 1 if one of them failed.
wait_workers() {
	r=0
	for p in $workers; do
		wait "$p" || { echo "a worker (pid $p) exited $?"; r=1; }
	done
	workers=""
	return $r
}

start=$(date +%s)
list_jobs $# | while read -r kind name; do
	echo "$(estimate "$kind" "$name") $kind $name"
done | sort -k1,1nr -k2,2r -k3,3 > "$dir/order"
cut -d' ' -f2- "$dir/order" > "$dir/queue"
for p in $SOLO; do
	echo "plain $p"
	echo "san $p"
done > "$dir/solo"
want=$(cat "$dir/queue" "$dir/solo" | wc -l)	# the workers empty the queues
echo "$(wc -l < "$dir/queue") jobs, about $(awk '{ s += $1 } END { print s }' "$dir/order")s" \
    "of work (the last run's times), two workers"
rc=0
host_worker queue A "plain|extra" "$@"
own_net_worker queue B san "$@" &
workers="$workers $!"
wait_workers || rc=1
host_worker solo alone plain
wait_workers || rc=1

for k in plain san; do
	b=$plain
	[ $k = san ] && b=$san
	echo "== $b"
	suite_summary "$b" "$dir/$k.results" "$(awk '{ s += $5 } END { print s + 0 }' "$dir/$k.results")" \
	    " of programs run" || rc=1
done
if [ $# -gt 0 ]; then
	echo "== extra: $* (exit $(awk '$2 == "extra" { print $5 }' "$dir/done"))"
	tail -n 3 "$dir/extra.log" 2>/dev/null
	awk '$2 == "extra" && $5 == 0 { ok = 1 } END { exit !ok }' "$dir/done" || rc=1
fi
ran=$(wc -l < "$dir/done")
[ "$ran" -eq "$want" ] || { echo "only $ran of $want jobs ran"; rc=1; }
awk '{ n[$1]++; s[$1] += $4 } END { for (w in n) printf "worker %s: %d jobs, busy %ds\n", w, n[w], s[w] }' \
    "$dir/done" | sort
reap_stale_tmp
echo "the passes: $(( $(date +%s) - start ))s, $([ $rc = 0 ] && echo passed || echo FAILED)"
exit $rc

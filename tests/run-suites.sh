#!/bin/sh
# Run the plain pass and the sanitizer pass of the suite side by side.
# Usage: tests/run-suites.sh PLAIN_BUILD SAN_BUILD [AFTER_PLAIN...]
# AFTER_PLAIN (a command, make check's fuzz smoke) runs once the plain pass
# is done, beside the longer sanitizer pass, and counts like a pass.
#
# Most of a pass is waiting (agents, timeouts, child processes): alone, the
# plain pass keeps about half a core busy and the sanitizer pass about
# three quarters, so on two cores the two passes together take little more
# than the longer one alone (measured in doc/measurements.md, "The test suite's time").
# What keeps them apart:
# - the sanitizer pass runs in a network namespace of its own (unshare -n):
#   the addresses and ports the tests use outside their per-test namespaces
#   (sshd on 127.0.0.1:2222, Slurm's 17660-17664, knob-sim's 127.77.1.x,
#   ...) are the same numbers in two separate stacks.  Besides loopback it
#   has one veth with a documentation address (192.0.2.1/24, nothing on the
#   other end), because a host with loopback alone is not a host to every
#   resolver: slurmd's getaddrinfo(AI_ADDRCONFIG) finds no address there;
# - everything else a test makes is named after its own pid (temp dirs,
#   named namespaces, loop devices' backing files, FUSE mounts);
# - the two passes take the programs in opposite orders, so a program's
#   plain and sanitizer runs seldom overlap (nothing breaks if they do).
# check_pkg is left out of the sanitizer pass: the .deb it installs and
# boots holds the plain build's binaries, so it would test the same package
# twice.  SOLO programs assert verdicts measured from timing (a canary's "worse"
# compares bench figures): they run after, one pass at a time, on a quiet
# machine.  Each pass's lines are tagged with its build; the totals come
# last.  Exit 0 only when every pass passed.
set -u
plain=${1:-build}
san=${2:-build-san}
shift 2
SOLO="check_canary"
here=$(cd "$(dirname "$0")" && pwd)
logdir=$(mktemp -d /tmp/knob-suites.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

# Run CMD... (a run-tests.sh command line) as pass NAME: lines tagged,
# output kept in NAME.log, exit status in NAME.rc.
pass() {
	name=$1
	shift
	{ "$@" 2>&1; echo $? > "$logdir/$name.rc"; } | tee "$logdir/$name.log" |
	    sed -u "s|^|[$name] |"
}

# The sanitizer pass's own network stack (see above), then CMD...
own_net() {
	unshare -n sh -c 'ip link set lo up &&
	    ip link add knobci0 type veth peer name knobci1 &&
	    ip addr add 192.0.2.1/24 dev knobci0 &&
	    ip link set knobci0 up && ip link set knobci1 up && exec "$@"' sh "$@"
}

start=$(date +%s)
{
	pass "$plain" env KNOB_TEST_SKIP="$SOLO" "$here/run-tests.sh" "$plain"
	[ $# -eq 0 ] || pass after-plain "$@"
} &
p1=$!
pass "$san" own_net env KNOB_TEST_SKIP="$SOLO check_pkg" KNOB_TEST_REVERSE=1 \
    "$here/run-tests.sh" "$san" &
p2=$!
wait $p1 $p2
for p in $SOLO; do
	pass "$plain-$p" "$here/run-tests.sh" "$plain" "$p"
	pass "$san-$p" "$here/run-tests.sh" "$san" "$p"
done
rc=0
for f in "$logdir"/*.log; do
	n=$(basename "$f" .log)
	echo "== $n"
	if grep -q '^suite ' "$f"; then sed -n '/^suite /,$p' "$f"; else tail -n 3 "$f"; fi
	[ "$(cat "$logdir/$n.rc" 2>/dev/null)" = 0 ] || rc=1
done
echo "the passes: $(( $(date +%s) - start ))s, $([ $rc = 0 ] && echo passed || echo FAILED)"
exit $rc

#!/bin/sh
# One worker of tests/run-suites.sh: takes the next job off a queue shared
# with the other worker until the queue is empty (or it is stopped): the
# first of the kinds it prefers, else the first left.
# Usage: tests/suite-worker.sh DIR PLAIN_BUILD SAN_BUILD QUEUE NAME PREFER [EXTRA...]
# PREFER: the kinds it takes first, an extended regex ("plain|extra").
# DIR/QUEUE's lines are jobs: "plain check_x" (PLAIN_BUILD/tests/check_x),
# "san check_x" (SAN_BUILD's) or "extra -" (the command EXTRA...).  A
# program's results go to DIR/plain.results or DIR/san.results (run_prog),
# its output, its lines tagged with its build and NAME, to stdout once it is
# done; every job finished adds "NAME KIND PROGRAM SECONDS EXIT" to
# DIR/done.  The extra command's output is also kept in DIR/extra.log.
set -u
dir=$1 plain=$2 san=$3 queue=$1/$4 me=$5 prefer=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
. "$here/run-lib.sh"

# The queue's first line of a kind we prefer, else its first line, taken
# off it (nothing when it is empty).
pop() {
	flock "$queue.lock" sh -c 'n=$(grep -n -m 1 -E "^($2) " "$1" | cut -d: -f1)
	    sed -n "${n:-1}p" "$1" && sed -i "${n:-1}d" "$1"' sh "$queue" "$prefer"
}

out=$dir/$me.out
while [ -z "$stopping" ]; do
	next=$(pop)
	[ -n "$next" ] || break
	kind=${next%% *} prog=${next#* }
	t0=$(date +%s)
	case $kind in
	plain) run_prog "$plain" "$prog" "$dir/plain.results" ;;
	san) run_prog "$san" "$prog" "$dir/san.results" ;;
	*) run_job "$@" ;;
	esac >"$out" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	echo "$me $kind $prog $secs $rc" >> "$dir/done"
	case $kind in
	plain) tag=$plain ;;
	san) tag=$san ;;
	extra) tag=extra; cp "$out" "$dir/extra.log"
		[ -n "$stopping" ] || echo "$secs" > "$plain/tests/extra.secs" ;;
	esac
	flock "$dir/out.lock" sed "s|^|[$tag $me] |" "$out"
done
exit "${stopping:-0}"

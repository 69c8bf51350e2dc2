#!/bin/bash
# make demo: knob's main job end to end on this machine, as one play, with
# nothing but what this script creates.
#
#  1. a cluster CA and certificates; two knobd agents, each in its own
#     network namespace ("node01", "node02"), bridged to a controller
#     namespace (addresses in 198.18.0.0/24, confined to these namespaces);
#  2. a 512 MiB loop device with ext4 on it: the only disk this demo tunes
#     and the benchmark target;
#  3. knobctl ping, and the profile for that loop device (I/O scheduler,
#     read-ahead and nr_requests);
#  4. the play ansible-like-plays/demo.xml: a dry run; the untuned baseline;
#     the profile applied; a short sequential and metadata sweep with 3
#     repeats under each; the compare table with Welch verdicts; report.html;
#     everything rolled back;
#  5. the tuning underneath by hand: apply, verify, drift behind knob's
#     back, rollback (which leaves a key changed since knob set it) and off;
#  6. the runs in the SQLite results store, and where the report is.
# Everything but the report (copied to $KNOB_DEMO_OUT, default
# build/demo-report.html) is removed on exit, also on failure or Ctrl-C.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
	echo "make demo needs root: it creates a loop device and network namespaces" >&2
	exit 1
fi
W=$(mktemp -d /tmp/knob-demo.XXXXXX)
TAG=kd$$
CTL=${TAG}c
LOOP=""
PIDS=()

cleanup() {
	set +e
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	mountpoint -q "$W/mnt" && umount "$W/mnt"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	for ns in ${TAG}n1 ${TAG}n2 $CTL; do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
# knobctl inside the controller namespace.  The demo stops (non-zero) when a
# command's exit status is not the one the step expects: 0 unless the step
# says otherwise with ctl_expect (drift and a changed-since key are exit 1).
ctl_expect() {
	local want=$1
	shift
	printf '$ knobctl %s\n' "$*"
	set +e
	ip netns exec "$CTL" "$BUILD/knobctl" -c "$W/cluster.xml" "$@"
	local rc=$?
	set -e
	[ "$rc" -eq 0 ] || printf '(exit status %d, as expected here)\n' "$rc"
	if [ "$rc" -ne "$want" ]; then
		printf 'make demo: "knobctl %s" exited %d, expected %d\n' "$*" "$rc" "$want" >&2
		exit 1
	fi
}
ctl() { ctl_expect 0 "$@"; }

step "cluster CA and certificates (Ed25519, mutual TLS 1.3)"
cd "$W"
run "$BUILD/knobctl" ca init ca
run "$BUILD/knobctl" ca issue ca 'node[01-02]'
run "$BUILD/knobctl" ca issue ca controller --controller

step "a loop device with ext4: the disk this demo tunes and benchmarks"
truncate -s 512M "$W/disk.img"
LOOP=$(losetup -f --show "$W/disk.img")
DEV=$(basename "$LOOP")
mkfs.ext4 -q -F "$LOOP"
mkdir -p "$W/mnt" && mount "$LOOP" "$W/mnt"
echo "$LOOP mounted on $W/mnt"

step "two agents in their own network namespaces"
ip netns add "$CTL"
ip -n "$CTL" link set lo up
ip -n "$CTL" link add br0 type bridge
ip -n "$CTL" link set br0 up
ip -n "$CTL" addr add 198.18.0.1/24 dev br0
for i in 1 2; do
	ns=${TAG}n$i
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip -n "$CTL" link add kv$i type veth peer name eth0 netns "$ns"
	ip -n "$CTL" link set kv$i master br0 up
	ip -n "$ns" addr add 198.18.0.1$i/24 dev eth0
	ip -n "$ns" link set eth0 up
	mkdir -p "$W/node0$i"
	ip netns exec "$ns" "$BUILD/knobd" --listen 198.18.0.1$i:7420 --ca ca/ca.crt \
		--cert ca/node0$i.crt --key ca/node0$i.key --state-dir "$W/node0$i" \
		2>"$W/node0$i/knobd.log" &
	PIDS+=($!)
done
cat >"$W/cluster.xml" <<XML
<cluster port="7420">
  <tls ca="ca/ca.crt" cert="ca/controller.crt" key="ca/controller.key"/>
  <results db="results.db"/>
  <group name="all" nodes="node[01-02]"/>
  <node name="node01" addr="198.18.0.11"/>
  <node name="node02" addr="198.18.0.12"/>
</cluster>
XML
for i in $(seq 50); do
	grep -q "listening on" "$W/node01/knobd.log" && grep -q "listening on" "$W/node02/knobd.log" && break
	sleep 0.1
done

step "reachability"
ctl ping -w @all

step "a real profile for $DEV"
# values that differ from what the device holds now (a loop device keeps
# its queue settings from whoever used it before): every key is a change,
# and the drift below is neither the original nor the profile's value
orig_sched=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/block/$DEV/queue/scheduler)
new_sched=none
[ "$orig_sched" = none ] && new_sched=mq-deadline
orig_ra=$(cat /sys/block/$DEV/queue/read_ahead_kb)
new_ra=4096
[ "$orig_ra" = 4096 ] && new_ra=2048
drift_ra=128
[ "$orig_ra" = 128 ] && drift_ra=256
orig_nr=$(cat /sys/block/$DEV/queue/nr_requests)
new_nr=64
[ "$orig_nr" = 64 ] && new_nr=32
cat >"$W/demo-loop.xml" <<XML
<?xml version="1.0"?>
<profile name="demo-loop">
  <description>make demo: tune only the demo's own loop device.</description>
  <blockdev device="$DEV" attr="scheduler" value="$new_sched"/>
  <blockdev device="$DEV" attr="read_ahead_kb" value="$new_ra"/>
  <blockdev device="$DEV" attr="nr_requests" value="$new_nr"/>
</profile>
XML
export KNOB_PROFILE_PATH="$W"
ctl profile show demo-loop
before="scheduler=[$orig_sched] read_ahead_kb=$(cat /sys/block/$DEV/queue/read_ahead_kb) nr_requests=$(cat /sys/block/$DEV/queue/nr_requests)"
echo "before: $before"

step "the play: dry run, baseline, tune, sweep with repeats, compare, report, roll back"
run cat "$ROOT/ansible-like-plays/demo.xml"
ctl play "$ROOT/ansible-like-plays/demo.xml" -e dir="$W/mnt" -e report="$W/report.html"
after="scheduler=[$(sed 's/.*\[\(.*\)\].*/\1/' /sys/block/$DEV/queue/scheduler)] read_ahead_kb=$(cat /sys/block/$DEV/queue/read_ahead_kb) nr_requests=$(cat /sys/block/$DEV/queue/nr_requests)"
echo "after:  $after"
if [ "$before" != "$after" ]; then
	echo "make demo: the play did not roll the loop device back ($before -> $after)" >&2
	exit 1
fi
echo "rolled back: the loop device is as it was"

step "the tuning underneath, by hand: apply journals the originals, writes, reads back"
ctl apply "$W/demo-loop.xml" -w node01
echo "now: scheduler=$(cat /sys/block/$DEV/queue/scheduler) read_ahead_kb=$(cat /sys/block/$DEV/queue/read_ahead_kb)"

step "verify: no drift"
ctl verify "$W/demo-loop.xml" -w node01

step "drift: someone changes read_ahead_kb behind knob's back"
run sh -c "echo $drift_ra > /sys/block/$DEV/queue/read_ahead_kb"
ctl_expect 1 verify "$W/demo-loop.xml" -w node01

step "rollback: originals come back in the driver's order; read_ahead_kb changed since knob set it, so it is left alone"
ctl_expect 1 rollback -w node01
step "off --force (tuned-adm's name for rollback): that one too"
ctl off -w node01 --force
echo "after: scheduler=$(cat /sys/block/$DEV/queue/scheduler) read_ahead_kb=$(cat /sys/block/$DEV/queue/read_ahead_kb) nr_requests=$(cat /sys/block/$DEV/queue/nr_requests)"

step "the runs in the SQLite results store"
ctl results list
ctl results compare latest~3 latest~1

step "the report"
OUT=${KNOB_DEMO_OUT:-$BUILD/demo-report.html}
cp "$W/report.html" "$OUT"
echo "report.html: $OUT (one self-contained file: open it in any browser, offline)"

step "done: agents stopped, loop device detached, namespaces and files removed"

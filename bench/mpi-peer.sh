# Shared part of bench/engine-vs-ior and bench/engine-vs-mdtest (sourced):
# the driver, the peer binaries, a tmpfs and a disk directory, the table.
peer_setup() {	# peer build-dir
	root=$(cd "$(dirname "$0")/.." && pwd)
	B=$(cd "$2" && pwd)
	REPS=${REPS:-5}
	PEERS=${KNOB_PEERS:-$root/build/peers/bin}
	MiB=1048576
	drv="$B/bench/engine_vs_mpi"
	[ -x "$PEERS/$1" ] || { echo "engine-vs-$1: $PEERS/$1 missing (make peers)" >&2; exit 1; }
	[ -x "$drv" ] || { echo "engine-vs-$1: $drv missing (make bench builds it)" >&2; exit 1; }
	command -v mpirun >/dev/null || { echo "engine-vs-$1: no mpirun (make deps)" >&2; exit 1; }
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	tmp=$(mktemp -d /tmp/knob-evm.XXXXXX)
	mnt="$tmp/tmpfs"
	disk="$tmp/disk"
	mounted=0
	trap peer_cleanup EXIT INT TERM
	mkdir -p "$mnt" "$disk"
	if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=3g knob-evm "$mnt"; then
		mounted=1
	else
		echo "engine-vs-$1: cannot mount a tmpfs (not root?): skipping the tmpfs lines" >&2
	fi
	worst=""
}

# A private ext4 on a loop device (an image file in the temp dir, on /tmp's
# disk, the loop doing direct I/O to it), and $fresh: a command that makes
# a new file system on it, for the --before hook of the driver, so that
# every run starts from the same, empty file system.  Sets ext4=1 and
# extdir, or leaves ext4=0 (not root, no loop device, no mkfs.ext4).
peer_ext4() {	# size-MiB
	ext4=0
	[ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null || return 0
	extdir="$tmp/ext4"
	mkdir -p "$extdir"
	truncate -s "${1}M" "$tmp/ext4.img"
	loopdev=$(losetup -f --show --direct-io=on "$tmp/ext4.img" 2>/dev/null) || return 0
	fresh="$tmp/fresh-ext4"
	cat > "$fresh" <<-EOF2
		#!/bin/sh
		# a new, empty ext4 on $loopdev at $extdir (mkfs defaults: a journal;
		# inode tables and journal written now, not by a background thread)
		umount "$extdir" 2>/dev/null
		mkfs.ext4 -q -F -i 8192 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$loopdev" &&
		    mount "$loopdev" "$extdir"
	EOF2
	chmod +x "$fresh"
	if "$fresh"; then ext4=1; fi
}

peer_cleanup() {
	[ "$mounted" = 1 ] && umount "$mnt" 2>/dev/null
	[ "${ext4:-0}" = 1 ] && umount "$extdir" 2>/dev/null
	[ -n "${loopdev:-}" ] && losetup -d "$loopdev" 2>/dev/null
	rm -rf "$tmp"
}

# Driver lines "kind engine peer ratio min max" -> table rows (the spread is
# the lowest and highest paired ratio); keeps the lowest median ratio.  A
# driver line starting with '#' (the device requests) is shown indented.
peer_lines() {	# label threads unit
	while read -r kind e p r lo hi; do
		case $kind in '#'*) echo "    $1: ${kind#?} $e $p $r $lo $hi" | tr -s ' '; continue ;; esac
		awk -v l="$1 $kind" -v t="$2" -v u="$3" -v e="$e" -v p="$p" -v r="$r" \
		    -v lo="$lo" -v hi="$hi" 'BEGIN {
			if (u == "B/s") { k = sprintf("%.2f GB/s", e / 1e9); f = sprintf("%.2f GB/s", p / 1e9) }
			else { k = sprintf("%.0f ops/s", e); f = sprintf("%.0f ops/s", p) }
			printf "%-38s %3s %14s %14s %7.3f %13s\n", l, t, k, f, r,
			    sprintf("%.2f-%.2f", lo, hi) }'
		echo "$r" >> "$tmp/ratios"
	done
}

peer_header() {	# peer column title
	printf '%-38s %3s %14s %14s %7s %13s\n' WORKLOAD THR KNOB "$1" RATIO "PAIRS MIN-MAX"
}

peer_worst() {
	[ -f "$tmp/ratios" ] && worst=$(sort -g "$tmp/ratios" | head -n 1)
	echo "lowest knob/peer ratio: ${worst:-n/a} (target >= 0.95)"
}

#!/bin/sh
# Boot the .deb's agent unit under a real systemd: a systemd-nspawn
# container (this machine's PID 1 is not systemd) whose root is a scratch
# tree with the package installed by dpkg -i.  Run as:
#   unshare -m -n -p --kill-child --mount-proc \
#       tests/pkg-nspawn.sh DEB TMPDIR TAG KNOBCTL
# Its own mount, network and PID namespaces, this script their PID 1: when
# it ends, even by SIGKILL, the kernel kills the container with it, and its
# mounts and network go.  The container shares that network (loopback
# only); KNOBCTL is the build's controller, run here to talk TLS to the
# agent on 127.0.0.1:7420.  The container runs in a cgroup of its own,
# knob-test.TAG (TAG: kt<pid of the test>..., the caller removes it):
# nspawn --keep-unit --register=no puts it in <our cgroup>/payload, and
# there the containers of two runs (a concurrent run's, or one a killed run
# left running) shared /payload: each one's systemd found the other's
# processes in its units' cgroups ("Failed to kill control group
# /system.slice/knob-mux.service, ignoring: Input/output error").
#
# The tree is tests/pkg-root.sh's scratch root.  Steps:
# install the previous package (this one with its version lowered) without
# certificates and boot (the agent must stay disabled and
# stopped), then put certificates in place and run the package's postinst
# inside the running container (real systemctl: it enables and starts
# knobd.service), ping the agent over TLS, list the mounts under /sys and
# /proc its unit adds (check_pkg allows /proc/kmsg and /sys/fs/cgroup
# only), kill it (systemd restarts it);
# then the connection holder's unit (knob-mux.service, not enabled by the
# package): started, pings go through it, a renewed controller certificate
# makes it exit 1 and systemd restarts it, stopped; an upgrade (dpkg -i
# of this package) with a profile active (applied through a drop-in's
# --sysroot, then changed by the admin): the agent restarts, keeps the
# journal and does not re-apply, the files in /etc stay; the same for a
# downgrade to the previous package, then a journal of a newer format than
# the agent reads (it must refuse to start and leave the file), put back;
# stop the agent; an
# upgrade (dpkg -i again) with the agent disabled and stopped and the
# holder enabled and running (the agent stays so, the holder is restarted);
# enable and start both and the sweep timer and remove the package (prerm
# stops and disables all three); reinstall it (dpkg -i: all three enabled
# and running again); disable
# and stop the agent, remove and reinstall (the agent stays disabled and
# stopped, the holder runs); power off.  Prints what it saw; the caller
# checks it.
# Exit 0 only when every step ran.
set -eu
deb=$1 t=$2 tag=$3 knobctl=$4
S=$t/root
log=$t/console.log
. "$(dirname "$0")/pkg-root.sh"
pkg_root "$S" "$t"
mkdir -p "$S/etc/systemd/system" "$S/root"
cp -a /etc/shadow "$S/etc/"
echo knobsd > "$S/etc/hostname"
: > "$S/etc/machine-id"
cp "$deb" "$S/root/knob.deb"	# not /tmp: the container's is its own
ln -sfn /usr/lib/systemd/system/multi-user.target "$S/etc/systemd/system/default.target"

# The previous package: this .deb with its version lowered to VERSION~prev
# (dpkg orders it before VERSION), the same files: what an upgrade from it
# and a downgrade to it do is dpkg's and the maintainer scripts' part.
dpkg-deb -R "$deb" "$t/prev"
sed -i 's/^Version: .*/&~prev/' "$t/prev/DEBIAN/control"
dpkg-deb --root-owner-group -Zgzip -z1 -b "$t/prev" "$S/root/knob-prev.deb" >/dev/null
# Restart on failure after 0.1 s, not the units' 5 s and 2 s: the test
# waits for each restart, the delay is only the units' setting.
for u in knobd knob-mux; do
	mkdir -p "$S/etc/systemd/system/$u.service.d"
	printf '[Service]\nRestartSec=100ms\n' > "$S/etc/systemd/system/$u.service.d/restart.conf"
done

echo "== dpkg -i (chroot, no certificates): the previous package"
chroot "$S" dpkg -i /root/knob-prev.deb >/dev/null
chroot "$S" dpkg-query -W -f='${Status} ${Version}\n' knob

# Move this shell into a new cgroup knob-test.$1 in each hierarchy that
# nspawn uses (hybrid: name=systemd and unified; or the unified one alone).
own_cgroup() {
	for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
		[ -e "$h/cgroup.procs" ] || continue
		mkdir "$h/knob-test.$1"
		echo 0 > "$h/knob-test.$1/cgroup.procs"
	done
}
# The container's PID 1 (nspawn's child running systemd: its first child
# only sets up the container's mounts), or nothing.
container_pid1() {
	ps -o pid=,comm= --ppid "$nspawn" | awk '$2 == "systemd" { print $1; exit }'
}
# Why there is no booted container (state $1), from the container's own
# account when its systemd answers, and its console; then exit 1.
no_boot() {
	rc=running
	kill -0 "$nspawn" 2>/dev/null || { rc=0; wait "$nspawn" || rc=$?; rc="exited $rc"; }
	echo "no booted container (waited up to $boot_secs s): systemd-nspawn $rc," \
	    "the container's system state: ${1:-no answer}"
	if [ -n "$leader" ]; then
		echo "its jobs:"
		nsenter -t "$leader" -a systemctl list-jobs --no-pager 2>&1 | tail -n 15 || true
		echo "its journal's last lines:"
		nsenter -t "$leader" -a journalctl --no-pager -n 30 -o short-monotonic 2>&1 || true
	fi
	echo "its console's last lines:"
	tail -n 20 "$log"
	exit 1
}

echo "== boot"
echo "script pid: $$"	# 1: a SIGKILL of its caller takes the container along
ip link set lo up
own_cgroup "$tag"
systemd-nspawn -D "$S" --register=no --keep-unit -b >"$log" 2>&1 </dev/null &
nspawn=$!
leader= state=
boot_secs=60	# a boot took 3 to 7 s on the 2-core VM at load 15 to 18
end=$(($(date +%s) + boot_secs))
while [ "$(date +%s)" -lt $end ] && kill -0 "$nspawn" 2>/dev/null; do
	leader=$(container_pid1)
	state=$( [ -n "$leader" ] && nsenter -t "$leader" -a systemctl is-system-running \
	    2>/dev/null || true)
	case $state in running|degraded) break ;; esac
	sleep 0.1
done
case $state in running|degraded) ;; *) no_boot "$state" ;; esac
echo "container cgroup: $(sed -n 's/^[0-9]*:name=systemd://p; s/^0:://p' \
    "/proc/$leader/cgroup" | head -n 1)"
in_ct() { nsenter -t "$leader" -a "$@"; }
echo "pid1: $(in_ct cat /proc/1/comm)"
echo "system: $(in_ct systemctl is-system-running || true)"

echo "== without certificates"
echo "enabled: $(in_ct systemctl is-enabled knobd.service || true)"
echo "active: $(in_ct systemctl is-active knobd.service || true)"

echo "== certificates, then the package's postinst under systemd"
"$knobctl" ca init "$t/ca" >/dev/null
"$knobctl" ca issue "$t/ca" node01 >/dev/null
"$knobctl" ca issue "$t/ca" ctl --controller >/dev/null
cp "$t/ca/ca.crt" "$S/etc/knob/ca.crt"
cp "$t/ca/node01.crt" "$S/etc/knob/node.crt"
install -m 0600 "$t/ca/node01.key" "$S/etc/knob/node.key"
in_ct /var/lib/dpkg/info/knob.postinst configure
echo "enabled: $(in_ct systemctl is-enabled knobd.service || true)"
# A one-node inventory in $1 whose ca.crt, ctl.crt and ctl.key are under
# $2 (relative to it).
write_cluster() {
	cat > "$1" <<EOF
<?xml version="1.0"?>
<cluster port="7420">
  <tls ca="$2ca.crt" cert="$2ctl.crt" key="$2ctl.key"/>
  <node name="node01" addr="127.0.0.1"/>
</cluster>
EOF
}
# Run "$@" until it succeeds, every 0.1 s for 30 s at most; its output is
# in $t/try.out.
retry() {
	i=0
	until "$@" >"$t/try.out" 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || return 1
		sleep 0.1
	done
}
write_cluster "$t/cluster.xml" ca/
# Ping the agent over TLS until it answers; print the answer.
ping_agent() {
	retry "$knobctl" -c "$t/cluster.xml" --timeout 5 ping -w node01 ||
	    true
	echo "ping: $(cat "$t/try.out")"
}
ping_agent
in_ct systemctl show knobd.service -p ActiveState -p SubState -p NRestarts
pid=$(in_ct systemctl show -P MainPID knobd.service)
echo "main pid comm: $(in_ct cat "/proc/$pid/comm")"
echo "state dir: $(in_ct stat -c '%a %U' /var/lib/knob)"
# The mounts under /sys and /proc (point and ro/rw) of process $1 in the
# container, one a line, sorted.
api_mounts() {
	in_ct cat "/proc/$1/mountinfo" |
	    awk '$5 ~ /^\/(sys|proc)(\/|$)/ { split($6, o, ","); print $5, o[1] }' | sort
}
api_mounts 1 > "$t/mounts.pid1"
api_mounts "$pid" > "$t/mounts.knobd"
echo "the unit's own mounts under /sys, /proc:" \
    "$(comm -13 "$t/mounts.pid1" "$t/mounts.knobd" | paste -sd' ' -)"

echo "== the agent killed: Restart=on-failure brings it back"
in_ct kill -KILL "$pid"
i=0
while [ $i -lt 300 ]; do	# 30 s
	new=$(in_ct systemctl show -P MainPID knobd.service)
	[ "$new" != 0 ] && [ "$new" != "$pid" ] && break
	i=$((i + 1))
	sleep 0.1
done
ping_agent
in_ct systemctl show knobd.service -p ActiveState -p NRestarts
echo "journal:"
in_ct journalctl -u knobd.service --no-pager -o cat | grep -v '^$' | head -n 20

echo "== the connection holder: knob-mux.service"
echo "mux enabled: $(in_ct systemctl is-enabled knob-mux.service || true)"
# the container is its own head node: controller credentials and inventory
"$knobctl" ca issue "$t/ca" ctl2 --controller >/dev/null
install -m 0600 "$t/ca/ctl.key" "$S/etc/knob/ctl.key"
cp "$t/ca/ctl.crt" "$S/etc/knob/ctl.crt"
write_cluster "$S/etc/knob/cluster.xml" ""
# Wait until a holder answers `knobctl mux --status`; print its answer.
mux_up() {
	retry in_ct knobctl mux --status || true
	echo "mux status: $(cat "$t/try.out")"
}
# A ping from inside the container, and how it reached node01.
mux_ping() {
	in_ct knobctl --log-level debug ping -w node01 >"$t/mping.out" 2>&1 || true
	echo "$1: $(grep -o 'node01: via the connection holder ([a-z ]*)' "$t/mping.out" ||
	    echo direct) $(grep -o 'stale' "$t/mping.out" | head -n 1) $(grep -o '1 ok' "$t/mping.out")"
}
in_ct systemctl start knob-mux.service
mux_up
mux_ping "mux ping 1"
mux_ping "mux ping 2"
in_ct systemctl show knob-mux.service -p ActiveState -p NRestarts
echo "mux socket: $(in_ct stat -c '%a %U' /var/lib/knob/knob-mux.sock)"
echo "-- a renewed controller certificate: the holder exits 1, systemd restarts it"
mpid=$(in_ct systemctl show -P MainPID knob-mux.service)
cp "$t/ca/ctl2.crt" "$S/etc/knob/ctl.crt"
install -m 0600 "$t/ca/ctl2.key" "$S/etc/knob/ctl.key"
mux_ping "mux ping after renewal"
i=0
while [ $i -lt 300 ]; do	# 30 s
	new=$(in_ct systemctl show -P MainPID knob-mux.service)
	[ "$new" != 0 ] && [ "$new" != "$mpid" ] && break
	i=$((i + 1))
	sleep 0.1
done
mux_up
in_ct systemctl show knob-mux.service -p ActiveState -p NRestarts
mux_ping "mux ping 3"
echo "mux journal:"
in_ct journalctl -u knob-mux.service --no-pager -o cat | grep -v '^$' | head -n 20
in_ct systemctl stop knob-mux.service
echo "mux after stop: $(in_ct systemctl is-active knob-mux.service || true)" \
    "$(in_ct systemctl show -P Result knob-mux.service)" \
    "socket $(in_ct test -e /var/lib/knob/knob-mux.sock && echo left || echo gone)"

echo "== upgrade with a profile active"
# The packaged unit with --sysroot (a drop-in): a writable stand-in for
# /proc/sys (nspawn's is read-only) whose boot_id is the container's, which
# stays the same for the whole container boot.
r=/var/lib/knob-sysroot
mkdir -p "$S$r/proc/sys/vm" "$S$r/proc/sys/kernel/random" "$S/etc/systemd/system/knobd.service.d"
echo 20 > "$S$r/proc/sys/vm/dirty_ratio"
ln -s /proc/sys/kernel/random/boot_id "$S$r/proc/sys/kernel/random/boot_id"
{
	echo "[Service]"
	echo "ExecStart="
	echo "ExecStart=$(sed -n 's/^ExecStart=//p' "$S/lib/systemd/system/knobd.service") --sysroot $r"
} > "$S/etc/systemd/system/knobd.service.d/sysroot.conf"
in_ct systemctl daemon-reload
in_ct systemctl restart knobd.service
printf '%s\n' '<?xml version="1.0"?>' '<profile name="pkgup" summary="upgrade test">' \
    '  <sysctl key="vm.dirty_ratio" value="10" cite="test"/>' '</profile>' > "$t/pkgup.xml"
retry "$knobctl" -c "$t/cluster.xml" --timeout 5 apply "$t/pkgup.xml" -w node01 || true
cat "$t/try.out"
echo "applied: dirty_ratio $(cat "$S$r/proc/sys/vm/dirty_ratio")"
echo 30 > "$S$r/proc/sys/vm/dirty_ratio"	# the admin's own change since
(cd "$S/etc" && find knob systemd -type f | sort | xargs md5sum) > "$t/etc.before"
# dpkg -i of $1 with the agent running: what dpkg said of the versions,
# whether the agent was restarted, the journal, the admin's value, the
# active profile's account, the files in /etc kept.
switch_to() {
	kpid=$(in_ct systemctl show -P MainPID knobd.service)
	in_ct dpkg -i "$1" >"$t/dpkg.out" 2>&1
	grep -o 'Unpacking .*\|downgrading .*' "$t/dpkg.out" || true
	new=$(in_ct systemctl show -P MainPID knobd.service)
	echo "after $2: $( [ "$new" != 0 ] && [ "$new" != "$kpid" ] && echo restarted ||
	    echo "not restarted") journal $(in_ct test -s /var/lib/knob/tune-journal.json &&
	    echo kept || echo gone) dirty_ratio $(cat "$S$r/proc/sys/vm/dirty_ratio")"
	retry "$knobctl" -c "$t/cluster.xml" --timeout 5 active -w node01 || true
	echo "active: $(cat "$t/try.out")"
	(cd "$S/etc" && md5sum -c --quiet "$t/etc.before" >/dev/null 2>&1) &&
	    echo "files in /etc: kept" || echo "files in /etc: changed"
}
switch_to /root/knob.deb upgrade
in_ct journalctl -u knobd.service --no-pager -o cat | grep 'restarted in the same boot' | tail -n 1
echo "== downgrade with a profile active"
switch_to /root/knob-prev.deb downgrade
echo "-- a journal newer than the agent reads"
j=/var/lib/knob/tune-journal.json
# ActiveState of knobd.service is $1
state_is() { [ "$(in_ct systemctl show -P ActiveState knobd.service)" = "$1" ]; }
# The journal made version 2: the agent must refuse it and leave it; then
# the journal put back and the agent started again.
newer_journal() {
	cp "$S$j" "$t/journal.v1"
	sed -i 's/"version": *1,/"version": 2,/' "$S$j"
	cp "$S$j" "$t/journal.v2"
	echo "journal version now: $(grep -o '"version": *[0-9]*' "$t/journal.v2" || echo none)"
	in_ct systemctl reset-failed knobd.service
	in_ct systemctl restart knobd.service
	retry state_is failed || true
	echo "newer journal: $(in_ct systemctl show -P ActiveState knobd.service)," \
	    "$(cmp -s "$S$j" "$t/journal.v2" && echo untouched || echo changed)," \
	    "dirty_ratio $(cat "$S$r/proc/sys/vm/dirty_ratio")"
	in_ct journalctl -u knobd.service --no-pager -o cat | grep 'unsupported journal version' |
	    tail -n 1
	cp "$t/journal.v1" "$S$j"
	in_ct systemctl reset-failed knobd.service
	in_ct systemctl start knobd.service
	retry "$knobctl" -c "$t/cluster.xml" --timeout 5 active -w node01 || true
	echo "journal put back: $(cat "$t/try.out")"
}
if [ -s "$S$j" ]; then newer_journal; else echo "newer journal: no journal left"; fi
in_ct rm -rf /etc/systemd/system/knobd.service.d/sysroot.conf "$r" "$j"
in_ct systemctl daemon-reload

echo "== stop"
in_ct systemctl stop knobd.service
echo "after stop: $(in_ct systemctl is-active knobd.service || true) " \
    "$(in_ct systemctl show -P Result knobd.service)"

echo "== upgrade: the agent disabled and stopped, the holder enabled and running"
in_ct systemctl disable knobd.service >/dev/null 2>&1
in_ct systemctl enable --now knob-mux.service >/dev/null 2>&1
retry in_ct knobctl mux --status || true
mpid=$(in_ct systemctl show -P MainPID knob-mux.service)
in_ct dpkg -i /root/knob.deb >/dev/null
new=$(in_ct systemctl show -P MainPID knob-mux.service)
echo "after upgrade: knobd $(in_ct systemctl is-enabled knobd.service || true)" \
    "$(in_ct systemctl is-active knobd.service || true)," \
    "mux $(in_ct systemctl is-active knob-mux.service || true)" \
    "$( [ "$new" != 0 ] && [ "$new" != "$mpid" ] && echo restarted || echo "not restarted")"

echo "== remove: prerm stops and disables the agent and the holder"
# one call, one reload (about 1 s each on the loaded 2-core machine)
in_ct systemctl enable --now knob-mux.service knobd.service knob-sweep.timer >/dev/null 2>&1
retry in_ct knobctl mux --status || true
echo "before remove: $(in_ct systemctl is-active knobd.service knob-mux.service | tr '\n' ' ')"
echo "sweep timer before remove: $(in_ct systemctl is-active knob-sweep.timer || true)"
in_ct dpkg -r knob >/dev/null
echo "after remove: $(in_ct systemctl is-active knobd.service knob-mux.service | tr '\n' ' ')" \
    "mux unit enabled: $(in_ct sh -c 'ls /etc/systemd/system/*/knob-mux.service 2>/dev/null' ||
    echo no)"
echo "sweep timer after remove: $(in_ct systemctl is-active knob-sweep.timer || true)," \
    "enabled: $(in_ct sh -c 'ls /etc/systemd/system/*/knob-sweep.timer 2>/dev/null' || echo no)"
echo "state dir kept: $(in_ct stat -c %a /var/lib/knob)"

# Both units' is-enabled and is-active, on one line after $1.
units_state() {
	echo "$1: $(in_ct systemctl is-enabled knobd.service knob-mux.service | paste -sd' ' -)," \
	    "$(in_ct systemctl is-active knobd.service knob-mux.service | paste -sd' ' -)"
}
echo "== reinstall (dpkg -i after dpkg -r): both were enabled"
in_ct dpkg -i /root/knob.deb >/dev/null
ping_agent
mux_up
units_state "after reinstall"
echo "sweep timer after reinstall: $(in_ct systemctl is-enabled knob-sweep.timer || true)" \
    "$(in_ct systemctl is-active knob-sweep.timer || true)"
echo "== the agent disabled by the admin, dpkg -r, reinstall"
in_ct systemctl disable --now knobd.service >/dev/null 2>&1
in_ct dpkg -r knob >/dev/null
in_ct dpkg -i /root/knob.deb >/dev/null
mux_up
units_state "after reinstall"

echo "== power off"
kill -TERM "$nspawn"
rc=0
wait "$nspawn" || rc=$?
echo "container exit: $rc"
echo "== done"

#!/bin/sh
# Boot the .deb's agent unit under a real systemd: a systemd-nspawn
# container (this machine's PID 1 is not systemd) whose root is a scratch
# tree with the package installed by dpkg -i.  Run as:
#   unshare -m tests/pkg-nspawn.sh DEB TMPDIR NETNS KNOBCTL
# NETNS (made by the caller, loopback up) is the container's network
# namespace; KNOBCTL is the build's controller, run in NETNS to talk TLS to
# the agent on 127.0.0.1:7420.
#
# The tree is tests/pkg-root.sh's scratch root.  Steps:
# install without certificates and boot (the agent must stay disabled and
# stopped), then put certificates in place and run the package's postinst
# inside the running container (real systemctl: it enables and starts
# knobd.service), ping the agent over TLS, kill it (systemd restarts it),
# stop the unit, power off.  Prints what it saw; the caller checks it.
# Exit 0 only when every step ran.
set -eu
deb=$1 t=$2 ns=$3 knobctl=$4
S=$t/root
log=$t/console.log
. "$(dirname "$0")/pkg-root.sh"
pkg_root "$S" "$t"
mkdir -p "$S/etc/systemd/system" "$S/root"
cp -a /etc/shadow "$S/etc/"
echo knobsd > "$S/etc/hostname"
: > "$S/etc/machine-id"
cp "$deb" "$S/tmp/knob.deb"
ln -sfn /usr/lib/systemd/system/multi-user.target "$S/etc/systemd/system/default.target"

echo "== dpkg -i (chroot, no certificates)"
chroot "$S" dpkg -i /tmp/knob.deb >/dev/null
chroot "$S" dpkg-query -W -f='${Status} ${Version}\n' knob

echo "== boot"
systemd-nspawn -D "$S" --register=no --keep-unit --network-namespace-path="/run/netns/$ns" \
    -b >"$log" 2>&1 </dev/null &
nspawn=$!
leader=
i=0
while [ $i -lt 600 ]; do	# 60 s for the container's systemd to finish booting
	leader=$(ps -o pid= --ppid "$nspawn" | head -n 1 | tr -d ' ')
	state=$( [ -n "$leader" ] && nsenter -t "$leader" -a systemctl is-system-running \
	    2>/dev/null || true)
	case $state in running|degraded) break ;; esac
	i=$((i + 1))
	sleep 0.1
done
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
cat > "$t/cluster.xml" <<EOF
<?xml version="1.0"?>
<cluster port="7420">
  <tls ca="ca/ca.crt" cert="ca/ctl.crt" key="ca/ctl.key"/>
  <node name="node01" addr="127.0.0.1"/>
</cluster>
EOF
# Ping the agent over TLS until it answers (30 s); print the answer.
ping_agent() {
	i=0
	until ip netns exec "$ns" "$knobctl" -c "$t/cluster.xml" --timeout 5 ping -w node01 \
	    >"$t/ping.out" 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || break
		sleep 0.1
	done
	echo "ping: $(cat "$t/ping.out")"
}
ping_agent
in_ct systemctl show knobd.service -p ActiveState -p SubState -p NRestarts
pid=$(in_ct systemctl show -P MainPID knobd.service)
echo "main pid comm: $(in_ct cat "/proc/$pid/comm")"
echo "state dir: $(in_ct stat -c '%a %U' /var/lib/knob)"

echo "== the agent killed: Restart=on-failure brings it back"
in_ct kill -KILL "$pid"
i=0
while [ $i -lt 300 ]; do	# 30 s (RestartSec=5s)
	new=$(in_ct systemctl show -P MainPID knobd.service)
	[ "$new" != 0 ] && [ "$new" != "$pid" ] && break
	i=$((i + 1))
	sleep 0.1
done
ping_agent
in_ct systemctl show knobd.service -p ActiveState -p NRestarts
echo "journal:"
in_ct journalctl -u knobd.service --no-pager -o cat | grep -v '^$' | head -n 20

echo "== stop"
in_ct systemctl stop knobd.service
echo "after stop: $(in_ct systemctl is-active knobd.service || true) " \
    "$(in_ct systemctl show -P Result knobd.service)"

echo "== power off"
kill -TERM "$nspawn"
rc=0
wait "$nspawn" || rc=$?
echo "container exit: $rc"
echo "== done"

#!/bin/sh
# Install a .deb with dpkg -i into a scratch chroot, inside a private mount
# namespace (run as: unshare -m tests/pkg-chroot.sh DEB TMPDIR).
#
# The scratch root: tests/pkg-root.sh.  Systemd does not run here: a
# stand-in systemctl in /usr/local/sbin logs its arguments, and
# /run/systemd/system is created so that the maintainer scripts take their
# systemd branch; it answers is-enabled from what enable and disable
# recorded.  Steps: install without certificates; postinst configure as on
# a first install once they exist; an upgrade (dpkg -i again) with
# /etc/knob tightened to 0700; dpkg -r with the holder enabled too; a
# reinstall (dpkg -i); an upgrade; prerm remove undone by postinst
# abort-remove; dpkg -r with the agent disabled and a reinstall; dpkg -r;
# dpkg --purge (the tuning journal there), and postrm purge again once it
# is gone; then without systemd (no /run/systemd/system): dpkg -i, the
# real systemctl enable offline, dpkg -r and dpkg --purge.  Prints what
# the scripts asked of systemctl and what they left; check_pkg checks it.
set -eu
deb=$1 t=$2
S=$t/root
. "$(dirname "$0")/pkg-root.sh"
pkg_root "$S" "$t"
mkdir -p "$S/dev" "$S/proc" "$S/run/systemd/system"
mount --bind /dev "$S/dev"
mount -t proc proc "$S/proc"
mkdir -p "$S/usr/local/sbin"
cat > "$S/usr/local/sbin/systemctl" <<'STANDIN'
#!/bin/sh
# stand-in for systemctl (no systemd in the test chroot): record the call;
# enable and disable mark the units in /tmp/systemctl.enabled, is-enabled
# answers from there
echo "systemctl $*" >> /tmp/systemctl.log
d=/tmp/systemctl.enabled
cmd=$1 quiet= rc=0
shift
mkdir -p "$d"
for u; do
	case $cmd/$u in
	*/--quiet) quiet=1 ;;
	*/-*) ;;
	enable/*) : > "$d/$u" ;;
	disable/*) rm -f "$d/$u" ;;
	is-enabled/*)
		if [ -e "$d/$u" ]; then state=enabled; else state=disabled; rc=1; fi
		[ -n "$quiet" ] || echo "$state" ;;
	esac
done
exit $rc
STANDIN
chmod 0755 "$S/usr/local/sbin/systemctl"
cp "$deb" "$S/tmp/knob.deb"
in_root() { chroot "$S" env PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

echo "== dpkg -i (no certificates yet)"
in_root dpkg -i /tmp/knob.deb
in_root dpkg-query -W -f='${Status} ${Version}\n' knob
echo "== postinst made"
stat -c '%a %n' "$S/var/lib/knob" "$S/etc/knob"
echo "== systemctl calls without certificates"
cat "$S/tmp/systemctl.log" 2>/dev/null || true
echo "== installed binaries run"
in_root knobctl --version
in_root knobd --version
in_root knobctl profile list
echo "== with certificates, configure again"
: > "$S/tmp/systemctl.log"
touch "$S/etc/knob/ca.crt" "$S/etc/knob/node.crt" "$S/etc/knob/node.key"
in_root /var/lib/dpkg/info/knob.postinst configure
cat "$S/tmp/systemctl.log"
echo "== upgrade (dpkg -i again), /etc/knob tightened to 0700"
: > "$S/tmp/systemctl.log"
chmod 0700 "$S/etc/knob"
in_root dpkg -i /tmp/knob.deb >/dev/null
cat "$S/tmp/systemctl.log"
stat -c '%a %n' "$S/etc/knob"
echo "== files"
stat -c '%a %n' "$t/upper/sbin/knobd" "$t/upper/bin/knobctl" "$t/upper/lib/systemd/system/knobd.service" \
    "$t/upper/share/man/man1/knobctl.1.gz" "$t/upper/share/man/man8/knobd.8.gz" \
    "$t/upper/share/bash-completion/completions/knobctl"
# What the stand-in says of both units: enabled or disabled.
enabled() {
	echo "enabled: $(in_root systemctl is-enabled knobd.service knob-mux.service |
	    paste -sd' ' -)"
}
# prerm's record of the units enabled at removal, or "none".
recorded() {
	echo "recorded: $(paste -sd' ' "$S/var/lib/knob/units-enabled" 2>/dev/null || echo none)"
}
# dpkg ARGS..., then the systemctl calls it made and the record left.
dpkg_log() {
	: > "$S/tmp/systemctl.log"
	in_root dpkg "$@" >/dev/null
	cat "$S/tmp/systemctl.log"
	recorded
}
echo "== remove (the agent and the holder enabled)"
in_root systemctl enable knob-mux.service
touch "$S/etc/knob/cluster.xml" "$S/etc/knob/ca.crl" "$S/var/lib/knob/tune-journal.json" \
    "$S/var/lib/knob/tune-journal.json.tmp.x1" "$S/var/lib/knob/results.db" \
    "$S/var/lib/knob/controller-addrs" "$S/var/lib/knob/health-counters.json" \
    "$S/etc/knob/bootstrap-service-pending"
mkdir -p "$S/var/cache/knob"
touch "$S/var/cache/knob/knob.deb"
dpkg_log -r knob
# Is the file etc/knob/$1 still there?
kept() {
	echo "$1: $(test -e "$S/etc/knob/$1" && echo kept || echo gone)"
}
kept node.key
kept bootstrap-service-pending
in_root dpkg-query -W -f='${Status}\n' knob
echo "== reinstall (dpkg -i after dpkg -r)"
dpkg_log -i /tmp/knob.deb
enabled
kept bootstrap-service-pending
echo "== upgrade after the reinstall"
dpkg_log -i /tmp/knob.deb
echo "== abort-remove (prerm remove, then postinst abort-remove)"
: > "$S/tmp/systemctl.log"
in_root /var/lib/dpkg/info/knob.prerm remove
recorded
in_root /var/lib/dpkg/info/knob.postinst abort-remove
cat "$S/tmp/systemctl.log"
recorded
enabled
echo "== remove (the agent disabled by the admin), reinstall"
in_root systemctl disable knobd.service
dpkg_log -r knob
dpkg_log -i /tmp/knob.deb
enabled
echo "== remove, then purge"
dpkg_log -r knob
echo "== purge"
: > "$S/tmp/systemctl.log"
cp "$S/var/lib/dpkg/info/knob.postrm" "$S/tmp/knob.postrm"
in_root dpkg --purge knob >/dev/null
cat "$S/tmp/systemctl.log"
in_root dpkg-query -W -f='${Status}\n' knob 2>&1 || true
# What purge left in /etc/knob, /var/lib/knob and /var/cache/knob.
left() {
	echo "left: $(cd "$S" && ls -d etc/knob/* var/lib/knob/* var/cache/knob 2>/dev/null |
	    paste -sd' ' -)"
}
left
echo "-- purge again once the journal is gone (rolled back)"
rm "$S/var/lib/knob/tune-journal.json"
in_root /tmp/knob.postrm purge
left
echo "== without systemd: enabled offline, dpkg -r, dpkg --purge"
rmdir "$S/run/systemd/system"
in_root dpkg -i /tmp/knob.deb >/dev/null
in_root /usr/bin/systemctl enable knobd.service knob-mux.service knob-sweep.timer 2>/dev/null
# The units' enablement links under /etc/systemd/system, or "none".
links() {
	echo "links: $(cd "$S/etc/systemd/system" && ls -d *.wants/knob* 2>/dev/null |
	    paste -sd' ' - | grep . || echo none)"
}
links
in_root dpkg -r knob >/dev/null
links
in_root dpkg --purge knob >/dev/null
links
echo "wants dirs: $(cd "$S/etc/systemd/system" && ls -d *.wants 2>/dev/null || echo none)"
echo "== done"

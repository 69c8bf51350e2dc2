# Sourced by tests/pkg-chroot.sh and tests/pkg-nspawn.sh (inside their
# private mount namespace): pkg_root S T makes the scratch root S for a
# dpkg -i of the .deb.  S/usr is an overlay on the machine's /usr (writes
# land in T/upper, the machine's /usr is untouched), /etc holds only what
# dpkg needs, and the dpkg database starts as a copy of the machine's
# status file with empty file lists, so that the package's dependencies
# (the same libraries) are met and no other package's files are ours.
pkg_root() {
	S=$1 t=$2
	mkdir -p "$S/usr" "$t/upper" "$t/work" "$S/etc" "$S/var/lib/dpkg/info" \
	    "$S/var/lib/dpkg/updates" "$S/tmp" "$S/var/log" "$S/var/cache"
	for d in bin sbin lib lib64; do
		[ -e "/usr/$d" ] && ln -sfn "usr/$d" "$S/$d"
	done
	mount --make-rprivate /
	mount -t overlay overlay -o "lowerdir=/usr,upperdir=$t/upper,workdir=$t/work" "$S/usr"
	cp -a /etc/dpkg /etc/passwd /etc/group "$S/etc/"
	cp /var/lib/dpkg/status "$S/var/lib/dpkg/status"
	for l in /var/lib/dpkg/info/*.list; do : > "$S/var/lib/dpkg/info/${l##*/}"; done
	: > "$S/var/lib/dpkg/available"
}

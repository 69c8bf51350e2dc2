#!/bin/sh
# Build the .deb from a staged tree: mkdeb.sh STAGE OUT.deb VERSION
# STAGE is what "make install PREFIX=/usr DESTDIR=STAGE" produced.  Adds the
# documentation Debian wants, strips the binaries, computes Depends from the
# libraries they link (dpkg -S) and the md5sums, adds the maintainer scripts
# (postinst, prerm, postrm), then runs dpkg-deb.
set -eu
stage=$1 out=$2 version=$3
here=$(cd "$(dirname "$0")" && pwd)
arch=$(dpkg --print-architecture)

# the state directory is made by postinst, not shipped
rm -rf "$stage/var"
doc="$stage/usr/share/doc/knob"
install -d "$doc"
install -m 0644 "$here/copyright" "$doc/copyright"
sed "s/@VERSION@/$version/" "$here/changelog" | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/sbin/knobd" "$stage/usr/bin/knobctl"

# Depends: the package of each library the binaries need
deps=$(for b in "$stage/usr/sbin/knobd" "$stage/usr/bin/knobctl"; do
	needed=$(objdump -p "$b" | awk '/NEEDED/ { print $2 }' | paste -sd' ' -)
	ldd "$b" | awk -v needed=" $needed " '$2 == "=>" && index(needed, " " $1 " ") { print $3 }'
done | sort -u | while read -r lib; do
	dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")"
done | cut -d: -f1 | sort -u | paste -sd, - | sed 's/,/, /g')

install -d -m 0755 "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
    -e "s/@DEPENDS@/$deps/" "$here/control.in" > "$stage/DEBIAN/control"
for s in postinst prerm postrm; do
	install -m 0755 "$here/$s" "$stage/DEBIAN/$s"
done
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's,^\./,,' | sort |
	xargs md5sum > DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"

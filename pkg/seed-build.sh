#!/bin/sh
# Seed a new build directory with another's objects: seed-build.sh FROM TO OBJ...
# When TO has no objects yet and FROM's objects were compiled with the same
# compiler and flags (FROM/cflags and TO/cflags the same: make writes them,
# the build directory as @B@), copy FROM's objects, dependency files and
# generated protobuf code into TO with their times, except each OBJ (a path
# under the build directory: the objects whose flags differ between the two,
# such as those that compile PREFIX in), and date TO/cflags as FROM's, so
# that make rebuilds only those.  Anything else: nothing done (TO builds
# everything itself).  Used by `make deb`: its objects are the plain
# build's but for the data directory's and the protobuf code's.  Checked
# (7 December): the .deb's knobd and knobctl, stripped, built so and from
# scratch are the same bytes once their build IDs are removed (objcopy
# --remove-section=.note.gnu.build-id; the IDs hash the debug information,
# which names the build directory); the .deb build took 9.5 s instead of
# about 35 s.
set -eu
from=$1 to=$2
shift 2
[ -d "$from/obj" ] && [ -d "$from/proto" ] && [ ! -e "$to/obj" ] || exit 0
[ -f "$from/cflags" ] && [ -f "$to/cflags" ] && cmp -s "$from/cflags" "$to/cflags" || exit 0
rm -rf "$to/proto"
cp -a "$from/obj" "$from/proto" "$to/"
for o in "$@"; do
	rm -f "$to/$o" "$to/${o%.o}.d"
done
# each dependency file names its object by FROM's path
find "$to/obj" -name '*.d' -exec sed -i "s|^$from/obj/|$to/obj/|" {} +
touch -r "$from/cflags" "$to/cflags"
echo "  SEED    $to from $from (all but $*)"

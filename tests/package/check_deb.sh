#!/bin/bash
# SPDX-License-Identifier: MIT
# check_deb.sh - builds the .deb packages with cpack, unpacks them with
# dpkg -x into a temporary root (no dpkg database touched) and runs the
# tool from there.  Also checks that each package declares the Debian
# packages its programs and libraries load, and carries the license.
#
#   check_deb.sh BUILD_DIR VERSION LICENSE
set -euo pipefail

build=$1 version=$2 license=$3
major=${version%%.*}
work=$(mktemp -d "${TMPDIR:-/tmp}/hashring-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" ||
	{ cat "$work/cpack.log"; fail "cpack"; }

arch=$(dpkg --print-architecture)
declare -A deb
for pkg in "libhashring$major" libhashring-dev hashring; do
	deb[$pkg]=$work/out/${pkg}_${version}_$arch.deb
	[ -f "${deb[$pkg]}" ] || { ls "$work/out"; fail "no ${pkg} package"; }
	[ "$(dpkg-deb -f "${deb[$pkg]}" Package)" = "$pkg" ] || fail "$pkg: name"
	[ "$(dpkg-deb -f "${deb[$pkg]}" Version)" = "$version" ] || fail "$pkg: version"
	# Files belong to root, whoever built the package.
	if dpkg-deb -c "${deb[$pkg]}" | awk '$2 != "root/root"' | grep -q .; then
		fail "$pkg: files not owned by root"
	fi
	dpkg -x "${deb[$pkg]}" "$root"
	# Debian's place for the license, in every package.
	cmp -s "$root/usr/share/doc/$pkg/copyright" "$license" ||
		fail "$pkg: /usr/share/doc/$pkg/copyright is not $license"
done
# No other file under /usr/share/doc (the plain install's LICENSE).
extra=$(find "$root/usr/share/doc" -type f ! -name copyright)
[ -z "$extra" ] || fail "more under /usr/share/doc: ${extra//"$root"/}"

depends() { dpkg-deb -f "${deb[$1]}" Depends; }
[[ "$(depends libhashring-dev)" == *"libhashring$major (= $version)"* ]] ||
	fail "libhashring-dev does not depend on libhashring$major (= $version)"

# Each package holds what it should.
lib=$(find "$root/usr" -name "libhashring.so.$major" | head -n1)
[ -n "$lib" ] || fail "no libhashring.so.$major in the packages"
libdir=$(dirname "$lib")
for f in "$root/usr/include/hashring.h" "$root/usr/include/hashring/version.h" \
	 "$root/usr/include/hashring/rebalance.h" \
	 "$libdir/libhashring.a" "$libdir/libhashring.so" \
	 "$libdir/libhashring-rebalance.so.$major" "$libdir/libhashring-rebalance.so" \
	 "$libdir/libhashring-rebalance.a" "$libdir/pkgconfig/hashring-rebalance.pc" \
	 "$libdir/cmake/hashring/hashring-rebalance-targets.cmake" \
	 "$libdir/pkgconfig/hashring.pc" "$libdir/cmake/hashring/hashring-config.cmake" \
	 "$root/usr/bin/hashring" "$root/usr/share/man/man1/hashring.1"; do
	[ -e "$f" ] || fail "not packaged: ${f#"$root"}"
done
dpkg-deb -c "${deb[libhashring$major]}" | grep -q 'usr/include' &&
	fail "headers in the runtime package"

# The tool runs from the unpacked root.
out=$(LD_LIBRARY_PATH=$libdir "$root/usr/bin/hashring" --version)
[ "$out" = "hashring $version" ] || fail "hashring --version said '$out'"
MANWIDTH=80 man -l "$root/usr/share/man/man1/hashring.1" 2>&1 |
	grep -q 'hashring lookup' || fail "the man page does not render"

# Every library a packaged binary links with directly (its NEEDED entries;
# what those load in turn is their packages' business) comes from a
# package it depends on.
owner() {
	local path
	path=$(readlink -f "$1")
	{ dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null; } |
		head -n1 | cut -d: -f1
}
needed() {
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | xargs
}
check_loads() {
	local pkg=$1 elf=$2 so path from
	while read -r so path; do
		case $path in
		"$root"/*) from="libhashring$major" ;;
		/*) from=$(owner "$path") ;;
		*) fail "$pkg: ${elf#"$root"} cannot find $so" ;;
		esac
		[ -n "$from" ] || fail "$pkg: no package owns $path"
		[ "$from" = "$pkg" ] && continue # libhashring-rebalance's libhashring
		depends "$pkg" | tr ',|' '\n' | awk '{ print $1 }' | grep -qxF "$from" ||
			fail "$pkg: loads $so from $from, not in Depends: $(depends "$pkg")"
	done < <(LD_LIBRARY_PATH=$libdir ldd "$elf" | awk -v needed="$(needed "$elf")" '
		 BEGIN { split(needed, n, " "); for (i in n) want[n[i]] = 1 }
		 $2 == "=>" && ($1 in want) { print $1, $3 }')
}
check_loads "libhashring$major" "$lib"
check_loads "libhashring$major" "$libdir/libhashring-rebalance.so.$major"
check_loads hashring "$root/usr/bin/hashring"

echo "ok: $(cd "$work/out" && echo *.deb)"

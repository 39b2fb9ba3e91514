#!/bin/bash
# SPDX-License-Identifier: MIT
# check_install.sh - installs hashring into a temporary prefix and builds
# programs against it the ways a user would: find_package() (shared and
# static library) and pkg-config, the last with the very commands
# INSTALL_DOC (docs/install.md) gives.  No network; the prefix is removed
# after.
#
#   check_install.sh BUILD_DIR CONSUMER_DIR CC LIBDIR INCLUDEDIR BINDIR MANDIR VERSION INSTALL_DOC
set -euo pipefail

build=$1 consumer=$2 cc=$3 libdir=$4 includedir=$5 bindir=$6 mandir=$7 version=$8
install_doc=$9
major=${version%%.*}
work=$(mktemp -d "${TMPDIR:-/tmp}/hashring-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# The RPATH or RUNPATH an executable records (one entry: no colon).
runpath() {
	readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p'
}

# The one file, of all those lines of output, where `ldd` found a library.
resolved() {
	local lib=$1 exe=$2
	ldd "$exe" | awk -v lib="$lib" '$1 == lib { print $3 }'
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log"

# ---- what lands where ------------------------------------------------------
for f in "$includedir/hashring.h" "$includedir/hashring/version.h" \
	 "$libdir/libhashring.so.$version" "$libdir/libhashring.a" \
	 "$libdir/pkgconfig/hashring.pc" \
	 "$libdir/cmake/hashring/hashring-config.cmake" \
	 "$libdir/cmake/hashring/hashring-config-version.cmake" \
	 "$libdir/cmake/hashring/hashring-targets.cmake" \
	 "$bindir/hashring" "$mandir/man1/hashring.1" share/doc/hashring/LICENSE; do
	[ -f "$prefix/$f" ] || fail "not installed: $f"
done
head -n1 "$prefix/share/doc/hashring/LICENSE" | grep -qx 'MIT License' ||
	fail "share/doc/hashring/LICENSE is not the MIT license"
# The packages' copyright files are theirs alone (cmake/packaging.cmake).
[ "$(find "$prefix/share/doc" -name copyright | wc -l)" = 0 ] ||
	fail "a plain install has the packages' copyright files"
[ "$(readlink "$prefix/$libdir/libhashring.so")" = "libhashring.so.$major" ] ||
	fail "libhashring.so does not point to libhashring.so.$major"
soname=$(readelf -d "$prefix/$libdir/libhashring.so.$version" |
	 sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libhashring.so.$major" ] || fail "SONAME is '$soname'"
out=$("$prefix/$bindir/hashring" --version)
[ "$out" = "hashring $version" ] || fail "installed CLI says '$out'"

# The installed headers stand alone and are clean C and C++.
echo '#include <hashring.h>' >"$work/header.c"
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
	-I"$prefix/$includedir" "$work/header.c"
if command -v c++ >/dev/null; then
	c++ -x c++ -Wall -Wextra -Werror -fsyntax-only -I"$prefix/$includedir" \
		"$work/header.c"
fi

# What every consumer must print: the CLI's own answer for the same ring.
cat >"$work/members.json" <<'JSON'
{"a":"127.0.0.1:11211","b":"127.0.0.2:11211","c":"127.0.0.3:11211"}
JSON
# (The row of user:42, after the header line.)
owner=$("$prefix/$bindir/hashring" lookup --members "$work/members.json" \
	user:42 | awk -F'\t' '$1 == "user:42" { print $2 }')
expect="hashring $version: user:42 -> $owner"

# ---- find_package ------------------------------------------------------------
cmake -S "$consumer" -B "$work/cmake" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_PREFIX_PATH="$prefix" -DHR_WANT_VERSION="$version" \
	>"$work/cmake.log" || { cat "$work/cmake.log"; fail "find_package"; }
cmake --build "$work/cmake" >>"$work/cmake.log" ||
	{ cat "$work/cmake.log"; fail "find_package consumer build"; }
for exe in consumer_shared consumer_static; do
	out=$("$work/cmake/$exe")
	[ "$out" = "$expect" ] || fail "$exe printed '$out', not '$expect'"
done
# The shared one found the installed library (through the build RPATH),
# the static one carries it inside.
[ "$(resolved "libhashring.so.$major" "$work/cmake/consumer_shared")" -ef \
  "$prefix/$libdir/libhashring.so.$major" ] ||
	fail "consumer_shared does not load the installed library"
if readelf -d "$work/cmake/consumer_static" | grep -q libhashring; then
	fail "consumer_static needs libhashring.so"
fi

# A later major version is refused by the version file.
if cmake -S "$consumer" -B "$work/cmake-next" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_PREFIX_PATH="$prefix" -DHR_WANT_VERSION="$((major + 1)).0" \
	>"$work/next.log" 2>&1; then
	fail "find_package(hashring $((major + 1)).0) accepted $version"
fi
grep -q "compatible with requested version" "$work/next.log" ||
	{ cat "$work/next.log"; fail "find_package failed for another reason"; }

# ---- pkg-config ----------------------------------------------------------------
pcdir=$prefix/$libdir/pkgconfig
pc() { PKG_CONFIG_PATH=$pcdir pkg-config "$@"; }

[ "$(pc --modversion hashring)" = "$version" ] || fail "pkg-config version"
# The dependencies are for static linking only (Libs.private), and none of
# their headers is hashring's business: --cflags is our include directory
# alone, not libcjson's or libcurl's.
[ -z "$(pc --print-requires --print-requires-private hashring)" ] ||
	fail "hashring.pc requires modules: $(pc --print-requires --print-requires-private hashring | xargs)"
cflags=$(pc --cflags hashring | xargs)
[ "$cflags" = "-I$(pc --variable=includedir hashring)" ] ||
	fail "pkg-config --cflags hashring gives '$cflags', more than its include directory"
static_libs=" $(pc --static --libs hashring) "
for l in -lhashring -lxxhash -lcjson -lcurl -lurcu-bp -lcrypto -lm -pthread; do
	[[ $static_libs == *" $l "* ]] || fail "pkg-config --static lacks $l"
done
# Shared linking needs nothing but the library itself.
[ "$(pc --libs-only-l hashring | xargs)" = "-lhashring" ] ||
	fail "pkg-config --libs: $(pc --libs hashring)"

# shellcheck disable=SC2046 # pkg-config output is a list of flags
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer_pc" \
	"$consumer/consumer.c" $(pc --cflags --libs hashring)
out=$(LD_LIBRARY_PATH=$prefix/$libdir "$work/consumer_pc")
[ "$out" = "$expect" ] || fail "pkg-config consumer printed '$out'"
[ "$(LD_LIBRARY_PATH=$prefix/$libdir resolved "libhashring.so.$major" "$work/consumer_pc")" \
  -ef "$prefix/$libdir/libhashring.so.$major" ] ||
	fail "the pkg-config consumer does not load the installed library"

# docs/install.md's own commands for a prefix of one's own: each `cc -o
# myapp myapp.c ...` of its sh blocks (continued lines joined), run as
# written on consumer.c.  One links the shared library with an RPATH, one
# the static library; both must run with no LD_LIBRARY_PATH.
doc_commands() {
	awk '/^```sh$/ { sh = 1; next } /^```/ { sh = 0 }
	     sh { line = line $0; if (sub(/\\$/, "", line)) next; print line; line = "" }' \
		"$install_doc" | grep '^cc -o myapp myapp\.c '
}
mapfile -t commands < <(doc_commands)
[ ${#commands[@]} = 2 ] ||
	fail "$install_doc: ${#commands[@]} pkg-config link commands, not 2 (shared with an RPATH, static)"
for i in 0 1; do
	mkdir "$work/doc$i"
	cp "$consumer/consumer.c" "$work/doc$i/myapp.c"
	(cd "$work/doc$i" && PKG_CONFIG_PATH=$pcdir bash -euc "${commands[$i]}") ||
		fail "docs/install.md's command failed: ${commands[$i]}"
	out=$(env -u LD_LIBRARY_PATH "$work/doc$i/myapp") ||
		fail "built with docs/install.md's command, it does not run: ${commands[$i]}"
	[ "$out" = "$expect" ] || fail "docs/install.md's program printed '$out'"
	if [[ ${commands[$i]} == *libhashring.a* ]]; then
		static=$work/doc$i/myapp
	else
		shared=$work/doc$i/myapp
	fi
done
if [ -z "${static-}" ] || [ -z "${shared-}" ]; then
	fail "$install_doc: not one shared and one static link command"
fi
[ "$(unset LD_LIBRARY_PATH; resolved "libhashring.so.$major" "$shared")" \
  -ef "$prefix/$libdir/libhashring.so.$major" ] ||
	fail "docs/install.md's shared program does not load the installed library"
# ... through the library's directory itself, not the .pc file's
# <prefix>/lib/pkgconfig/../../lib, which breaks once lib/pkgconfig goes.
[ "$(runpath "$shared")" = "$prefix/$libdir" ] ||
	fail "docs/install.md's shared program records the RPATH '$(runpath "$shared")', not '$prefix/$libdir'"
if readelf -d "$static" | grep -q libhashring; then
	fail "docs/install.md's static program needs libhashring.so"
fi

# The .pc file follows the prefix when it is moved.
mv "$prefix" "$work/moved"
pcdir=$work/moved/$libdir/pkgconfig
incdir=$(pc --cflags-only-I hashring | xargs)
incdir=${incdir#-I}
[ "$incdir" -ef "$work/moved/$includedir" ] ||
	fail "after a move, pkg-config --cflags gives '$incdir'"

echo "ok: installed $version, 5 consumers built and ran ($owner)"

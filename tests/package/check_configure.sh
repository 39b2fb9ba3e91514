#!/bin/bash
# SPDX-License-Identifier: MIT
# check_configure.sh - configures the source tree as on a machine without
# Check, the test framework, which docs/install.md's first commands must
# not need: pkg-config is shown every .pc file of this machine but
# check.pc.  Scratch trees in a temporary directory, removed after.
#
#   check_configure.sh SOURCE_DIR
#
# - Configured with no option, the library and the tool are configured, the
#   tests are not, and one message says so and which package turns them
#   on.  The cache keeps HR_BUILD_TESTS at AUTO: configured again with
#   Check visible, the same tree turns the tests on.
# - -DHR_BUILD_TESTS=ON without Check fails, saying what is missing.
# The tree is not built here: tests/run.sh builds two with the tests off,
# the state this configure leaves (its Release trees).
set -euo pipefail

src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/hashring-configure.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# Every .pc file pkg-config would find, but Check's.
mkdir "$work/pc"
IFS=: read -ra dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for d in "${dirs[@]}"; do
	[ -d "$d" ] || continue
	for f in "$d"/*.pc; do
		[ -e "$f" ] && [ ! -e "$work/pc/${f##*/}" ] && ln -s "$f" "$work/pc/"
	done
done
rm -f "$work/pc/check.pc"
no_check=(env -u PKG_CONFIG_PATH -u CMAKE_PREFIX_PATH PKG_CONFIG_LIBDIR="$work/pc")
"${no_check[@]}" pkg-config --exists libcurl || fail "the .pc files were not copied"
if "${no_check[@]}" pkg-config --exists check; then
	fail "check.pc is still visible"
fi

# ---- no option: the tests are off, with one message --------------------------
"${no_check[@]}" cmake -S "$src" -B "$work/tree" >"$work/auto.log" 2>&1 ||
	{ cat "$work/auto.log"; fail "configuring without Check failed"; }
msg='The test suite is off: it needs Check (apt-get install check, then configure again; the suites also need what deploy/install-deps.sh --tests installs)'
n=$(grep -cF -- "$msg" "$work/auto.log" || true)
[ "$n" = 1 ] || { cat "$work/auto.log"; fail "the message appeared $n times, not once"; }
[ ! -e "$work/tree/tests" ] || fail "the tests were configured without Check"
grep -qx 'HR_BUILD_TESTS:STRING=AUTO' "$work/tree/CMakeCache.txt" ||
	fail "the cache does not keep HR_BUILD_TESTS=AUTO"
cmake --build "$work/tree" --target help >"$work/targets" 2>&1 || true
for target in hashring hashring_shared hashring_static; do
	grep -qx "\.\.\. $target" "$work/targets" || fail "no target $target without Check"
done

# ---- ON without Check: a clear failure -----------------------------------------
if "${no_check[@]}" cmake -S "$src" -B "$work/on" -DHR_BUILD_TESTS=ON \
	>"$work/on.log" 2>&1; then
	fail "-DHR_BUILD_TESTS=ON configured without Check"
fi
if ! grep -q 'HR_BUILD_TESTS=ON: the test suite needs Check' "$work/on.log" ||
	! grep -q 'apt-get install check' "$work/on.log"; then
	cat "$work/on.log"
	fail "-DHR_BUILD_TESTS=ON failed without saying why"
fi

# ---- Check installed later: the same tree turns the tests on ---------------------
cmake -S "$src" -B "$work/tree" >"$work/later.log" 2>&1 ||
	{ cat "$work/later.log"; fail "configuring again with Check failed"; }
! grep -qF -- "$msg" "$work/later.log" || fail "the tests are still off with Check"
[ -e "$work/tree/tests/CTestTestfile.cmake" ] ||
	fail "configured again with Check, the tree has no tests"

echo "ok: without Check the tests are off with one message, ON fails, Check later turns them on"

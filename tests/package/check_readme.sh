#!/bin/bash
# SPDX-License-Identifier: MIT
# check_readme.sh - what the README's Quick start says, checked:
#
# - the offline example (the sh block after "Offline, with no etcd at
#   all:") runs exactly as written, one line at a time: each line must
#   exit 0 and print something.  The lines run in a stand-in for the
#   repository root, a temporary directory where build/hashring is the CLI
#   under test and deploy/ is the source tree's: the README's relative
#   paths then hold in every build directory, and nothing is written into
#   the sources;
# - the packages it says each command installs are deploy/install-deps.sh's
#   lists: deploy/demo.sh's are PACKAGES and PYTHON_PACKAGES (what
#   install-deps.sh installs without --tests), tests/run.sh's adds
#   TEST_PACKAGES and PYTHON_TEST_PACKAGES ("the same, and ...");
# - the variables it names for tests/run.sh (HR_...=) are those the
#   script's header documents and reads;
# - its three scripts honour CMAKE_BUILD_PARALLEL_LEVEL, as it says: each
#   header says so, no build takes nproc directly, and a bad value is
#   refused with a message (exit 2) before anything is installed or built.
#
#   check_readme.sh SOURCE_DIR HASHRING_BINARY
set -euo pipefail

src=$1 cli=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hashring-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# The first fenced block after the marker line, without its fences.
block=$(awk '/^Offline, with no etcd at all:/ { found = 1; next }
	     found && /^```/ { if (inside) exit; inside = 1; next }
	     inside { print }' "$src/README.md")
[ -n "$block" ] || fail "no offline example in README.md"

mkdir "$work/root" "$work/root/build"
ln -s "$cli" "$work/root/build/hashring"
ln -s "$src/deploy" "$work/root/deploy"
cd "$work/root"
while IFS= read -r line; do
	[ -n "${line//[[:space:]]/}" ] || continue
	rc=0
	bash -o pipefail -c "$line" >"$work/out" 2>"$work/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		cat "$work/err" >&2
		fail "exit status $rc from the README's: $line"
	fi
	[ -s "$work/out" ] || fail "no output from the README's: $line"
	echo "ok: $line"
done <<<"$block"

# One package name a line, sorted: install-deps.sh's lists $@ (each a
# quoted assignment over one or more lines) ...
deps_list() {
	local list
	for list; do
		awk -v start="$list=\"" 'index($0, start) == 1 { on = 1; $0 = substr($0, length(start) + 1) }
					 on { done = sub(/".*/, ""); print; if (done) exit }' \
			"$src/deploy/install-deps.sh" | tr -s ' \n' '\n' | grep .
	done | sort
}
# ... and the README's bullet for command $1 ("- `CMD`: a, b, c;" over one
# or more lines), without the words joining the names.
readme_list() {
	awk -v item="- \`$1\`:" 'index($0, item) == 1 { on = 1; sub(/^[^:]*:/, "") }
				 on && (/^$/ || (/^- / && index($0, item) != 1)) { exit }
				 on { print }' "$src/README.md" |
		tr -s ',;. \n' '\n' | grep -vxE 'the|same|and|' | sort
}
[ "$(readme_list deploy/demo.sh)" = "$(deps_list PACKAGES PYTHON_PACKAGES)" ] ||
	fail "the README's packages for deploy/demo.sh are not install-deps.sh's PACKAGES and PYTHON_PACKAGES"
[ "$(readme_list tests/run.sh)" = "$(deps_list TEST_PACKAGES PYTHON_TEST_PACKAGES)" ] ||
	fail "the README's packages for tests/run.sh are not install-deps.sh's TEST_PACKAGES and PYTHON_TEST_PACKAGES"
# Each list must hold something: a renamed list would compare as empty.
for list in PACKAGES PYTHON_PACKAGES TEST_PACKAGES PYTHON_TEST_PACKAGES; do
	[ -n "$(deps_list "$list")" ] || fail "install-deps.sh has no $list list"
done
echo "ok: the Quick start's package lists are install-deps.sh's"

# The Quick start's shortcuts for tests/run.sh are the script's own.
# (Environment variables: CMake's -DHR_... options are not.)
names=$(grep -oE '(^|[ `])HR_[A-Z_]+=' "$src/README.md" | tr -d ' `=' | sort -u)
[ -n "$names" ] || fail "the README names no HR_... variable for tests/run.sh"
for name in $names; do
	grep -qE "^#   $name=" "$src/tests/run.sh" ||
		fail "README.md names $name, which tests/run.sh's header does not document"
	grep -qE "\\\$\\{$name-" "$src/tests/run.sh" ||
		fail "README.md names $name, which tests/run.sh does not read"
done
echo "ok: the README's shortcuts are tests/run.sh's ($(echo "$names" | xargs))"

# CMAKE_BUILD_PARALLEL_LEVEL, as README.md says of the three scripts.
grep -q 'CMAKE_BUILD_PARALLEL_LEVEL' "$src/README.md" ||
	fail "README.md does not say the scripts take CMAKE_BUILD_PARALLEL_LEVEL"
for script in deploy/demo.sh deploy/demo-cache.sh tests/run.sh; do
	sed -n '2,/^set -euo pipefail/p' "$src/$script" | grep -q CMAKE_BUILD_PARALLEL_LEVEL ||
		fail "$script: its header does not mention CMAKE_BUILD_PARALLEL_LEVEL"
	if grep -E 'cmake --build|ctest ' "$src/$script" | grep -q nproc; then
		fail "$script: a build or test run takes nproc directly"
	fi
	rc=0
	CMAKE_BUILD_PARALLEL_LEVEL=two bash "$src/$script" >"$work/out" 2>"$work/err" || rc=$?
	if [ "$rc" != 2 ] || ! grep -q "CMAKE_BUILD_PARALLEL_LEVEL must be a whole number above 0, not 'two'" \
		"$work/err"; then
		cat "$work/out" "$work/err" >&2
		fail "$script took CMAKE_BUILD_PARALLEL_LEVEL=two (exit $rc)"
	fi
done
echo "ok: the Quick start's scripts take CMAKE_BUILD_PARALLEL_LEVEL"

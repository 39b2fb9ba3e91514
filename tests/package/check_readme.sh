#!/bin/bash
# check_readme.sh - runs the README's offline example (the sh block after
# "Offline, with no etcd at all:") exactly as written, one line at a time:
# each line must exit 0 and print something.  The lines run in a stand-in
# for the repository root, a temporary directory where build/hashring is
# the CLI under test and deploy/ is the source tree's: the README's
# relative paths then hold in every build directory, and nothing is
# written into the sources.
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

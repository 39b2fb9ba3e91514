#!/bin/bash
# SPDX-License-Identifier: MIT
# fresh-debian.sh - the README's Quick start, proved on a fresh Debian 12.
#
# Builds a minimal Debian 12 root (debootstrap --variant=minbase bookworm)
# in a temporary directory, adds git and nothing else, clones this
# checkout's committed HEAD into it (uncommitted changes are not in the
# clone) and runs there, as root, the README's three commands:
#
#   bash deploy/demo.sh
#   bash deploy/demo-cache.sh
#   bash tests/run.sh
#
# and then the README's Python install (cmake ... -DHR_BUILD_PYTHON=ON,
# cmake --install), `python3 -c "import hashring"` and docs/python.md's
# example service.  It fails if any fails.  A machine that has built
# hashring before holds most of what those commands install, which hides a
# package missing from deploy/install-deps.sh; a fresh root hides nothing.  Everything it makes
# is removed at the end, whatever happens.
#
# Needs root, unshare (util-linux) and the network (a Debian mirror) on the
# host; debootstrap and git are installed there when missing.  Environment:
#   HR_DEBIAN_MIRROR  the Debian mirror (default http://deb.debian.org/debian)
#   HR_TEST_SANITIZERS, HR_FUZZ_SECONDS
#                     passed on to tests/run.sh in the root when set
#   TMPDIR            where the root is built (default /var/tmp); the root
#                     with all four build trees takes about 2 GB
#   http_proxy, https_proxy, no_proxy
#                     passed on when set, as a user behind a proxy would set
#                     them
#
# Nothing is cached: debootstrap takes under a minute and the packages
# the commands install about as long, against some 22 minutes of
# tests, and every run starts from what a new machine downloads.
#
# Isolation: the root lives in its own mount and PID namespaces (unshare).
# Its mounts (/proc, /sys, /dev and what debootstrap mounts) can never show
# on the host, and every process started in it (an etcd a test left behind,
# a daemon a package tried to start) dies with the namespace's first
# process, even if this script is killed.  The cleanup still kills and
# unmounts everything itself first, and the directory is only removed once
# nothing is mounted below it.
set -euo pipefail

MIRROR=${HR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
# A login shell's environment as root on a new machine, nothing from ours.
ROOT_ENV=(HOME=/root LOGNAME=root USER=root SHELL=/bin/bash
	  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
for v in HR_TEST_SANITIZERS HR_FUZZ_SECONDS http_proxy https_proxy no_proxy; do
	if [ -n "${!v+set}" ]; then
		ROOT_ENV+=("$v=${!v}")
	fi
done

say() { echo "fresh-debian: $*"; }
die() {
	echo "fresh-debian: $*" >&2
	exit 1
}

# ---- inside the namespaces: PID 1 of its own PID namespace ----------------

# Mount points at or below $1, deepest first (mountinfo's 5th field).
mounts_below() {
	awk -v top="$1" '$5 == top || index($5, top "/") == 1 { print $5 }' \
		/proc/self/mountinfo | sort -r
}

inside_cleanup() {
	local m
	# kill(-1) from a namespace's PID 1 reaches every other process in
	# it: whatever the demo or the tests left running stops here.
	kill -KILL -1 2>/dev/null || true
	wait 2>/dev/null || true
	for m in $(mounts_below "$root"); do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
}

# The fresh root's /dev is a tmpfs with the few devices a build and its
# tests use, not the host's /dev bound in: nothing done in the root can
# reach a host device or leave a file in the host's /dev.  /dev/pts is a
# devpts instance of its own (apt and dpkg open terminals) and /dev/shm a
# tmpfs of its own (POSIX shared memory, semaphores).
mount_root() {
	local name major minor
	mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
	mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
	mount -t tmpfs -o mode=755,nosuid tmpfs "$root/dev"
	while read -r name major minor; do
		mknod -m 666 "$root/dev/$name" c "$major" "$minor"
	done <<-EOF
		null 1 3
		zero 1 5
		full 1 7
		random 1 8
		urandom 1 9
		tty 5 0
	EOF
	ln -s /proc/self/fd "$root/dev/fd"
	ln -s /proc/self/fd/0 "$root/dev/stdin"
	ln -s /proc/self/fd/1 "$root/dev/stdout"
	ln -s /proc/self/fd/2 "$root/dev/stderr"
	mkdir "$root/dev/pts" "$root/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$root/dev/pts"
	ln -s pts/ptmx "$root/dev/ptmx"
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
}

# Runs a command in the root as root, with a new login's environment.
in_root() {
	chroot "$root" /usr/bin/env -i "${ROOT_ENV[@]}" "$@"
}

# phase NAME COMMAND...: runs it, times it, remembers whether it failed.
phase() {
	local name=$1 start rc=0
	shift
	say "---- $name"
	start=$(date +%s)
	"$@" || rc=$?
	report+=("$(printf '%-28s %5d s  %s' "$name" $(($(date +%s) - start)) \
		"$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
	return "$rc"
}

# The minimal root, its log kept out of it (shown if it fails).
bootstrap() {
	debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" \
		>"$work/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$work/debootstrap.log"; return 1; }
}

inside() {
	local sha=$2 failed=0 start
	work=$1 root=$1/root
	report=()
	trap inside_cleanup EXIT
	start=$(date +%s)

	phase "debootstrap minbase" bootstrap
	mount_root
	# apt inside resolves the mirror's name: the one file a user sets up
	# by hand in a new root, copied from the host on purpose.  The root's
	# sources.list is the one debootstrap wrote for $MIRROR; nothing else
	# of the host's apt configuration goes in.
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	# No policy-rc.d is needed: with no /sbin/init in a minbase root,
	# invoke-rc.d refuses to start the services packages ship (etcd-server
	# has one), and the PID namespace would end them anyway.
	[ ! -e "$root/sbin/init" ] || die "the minbase root has an init"

	# git only, without its Recommends (ca-certificates, ssh, less...):
	# anything the README's commands need must come from install-deps.sh.
	phase "apt-get install git" in_root sh -c \
		'apt-get update -qq &&
		 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends git >/dev/null'
	cp "$work/hashring.bundle" "$root/tmp/hashring.bundle"
	phase "git clone" in_root git -c advice.detachedHead=false clone -q \
		/tmp/hashring.bundle /root/hashring
	rm -f "$root/tmp/hashring.bundle"
	[ "$(in_root git -C /root/hashring rev-parse HEAD)" = "$sha" ] ||
		die "the clone is not at $sha"

	# Every command runs even if one before fails: one run shows all.
	phase "bash deploy/demo.sh" in_root bash -c \
		'cd /root/hashring && exec bash deploy/demo.sh' || failed=1
	phase "bash deploy/demo-cache.sh" in_root bash -c \
		'cd /root/hashring && exec bash deploy/demo-cache.sh' || failed=1
	phase "bash tests/run.sh" in_root bash -c \
		'cd /root/hashring && exec bash tests/run.sh' || failed=1
	# Last, so that nothing installed under /usr/local can stand in for a
	# build tree in the suites: the README's Python install as written,
	# then the package imported from elsewhere by Debian's python3, and
	# docs/python.md's example service run against a real etcd.
	phase "README Python install" in_root bash -c \
		'cd /root/hashring &&
		 install=$(grep -m1 "^cmake -S \. -B build -DHR_BUILD_PYTHON=ON" README.md) &&
		 echo "$install" && eval "$install" >/dev/null &&
		 cd / && /usr/bin/python3 -P -c "import hashring; print(hashring.__file__)" &&
		 cd /root/hashring/python/tests &&
		 /usr/bin/python3 -m pytest -q -p no:cacheprovider test_example.py' || failed=1
	# (-x: the root's own files, not the /proc, /sys and /dev mounted on it.)
	say "the root takes $(du -shx "$root" 2>/dev/null | cut -f1 || true)"

	say "---- times"
	printf '  %s\n' "${report[@]}" "$(printf '%-28s %5d s' total $(($(date +%s) - start)))"
	return "$failed"
}

if [ "${1:-}" = --inside ]; then
	inside "$2" "$3"
	exit
fi

# ---- on the host -------------------------------------------------------------

[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and mounts need it)"
# The host's tools, installed when missing: a new machine (CI's among
# them) may not have debootstrap.
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v git >/dev/null || missing+=(git)
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]} on the host"
	{ apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
		die "cannot install ${missing[*]}"
fi
for tool in debootstrap unshare chroot git; do
	command -v "$tool" >/dev/null || die "needs $tool"
done
repo=$(cd "$(dirname "$0")/.." && pwd)
sha=$(git -C "$repo" rev-parse HEAD)
[ -z "$(git -C "$repo" status --porcelain)" ] ||
	say "note: uncommitted changes in $repo are not tested, only HEAD"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/hashring-fresh.XXXXXX")
ns_pid=
cleanup() {
	# Normally the namespace has exited by now.  If this script was
	# interrupted, killing unshare ends the namespace (--kill-child): its
	# PID 1 gets SIGKILL, and with it every process inside.
	if [ -n "$ns_pid" ] && kill -0 "$ns_pid" 2>/dev/null; then
		kill -KILL "$ns_pid" 2>/dev/null || true
		wait "$ns_pid" 2>/dev/null || true
	fi
	# Wait until no process has its root in the directory any more.
	for _ in $(seq 50); do
		find /proc -maxdepth 2 -name root -lname "$work/*" 2>/dev/null | grep -q . ||
			break
		sleep 0.1
	done
	if [ -n "$(mounts_below "$work")" ]; then
		echo "fresh-debian: still mounted, $work left in place:" >&2
		mounts_below "$work" >&2
		return
	fi
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

say "HEAD $sha of $repo, Debian $SUITE from $MIRROR, in $work"
# A bundle of HEAD is what the root's git clones: the committed tree only,
# and no path of this machine in the clone's configuration.
git -C "$repo" bundle create -q "$work/hashring.bundle" HEAD

# In the background, so that a signal reaches the traps above at once
# rather than after the whole run.
unshare --mount --pid --kill-child --mount-proc \
	bash "$repo/tests/fresh-debian.sh" --inside "$work" "$sha" &
ns_pid=$!
rc=0
wait "$ns_pid" || rc=$?
ns_pid=
[ "$rc" -eq 0 ] || die "FAILED (exit $rc)"
say "the README's commands passed on a fresh Debian $SUITE"

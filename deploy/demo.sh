#!/bin/bash
# SPDX-License-Identifier: MIT
# demo.sh - the main job: installs what is missing, builds, starts a
# temporary etcd on free loopback ports and walks through a cluster's life:
# nodes registered with etcdctl, lookups, a warming node joining, its switch
# to active, a node draining and leaving, with each ring's revision.  The
# etcd is stopped and its data removed at the end.
#
#   CMAKE_BUILD_PARALLEL_LEVEL=N bash deploy/demo.sh   compile jobs (default:
#                                                      one per core, nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

# Compile jobs: CMAKE_BUILD_PARALLEL_LEVEL when set (what `cmake --build`
# itself reads), else one per core.
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if ! [[ $jobs =~ ^[0-9]+$ ]] || [ "$jobs" -eq 0 ]; then
	echo "demo.sh: CMAKE_BUILD_PARALLEL_LEVEL must be a whole number above 0, not '$jobs'" >&2
	exit 2
fi

deploy/install-deps.sh
# Only the library and the CLI: the test suite needs packages the demo does
# not install (deploy/install-deps.sh --tests).  tests/run.sh turns the
# tests on again in the same build directory.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHR_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$jobs" --target hashring >/dev/null

# A port nobody listens on (a connect to it fails), below the kernel's
# ephemeral range so that no outgoing connection holds it either.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

HR_ETCD_STATE_DIR=$(mktemp -d)
export HR_ETCD_STATE_DIR HR_ETCD_CLIENT_PORT HR_ETCD_PEER_PORT
WATCH_OUT=$HR_ETCD_STATE_DIR/watch.out
cleanup() {
	if [ -n "${WATCH_PID:-}" ]; then
		kill "$WATCH_PID" 2>/dev/null || true
		wait "$WATCH_PID" 2>/dev/null || true
	fi
	deploy/etcd-local.sh stop >/dev/null 2>&1 || true
	rm -rf "$HR_ETCD_STATE_DIR"
}
trap cleanup EXIT

# Another program may take a port between the check and etcd's bind: retry.
for attempt in 1 2 3; do
	HR_ETCD_CLIENT_PORT=$(free_port)
	HR_ETCD_PEER_PORT=$(free_port)
	if deploy/etcd-local.sh start >"$HR_ETCD_STATE_DIR/start.out" 2>&1; then
		sed -n 1,2p "$HR_ETCD_STATE_DIR/start.out"
		break
	fi
	[ "$attempt" = 3 ] && { cat "$HR_ETCD_STATE_DIR/start.out" >&2; exit 1; }
done
P=/demo/nodes/
KEYS=(user:1 user:2 user:3 user:4 user:5 user:6 user:7 user:8)
step() { printf '\n== %s\n' "$*"; }
# Prints a word so that a shell reads it back unchanged: as it is if no
# character in it means anything to the shell, else in single quotes.
quote() {
	case $1 in
	'' | *[!A-Za-z0-9_./:=@%+,-]*) printf "'%s'" "${1//\'/\'\\\'\'}" ;;
	*) printf '%s' "$1" ;;
	esac
}
# Prints the command exactly as it runs, quoted, so that it can be pasted
# into another shell (with the export printed first), then runs it.
run() {
	local w line=
	for w in "$@"; do
		line="$line${line:+ }$(quote "$w")"
	done
	printf '$ %s\n' "$line"
	"$@"
}
# The CLI on the demo's prefix.
run_hashring() { run build/hashring "$1" --prefix "$P" "${@:2}"; }
# Waits until the watcher has printed a ring at etcd's current revision.
settle() {
	local rev
	rev=$(etcdctl get "$P" --prefix --keys-only -w json | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
	for _ in $(seq 100); do
		grep -q "\"revision\":$rev," "$WATCH_OUT" 2>/dev/null && return
		sleep 0.05
	done
}

step "etcdctl and hashring find this etcd through the environment"
run export ETCDCTL_API=3 ETCDCTL_ENDPOINTS="127.0.0.1:$HR_ETCD_CLIENT_PORT"

step "three cache nodes register by hand with etcdctl"
run etcdctl put "${P}cache-a" '{"addr":"127.0.0.1:11211","zone":"z1"}'
run etcdctl put "${P}cache-b" '{"addr":"127.0.0.1:11212","zone":"z2"}'
run etcdctl put "${P}cache-c" 127.0.0.1:11213

# A watching client prints every ring it publishes, as a service would see it.
# (Started directly, not through the function, so that $! is its PID.)
build/hashring watch --prefix "$P" --json --log-level warn >"$WATCH_OUT" &
WATCH_PID=$!
sleep 0.5
settle

step "the ring: each node's share of the key space"
run_hashring nodes
step "who owns which key (node, read_node, 3 replicas, revision)"
run_hashring lookup "${KEYS[@]}"

step "cache-d joins as warming: writes go to it, reads stay with the old owner"
run etcdctl put "${P}cache-d" '{"addr":"127.0.0.1:11214","zone":"z1","state":"warming"}'
settle
build/hashring lookup --prefix "$P" --json "${KEYS[@]}" | grep -v '"node":"\([^"]*\)","addr":"[^"]*","read_node":"\1"' |
	sed 's/^/  moving: /' || echo "  (none of these keys moves)"
run_hashring lookup "${KEYS[@]}"

step "cache-d is filled: it becomes active and takes reads too"
run etcdctl put "${P}cache-d" '{"addr":"127.0.0.1:11214","zone":"z1","state":"active"}'
settle
run_hashring lookup "${KEYS[@]}"

step "cache-b drains: writes leave it, reads still find its data"
run etcdctl put "${P}cache-b" '{"addr":"127.0.0.1:11212","zone":"z2","state":"draining"}'
settle
run_hashring lookup "${KEYS[@]}"

step "cache-b leaves"
run etcdctl del "${P}cache-b"
settle
run_hashring nodes

step "every ring the watching client published (one line each)"
cat "$WATCH_OUT"
echo
echo "demo done: etcd stopped, temporary data removed"

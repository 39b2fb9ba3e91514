#!/bin/bash
# SPDX-License-Identifier: MIT
# demo-cache.sh - the cache cluster's promise, measured: installs what is
# missing, builds, starts a temporary etcd and four memcached servers on
# free loopback ports, and runs a load generator (build/hashring-load: a
# watching, acknowledging client reading and writing 100,000 keys) through
# a fourth node's join twice: once promoted without copying anything, once
# filled by `hashring rebalance` first.  It prints the hit rates after the
# promotion: without the rebalancer about 1/4 of the reads miss (the keys
# the new node took), with it about none.  Everything it started is
# stopped by PID at the end and its data removed.  With --backend redis the
# four servers are redis-server processes (each in a temporary directory,
# nothing saved) and the copy goes through the Redis backend.
#
#   bash deploy/demo-cache.sh [--backend memcached|redis] [KEYS]   (default 100000)
#
# CMAKE_BUILD_PARALLEL_LEVEL=N sets the compile jobs (default: one per core,
# nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

BACKEND=memcached
if [ "${1:-}" = --backend ]; then
	BACKEND=${2:-}
	shift 2 || true
fi
case $BACKEND in
memcached) N=mc ;;
redis) N=rd ;;
*)
	echo "demo-cache.sh: --backend memcached or redis, not '$BACKEND'" >&2
	exit 2
	;;
esac
KEYS=${1:-100000}
RATE=5000        # the load generator's operations a second, 10% writes
COPY_RATE=20000  # the rebalancer's cap, keys a second
# Compile jobs: CMAKE_BUILD_PARALLEL_LEVEL when set (what `cmake --build`
# itself reads), else one per core.
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if ! [[ $jobs =~ ^[0-9]+$ ]] || [ "$jobs" -eq 0 ]; then
	echo "demo-cache.sh: CMAKE_BUILD_PARALLEL_LEVEL must be a whole number above 0, not '$jobs'" >&2
	exit 2
fi

deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHR_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$jobs" --target hashring hashring-load >/dev/null

# A port nobody listens on, below the kernel's ephemeral range (as demo.sh).
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
# Prints the command as it runs, ready to paste (words with shell
# characters in single quotes), then runs it.
run() {
	local w line=
	for w in "$@"; do
		case $w in
		'' | *[!A-Za-z0-9_./:=@%+,-]*) w="'${w//\'/\'\\\'\'}'" ;;
		esac
		line="$line${line:+ }$w"
	done
	printf '$ %s\n' "$line"
	"$@"
}
step() { printf '\n== %s\n' "$*"; }

STATE=$(mktemp -d)
HR_ETCD_STATE_DIR=$STATE/etcd
export HR_ETCD_STATE_DIR HR_ETCD_CLIENT_PORT HR_ETCD_PEER_PORT
MC_PIDS=()
LOAD_PID=
stop_memcached() {
	local pid
	for pid in "${MC_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	MC_PIDS=()
}
cleanup() {
	if [ -n "$LOAD_PID" ]; then
		kill "$LOAD_PID" 2>/dev/null || true
		wait "$LOAD_PID" 2>/dev/null || true
	fi
	stop_memcached
	deploy/etcd-local.sh stop >/dev/null 2>&1 || true
	rm -rf "$STATE"
}
trap cleanup EXIT

mkdir -p "$HR_ETCD_STATE_DIR"
for attempt in 1 2 3; do
	HR_ETCD_CLIENT_PORT=$(free_port)
	HR_ETCD_PEER_PORT=$(free_port)
	if deploy/etcd-local.sh start >"$STATE/start.out" 2>&1; then
		sed -n 1,2p "$STATE/start.out"
		break
	fi
	[ "$attempt" = 3 ] && { cat "$STATE/start.out" >&2; exit 1; }
done
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS="127.0.0.1:$HR_ETCD_CLIENT_PORT"

# Four empty redis-server processes, each in a directory of its own under
# STATE, saving nothing; MC_ADDRS gets their addresses.
start_redis() {
	local i port dir
	MC_ADDRS=()
	for i in 0 1 2 3; do
		for _ in 1 2 3; do
			port=$(free_port)
			dir=$STATE/redis-$i
			mkdir -p "$dir"
			redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' \
				--appendonly no --logfile "$dir/log" --daemonize no &
			MC_PIDS+=($!)
			for _ in $(seq 100); do
				redis-cli -p "$port" ping >/dev/null 2>&1 && break
				sleep 0.05
			done
			if kill -0 "${MC_PIDS[-1]}" 2>/dev/null; then
				MC_ADDRS+=("127.0.0.1:$port")
				break
			fi
		done
	done
	[ "${#MC_ADDRS[@]}" = 4 ] || { echo "demo-cache: redis-server did not start" >&2; exit 1; }
}

# Four empty memcached servers; MC_ADDRS gets their addresses.
start_memcached() {
	if [ "$BACKEND" = redis ]; then
		start_redis
		return
	fi
	local i port user=()
	MC_ADDRS=()
	[ "$(id -u)" = 0 ] && user=(-u root) # memcached refuses root without it
	for i in 0 1 2 3; do
		for _ in 1 2 3; do
			port=$(free_port)
			memcached "${user[@]}" -l 127.0.0.1 -p "$port" -U 0 -m 64 -t 1 &
			MC_PIDS+=($!)
			for _ in $(seq 100); do
				(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
				sleep 0.05
			done
			if kill -0 "${MC_PIDS[-1]}" 2>/dev/null; then
				MC_ADDRS+=("127.0.0.1:$port")
				break
			fi
		done
	done
	[ "${#MC_ADDRS[@]}" = 4 ] || { echo "demo-cache: memcached did not start" >&2; exit 1; }
}

# Puts node $N$1's record with state $2, printing the command as run; REV
# gets the put's revision.  (Not etcd's newest revision read afterwards:
# the clients' acks move that past any ring, and a wait for it would
# never end.)
put_node() {
	local value="{\"addr\":\"${MC_ADDRS[$1]}\",\"state\":\"$2\"}"
	printf "\$ etcdctl put %s '%s'\n" "${P}$N$1" "$value"
	REV=$(etcdctl put -w json "${P}$N$1" "$value" | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
	[ -n "$REV" ] || { echo "demo-cache: the put of $N$1 failed" >&2; exit 1; }
}

# One join: three nodes, KEYS keys, a fourth node warming, then active.
# $1: "without" or "with" the rebalancer.
round() {
	local mode=$1
	P=/demo-cache/$mode/nodes/
	A=/demo-cache/$mode/acks/
	stop_memcached
	start_memcached
	step "$mode the rebalancer: three nodes, $KEYS keys written through the ring"
	for i in 0 1 2; do
		put_node "$i" active
	done
	run build/hashring-load --backend "$BACKEND" --prefix "$P" --keys "$KEYS" --fill --duration 0

	step "$mode the rebalancer: load (a watching client that acknowledges) while ${N}3 joins"
	build/hashring-load --backend "$BACKEND" --prefix "$P" --keys "$KEYS" --client-id load-1 \
		--ack-prefix "$A" --rate "$RATE" --until-signal --json >"$STATE/$mode-join.json" &
	LOAD_PID=$!
	printf '$ build/hashring-load --backend %s --prefix %s --keys %s --client-id load-1' \
		"$BACKEND" "$P" "$KEYS"
	printf ' --ack-prefix %s' "$A"
	printf ' --rate %s --until-signal --json >%s-join.json &\n' "$RATE" "$mode"
	for _ in $(seq 100); do
		build/hashring acks --prefix "$P" --ack-prefix "$A" 2>/dev/null | grep -q load-1 && break
		sleep 0.1
	done
	put_node 3 warming
	run build/hashring acks --prefix "$P" --ack-prefix "$A" --wait-revision "$REV"
	if [ "$mode" = with ]; then
		run build/hashring rebalance --prefix "$P" --ack-prefix "$A" --backend "$BACKEND" \
			--rate "$COPY_RATE" --clients 1 --promote
	else
		sleep 2 # as long as a copy would take, then the switch
		put_node 3 active
		run build/hashring acks --prefix "$P" --ack-prefix "$A" --wait-revision "$REV"
	fi
	kill "$LOAD_PID"
	wait "$LOAD_PID" || true
	LOAD_PID=

	step "$mode the rebalancer: the same load after the promotion, 3 s"
	run build/hashring-load --backend "$BACKEND" --prefix "$P" --keys "$KEYS" --rate "$RATE" \
		--duration 3 |
		tee "$STATE/$mode-after.tsv"
	SHARE=$(build/hashring nodes --prefix "$P" --json |
		sed -n "s/.*\"id\":\"${N}3\".*\"share\":\([0-9.]*\).*/\1/p")
}

# "reads hit_rate misses" of a total line: the join's (JSON) or the
# promoted ring's (tab-separated).
join_total() {
	sed -n 's/.*"step":"total".*"reads":\([0-9]*\).*"misses":\([0-9]*\).*"hit_rate":\([0-9.]*\).*/\1 \3 \2/p' "$1"
}
after_total() { awk -F'\t' '$1 == "total" { print $4, $10, $7 }' "$1"; }

printf 'columns: copy SCANNED MOVING EXPECTED COPIED PRESENT GONE TAKEN_BACK SKIPPED BYTES SECONDS\n'
printf '         second T REVISION READS HITS FALLBACK_HITS MISSES WRITES ERRORS HIT_RATE\n'
printf '         (FALLBACK_HITS: a miss at the write owner found at the read owner)\n'
round without
round with

# The hit rates of both rounds, through the join (a miss at the new node
# is served by the read owner) and after the promotion.
step "hit rates ($KEYS keys on $BACKEND; ${N}3 took a share of $SHARE of the key space)"
printf '%-24s %28s   %28s\n' "" "through the join" "after the promotion"
printf '%-24s %8s %9s %9s   %8s %9s %9s\n' "" reads "hit rate" misses reads "hit rate" misses
for mode in without with; do
	read -r jr jh jm < <(join_total "$STATE/$mode-join.json")
	read -r ar ah am < <(after_total "$STATE/$mode-after.tsv")
	awk -v m="$mode the rebalancer" -v jr="$jr" -v jh="$jh" -v jm="$jm" \
		-v ar="$ar" -v ah="$ah" -v am="$am" 'BEGIN {
		printf "%-24s %8d %8.2f%% %8.2f%%   %8d %8.2f%% %8.2f%%\n", m,
			jr, 100 * jh, jr ? 100 * jm / jr : 0, ar, 100 * ah, ar ? 100 * am / ar : 0 }'
done
echo
echo "demo done: etcd and $BACKEND stopped, temporary data removed"

#!/bin/bash
# SPDX-License-Identifier: MIT
# The Redis copy's figures (docs/performance.md, "Redis"): two redis-server
# processes on free loopback ports (temporary directories, nothing saved),
# and for 100,000 keys of 100 B and 1,000 of 100 KB:
#   pipe         redis-cli --pipe of the same data into the empty target:
#                the ceiling (one way, no read at the source)
#   copy         hr_rebalancer_copy() through the Redis backend, uncapped
#   dumprestore  DUMP + PTTL / RESTORE pipelined 100 keys at a time
#   migrate      MIGRATE ... COPY, a key a command; migrate-keys: 100 a command
#   copy-capped  the backend at a quarter of its uncapped rate (keys/s for the small
#                keys, bytes/s for the large): the rate held, in % of the cap
# Usage: tests/tools/redis_bench.sh [BUILD_DIR] (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bench=$build/tests/redis-copy-bench
[ -x "$bench" ] || { echo "build $bench first (cmake --build $build --target redis-copy-bench)" >&2; exit 1; }
work=$(mktemp -d /tmp/hr-redis-bench-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() { # name -> port
	local port dir=$work/$1
	port=$(free_port)
	mkdir -p "$dir"
	redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
		--logfile "$dir/log" --daemonize no >/dev/null 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && { echo "$port"; return; }
		sleep 0.05
	done
	echo "redis-server did not start on $port" >&2
	exit 1
}

src=$(start src)
dst=$(start dst)
S=127.0.0.1:$src
D=127.0.0.1:$dst
flush() { redis-cli -p "$dst" flushall >/dev/null; }
field() { sed -n "s/.*\t$1=\([^\t]*\).*/\1/p"; }

for load in "100000 100" "1000 102400"; do
	set -- $load
	n=$1 size=$2
	echo "== $n keys of $size B (redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'))"
	redis-cli -p "$src" flushall >/dev/null
	flush
	"$bench" proto "$n" "$size" >"$work/data.resp"
	redis-cli -p "$src" --pipe <"$work/data.resp" >/dev/null
	t0=$(date +%s.%N)
	redis-cli -p "$dst" --pipe <"$work/data.resp" >/dev/null
	t1=$(date +%s.%N)
	awk -v n="$n" -v s="$size" -v a="$t0" -v b="$t1" 'BEGIN {
		t = b - a; printf "pipe\tkeys=%d\tbytes=%d\tseconds=%.3f\tkeys_per_s=%.0f\tMB_per_s=%.1f\n",
		n, n * s, t, n / t, n * s / t / 1e6 }'
	flush
	line=$("$bench" copy "$S" "$D")
	echo "$line"
	keys_s=$(echo "$line" | field keys_per_s)
	mb_s=$(echo "$line" | field MB_per_s)
	flush
	"$bench" dumprestore "$S" "$D" 100
	flush
	"$bench" migrate "$S" "$D" 1
	flush
	"$bench" migrate "$S" "$D" 100
	flush
	if [ "$size" -le 1000 ]; then
		cap=$(awk -v k="$keys_s" 'BEGIN { printf "%d", k / 4 / 100 * 100 }')
		line=$("$bench" copy "$S" "$D" "$cap" 0)
		got=$(echo "$line" | field keys_per_s)
		unit=keys/s
	else
		cap=$(awk -v m="$mb_s" 'BEGIN { printf "%d", m * 1e6 / 4 / 1e5 * 1e5 }')
		line=$("$bench" copy "$S" "$D" 0 "$cap")
		got=$(awk -v b="$(echo "$line" | field bytes)" -v t="$(echo "$line" | field seconds)" \
			'BEGIN { printf "%.0f", b / t }')
		unit=B/s
	fi
	echo "$line"
	awk -v c="$cap" -v g="$got" -v u="$unit" 'BEGIN {
		printf "cap\t%d %s\tgot=%.0f\t%.1f%% of the cap\n", c, u, g, 100 * g / c }'
	flush
done

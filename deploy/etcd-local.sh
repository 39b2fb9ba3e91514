#!/bin/sh
# SPDX-License-Identifier: MIT
# etcd-local.sh - a throw-away etcd on loopback for trying hashring out.
#
#   deploy/etcd-local.sh [start]      one member on 127.0.0.1:2379
#   deploy/etcd-local.sh start --cluster
#                                     three members (2379, 2479, 2579)
#   deploy/etcd-local.sh status       endpoints and PIDs of what runs
#   deploy/etcd-local.sh stop         stops them and deletes their data
#
# Data lives in temporary directories that `stop` deletes: nothing here is
# meant to survive.  Everything listens on 127.0.0.1 only.
#
# Environment:
#   HR_ETCD_BIN          etcd binary (default /usr/bin/etcd, Debian's)
#   HR_ETCD_CLIENT_PORT  client port of the first member (default 2379)
#   HR_ETCD_PEER_PORT    peer port of the first member (default 2380)
#   HR_ETCD_PORT_STEP    port distance between members (default 100)
#   HR_ETCD_STATE_DIR    PID file, logs and data (default
#                        ${TMPDIR:-/tmp}/hashring-etcd-<uid>)
set -eu

ETCD_BIN=${HR_ETCD_BIN:-/usr/bin/etcd}
CLIENT_PORT=${HR_ETCD_CLIENT_PORT:-2379}
PEER_PORT=${HR_ETCD_PEER_PORT:-2380}
PORT_STEP=${HR_ETCD_PORT_STEP:-100}
STATE_DIR=${HR_ETCD_STATE_DIR:-${TMPDIR:-/tmp}/hashring-etcd-$(id -u)}
PID_FILE=$STATE_DIR/etcd.pids
HOST=127.0.0.1

die() {
	echo "etcd-local: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 [start [--cluster] | stop | status]" >&2
	exit 2
}

check_port() {
	case $2 in
	'' | *[!0-9]*) die "$1 must be a port number, not '$2'" ;;
	esac
	if [ "$2" -lt 1 ] || [ "$2" -gt 65535 ]; then
		die "$1 out of range: $2"
	fi
}

# True if $1 is a live etcd process started by us (a PID can be reused).
is_ours() {
	[ -r "/proc/$1/cmdline" ] &&
		tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "--data-dir $2 "
}

healthy() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsS --max-time 2 "http://$HOST:$1/health" 2>/dev/null |
			grep -q '"health":"true"'
	else
		ETCDCTL_API=3 etcdctl --endpoints="http://$HOST:$1" \
			--command-timeout=2s endpoint health >/dev/null 2>&1
	fi
}

running() {
	[ -f "$PID_FILE" ] || return 1
	while read -r name pid port data; do
		is_ours "$pid" "$data" && return 0
	done <"$PID_FILE"
	return 1
}

cmd_status() {
	if ! running; then
		echo "etcd-local: not running"
		return 1
	fi
	while read -r name pid port data; do
		if is_ours "$pid" "$data"; then
			state=running
		else
			state=gone
		fi
		echo "$name pid=$pid endpoint=http://$HOST:$port $state"
	done <"$PID_FILE"
}

cmd_stop() {
	[ -f "$PID_FILE" ] || {
		echo "etcd-local: nothing to stop"
		return 0
	}
	while read -r name pid port data; do
		if is_ours "$pid" "$data"; then
			kill "$pid" 2>/dev/null || true
		fi
	done <"$PID_FILE"
	while read -r name pid port data; do
		i=0
		while is_ours "$pid" "$data" && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		if is_ours "$pid" "$data"; then
			kill -9 "$pid" 2>/dev/null || true
		fi
		case $data in
		"$STATE_DIR"/data.*) rm -rf "$data" ;;
		esac
		echo "stopped $name (pid $pid)"
	done <"$PID_FILE"
	rm -f "$PID_FILE"
}

cmd_start() {
	members=1
	case ${1:-} in
	'') ;;
	--cluster) members=3 ;;
	*) usage ;;
	esac
	[ -x "$ETCD_BIN" ] || die "no etcd at $ETCD_BIN (apt-get install etcd-server)"
	check_port HR_ETCD_CLIENT_PORT "$CLIENT_PORT"
	check_port HR_ETCD_PEER_PORT "$PEER_PORT"
	case $PORT_STEP in
	'' | *[!0-9]* | 0) die "HR_ETCD_PORT_STEP must be a positive number" ;;
	esac
	check_port "the last peer port" $((PEER_PORT + (members - 1) * PORT_STEP))
	check_port "the last client port" $((CLIENT_PORT + (members - 1) * PORT_STEP))
	running && die "already running (see '$0 status'; '$0 stop' first)"

	mkdir -p "$STATE_DIR"
	rm -f "$PID_FILE"

	cluster=
	i=0
	while [ $i -lt $members ]; do
		peer=$((PEER_PORT + i * PORT_STEP))
		cluster="${cluster:+$cluster,}hr$i=http://$HOST:$peer"
		i=$((i + 1))
	done

	i=0
	while [ $i -lt $members ]; do
		name=hr$i
		client=$((CLIENT_PORT + i * PORT_STEP))
		peer=$((PEER_PORT + i * PORT_STEP))
		data=$(mktemp -d "$STATE_DIR/data.XXXXXX")
		"$ETCD_BIN" --name "$name" --data-dir "$data" \
			--listen-client-urls "http://$HOST:$client" \
			--advertise-client-urls "http://$HOST:$client" \
			--listen-peer-urls "http://$HOST:$peer" \
			--initial-advertise-peer-urls "http://$HOST:$peer" \
			--initial-cluster "$cluster" \
			--initial-cluster-token "hashring-local-$$" \
			--initial-cluster-state new \
			--logger zap --log-outputs stderr \
			>"$STATE_DIR/$name.log" 2>&1 &
		echo "$name $! $client $data" >>"$PID_FILE"
		i=$((i + 1))
	done

	# Members wait for each other before they answer; give them 20 s.
	endpoints=
	pids=
	while read -r name pid port data; do
		t=0
		until healthy "$port"; do
			if ! is_ours "$pid" "$data" || [ $t -ge 200 ]; then
				echo "etcd-local: $name did not start; end of its log:" >&2
				tail -n 5 "$STATE_DIR/$name.log" >&2 || true
				cmd_stop >/dev/null
				exit 1
			fi
			sleep 0.1
			t=$((t + 1))
		done
		endpoints="${endpoints:+$endpoints,}http://$HOST:$port"
		pids="${pids:+$pids }$pid"
	done <"$PID_FILE"

	echo "etcd started: $members member(s), data in $STATE_DIR"
	echo "endpoints: $endpoints"
	echo "pids: $pids"
	echo "stop with: $0 stop"
}

case ${1:-start} in
start) shift $(($# > 0 ? 1 : 0)); [ $# -le 1 ] || usage; cmd_start "$@" ;;
stop) [ $# -eq 1 ] || usage; cmd_stop ;;
status) [ $# -eq 1 ] || usage; cmd_status ;;
--cluster) [ $# -eq 1 ] || usage; cmd_start --cluster ;;
*) usage ;;
esac

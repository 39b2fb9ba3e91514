#!/bin/sh
# install-deps.sh - installs the Debian 12 packages hashring needs to build,
# test and demo, skipping those already present.  Run as root.
#
#   deploy/install-deps.sh            build + run (library, CLI, demo)
#   deploy/install-deps.sh --tests    also what the test suite needs
set -eu

PACKAGES="build-essential cmake pkg-config libxxhash-dev libcjson-dev
libcurl4-openssl-dev liburcu-dev libssl-dev etcd-server etcd-client curl"
TEST_PACKAGES="check python3 python3-xxhash python3-yaml clang libclang-rt-14-dev libmemcached-dev
golang-go golang-github-go-logfmt-logfmt-dev"

[ "${1:-}" = "--tests" ] && PACKAGES="$PACKAGES $TEST_PACKAGES"

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing (run as root to install)" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null

#!/bin/sh
# SPDX-License-Identifier: MIT
# install-deps.sh - installs the Debian 12 packages hashring needs to build,
# test and demo, skipping those already present.  Run as root.
#
#   deploy/install-deps.sh            build + run (library, CLI, demo)
#   deploy/install-deps.sh --tests    also what the test suite needs
#
# The lists are complete for a minimal Debian 12 (debootstrap --variant=
# minbase): tests/fresh-debian.sh runs the README's commands on one.
# Recommended packages are not installed, so nothing here may rely on them.
set -eu

# The build (compiler, CMake, the libraries' -dev packages; libmicrohttpd
# for the tool's `hashring serve`) and the demos (etcd and etcdctl; curl for
# deploy/etcd-local.sh's health check; memcached for deploy/demo-cache.sh's
# servers and the handoff suites'; libhiredis-dev for the Redis backend and
# redis-server for deploy/demo-cache.sh --backend redis and its suite).
PACKAGES="build-essential cmake pkg-config libxxhash-dev libcjson-dev
libcurl4-openssl-dev liburcu-dev libssl-dev libmicrohttpd-dev etcd-server etcd-client curl
memcached libhiredis-dev redis-server"
# The suites: Check; python3 with xxhash and yaml for the placement
# vectors and the compose file; clang and its runtime for the fuzzers;
# libmemcached for ketama; openssl for the TLS suite's certificates;
# groff-base (groff) and man-db (man) for the man page checks; Go and
# go-logfmt, the reference logfmt parser the log tests read lines back with;
# prometheus (promtool and the server) for the metrics suites, and locales
# for their check that numbers ignore the locale; chromium for the
# dashboard's page in a real browser; systemd for systemd-analyze, which
# checks the unit in deploy/.
TEST_PACKAGES="check python3 python3-xxhash python3-yaml clang libclang-rt-14-dev
libmemcached-dev openssl groff-base man-db golang-go golang-github-go-logfmt-logfmt-dev
prometheus locales chromium systemd"

# The Python package (python/, docs/python.md): python3-dev, the headers
# its extension builds with (-DHR_BUILD_PYTHON=ON), installed with the
# build's packages so that `import hashring` works once built and
# installed; its suite's pytest (with pytest-asyncio, uvloop and aiohttp
# for the asyncio classes and examples/aiohttp_service.py, gunicorn for
# examples/gunicorn_app.py), and pip,
# setuptools, wheel and build for the install routes it checks.  Lists of their own: the Docker image and
# the .deb packages do not build the Python package.
PYTHON_PACKAGES="python3-dev"
PYTHON_TEST_PACKAGES="python3-pytest python3-pip python3-setuptools python3-wheel
python3-build python3-pytest-asyncio python3-uvloop python3-aiohttp gunicorn"

wanted="$PACKAGES $PYTHON_PACKAGES"
[ "${1:-}" = "--tests" ] && wanted="$wanted $TEST_PACKAGES $PYTHON_TEST_PACKAGES"

missing=""
for p in $wanted; do
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

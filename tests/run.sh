#!/bin/bash
# run.sh - the test command: installs what is missing, builds, and runs the
# whole suite (unit and real-etcd integration tests) three times: a normal
# build in build/, then under ASan+UBSan (build-asan/) and TSan (build-tsan/).
#
#   HR_TEST_SANITIZERS="address thread"   the sanitizer builds to run
#                                          (set it empty to skip them)
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --tests
jobs=$(nproc)

suite() {
	local dir=$1
	shift
	cmake -S . -B "$dir" "$@" >/dev/null
	cmake --build "$dir" -j"$jobs"
	# Timing-sensitive scenarios (stale warnings, restarts) run one at a
	# time: two cores are all there is.
	ctest --test-dir "$dir" --output-on-failure
}

suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
for s in ${HR_TEST_SANITIZERS-address thread}; do
	case $s in
	address) suite build-asan -DHR_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug ;;
	thread) suite build-tsan -DHR_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug ;;
	*) echo "run.sh: unknown sanitizer '$s'" >&2; exit 2 ;;
	esac
done
echo "all suites passed"

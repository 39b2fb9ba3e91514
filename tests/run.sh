#!/bin/bash
# SPDX-License-Identifier: MIT
# run.sh - the test command: installs what is missing, builds, and runs the
# whole suite (unit and real-etcd integration tests) three times: a normal
# build in build/, then under ASan+UBSan (build-asan/) and TSan (build-tsan/),
# each with warnings as errors (HR_WERROR), then the fuzzers (build-fuzz/).
# Two Release trees, what a user builds (the library and the tools, no
# tests), are only built, with GCC and with clang, also with warnings as
# errors: -O3 and NDEBUG warn where the other trees do not.
# The trees after build/ are built in the background at the lowest priority
# while the suites before them run (their output in build-*.build.log).
# Suites are picked by their ctest labels (tests/CMakeLists.txt says what
# each one means).
#
#   HR_TEST_SANITIZERS="address thread"   the sanitizer builds to run
#                                          (set it empty to skip them)
#   HR_FUZZ_SECONDS=25                     then each fuzz target runs this
#                                          long (build-fuzz/; 0 skips)
#   CMAKE_BUILD_PARALLEL_LEVEL=N           compile jobs, and suites run side
#                                          by side (default: one per core,
#                                          nproc)
#
# A failing suite does not stop the run: every stage runs, the total is
# printed at the end and the exit status is 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Compile jobs, and suites run side by side: CMAKE_BUILD_PARALLEL_LEVEL
# when set (what `cmake --build` itself reads), else one per core.
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if ! [[ $jobs =~ ^[0-9]+$ ]] || [ "$jobs" -eq 0 ]; then
	echo "run.sh: CMAKE_BUILD_PARALLEL_LEVEL must be a whole number above 0, not '$jobs'" >&2
	exit 2
fi
deploy/install-deps.sh --tests
passed=0
failed=0
problems=() # one line per failed test, build or fuzz target, for the end

# tally DIR NAME CTEST_ARGS...: runs ctest in DIR with CTEST_ARGS, keeps its
# output in DIR/NAME.out and adds its suites to the totals.  ctest's status
# is kept, not fatal (set -e would end the run before the total).
tally() {
	local dir=$1 out="$1/$2.out" rc=0 summary total bad
	shift 2
	ctest --test-dir "$dir" --output-on-failure "$@" | tee "$out" || rc=$?
	# ctest's "N% tests passed, F tests failed out of T", for the total.
	summary=$(grep -E 'tests failed out of [0-9]+' "$out" | tail -1 || true)
	if [ -z "$summary" ] && grep -q '^No tests were found' "$out"; then
		return
	fi
	if [ -z "$summary" ]; then
		problems+=("$dir: ctest $* exited $rc without a summary")
		return
	fi
	bad=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
	total=$(echo "$summary" | sed -E 's/.*out of ([0-9]+).*/\1/')
	failed=$((failed + bad))
	passed=$((passed + total - bad))
	# The names under "The following tests FAILED:", e.g. "  7 - unit.x (Failed)".
	while read -r line; do
		problems+=("$dir: $line")
	done < <(sed -n '/The following tests FAILED:/,$ s/^[[:space:]]*[0-9]* - //p' "$out")
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		problems+=("$dir: ctest $* exited $rc")
	fi
}

# build DIR TARGET CMAKE_ARGS...: configures and builds DIR (TARGET empty:
# everything).  HR_BUILD_TESTS is explicit: the demo configures build/
# without the tests, and CMake would keep that cached value.  Warnings are
# errors here, as they are not in a user's build.  The Python package and
# its suite (python/) are built too.
build() {
	local dir=$1 target=$2
	shift 2
	cmake -S . -B "$dir" -DHR_BUILD_TESTS=ON -DHR_WERROR=ON -DHR_BUILD_PYTHON=ON "$@" >/dev/null &&
		cmake --build "$dir" -j"$jobs" ${target:+--target "$target"}
}

# The trees after the first: configure arguments, target and the suites
# left out (labels, tests/CMakeLists.txt: no-sanitizer suites cannot run
# under one; single-thread suites give ThreadSanitizer nothing to see).
declare -A tree_args tree_target tree_leave_out
trees=()
for s in ${HR_TEST_SANITIZERS-address thread}; do
	case $s in
	address) trees+=(build-asan)
		tree_args[build-asan]="-DHR_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug"
		tree_leave_out[build-asan]=no-sanitizer ;;
	thread) trees+=(build-tsan)
		tree_args[build-tsan]="-DHR_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug"
		tree_leave_out[build-tsan]='no-sanitizer|single-thread' ;;
	*) echo "run.sh: unknown sanitizer '$s'" >&2; exit 2 ;;
	esac
done
fuzz_s=${HR_FUZZ_SECONDS-25}
if [ "$fuzz_s" -gt 0 ]; then
	trees+=(build-fuzz)
	tree_args[build-fuzz]="-DHR_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo"
	tree_target[build-fuzz]=hr_fuzzers
fi
# Last, as no suite waits for them.
trees+=(build-release-gcc build-release-clang)
tree_args[build-release-gcc]="-DCMAKE_BUILD_TYPE=Release -DHR_BUILD_TESTS=OFF -DCMAKE_C_COMPILER=gcc"
tree_args[build-release-clang]="-DCMAKE_BUILD_TYPE=Release -DHR_BUILD_TESTS=OFF -DCMAKE_C_COMPILER=clang"

# Those trees build in the background, one after the other, at the lowest
# priority, while the suites before them run: the integration suites
# mostly wait on servers and timers, so the compiler takes the idle cores
# instead of a third of the run's time of its own.  Each tree's output
# goes to DIR.build.log and its exit status to DIR.built.
prebuild() {
	local dir rc
	renice -n 19 -p "$BASHPID" >/dev/null || true
	for dir in "${trees[@]}"; do
		rc=0
		# shellcheck disable=SC2086 # the arguments are separate words
		build "$dir" "${tree_target[$dir]-}" ${tree_args[$dir]} \
			>"$dir.build.log" 2>&1 || rc=$?
		echo "$rc" >"$dir.built"
	done
}

# built DIR: waits for DIR's background build; fails (showing the end of
# its output) if the build did.
built() {
	local dir=$1
	while [ ! -s "$dir.built" ]; do
		if ! kill -0 "$prebuild_pid" 2>/dev/null && [ ! -s "$dir.built" ]; then
			echo "run.sh: the background build stopped before $dir" >&2
			return 1
		fi
		sleep 2
	done
	[ "$(cat "$dir.built")" = 0 ] && return
	tail -n 40 "$dir.build.log"
	return 1
}

# suites DIR LABELS_LEFT_OUT: runs DIR's ctest suites but those labelled
# LABELS_LEFT_OUT (a ctest -LE regex; empty: none).
suites() {
	local dir=$1 leave_out=$2
	if [ -n "$leave_out" ]; then
		echo "$dir: suites labelled $leave_out are left out"
	fi
	# Unit suites assert no timings and start no servers: they run side
	# by side, one per core.  The others (real etcd, memcached, Chromium)
	# each start their own servers on free loopback ports and spend most
	# of their time waiting on them and on timers (the ring's staleness,
	# leases, restarts): two at a time take about half as long, with the
	# CPU still half idle.
	tally "$dir" ctest-unit -L '^unit$' -LE "^(${leave_out:-none})\$" -j"$jobs"
	tally "$dir" ctest-rest -LE "^(unit|${leave_out:-none})\$" -j"$jobs"
}

rm -f build-*.built
first_built=0
build build "" -DCMAKE_BUILD_TYPE=RelWithDebInfo || first_built=$?
prebuild &
prebuild_pid=$!
if [ "$first_built" -eq 0 ]; then
	suites build ""
else
	problems+=("build: the build failed")
fi

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
for dir in "${trees[@]}"; do
	if ! built "$dir"; then
		problems+=("$dir: the build failed")
		continue
	fi
	case $dir in
	build-asan | build-tsan) suites "$dir" "${tree_leave_out[$dir]}" ;;
	build-release-*) echo "$dir: built" ;;
	build-fuzz)
		# Fuzzing: each libFuzzer target (tests/fuzz) runs for a
		# bounded time, seeded from the committed corpus; what it finds
		# stays in build-fuzz/.  The per-input timeout is above the
		# slowest legal input: a members document with the largest ring
		# allowed (HR_POINTS_MAX points) builds in ~17 s in this
		# sanitized build; a hang still trips it.
		for t in fuzz_watch_stream fuzz_record fuzz_members fuzz_snapshot; do
			mkdir -p "build-fuzz/corpus/$t"
			# The JSON dictionary for the targets that read JSON.
			dict=(-dict=tests/fuzz/json.dict)
			[ "$t" = fuzz_snapshot ] && dict=()
			if ! "build-fuzz/tests/fuzz/$t" -max_total_time="$fuzz_s" -timeout=60 \
				-rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
				-artifact_prefix="build-fuzz/$t-" "build-fuzz/corpus/$t" \
				"tests/fuzz/corpus/$t" >"build-fuzz/$t.log" 2>&1; then
				tail -40 "build-fuzz/$t.log"
				problems+=("build-fuzz: $t found a crash (input saved as build-fuzz/$t-*)")
				continue
			fi
			echo "$t: $(grep -o 'number_of_executed_units: *[0-9]*' "build-fuzz/$t.log")"
		done ;;
	esac
done
wait

echo
echo "tests: $passed passed, $failed failed"
if [ ${#problems[@]} -gt 0 ]; then
	printf 'FAILED: %s\n' "${problems[@]}"
	exit 1
fi
echo "all suites passed"

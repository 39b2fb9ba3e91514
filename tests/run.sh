#!/bin/bash
# run.sh - the test command: installs what is missing, builds, and runs the
# whole suite (unit and real-etcd integration tests) three times: a normal
# build in build/, then under ASan+UBSan (build-asan/) and TSan (build-tsan/),
# each with warnings as errors (HR_WERROR).  Suites are picked by their ctest
# labels (tests/CMakeLists.txt says what each one means).
#
#   HR_TEST_SANITIZERS="address thread"   the sanitizer builds to run
#                                          (set it empty to skip them)
#   HR_FUZZ_SECONDS=25                     then each fuzz target runs this
#                                          long (build-fuzz/; 0 skips)
#
# A failing suite does not stop the run: every stage runs, the total is
# printed at the end and the exit status is 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --tests
jobs=$(nproc)
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

# suite DIR LABELS_LEFT_OUT CMAKE_ARGS...: builds DIR and runs its ctest
# suites but those labelled LABELS_LEFT_OUT (a ctest -LE regex; empty: none).
suite() {
	local dir=$1 leave_out=$2
	shift 2
	if [ -n "$leave_out" ]; then
		echo "$dir: suites labelled $leave_out are left out"
	fi
	# HR_BUILD_TESTS is explicit: the demo configures build/ without the
	# tests, and CMake would keep that cached value.  Warnings are errors
	# here, as they are not in a user's build.
	if ! cmake -S . -B "$dir" -DHR_BUILD_TESTS=ON -DHR_WERROR=ON "$@" >/dev/null ||
		! cmake --build "$dir" -j"$jobs"; then
		problems+=("$dir: the build failed")
		return
	fi
	# Unit suites assert no timings and start no servers: they run side
	# by side, one per core.  The others (real etcd, memcached, Chromium;
	# stale warnings, restarts, timeouts) run one at a time: two cores are
	# all there is.
	tally "$dir" ctest-unit -L '^unit$' -LE "^(${leave_out:-none})\$" -j"$jobs"
	tally "$dir" ctest-rest -LE "^(unit|${leave_out:-none})\$"
}

suite build "" -DCMAKE_BUILD_TYPE=RelWithDebInfo

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
for s in ${HR_TEST_SANITIZERS-address thread}; do
	case $s in
	# Labels (tests/CMakeLists.txt): no-sanitizer suites cannot run
	# under one; single-thread suites give ThreadSanitizer nothing to see.
	address) suite build-asan no-sanitizer -DHR_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug ;;
	thread) suite build-tsan 'no-sanitizer|single-thread' -DHR_SANITIZE=thread \
		-DCMAKE_BUILD_TYPE=Debug ;;
	*) echo "run.sh: unknown sanitizer '$s'" >&2; exit 2 ;;
	esac
done
# Fuzzing: each libFuzzer target (tests/fuzz) runs for a bounded time,
# seeded from the committed corpus; what it finds stays in build-fuzz/.
# HR_FUZZ_SECONDS sets the time per target (0 skips the stage).  The
# per-input timeout is above the slowest legal input: a members document
# with the largest ring allowed (HR_POINTS_MAX points) builds in ~17 s in
# this sanitized build; a hang still trips it.
fuzz_s=${HR_FUZZ_SECONDS-25}
if [ "$fuzz_s" -gt 0 ]; then
	if cmake -S . -B build-fuzz -DHR_BUILD_TESTS=ON -DHR_FUZZ=ON -DHR_WERROR=ON \
		-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		cmake --build build-fuzz -j"$jobs" --target hr_fuzzers; then
		for t in fuzz_watch_stream fuzz_record fuzz_members; do
			mkdir -p "build-fuzz/corpus/$t"
			if ! "build-fuzz/tests/fuzz/$t" -max_total_time="$fuzz_s" -timeout=60 \
				-rss_limit_mb=2048 -print_final_stats=1 -dict=tests/fuzz/json.dict \
				-artifact_prefix="build-fuzz/$t-" "build-fuzz/corpus/$t" \
				"tests/fuzz/corpus/$t" >"build-fuzz/$t.log" 2>&1; then
				tail -40 "build-fuzz/$t.log"
				problems+=("build-fuzz: $t found a crash (input saved as build-fuzz/$t-*)")
				continue
			fi
			echo "$t: $(grep -o 'number_of_executed_units: *[0-9]*' "build-fuzz/$t.log")"
		done
	else
		problems+=("build-fuzz: the build failed")
	fi
fi

echo
echo "tests: $passed passed, $failed failed"
if [ ${#problems[@]} -gt 0 ]; then
	printf 'FAILED: %s\n' "${problems[@]}"
	exit 1
fi
echo "all suites passed"

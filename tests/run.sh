#!/usr/bin/env bash
# Runs every test: cmocka unit tests (build/ and build-asan/), runtime and TUI scripts, GPU tests.
# Prints PASS name / FAIL name: reason / SKIP name: reason, then "N passed, N failed, N skipped".
# usage: tests/run.sh [SUBSTRING...]   only tests whose name contains one of the substrings
# Environment: TEST_TIMEOUT (seconds per test, default 120), BUILD (default build).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
BUILD=${BUILD:-build}
TIMEOUT=${TEST_TIMEOUT:-120}
LOGS=$ROOT/$BUILD/test-logs
mkdir -p "$LOGS"
passed=0 failed=0 skipped=0
FILTERS=("$@")

selected()
{
	local f
	[ "${#FILTERS[@]}" = 0 ] && return 0
	for f in "${FILTERS[@]}"; do
		case $1 in *"$f"*) return 0 ;; esac
	done
	return 1
}

# The last non-empty line of a log, for a one-line reason.
last_line()
{
	grep -v '^[[:space:]]*$' "$1" | tail -n 1 | cut -c1-300
}

# run_test NAME CMD...: runs one test with the timeout, output to $LOGS/NAME.log.
run_test()
{
	local name=$1 log rc=0
	shift
	selected "$name" || return 0
	log=$LOGS/${name//\//_}.log
	timeout -k 10 "$TIMEOUT" "$@" >"$log" 2>&1 </dev/null || rc=$?
	case $rc in
	0)
		echo "PASS $name"
		passed=$((passed + 1))
		;;
	77)
		echo "SKIP $name: $(last_line "$log")"
		skipped=$((skipped + 1))
		;;
	124 | 137)
		echo "FAIL $name: timed out after ${TIMEOUT}s (log: $log)"
		failed=$((failed + 1))
		;;
	*)
		echo "FAIL $name: $(last_line "$log") (exit $rc, log: $log)"
		tail -n 15 "$log" | sed 's/^/    /'
		failed=$((failed + 1))
		;;
	esac
}

# Unit tests: a cmocka binary passes when it exits 0.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for dir in "$BUILD/tests" build-asan/tests; do
	for t in "$dir"/test_*; do
		[ -x "$t" ] || continue
		case $dir in build-asan/*) kind=asan ;; *) kind=unit ;; esac
		run_test "$kind/$(basename "$t")" "$t"
	done
done

for t in tests/runtime/t*.sh tests/tui/t*.sh; do
	[ -f "$t" ] || continue
	name=${t#tests/}
	run_test "${name%.sh}" bash "$t"
done
run_test gpu bash tests/gpu/run.sh

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]

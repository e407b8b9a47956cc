#!/usr/bin/env bash
# The CPU-only CUPTI scenarios under the sanitizers: the ASan/UBSan CLI records, the collector
# injected into the program is the sanitized build (build-asan/lib/cuscope-san, libasan preloaded
# after it), by callback and by activity record, with threads launching at once and threads ending
# right after their launches. Nothing is reported, the program's exit status comes through, and
# every kernel is linked as without the sanitizers.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
[ -x "$CUSCOPE_ASAN" ] || fail "$CUSCOPE_ASAN not built (make BUILD=build-asan ASAN=1 build-asan/bin/cuscope)"
SAN_COLLECTOR=$ROOT/build-asan/lib/cuscope-san/libcuscope.so
[ -f "$SAN_COLLECTOR" ] ||
	fail "$SAN_COLLECTOR not built (make BUILD=build-asan ASAN=1 build-asan/lib/cuscope-san/libcuscope.so)"
LIBASAN=$(${CC:-gcc} -print-file-name=libasan.so)
[ -f "$LIBASAN" ] || fail "libasan.so not found by ${CC:-gcc} -print-file-name"

# The CLI puts the collector first in LD_PRELOAD: libasan comes after it, hence the link order
# check off. Leaks: the program's threads and CUPTI's buffers live until the process ends.
export LD_PRELOAD=$LIBASAN CUSCOPE_COLLECTOR=$SAN_COLLECTOR
export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for mode in callback activity; do
	fc_record -b "$CUSCOPE_ASAN" "$mode" "$mode" 1000 8 2 concurrent
	no_sanitizer_report "$T/$mode.err" "$T/$mode.export.err" "$T/$mode.stats.json.err"
	fc_check "$mode" 1000
	fc_record -b "$CUSCOPE_ASAN" "$mode" "$mode-short" 200 2 6 short
	no_sanitizer_report "$T/$mode-short.err"
	fc_check "$mode-short" 200
done
# The sanitized collector was the one in the program.
"$CUSCOPE_ASAN" record -o "$T/maps.cap" -- grep -c "$SAN_COLLECTOR" /proc/self/maps >"$T/maps.out" 2>&1 ||
	fail "the sanitized collector is not mapped in the program: $(head -c 300 "$T/maps.out")"
exit 0

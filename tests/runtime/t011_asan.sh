#!/usr/bin/env bash
# The sanitized CLI (build-asan/bin/cuscope, ASan+UBSan): record and stats of a threaded NVTX
# program, stats in every format, and stats of hostile capture files (a truncated capture, bit
# flips, random bytes) — with no sanitizer report and no crash.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_prog nvtx_threads nvtx_domains
[ -x "$CUSCOPE_ASAN" ] || fail "$CUSCOPE_ASAN not built (make BUILD=build-asan ASAN=1 build-asan/bin/cuscope)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

cs_record -b "$CUSCOPE_ASAN" "$T/cap" app -- "$PROGS/nvtx_threads"
no_sanitizer_report "$T/app.err"
[ "$RC" = 0 ] || fail "ASan cuscope record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats -b "$CUSCOPE_ASAN" "$T/cap" "$T/stats.json"
no_sanitizer_report "$T/stats.json.err"
py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([("w1.outer", "", "PushPop", 5), ("w1.inner", "", "PushPop", 20)], exact=False)
PY
for fmt in table csv; do
	timeout 60 "$CUSCOPE_ASAN" stats --format=$fmt "$T/cap" >"$T/$fmt.out" 2>"$T/$fmt.err" ||
		fail "ASan stats --format=$fmt exited non-zero: $(head -c 300 "$T/$fmt.err")"
	no_sanitizer_report "$T/$fmt.err"
done

cs_record -b "$CUSCOPE_ASAN" "$T/dom.cap" dom -- "$PROGS/nvtx_domains"
no_sanitizer_report "$T/dom.err"
[ "$RC" = 0 ] || fail "ASan record of nvtx_domains exited $RC"

# Hostile inputs derived from a real capture: every result is exit 0 with JSON or a one-line
# error, never a crash or a sanitizer report.
size=$(stat -c %s "$T/dom.cap")
hostile()
{
	local name=$1 rc=0
	timeout 60 "$CUSCOPE_ASAN" stats --format=json "$T/$name" >"$T/$name.json" 2>"$T/$name.err" || rc=$?
	no_sanitizer_report "$T/$name.err"
	[ "$rc" -lt 124 ] || fail "stats of $name: exit $rc (crash or hang)"
	if [ "$rc" = 0 ]; then
		"$PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/$name.json" 2>/dev/null ||
			fail "stats of $name: exit 0 but output is not JSON"
	else
		one_line_error "$T/$name.err" "stats of $name"
	fi
}
for cut in 1 7 8 16 64 $((size / 3)) $((size / 2)) $((size - 1)); do
	[ "$cut" -lt "$size" ] || continue
	head -c "$cut" "$T/dom.cap" >"$T/cut$cut.cap"
	hostile "cut$cut.cap"
done
for seed in 1 2 3 4 5 6 7 8; do
	"$PYTHON" - "$T/dom.cap" "$T/flip$seed.cap" "$seed" <<'PY'
import random, sys
data = bytearray(open(sys.argv[1], "rb").read())
rng = random.Random(int(sys.argv[3]))
for _ in range(1 + len(data) // 2000):
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
open(sys.argv[2], "wb").write(data)
PY
	hostile "flip$seed.cap"
done
exit 0

#!/usr/bin/env bash
# The collector's own cost in captures: `stats` has a "cost" section (one row per process and
# source, totals from the newest readings, table/CSV/JSON alike, in the default sections) and
# `info` one line per process saying what it leaves out; readings spread over many chunks decode
# the same; a capture without cost frames reads as before (empty section, no cost line).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ -f "$BUILD/obj/libviewer.a" ] || skip "no $BUILD/obj/libviewer.a"
# The generator links the viewer library as built (a sanitized one needs the sanitizers too).
for san in "" "-fsanitize=address,undefined"; do
	# shellcheck disable=SC2086
	cc -O2 $san -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/runtime/cost_capture.c" \
		"$BUILD/obj/libviewer.a" -lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" && break
done
[ -x "$T/gen" ] || fail "cannot build cost_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/cost.cap" || fail "cost_capture failed"
"$T/gen" "$T/chunks.cap" 12000 || fail "cost_capture (filler) failed"

want='# cost
pid,source,cpu_ns,added_ns,events,backoffs,level,reduced
4343,sender,60000000,0,2000,0,0,false
4343,sampling,40000000,20000000,20000,2,100,true'
for cap in cost chunks; do
	"$CUSCOPE" stats --format=csv --report=cost "$T/$cap.cap" >"$T/$cap.csv" 2>"$T/$cap.err" || fail "stats $cap: $(head -c 200 "$T/$cap.err")"
	[ "$(cat "$T/$cap.csv")" = "$want" ] || fail "stats cost of $cap.cap: $(tr '\n' '|' <"$T/$cap.csv")"
done
chunks=$("$CUSCOPE" info "$T/chunks.cap" | sed -n 's/^chunks *\([0-9]*\) read.*/\1/p')
[ "${chunks:-0}" -ge 4 ] || fail "the filler capture has only ${chunks:-?} chunks: readings not spread"

# JSON and table: the same rows; the section is among the defaults.
"$CUSCOPE" stats --format=json "$T/cost.cap" >"$T/all.json" 2>/dev/null || fail "stats json failed"
"$PYTHON" - "$T/all.json" <<'PY' || exit 1
import json, sys
A = json.load(open(sys.argv[1]))
c = A.get("cost")
want = [{"pid": 4343, "source": "sender", "cpu_ns": 60000000, "added_ns": 0, "events": 2000, "backoffs": 0,
         "level": 0, "reduced": False},
        {"pid": 4343, "source": "sampling", "cpu_ns": 40000000, "added_ns": 20000000, "events": 20000,
         "backoffs": 2, "level": 100, "reduced": True}]
if c != want:
    print("json cost section: %r" % (c,)); sys.exit(1)
PY
"$CUSCOPE" stats "$T/cost.cap" >"$T/all.txt" 2>/dev/null || fail "stats table failed"
grep -A3 '^== cost ==' "$T/all.txt" | grep -qE '^ *4343 +sampling +40000000 +20000000 +20000 +2 +100 +true' ||
	fail "table cost section: $(grep -A3 '^== cost ==' "$T/all.txt" | tr '\n' '|')"

# info: one line for the process with readings, none for the other.
"$CUSCOPE" info "$T/cost.cap" >"$T/info.txt" 2>&1 || fail "info failed"
line="    cost: collector 0.5 % CPU, est. +0.1 % on the program (sampling reduced to 100/s from 1000/s, 2 back-offs); not counted: CUPTI's time in the driver"
grep -qxF "$line" "$T/info.txt" || fail "info cost line: $(grep 'cost:' "$T/info.txt")"
[ "$(grep -c 'cost:' "$T/info.txt")" = 1 ] || fail "info printed $(grep -c 'cost:' "$T/info.txt") cost lines, want 1"

# A capture without cost frames: an empty section and no cost line.
"$CUSCOPE" stats --format=csv --report=cost "$ROOT/tests/data/capture_v1.cap" >"$T/v1.csv" 2>/dev/null || fail "stats of the v1 capture failed"
[ "$(cat "$T/v1.csv")" = '# cost
pid,source,cpu_ns,added_ns,events,backoffs,level,reduced' ] || fail "v1 capture cost section: $(tr '\n' '|' <"$T/v1.csv")"
"$CUSCOPE" info "$ROOT/tests/data/capture_v1.cap" 2>&1 | grep -q 'cost:' && fail "info of a capture without cost prints a cost line"
exit 0

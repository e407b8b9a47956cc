#!/usr/bin/env bash
# Dump bounds: ten planted long steps (250 ms among 5 ms ones, a 150 ms trigger), each firing apart (more than --post between them). With
# --dump-max 3 --dump-keep oldest the first three firings' dumps stay and no other file appears;
# with --dump-keep newest the last three stay (older ones removed as newer ones land). Every
# firing stays listed in the capture either way. --dump-max-mb holds the total size of a busy
# workload's dumps (--dump-keep newest), and nothing outside the dumps we wrote is removed; a
# dump alone over the cap is removed with one line saying so.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall
export CUSCOPE

for keep in oldest newest; do
	mkdir -m 700 "$T/$keep"
	echo precious >"$T/$keep/mine.cuscope"
	"$CUSCOPE" record -o "$T/$keep.cap" --trigger 'range:step>150ms' --pre 100ms --post 100ms \
		--dump-dir "$T/$keep" --dump-max 3 --dump-keep "$keep" \
		-- "$PROGS/trigger_stall" ranges 60 5 6 250 150 >"$T/$keep.out" 2>"$T/$keep.err" </dev/null
	rc=$?
	[ "$rc" = 0 ] || fail "record ($keep) exited $rc: $(tail -c 300 "$T/$keep.err")"
	cs_stats "$T/$keep.cap" "$T/$keep.json"
	"$PYTHON" "$(dirname "$0")/trigger_check.py" "$T/$keep.json" "$T/$keep.out" 'range:step>150ms' \
		|| exit 1
	"$PYTHON" - "$T/$keep.json" "$T/$keep" "$keep" <<'PY' || exit 1
import json, os, sys
rows = [r for r in json.load(open(sys.argv[1]))["triggers"] if r["expr"] == "range:step>150ms"]
d, keep = sys.argv[2], sys.argv[3]
if len(rows) < 10:
    print("%d firings listed, want the 10 planted" % len(rows)); sys.exit(1)
files = sorted(n for n in os.listdir(d) if n != "mine.cuscope")
if open(os.path.join(d, "mine.cuscope")).read() != "precious\n":
    print("a file we did not write was touched"); sys.exit(1)
named = [r["file"] for r in rows if r["file"]]
want = named[:3] if keep == "oldest" else named[-3:]
if sorted(os.path.basename(f) for f in want) != files or len(files) != 3:
    print("--dump-keep %s: files %r, want %r" % (keep, files, [os.path.basename(f) for f in want])); sys.exit(1)
if keep == "oldest" and len(named) != 3:
    print("--dump-keep oldest: %d firings name a dump, want the first 3 only" % len(named)); sys.exit(1)
PY
done

# A busy workload fires on every step: its ~30 dumps (paced at 2000 steps/s, ~0.25 MB each
# whatever the machine's speed) add up to more than 4 MiB; their total stays under it.
mkdir -m 700 "$T/mb"
"$CUSCOPE" record -o "$T/mb.cap" --trigger 'range:step>1us' --pre 100ms --post 100ms \
	--dump-dir "$T/mb" --dump-max-mb 4 --dump-keep newest \
	-- "$PROGS/trigger_stall" busy 3 2000 >"$T/mb.out" 2>"$T/mb.err" </dev/null
rc=$?
[ "$rc" = 0 ] || fail "record (busy) exited $rc: $(tail -c 300 "$T/mb.err")"
total=$(find "$T/mb" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
n=$(find "$T/mb" -type f | wc -l)
[ "$n" -ge 1 ] || fail "--dump-max-mb 4: no dump kept"
[ "$total" -le $((4 << 20)) ] || fail "--dump-max-mb 4: $n dumps hold $total bytes"
grep -q "removed .*--dump-keep newest" "$T/mb.err" ||
	fail "the busy workload's dumps never reached 4 MiB (nothing removed): $n files, $total bytes"

# Unpaced, one window alone holds more than the cap allows: all are removed, with one line that
# says why and what to change.
mkdir -m 700 "$T/big"
"$CUSCOPE" record -o "$T/big.cap" --trigger 'range:step>1us' --pre 100ms --post 100ms \
	--dump-dir "$T/big" --dump-max-mb 1 --dump-keep newest \
	-- "$PROGS/trigger_stall" busy 2 >"$T/big.out" 2>"$T/big.err" </dev/null
rc=$?
[ "$rc" = 0 ] || fail "record (big) exited $rc: $(tail -c 300 "$T/big.err")"
if [ -n "$(find "$T/big" -type f)" ]; then
	size=$(find "$T/big" -type f -printf '%s\n' | sort -n | tail -1)
	[ "$size" -le $((1 << 20)) ] || fail "--dump-max-mb 1: a dump of $size bytes was kept"
else
	[ "$(grep -c 'more than --dump-max-mb 1 allows on its own' "$T/big.err")" = 1 ] ||
		fail "no dump kept and not one line saying why: $(grep -m 3 'trigger:' "$T/big.err" | tr '\n' '|')"
fi
exit 0

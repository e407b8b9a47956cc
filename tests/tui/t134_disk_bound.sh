#!/usr/bin/env bash
# The live capture file kept for dumps is bounded (--disk-mb): under a flood it never grows much
# past the cap; when full a new one starts with the processes' identity, so a dump taken after
# that still reads on its own (process, thread and range names intact).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_flood

mkdir -m 700 "$T/sess"
tm_start 160 40 "cd $T && CUSCOPE_SESSION_ROOT=$T/sess $CUSCOPE --disk-mb 16 --memory-mb 64 -- $PROGS/nvtx_flood 22 1; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'LIVE' 20 "live UI"
max=0
for _ in $(seq 1 24); do
	sleep 0.5
	f=$(find "$T/sess" -name "live.cuscope*" 2>/dev/null | head -n 1)
	[ -n "$f" ] || continue
	size=$(stat -c %s "$f" 2>/dev/null || echo 0)
	[ "$size" -gt "$max" ] && max=$size
	tm_screen_has 'EXITED' && break
done
[ "$max" -gt 0 ] || fail "no live capture file seen"
[ "$max" -le $(((16 + 8) << 20)) ] || fail "live capture file reached $((max >> 20)) MiB with --disk-mb 16"
tm_screen_has 'EXITED' && fail "app ended before the dump: nothing tested"
tm_keys d
tm_wait 'hole capture' 5 "dump scope prompt"
tm_keys w
tm_wait 'dump to file' 5 "dump file prompt"
tm_keys C-u "$T/whole.cuscope" Enter
wait_until 30 tm_screen_has "dump: wrote" || fail "dump did not finish: $(tm_screen | tail -n 2 | tr -s " " | tr "\n" "|")"
"$CUSCOPE" stats --format=json "$T/whole.cuscope" >"$T/whole.json" 2>"$T/whole.err" ||
	fail "stats of the dump failed: $(cat "$T/whole.err")"
"$PYTHON" - "$T/whole.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
flood = sum(r["count"] for r in d["nvtx"] if r["name"] == "flood")
if flood < 1000:
    print("dump after a new live file holds %d flood ranges, want many" % flood); sys.exit(1)
if not any("nvtx_flood" in (p.get("cmdline") or p.get("command") or "") for p in d["processes"]):
    print("dump lost the process identity: %r" % d["processes"][:2]); sys.exit(1)
PY
tm_wait 'EXITED \(code 0\)' 30 "app end"
tm_keys q
tm_wait_exit 0 20
echo "live capture file peaked at $((max >> 20)) MiB (cap 16)"
exit 0

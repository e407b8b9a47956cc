#!/usr/bin/env bash
# Pushes refused because a thread's ring is full: the recorded ranges stay exactly nested and
# every range is recorded or counted. A program bursts "A" ranges each holding three "B" ranges
# into a small ring (64 KiB, then the smallest, 16 KiB, where pushes must still be taken at all).
# In the capture no "B" may overlap another "B" (a pop closing the wrong range would nest one in
# the next), every "B" lies inside an "A", and 2 x ranges + ring_full == events produced.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_nest_burst

for kb in 64 16; do
	CUSCOPE_RING_KB=$kb cs_record "$T/cap$kb" app$kb -- "$PROGS/nvtx_nest_burst" 20000
	[ "$RC" = 0 ] || fail "record ($kb KiB rings) exited $RC: $(head -c 300 "$T/app$kb.err")"
	cs_stats "$T/cap$kb" "$T/stats$kb.json"
	"$CUSCOPE" export -o "$T/trace$kb.json" "$T/cap$kb" 2>"$T/export.err" || fail "export failed: $(head -c 300 "$T/export.err")"
	KB=$kb TRACE=$T/trace$kb.json py_check "$T/stats$kb.json" "$T/app$kb.out" <<'PY'
import os
kb = os.environ["KB"]
produced = app("produced")
lost = loss("ring_full")
a, b = row("A")["count"], row("B")["count"]
if not a or not b:
    fail("%s KiB rings: %d A and %d B ranges recorded, want some of each" % (kb, a, b))
if not lost:
    fail("%s KiB rings: no push was refused; the burst did not fill the ring" % kb)
if not (produced <= 2 * (a + b) + lost <= produced + 64):
    fail("%s KiB rings: %d events produced, %d ranges recorded and %d lost" % (kb, produced, a + b, lost))
spans = {"A": [], "B": []}
for line in open(os.environ["TRACE"], encoding="utf-8"):
    if line.startswith('{"ph":"X"') and '"cat":"nvtx"' in line:
        ev = json.loads(line.rstrip().rstrip(","))
        if ev["name"] in spans:
            spans[ev["name"]].append((ev["ts"], ev["ts"] + ev["dur"]))
if (len(spans["A"]), len(spans["B"])) != (a, b):
    fail("%s KiB: export has %d A and %d B, stats %d and %d" % (kb, len(spans["A"]), len(spans["B"]), a, b))
for name in ("A", "B"):
    s = sorted(spans[name])
    for (s0, e0), (s1, e1) in zip(s, s[1:]):
        if s1 < e0:
            fail("%s KiB: %s [%.3f, %.3f] overlaps %s [%.3f, %.3f]: a pop closed the wrong range" % (kb, name, s0, e0, name, s1, e1))
outer = sorted(spans["A"])
i = 0
for s0, e0 in sorted(spans["B"]):
    while i < len(outer) and outer[i][1] < s0:
        i += 1
    if i == len(outer) or not (outer[i][0] <= s0 and e0 <= outer[i][1]):
        fail("%s KiB: B [%.3f, %.3f] lies in no A: its A was dropped but it was kept" % (kb, s0, e0))
no_losses("ring_full")
PY
done
exit 0

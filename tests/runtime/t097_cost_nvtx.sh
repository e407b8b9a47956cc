#!/usr/bin/env bash
# A real recording prices its NVTX calls: `stats` has an nvtx row in the cost section whose events
# count the pushes and pops recorded (they travel as compact records that bypass the sender's
# general event path; they were left out once).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_burst_late

"$CUSCOPE" record -o "$T/n.cap" -- "$PROGS/nvtx_burst_late" 200000 300 >"$T/out" 2>"$T/err" ||
	fail "record failed: $(head -c 300 "$T/err")"
csv=$("$CUSCOPE" stats --report=cost --format=csv "$T/n.cap") || fail "stats failed"
events=$(echo "$csv" | awk -F, '$2 == "nvtx" { print $5 }' | head -n 1)
[ -n "$events" ] || fail "no nvtx row in the cost section: $(echo "$csv" | tr '\n' '|')"
pairs=$("$CUSCOPE" stats --report=nvtx --format=csv "$T/n.cap" | awk -F, '$1 != "name" && $1 !~ /^#/ { n += $4 } END { print n + 0 }')
[ "$pairs" -gt 0 ] || fail "no NVTX ranges recorded"
# every push and pop is one event (marks and categories, if any, add to it)
[ "$events" -ge $((2 * pairs)) ] || fail "cost counts $events NVTX events for $pairs ranges"
exit 0

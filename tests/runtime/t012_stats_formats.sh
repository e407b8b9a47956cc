#!/usr/bin/env bash
# stats formats: table and CSV print every section under a heading with the same rows as JSON;
# a program with no NVTX at all still gives every JSON section (nvtx empty, one process).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_domains

cs_record "$T/cap" app -- "$PROGS/nvtx_domains"
[ "$RC" = 0 ] || fail "record exited $RC"
cs_stats "$T/cap" "$T/stats.json"
for fmt in table csv; do
	rc=0
	timeout 60 "$CUSCOPE" stats --format=$fmt "$T/cap" >"$T/$fmt.out" 2>"$T/$fmt.err" || rc=$?
	[ "$rc" = 0 ] || fail "stats --format=$fmt exited $rc: $(head -c 200 "$T/$fmt.err")"
done
rc=0
timeout 60 "$CUSCOPE" stats "$T/cap" >"$T/default.out" 2>/dev/null || rc=$?
[ "$rc" = 0 ] || fail "stats (default format) exited $rc"
cmp -s "$T/default.out" "$T/table.out" || fail "stats without --format differs from --format=table"

py_check "$T/stats.json" "$T/table.out" "$T/csv.out" <<'PY'
import csv, io
table = OUT
csv_text = open(sys.argv[3], encoding="utf-8").read()
for sec in ("nvtx", "threads", "processes", "losses"):
    for text, fmt in ((table, "table"), (csv_text, "csv")):
        if not any(sec in l.lower() and len(l.split()) <= 4 for l in text.splitlines()):
            fail("%s output has no heading for section %r" % (fmt, sec))
for r in J["nvtx"]:
    if r["name"] not in table:
        fail("table output lacks nvtx row %r" % r["name"])
cells = [c for rec in csv.reader(io.StringIO(csv_text)) for c in rec]
for r in J["nvtx"]:
    if r["name"] not in cells:
        fail("csv output has no cell %r (quoting?)" % r["name"])
for r in J["losses"]:
    if r["cause"] not in cells:
        fail("csv output has no losses cell %r" % r["cause"])
for t in J["threads"]:
    if str(t["tid"]) not in cells:
        fail("csv output lacks thread tid %d" % t["tid"])
# counts in CSV match JSON for the handoff row
rows = [rec for rec in csv.reader(io.StringIO(csv_text)) if "handoff" in rec]
if not rows or "6" not in rows[0]:
    fail("csv handoff row %r lacks its count 6" % rows[:1])
PY

cs_record "$T/plain.cap" plain -- /bin/echo plain-output
[ "$RC" = 0 ] || fail "record of /bin/echo exited $RC"
[ "$(cat "$T/plain.out")" = plain-output ] || fail "app stdout not passed through exactly: $(head -c 100 "$T/plain.out")"
cs_stats "$T/plain.cap" "$T/plain.json"
py_check "$T/plain.json" <<'PY'
if J["nvtx"] != []:
    fail("nvtx rows for a program without NVTX: %r" % J["nvtx"][:3])
if len(J["processes"]) != 1 or J["processes"][0]["cmdline"] != "/bin/echo plain-output":
    fail("processes %r, want one with cmdline '/bin/echo plain-output'" % J["processes"])
no_losses()
PY
exit 0

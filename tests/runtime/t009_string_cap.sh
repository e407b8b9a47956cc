#!/usr/bin/env bash
# 200000 distinct range names against the collector's bounded string table (65536 strings, and
# a byte bound): the capture reports a non-zero string_table_full loss, every range is either
# named or counted as lost, at most 65536 distinct names arrive (and with short names, close to
# 65536), and the app's peak memory grows by less than an unbounded table would need (200000
# names x ~620 bytes = ~124 MB) compared with the same number of ranges under one name.
# The program paces itself (~200k events/s) so ring overflow does not mix in.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog many_names

cs_record -t 120 "$T/same.cap" same -- "$PROGS/many_names" -200000 600
[ "$RC" = 0 ] || fail "record of many_names (one name) exited $RC: $(head -c 300 "$T/same.err")"
cs_record -t 120 "$T/cap" app -- "$PROGS/many_names" 200000 600
[ "$RC" = 0 ] || fail "record of many_names exited $RC: $(head -c 300 "$T/app.err")"
cs_record -t 120 "$T/short.cap" short -- "$PROGS/many_names" 200000 0
[ "$RC" = 0 ] || fail "record of many_names (short names) exited $RC: $(head -c 300 "$T/short.err")"
cs_stats "$T/same.cap" "$T/same.json"
cs_stats "$T/cap" "$T/stats.json"
cs_stats "$T/short.cap" "$T/short.json"

py_check "$T/same.json" "$T/same.out" <<'PY'
rs = [r for r in J["nvtx"] if r["name"].startswith("seq = ")]
if len(rs) != 1 or rs[0]["count"] != 200000:
    fail("one-name run: want one row with count 200000, got %r" % [(r["name"][:12], r["count"]) for r in rs][:3])
no_losses()
PY
py_check "$T/stats.json" "$T/app.out" "$T/same.out" <<'PY'
if loss("string_table_full") <= 0:
    fail("string_table_full loss is %d after 200000 distinct names, want > 0" % loss("string_table_full"))
seq = [r for r in J["nvtx"] if r["name"].startswith("seq = ")]
if len(seq) + loss("string_table_full") < 200000:
    fail("%d named ranges + %d string_table_full losses < 200000 ranges" % (len(seq), loss("string_table_full")))
no_losses("string_table_full")
if not 1000 <= len(seq) <= 65536:
    fail("%d distinct 'seq = N' rows, want between 1000 and 65536" % len(seq))
for r in seq:
    if r["count"] != 1:
        fail("row %r has count %d, want 1 (names are distinct)" % (r["name"][:20], r["count"]))
    if len(r["name"]) < 600:
        fail("name cut to %d bytes: %r" % (len(r["name"]), r["name"][:20]))
base = [int(l.split()[1]) for l in open(sys.argv[3]) if l.startswith("maxrss_kb ")][0]
grown = app("maxrss_kb") - base
if grown > 80 * 1024:
    fail("app peak RSS grew by %d MB with distinct names: the string table is not bounded" % (grown // 1024))
PY
py_check "$T/short.json" "$T/short.out" <<'PY'
seq = [r for r in J["nvtx"] if r["name"].startswith("seq = ")]
if loss("string_table_full") <= 0:
    fail("short names: string_table_full loss is 0 after 200000 distinct names")
if not 65536 - 200 <= len(seq) <= 65536:
    fail("short names: %d distinct names arrived, want just under the 65536-string cap" % len(seq))
if len(seq) + loss("string_table_full") < 200000:
    fail("short names: %d named + %d lost < 200000" % (len(seq), loss("string_table_full")))
PY
exit 0

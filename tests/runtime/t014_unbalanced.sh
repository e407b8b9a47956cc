#!/usr/bin/env bash
# Unbalanced NVTX: pops/ends without a match are counted as unmatched_pop (5), a pop in an empty
# domain does not pop the default domain's range, balanced ranges stay exact, and ranges still
# open at exit are not reported as completed ones.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_unbalanced

cs_record "$T/cap" app -- "$PROGS/nvtx_unbalanced"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
for name, style in (("left.open", "PushPop"), ("left.async", "StartEnd")):
    for r in nvtx_rows(name, "", style):
        if r["count"] != 0:
            fail("range %r still open at exit is reported as %d completed" % (name, r["count"]))
J["nvtx"] = [r for r in J["nvtx"] if r["name"] not in ("left.open", "left.async")]
expect_nvtx([
    ("d.keep", "", "PushPop", 1),
    ("ok", "", "PushPop", 4),
    ("ok.async", "", "StartEnd", 1),
])
if loss("unmatched_pop") != 5:
    fail("unmatched_pop = %d, want 5 (3 pops, 1 empty-domain pop, 1 unknown end)" % loss("unmatched_pop"))
no_losses("unmatched_pop")
PY
exit 0

#!/usr/bin/env bash
# Domains, registered strings, domain marks, a Unicode domain message and start/end ranges ended
# on another thread: rows checked exactly against tests/progs/nvtx_domains.c.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_domains

cs_record "$T/cap" app -- "$PROGS/nvtx_domains"
[ "$RC" = 0 ] || fail "cuscope record exited $RC, want 0: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([
    ("a.ascii", "dom.A", "PushPop", 3),
    ("a.registered", "dom.A", "PushPop", 4),
    ("a.registered", "dom.A", "Mark", 1),
    ("a.mark", "dom.A", "Mark", 2),
    ("a.outer", "dom.A", "PushPop", 2),
    ("same-name", "dom.A", "PushPop", 1),
    ("b.ascii", "dom.B", "PushPop", 2),
    ("same-name", "dom.B", "PushPop", 2),
    ("dom-wide-\u00e9", "dom.B", "PushPop", 1),
    ("b.async", "dom.B", "StartEnd", 2),
    ("same-name", "", "PushPop", 3),
    ("d.inner", "", "PushPop", 2),
    ("handoff", "", "StartEnd", 6),
])
min_at_least("handoff", 10**6, "", "StartEnd")
min_at_least("b.async", 10**6, "dom.B", "StartEnd")
min_at_least("a.outer", 10**6, "dom.A")
no_losses()
pid = app("pid")
process(pid)
if thread(app_tid("ender"))["name"] != "ender":
    fail("ender thread named %r" % thread(app_tid("ender"))["name"])
PY
exit 0

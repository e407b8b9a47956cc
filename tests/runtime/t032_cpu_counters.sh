#!/usr/bin/env bash
# Per-thread counters, stats "counters" section: every thread that ran long enough has a
# task-clock value; the ~1 s CPU spinner's task-clock is most of a second.
# Needs the stats_cpu sections wired into stats.c: skips while stats JSON has no "counters" key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cpu_workload

cs_record "$T/cap" app -- "$PROGS/cpu_workload" hot
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
grep -q '"counters"' "$T/stats.json" || skip "stats JSON has no \"counters\" section (stats_cpu not wired into stats.c yet)"

py_check "$T/stats.json" "$T/app.out" <<'PY'
rows = J["counters"]
for r in rows:
    for k in ("pid", "tid", "thread", "event", "value"):
        if k not in r:
            fail("counters row lacks %r: %r" % (k, r))
    if r["value"] < 0:
        fail("negative counter: %r" % r)
seen = [(r["pid"], r["tid"], r["event"]) for r in rows]
if len(set(seen)) != len(seen):
    fail("a (thread, event) appears twice in counters")
def task_clock(thread):
    tid = app_tid(thread)
    rs = [r for r in rows if r["tid"] == tid and r["event"] == "task-clock"]
    if len(rs) != 1:
        fail("want one task-clock row for %s (tid %d), got %r; events there: %r" % (
            thread, tid, rs, [r["event"] for r in rows if r["tid"] == tid]))
    return rs[0]
hot = task_clock("hotspin")
if hot["value"] < 300 * 10**6:
    fail("hotspin task-clock %d ns, want most of its ~1 s of CPU" % hot["value"])
if hot["thread"] != "hotspin":
    fail("counters thread name %r, want hotspin" % hot["thread"])
if task_clock("main")["value"] <= 0:
    fail("main thread task-clock is 0")
PY
exit 0

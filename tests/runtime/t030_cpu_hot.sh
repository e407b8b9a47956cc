#!/usr/bin/env bash
# CPU sampling, stats "hot" section: a thread spinning ~1 s of CPU in the noinline function
# cuscope_hot_spin has that function as the leaf of most of its samples (share > 0.5), rows are
# per (thread, leaf function), by thread then samples descending, at most 50 per thread.
# Needs the stats_cpu sections wired into stats.c: skips while stats JSON has no "hot" key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cpu_workload

cs_record "$T/cap" app -- "$PROGS/cpu_workload" hot
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^done hot" "$T/app.out" || fail "app did not finish: $(head -c 200 "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"
grep -q '"hot"' "$T/stats.json" || skip "stats JSON has no \"hot\" section (stats_cpu not wired into stats.c yet)"

py_check "$T/stats.json" "$T/app.out" <<'PY'
COLS = ("pid", "tid", "thread", "function", "module", "samples", "share")
hot = J["hot"]
for r in hot:
    for k in COLS:
        if k not in r:
            fail("hot row lacks %r: %r" % (k, r))
    r["share"] = float(r["share"])  # a number, or text with 4 decimals
    if not (0 < r["share"] <= 1) or r["samples"] <= 0:
        fail("hot row share/samples out of range: %r" % r)
tid = app_tid("hotspin")
mine = [r for r in hot if r["tid"] == tid]
if not mine:
    fail("no hot rows for the hotspin thread %d; threads with rows: %r" % (tid, sorted({r["tid"] for r in hot})))
top = mine[0]
if top["function"] != "cuscope_hot_spin" or top["module"] != "cpu_workload":
    fail("hotspin's top leaf is %r in %r, want cuscope_hot_spin in cpu_workload; rows %r" % (top["function"], top["module"], mine[:5]))
if top["share"] <= 0.5:
    fail("cuscope_hot_spin share %.4f <= 0.5 (%d samples)" % (top["share"], top["samples"]))
if top["samples"] < 20:
    fail("only %d samples of ~1 s of CPU" % top["samples"])
if top["thread"] != "hotspin":
    fail("thread name %r, want hotspin" % top["thread"])
# order: threads grouped (pid, tid ascending), samples descending inside; <= 50 rows; shares sum <= 1
keys = [(r["pid"], r["tid"]) for r in hot]
groups = []
for k in keys:
    if not groups or groups[-1] != k:
        if k in groups:
            fail("rows of thread %r are not contiguous" % (k,))
        groups.append(k)
for k in groups:
    rs = [r for r in hot if (r["pid"], r["tid"]) == k]
    if len(rs) > 50:
        fail("thread %r has %d hot rows, want <= 50" % (k, len(rs)))
    s = [r["samples"] for r in rs]
    if s != sorted(s, reverse=True):
        fail("thread %r rows not by samples descending: %r" % (k, s))
    if sum(r["share"] for r in rs) > 1.0 + 0.0005 * len(rs):
        fail("thread %r shares sum over 1" % (k,))
    fn = [(r["function"], r["module"]) for r in rs]
    if len(set(fn)) != len(fn):
        fail("thread %r lists a function twice" % (k,))
if [g[1] for g in groups if g[0] == groups[0][0]] != sorted(g[1] for g in groups if g[0] == groups[0][0]):
    fail("threads not by tid: %r" % groups)
if not any(r["cause"] == "samples_skipped" for r in J["losses"]):
    fail("losses lack the samples_skipped cause")
PY
exit 0

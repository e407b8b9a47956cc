#!/usr/bin/env bash
# Blocking calls, stats "osrt" section: known counts and durations per thread from cpu_workload:
# nanosleep 20 ms x 5 (sleeper), read() blocked ~30 ms x 3 by a writer (reader),
# pthread_mutex_lock contended ~20 ms x 4 (waiter); percentiles are nearest-rank and ordered.
# Needs the stats_cpu sections wired into stats.c: skips while stats JSON has no "osrt" key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cpu_workload

cs_record "$T/cap" app -- "$PROGS/cpu_workload" osrt
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^done osrt" "$T/app.out" || fail "app did not finish: $(head -c 200 "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"
grep -q '"osrt"' "$T/stats.json" || skip "stats JSON has no \"osrt\" section (stats_cpu not wired into stats.c yet)"

py_check "$T/stats.json" "$T/app.out" <<'PY'
MS = 1000000
osrt = J["osrt"]
for r in osrt:
    for k in ("pid", "tid", "thread", "call", "count", "total_ns", "p50_ns", "p99_ns", "max_ns"):
        if k not in r:
            fail("osrt row lacks %r: %r" % (k, r))
    if not (0 <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]) or r["count"] < 1:
        fail("osrt row: p50<=p99<=max does not hold: %r" % r)
    if not (r["max_ns"] <= r["total_ns"] <= r["count"] * r["max_ns"]):
        fail("osrt row: total_ns outside [max, count*max]: %r" % r)

def call(thread, name):
    tid = app_tid(thread)
    rs = [r for r in osrt if r["tid"] == tid and r["call"] == name]
    if len(rs) != 1:
        fail("want one osrt row %s on %s (tid %d), got %d; rows there: %r" % (
            name, thread, tid, len(rs), [(r["call"], r["count"]) for r in osrt if r["tid"] == tid]))
    return rs[0]

def expect(thread, name, count, at_least_ms):
    r = call(thread, name)
    if r["count"] != count:
        fail("%s on %s: count %d, want %d" % (name, thread, r["count"], count))
    if r["p50_ns"] < at_least_ms * MS:
        fail("%s on %s: p50 %.1f ms, want >= %d ms" % (name, thread, r["p50_ns"] / MS, at_least_ms))
    if r["total_ns"] < count * at_least_ms * MS:
        fail("%s on %s: total %.1f ms, want >= %d ms" % (name, thread, r["total_ns"] / MS, count * at_least_ms))
    if r["max_ns"] > 5000 * MS:
        fail("%s on %s: max %.1f ms is absurd" % (name, thread, r["max_ns"] / MS))
    if r["thread"] != thread:
        fail("%s: thread name %r, want %r" % (name, r["thread"], thread))

expect("sleeper", "nanosleep", 5, 19)
expect("reader", "read", 3, 20)
expect("waiter", "pthread_mutex_lock", 4, 10)
# rows of a thread by total_ns descending
for tid in {r["tid"] for r in osrt}:
    t = [r["total_ns"] for r in osrt if r["tid"] == tid]
    if t != sorted(t, reverse=True):
        fail("osrt rows of tid %d not by total_ns descending: %r" % (tid, t))
PY
exit 0

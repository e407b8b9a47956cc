#!/usr/bin/env bash
# 32 concurrent threads and then 200 short-lived ones: every range arrives, every thread is
# listed with its name, and nothing is lost (per-thread buffers of dead threads are reused).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog many_threads

cs_record "$T/cap" app -- "$PROGS/many_threads" 32 200
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([("mt.range", "", "PushPop", 32 * 50), ("st.range", "", "PushPop", 200 * 10)])
no_losses()
names = {t["name"] for t in J["threads"]}
missing = [n for n in ["mt-%d" % i for i in range(32)] + ["st-%d" % i for i in range(200)] if n not in names]
if missing:
    fail("%d threads missing from threads, e.g. %r" % (len(missing), missing[:5]))
if len(J["threads"]) != 233:
    fail("%d threads listed, want 233 (main + 232)" % len(J["threads"]))
PY
exit 0

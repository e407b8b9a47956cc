#!/usr/bin/env bash
# NVTX calls from a signal handler that interrupts an NVTX call of the same thread: the handler
# must not write into the ring while the interrupted call is between reserving and publishing a
# record (the old collector then overwrote records, lost hundreds of thousands of ranges without
# counting them and its final counts). Its ranges are refused and counted instead: every range
# made is in the capture or counted lost, and the process's final counts arrive.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_signal_nvtx

cs_record "$T/cap" app -- "$PROGS/nvtx_signal_nvtx" 1000
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "ended without final counts" "$T/app.err" && fail "final counts missing: $(grep -m1 final "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
made_main, made_sig = app("main"), app("sig")
got_main, got_sig = row("main")["count"], row("sig")["count"]
lost = loss("ring_full")
if made_sig < 100:
    fail("only %d signals handled: the test did not interrupt anything" % made_sig)
made = 2 * (made_main + made_sig)
got = 2 * (got_main + got_sig)
if not (made <= got + lost <= made + 64):
    fail("%d events made (%d main, %d sig pairs); capture has %d main and %d sig pairs and counts %d lost"
         % (made, made_main, made_sig, got_main, got_sig, lost))
if got_main > made_main or got_sig > made_sig:
    fail("more ranges than made: %d/%d main, %d/%d sig" % (got_main, made_main, got_sig, made_sig))
no_losses("ring_full")
PY
exit 0

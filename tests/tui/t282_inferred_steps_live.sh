#!/usr/bin/env bash
# Inferred steps while live: `cuscope -- fake_train_loop 250 15000` (250 iterations of a small model's
# kernels through the stand-in libcupti after a 15 ms pause each, no NVTX, about 4 s). While it runs the
# "step (inferred)" row appears under the process header and the NVTX panel's "step (inferred)" entry
# counts the finished steps, growing with the run (the live computation reads the newest kernels at most
# once a second); once the program exited it holds 250 +- 2 (the newest step the live view leaves out).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/../runtime/fake_cupti.sh"
need_fake_cupti
need_prog fake_train_loop

steps_n() { tm_screen | sed -nE 's/^ step \(inferred\) +([0-9]+) .*/\1/p' | head -n 1; }
FAKE_CUPTI_FIRST_CALL_MS=150 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI tm_run_cuscope -- "$PROGS/fake_train_loop" 250 15000
tm_wait 'LIVE' 20 "live UI"
tm_wait '^ step \(inferred\) +[│|]' 15 "the inferred steps row while live"
tm_wait '^ step \(inferred\) +[0-9]+ ' 10 "the NVTX panel's inferred entry while live"
first=$(steps_n)
tm_screen_has 'EXITED' && fail "the program ended before the live check (slow machine?)"
tm_wait 'EXITED \(code 0\)' 30 "status after the program exits"
sleep 2.5 # the last computation (at most once a second, and 5% of the time)
last=$(steps_n)
{ [ -n "$first" ] && [ -n "$last" ] && [ "$first" -lt "$last" ]; } ||
	fail "the inferred step count did not grow while live: $first then $last"
{ [ "$last" -ge 248 ] && [ "$last" -le 251 ]; } || fail "after the run: $last inferred steps, want 250 +- 2"
tm_keys q
tm_wait_exit 0 10
exit 0

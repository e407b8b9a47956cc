#!/usr/bin/env bash
# Inferred steps in the viewer: `cuscope view` of a capture of tests/progs/fake_train_loop (40 iterations of
# a small model's kernels through the stand-in libcupti, no NVTX, as in t280) shows a "step (inferred)" row
# under the process header holding "[step N.Nms" boxes, and the NVTX panel an entry "step (inferred)" with
# the finished steps (40 +- 1, less the newest one the viewer leaves out as maybe unfinished) and their
# histogram; Tab + Enter on it selects that row and says "slowest step (inferred): D" with the window on it.
# The same under the ASan/UBSan CLI reports nothing (a memmove from the empty steps array once did).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/../runtime/fake_cupti.sh"
need_fake_cupti
need_prog fake_train_loop

FAKE_CUPTI_FIRST_CALL_MS=150 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI \
	cs_record "$T/cap" app -- "$PROGS/fake_train_loop" 40
[ "$RC" = 0 ] || fail "cuscope record exited $RC: $(tail -c 300 "$T/app.err")"
oneline() { tr -s ' ' | tr '\n' '|'; }

tm_run_cuscope view "$T/cap"
tm_wait 'step \(inferred\)' 15 "view: the inferred steps row"
tm_screen >"$T/screen.txt"
# The panel: "step (inferred)" with n = the finished steps.
n=$(sed -nE 's/^ step \(inferred\) +([0-9]+) .*/\1/p' "$T/screen.txt" | head -n 1)
{ [ -n "$n" ] && [ "$n" -ge 38 ] && [ "$n" -le 40 ]; } ||
	fail "NVTX panel: want 'step (inferred)' with 38..40 steps, got '$n': $(grep -E 'NVTX|inferred' "$T/screen.txt" | oneline)"

# Tab + Enter on it: the window on the slowest step, the steps row selected, its boxes wide.
tm_keys Tab
tm_wait 'NVTX ranges \(Enter: slowest' 5 "Tab focuses the panel"
tm_keys Enter
tm_wait 'slowest step \(inferred\): [0-9.]+ms' 5 "Enter on the inferred entry"
tm_screen >"$T/jump.txt"
grep -qE '^ step \(inferred\) *[|│].*\[step [0-9.]+(ms|us)' "$T/jump.txt" ||
	fail "no step boxes on the 'step (inferred)' row: $(grep 'step (inferred)' "$T/jump.txt" | head -n 1 | oneline)"
tm_keys q
tm_wait_exit 0 10

# The same under the sanitizers (the ASan/UBSan CLI): nothing reported, exit 0.
[ -x "$CUSCOPE_ASAN" ] || fail "$CUSCOPE_ASAN not built (make BUILD=build-asan ASAN=1 build-asan/bin/cuscope)"
tm kill-server 2>/dev/null
TMUX_SOCK=$TMUX_SOCK-asan # a server of its own: the first one may still be going away
rm -f "$T/exit"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
tm_start 120 40 "cd $T && $CUSCOPE_ASAN view $T/cap 2>$T/asan.err; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'step \(inferred\)' 30 "ASan view: the inferred steps row"
tm_keys Tab
tm_wait 'NVTX ranges \(Enter: slowest' 10 "ASan view: Tab"
tm_keys Enter
tm_wait 'slowest step \(inferred\)' 10 "ASan view: Enter on the inferred entry"
tm_keys q
tm_wait_exit 0 20
no_sanitizer_report "$T/asan.err"
exit 0

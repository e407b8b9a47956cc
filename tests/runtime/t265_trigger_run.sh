#!/usr/bin/env bash
# `cuscope run --trigger`: a headless cuscope stays attached (the collector evaluates nothing),
# a hang fires within 2 ms of its planted crossing while the job still runs, its window lands in
# --dump-dir and reads with `cuscope stats`; SIGTERM to run (a job's cancellation) reaches the
# program, whose exit status (143) run returns; no session directory is left behind.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall
export CUSCOPE
mkdir -m 700 "$T/sess"
export CUSCOPE_SESSION_ROOT=$T/sess

"$CUSCOPE" run --trigger 'range:hang>300ms' --pre 2s --post 200ms --dump-dir "$T/dumps" \
	-- "$PROGS/trigger_stall" hang 300 >"$T/app.out" 2>"$T/err" </dev/null &
runner=$!
BG_PIDS+=("$runner")
dump_done() { find "$T/dumps" -name '*.cuscope' 2>/dev/null | grep -q .; }
wait_until 20 dump_done || fail "no dump in --dump-dir 20 s after start: $(tail -c 300 "$T/err")"
kill -0 "$runner" 2>/dev/null || fail "run ended before it was stopped: $(tail -c 300 "$T/err")"
kill -TERM "$runner"
bg_wait "$runner" 30
[ "$RC" = 143 ] || fail "run returned $RC after SIGTERM, want the program's 143: $(tail -c 300 "$T/err")"
dump=$(find "$T/dumps" -name '*.cuscope' | head -n 1)
cs_stats "$dump" "$T/dump.json"
"$PYTHON" "$(dirname "$0")/trigger_check.py" "$T/dump.json" "$T/app.out" 'range:hang>300ms' --exact \
	--dumps "$T/dumps" || exit 1
pid=$(sed -n 's/^pid //p' "$T/app.out")
kill -0 "$pid" 2>/dev/null && fail "the program still runs after run returned"
left=$(find "$T/sess" -mindepth 1 -maxdepth 2 2>/dev/null)
[ -z "$left" ] || fail "run left its session directory behind: $left"
exit 0

#!/usr/bin/env bash
# `cuscope record --duration 2` on an app that would run 60 s: the capture is written after about
# 2 s, the app is ended, cuscope returns, and the capture holds about 2 s of steps.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

start=$(date +%s)
"$CUSCOPE" record -o "$T/cap" --duration 2 -- "$PROGS/long_running" -t 60 -o "$T/done" \
	>"$T/app.out" 2>"$T/app.err" </dev/null &
CS_PID=$!
BG_PIDS+=("$CS_PID")
bg_wait "$CS_PID" 30
[ "$RC" = 124 ] && fail "record --duration 2 still running after 30 s"
elapsed=$(($(date +%s) - start))
[ "$elapsed" -le 10 ] || fail "record --duration 2 took ${elapsed}s"
[ -s "$T/cap" ] || fail "no capture after --duration"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
n = row("step")["count"]
# about 100 steps per second (10 ms each); 2 s -> ~200
if not 50 <= n <= 600:
    fail("capture of --duration 2 holds %d steps, want about 200" % n)
process(app("pid"))
PY
app_pid=$(sed -n 's/^pid //p' "$T/app.out")
if ! wait_until 10 pid_gone "$app_pid"; then
	kill -KILL "$app_pid" 2>/dev/null
	fail "app still running 10 s after record --duration returned (exit code $RC is not the app's)"
fi
exit 0

#!/usr/bin/env bash
# A recorded program that ignores the stop: SIGTERM to `cuscope record` is forwarded once, then,
# 5 s later (not sooner), its process group gets SIGKILL with one warning line; the capture is
# finalized and record exits 128+9, the program's own end. A second SIGTERM meanwhile changes
# nothing (no second stop, no earlier kill).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

# The program and its child ignore SIGTERM and SIGINT (ignored dispositions survive exec).
# shellcheck disable=SC2016 # $0 is the program's own (the mark file)
"$CUSCOPE" record -o "$T/cap" -- sh -c 'trap "" TERM INT; echo started >"$0"; sleep 60; echo done >"$0"' \
	"$T/mark" >"$T/out" 2>"$T/err" </dev/null &
CS_PID=$!
BG_PIDS+=("$CS_PID")
wait_until 20 file_has "$T/mark" '^started' || fail "the program did not start under cuscope record"
sleep 0.5
t0=$(date +%s.%N)
kill -TERM "$CS_PID"
sleep 1
kill -TERM "$CS_PID" 2>/dev/null
bg_wait "$CS_PID" 30
t1=$(date +%s.%N)
[ "$RC" = 124 ] && fail "cuscope record still running 30 s after SIGTERM"
[ "$RC" = 137 ] || fail "record exited $RC, want 137 (the program killed by SIGKILL): $(head -c 300 "$T/err")"
grep -q 'done' "$T/mark" && fail "the program finished its sleep: it was never killed"
awk -v a="$t0" -v b="$t1" 'BEGIN {exit !(b - a >= 4.9 && b - a < 15)}' ||
	fail "record ended $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}') s after SIGTERM, want 5 s (+ drain)"
n=$(grep -c 'ignored the stop signal; killing it' "$T/err")
[ "$n" = 1 ] || fail "$n 'killing it' warnings, want 1: $(tr '\n' '|' <"$T/err" | head -c 300)"
"$CUSCOPE" info "$T/cap" >"$T/info" 2>&1 || fail "the capture does not read: $(head -c 300 "$T/info")"
grep -q 'complete' "$T/info" || fail "the capture is not complete: $(grep chunks "$T/info")"
exit 0

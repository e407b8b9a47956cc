#!/usr/bin/env bash
# Losses are never silent. (1) The recording cuscope is stopped (SIGSTOP) while a program bursts
# marks and exits: once it resumes, every mark is in the capture or counted lost (produced ==
# captured + lost, up to the few thread records that share the loss counters), and the capture
# has the process's final counts. (2) A SIGKILLed target is recorded as killed by signal 9, its
# missing final counts are said by info and stats, record warns once and exits 137.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog burst exit_code

N=1500000
"$CUSCOPE" record --sample-hz 0 -o "$T/cap" -- "$PROGS/burst" $N "$T/go" >"$T/app.out" 2>"$T/app.err" </dev/null &
rec=$!
BG_PIDS+=("$rec")
wait_until 20 grep -q '^pid ' "$T/app.out" || fail "burst did not start: $(cat "$T/app.err")"
app=$(awk '/^pid / {print $2; exit}' "$T/app.out")
sleep 0.5 # the viewer is connected and idle
kill -STOP "$rec"
touch "$T/go"
# Its parent is stopped, so the ended program stays a zombie until the record resumes.
ended() { pid_gone "$app" || [ "$(awk '{print $3}' "/proc/$app/stat" 2>/dev/null)" = Z ]; }
wait_until 30 ended || { kill -CONT "$rec"; fail "burst did not exit while the viewer was stopped"; }
kill -CONT "$rec"
bg_wait "$rec" 60
[ "$RC" = 0 ] || fail "record exited $RC, want 0: $(head -c 300 "$T/app.err")"
grep -q "ended without final counts" "$T/app.err" && fail "record says final counts missing: $(grep -m1 final "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
"$CUSCOPE" info "$T/cap" >"$T/info.txt" 2>&1 || fail "info failed: $(head -c 300 "$T/info.txt")"
grep -q "incomplete" "$T/info.txt" && fail "info says incomplete: $(grep incomplete "$T/info.txt")"
py_check "$T/stats.json" "$T/app.out" <<'PY'
produced = app("produced")
got = row("burst.mark", "", "Mark")["count"]
lost = sum(r["count"] for r in J["losses"])
if not (produced <= got + lost <= produced + 64):
    fail("produced %d marks; capture has %d and counts %d lost (%d unaccounted)" % (produced, got, lost, produced - got - lost))
PY

# A SIGKILLed target.
"$CUSCOPE" record -o "$T/kill" -- "$PROGS/exit_code" signal 9 >"$T/k.out" 2>"$T/k.err" </dev/null
rc=$?
[ "$rc" = 137 ] || fail "record of a SIGKILLed target exited $rc, want 137"
[ "$(grep -c 'ended without final counts' "$T/k.err")" = 1 ] || fail "record did not warn once about missing final counts: $(cat "$T/k.err")"
"$CUSCOPE" info "$T/kill" >"$T/kinfo.txt" 2>&1 || fail "info failed on the killed capture"
grep -q "incomplete: final counts missing; killed by signal 9" "$T/kinfo.txt" || fail "info does not say how the target ended: $(sed -n 5,8p "$T/kinfo.txt")"
"$CUSCOPE" stats --format=json "$T/kill" >"$T/kstats.json" 2>/dev/null || fail "stats failed on the killed capture"
grep -q "killed by signal 9" "$T/kstats.json" || fail "stats does not say the target was killed"
exit 0

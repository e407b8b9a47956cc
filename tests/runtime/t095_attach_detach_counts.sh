#!/usr/bin/env bash
# An attach that ends while the process runs on is a detach, not an end: the collector answers
# the viewer's detach request with its counts up to then, so
#  - an armed process (run --detached) recorded by attach --duration: no warning, `info` and
#    `stats` say "detached at +S.SSSs, still running" and nothing "incomplete"; a second attach
#    to the same process detaches just as cleanly (the first answer left nothing behind);
#  - a process attached by injection: the same, it runs on to its own end;
#  - a process that exits during the attach keeps its normal end ("complete", no detach);
#  - a process stopped during the attach cannot answer: the viewer gives up after its 1 s bound,
#    says the capture is incomplete in one warning, exits within a few seconds, and the process
#    finishes normally once continued.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target

# status PID JSON: the "status" of PID in a stats JSON's processes section.
status_of()
{
	"$PYTHON" - "$2" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["pid"] == int(sys.argv[2])]
print(rows[0]["status"] if rows else "no such process")
PY
}

# detached_ok NAME CAP PID: the attach warned of no missing counts, info and stats say detached.
detached_ok()
{
	local name=$1 cap=$2 pid=$3 st
	grep -qE 'final counts|incomplete|ended' "$T/$name.err" && fail "$name: the attach printed: $(tr '\n' '|' <"$T/$name.err")"
	"$CUSCOPE" info "$cap" >"$T/$name.info" 2>&1 || fail "$name: info failed: $(cat "$T/$name.info")"
	grep -q 'incomplete' "$T/$name.info" && fail "$name: info says incomplete: $(grep -E 'incomplete|abrupt' "$T/$name.info")"
	grep -qE '^    detached at \+[0-9]+\.[0-9]{3}s, still running$' "$T/$name.info" ||
		fail "$name: info does not show the detach: $(sed -n '/^processes/,/^losses/p' "$T/$name.info" | tr '\n' '|')"
	cs_stats "$cap" "$T/$name.json"
	st=$(status_of "$pid" "$T/$name.json")
	case $st in
	"detached at +"*", still running") ;;
	*) fail "$name: stats status of pid $pid is '$st', want detached" ;;
	esac
}

# --- the report's reproduction: an armed process, attach --record --duration ---------------------
export CUSCOPE_SESSION_ROOT=$T/sessions
mkdir -m 0700 "$T/sessions"
"$CUSCOPE" run --detached -- "$PYTHON" -c 'import time
t = time.time()
while time.time() - t < 9: pass' >"$T/run.out" 2>&1 || fail "run --detached failed: $(cat "$T/run.out")"
armed=$(sed -n 's/^pid \([0-9]*\) armed.*/\1/p' "$T/run.out")
[ -n "$armed" ] || fail "run --detached printed no pid: $(cat "$T/run.out")"
BG_PIDS+=("$armed")
sleep 1
timeout 30 "$CUSCOPE" attach --record -o "$T/armed.cap" --duration 1 "$armed" >"$T/armed.out" 2>"$T/armed.err"
rc=$?
[ "$rc" = 0 ] || fail "attach to the armed process exited $rc: $(cat "$T/armed.err")"
kill -0 "$armed" 2>/dev/null || fail "the armed process did not run on after the detach"
detached_ok armed "$T/armed.cap" "$armed"
# Its collector keeps its flight recorder: a second viewer gets a stream that ends the same way.
sleep 0.5
timeout 30 "$CUSCOPE" attach --record -o "$T/armed2.cap" --duration 1 "$armed" >"$T/armed2.out" 2>"$T/armed2.err"
rc=$?
[ "$rc" = 0 ] || fail "the second attach to the armed process exited $rc: $(cat "$T/armed2.err")"
detached_ok armed2 "$T/armed2.cap" "$armed"
unset CUSCOPE_SESSION_ROOT

# --- a process attached by injection runs on to its own end ----------------------------------------
"$PROGS/attach_target" 5 >"$T/inj.app" 2>&1 &
inj=$!
BG_PIDS+=("$inj")
sleep 0.5
timeout 30 "$CUSCOPE" attach --record -o "$T/inj.cap" --duration 1 "$inj" >"$T/inj.out" 2>"$T/inj.err"
rc=$?
[ "$rc" = 0 ] || fail "attach by injection exited $rc: $(cat "$T/inj.err")"
kill -0 "$inj" 2>/dev/null || fail "the injected process did not run on after the detach"
detached_ok inj "$T/inj.cap" "$inj"
wait "$inj"
[ $? = 3 ] || fail "the injected process did not finish with its own code 3 after the detach"

# --- a process that exits during the attach keeps its end -------------------------------------------
"$PROGS/attach_target" 4 >"$T/end.app" 2>&1 &
end=$!
BG_PIDS+=("$end")
sleep 0.5
timeout 30 "$CUSCOPE" attach --record -o "$T/end.cap" --duration 20 "$end" >"$T/end.out" 2>"$T/end.err"
rc=$?
[ "$rc" = 0 ] || fail "attach to a process that exits exited $rc: $(cat "$T/end.err")"
grep -qE 'final counts|incomplete|ended' "$T/end.err" && fail "the attach to a process that exits printed: $(tr '\n' '|' <"$T/end.err")"
"$CUSCOPE" info "$T/end.cap" >"$T/end.info" 2>&1 || fail "info failed: $(cat "$T/end.info")"
grep -qE 'detached|incomplete' "$T/end.info" && fail "a process that exited is shown as: $(grep -E 'detached|incomplete' "$T/end.info")"
cs_stats "$T/end.cap" "$T/end.json"
st=$(status_of "$end" "$T/end.json")
[ "$st" = complete ] || fail "stats status of the process that exited is '$st', want complete"

# --- a process stopped during the attach cannot answer: bounded wait, said once --------------------
"$PROGS/attach_target" 9 >"$T/stop.app" 2>&1 &
stp=$!
BG_PIDS+=("$stp")
sleep 0.5
start=$(date +%s.%N)
timeout 30 "$CUSCOPE" attach --record -o "$T/stop.cap" --duration 3 "$stp" >"$T/stop.out" 2>"$T/stop.err" &
att=$!
BG_PIDS+=("$att")
sleep 1.5
kill -STOP "$stp"
bg_wait "$att" 30
took=$("$PYTHON" -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 1))' "$start")
kill -CONT "$stp"
[ "$RC" = 0 ] || fail "the attach to a stopped process exited $RC: $(cat "$T/stop.err")"
"$PYTHON" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 7 else 1)' "$took" ||
	fail "the attach to a process stopped during it took ${took}s (3 s duration + 1 s bound)"
n=$(grep -c 'incomplete' "$T/stop.err")
[ "$n" = 1 ] || fail "want one warning that the capture is incomplete, got: $(tr '\n' '|' <"$T/stop.err")"
"$CUSCOPE" info "$T/stop.cap" >"$T/stop.info" 2>&1 || fail "info failed: $(cat "$T/stop.info")"
grep -q 'incomplete: final counts missing' "$T/stop.info" || fail "info of the unanswered detach does not say incomplete"
wait "$stp"
[ $? = 3 ] || fail "the stopped process did not finish normally once continued"
exit 0

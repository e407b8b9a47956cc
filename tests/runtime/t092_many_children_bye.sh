#!/usr/bin/env bash
# Every stream is checked for its final counts, however many processes came before it and
# whoever gets its pid later:
#  - 4,300 short children, then one SIGKILLed: record warns about that one (its source number is
#    beyond 4096, where the check used to stop looking);
#  - a SIGKILLed child whose pid a new traced child gets again (root: ns_last_pid): record still
#    warns (only an exec, same pid and start time, continues a process in a later stream);
#  - an exec'd process is one process: no warning (the first image's stream has no BYE).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fork_many fork_exec

start=$(date +%s)
cs_record -t 120 "$T/many.cap" many -- "$PROGS/fork_many" 4300
echo "record of 4,300 children: $(($(date +%s) - start)) s" >&2
[ "$RC" = 0 ] || fail "record of fork_many exited $RC: $(head -c 300 "$T/many.err")"
killed=$(sed -n 's/^killed //p' "$T/many.out")
[ -n "$killed" ] || fail "fork_many did not say which child it killed"
"$CUSCOPE" info "$T/many.cap" >"$T/many.info" 2>&1 || fail "info failed"
n=$(grep -c '^  pid ' "$T/many.info")
[ "$n" -gt 4097 ] || fail "the capture holds $n processes: too few to reach beyond source 4096"
grep -q "ended without final counts" "$T/many.err" ||
	fail "record did not warn about the SIGKILLed child $killed (after $n processes)"
grep -q "1 process (pid $killed)" "$T/many.err" || fail "the warning does not name pid $killed alone: $(cat "$T/many.err")"

if [ "$(id -u)" = 0 ]; then
	cs_record "$T/reuse.cap" reuse -- "$PROGS/fork_many" -r
	[ "$RC" = 0 ] || fail "record of fork_many -r exited $RC: $(head -c 300 "$T/reuse.err")"
	killed=$(sed -n 's/^killed //p' "$T/reuse.out")
	if grep -q '^reused ' "$T/reuse.out"; then
		grep -q "1 process (pid $killed)" "$T/reuse.err" ||
			fail "record hid the SIGKILLed child $killed behind the later process with its pid: $(cat "$T/reuse.err")"
	else
		echo "pid $killed could not be had again: reuse case not checked" >&2
	fi
fi

# An exec is the same process: its first image's stream ends without a BYE, and that is fine.
cs_record "$T/exec.cap" exec -- "$PROGS/fork_exec"
[ "$RC" = 0 ] || fail "record of fork_exec exited $RC: $(head -c 300 "$T/exec.err")"
grep -q "ended without final counts" "$T/exec.err" && fail "an exec counted as a process ending: $(cat "$T/exec.err")"
# The shell is surely connected before it execs (a second): its stream ends, the process goes on.
cs_record "$T/exec2.cap" exec2 -- sh -c 'sleep 1; exec sleep 0.3'
[ "$RC" = 0 ] || fail "record of sh -c 'sleep 1; exec sleep 0.3' exited $RC: $(head -c 300 "$T/exec2.err")"
grep -q "ended without final counts" "$T/exec2.err" && fail "an exec counted as a process ending: $(cat "$T/exec2.err")"
exit 0

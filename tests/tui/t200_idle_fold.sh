#!/usr/bin/env bash
# Idle threads fold: twelve threads blocked from the start (no event yet) show as one row "12 idle
# threads" below the busy thread; f and Enter on it list them and fold them again. While paused no
# lane moves: a thread that produces its first event stays in the fold (also when a fold toggle
# rebuilds the rows) and leaves it when the view resumes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog idle_threads

# Run from $T under a short name: the status line stays short whatever the checkout path.
cp "$PROGS/idle_threads" "$T/idle_threads" || fail "cannot copy idle_threads"
tm_run_cuscope -- ./idle_threads -n 12 -t 60
tm_wait 'busy-main [0-9]+' 20 "busy thread lane"
tm_wait '[0-9]+ idle threads' 10 "idle threads folded into one row"
sleep 0.5
# A thread whose start-up took a CPU sample has produced an event: it gets a lane of its own.
N=$(tm_screen | grep -oE '[0-9]+ idle threads' | head -n 1 | cut -d' ' -f1)
[ "$N" -ge 8 ] && [ "$N" -le 12 ] || fail "want 8..12 idle threads folded, got $N"

idle_lanes()
{
	tm_screen | grep -cE 'idle-[0-9]+ [0-9]+'
}
no_idle_lane()
{
	[ "$(idle_lanes)" = $((12 - N)) ]
}
all_idle_lanes()
{
	local i
	for i in $(seq 0 11); do
		tm_screen_has "idle-$i [0-9]+" || return 1
	done
}
no_idle_lane || fail "$N idle threads folded but $(idle_lanes) of 12 have lanes"
# The first thread still in the fold: SIGUSR1 number K+1 wakes it.
K=0
while tm_screen_has "idle-$K [0-9]+"; do K=$((K + 1)); done
APP=$(tm_screen | grep -oE 'idle_threads [0-9]+' | head -n 1 | cut -d' ' -f2)
[ -n "$APP" ] && kill -0 "$APP" 2>/dev/null || fail "no app pid on the process header"

# The fold row is the last row (no GPU lanes): Down past the end selects it.
for _ in $(seq 12); do tm_keys Down; done
tm_keys f
wait_until 5 all_idle_lanes || fail "f did not list the 12 idle threads: $(idle_lanes)"
tm_keys f
wait_until 5 no_idle_lane || fail "f did not fold the idle threads again"
tm_keys Enter
wait_until 5 all_idle_lanes || fail "Enter did not list the 12 idle threads"
tm_keys Enter
wait_until 5 no_idle_lane || fail "Enter did not fold the idle threads again"
# f on a listed idle thread folds the list too (the thread has no rows of its own to fold).
tm_keys f
wait_until 5 all_idle_lanes || fail "f did not list the 12 idle threads again"
tm_keys Down f
wait_until 5 no_idle_lane || fail "f on a listed idle thread did not fold the idle threads"

# Paused: idle-K's first event (SIGUSR1) moves nothing.
tm_keys ' '
tm_wait 'PAUSED' 5 "space pauses"
sleep 0.5
tm_screen | sed '1d;$d' >"$T/a"
for _ in $(seq 0 "$K"); do
	kill -USR1 "$APP"
	sleep 0.3 # one at a time: pending signals of a kind merge
done
sleep 1.5
tm_screen | sed '1d;$d' >"$T/b"
diff -q "$T/a" "$T/b" >/dev/null || fail "lanes moved while paused: $(diff "$T/a" "$T/b" | head -4 | tr '\n' '|')"
# A fold toggle while paused rebuilds the rows from what they were at the pause.
tm_keys f
wait_until 5 all_idle_lanes || fail "f while paused did not list the 12 idle threads"
tm_screen_has "$N idle threads" || fail "the woken thread left the fold while paused"
tm_keys f
wait_until 5 no_idle_lane || fail "f while paused did not fold the idle threads again"
tm_screen | sed '1d;$d' >"$T/c"
diff -q "$T/a" "$T/c" >/dev/null || fail "lanes moved while paused after a fold toggle: $(diff "$T/a" "$T/c" | head -4 | tr '\n' '|')"

tm_keys ' '
tm_wait "$((N - 1)) idle threads" 5 "resume: the woken thread leaves the fold"
woken_lane()
{
	[ "$(idle_lanes)" = $((13 - N)) ]
}
wait_until 5 woken_lane || fail "resume: the woken idle-$K has no lane"
tm_screen_has "idle-$K [0-9]+" || fail "resume: idle-$K has no lane"
tm_keys q s
tm_wait_exit 3 20
exit 0

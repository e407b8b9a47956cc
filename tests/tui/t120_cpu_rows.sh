#!/usr/bin/env bash
# cuscope view of a cpu_workload capture: the hot spinner's thread row carries a sample-density
# strip (block glyphs), blocking calls sit on "blocking" rows under their threads labelled with
# name and duration ("read 30.6ms", "nanosleep 20.1ms"), Enter on a read shows its call stack with
# the program's function (reader_main), Enter on a spinner cell shows cuscope_hot_spin on top.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cpu_workload

cs_record "$T/cap" app -- "$PROGS/cpu_workload"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^done all" "$T/app.out" || fail "app did not finish: $(head -c 200 "$T/app.out")"
TM_WIDTH=140 TM_HEIGHT=40 tm_run_cuscope view "$T/cap"
tm_wait 'hotspin' 15 "view: hotspin lane"
# The whole capture (~1 s): the spinner's row is a strip of density glyphs.
tm_wait 'hotspin [0-9]+ +│.*[▁▂▃▄▅▆▇█]{20}' 5 "density strip on the hotspin row"
tm_screen | grep -E '^ *▾?main [0-9]+ ' | grep -qE '[▁▂▃▄▅▆▇█]{5}' && fail "density strip on the idle main thread"
# Zoom to the blocking phase (the first ~100 ms) with the cursor inside the second read.
tm_keys + + + g
tm_keys -l 0.065
tm_keys Enter
tm_wait 'blocking +│.*\[read [0-9.]+ms' 5 "read boxes with their durations on a blocking row"
tm_wait 'blocking +│.*\[nanosleep [0-9.]+ms' 5 "nanosleep boxes on a blocking row"
tm_screen >"$T/zoomed.txt"

# Row index (from the process header, where the selection starts) of a label line.
row_of()
{
	awk -v want="$1" -v after="${2:-}" '
		/^cpu_workload [0-9]+ / { base = NR; seen = 0 }
		base && after != "" && index($0, after) == 1 { seen = 1; next }
		base && (after == "" || seen) && $0 ~ want { print NR - base; exit }' "$T/zoomed.txt"
}
down()
{
	local i
	for ((i = 0; i < $1; i++)); do
		tm_keys Down
	done
}
n=$(row_of '^ +blocking' '▾reader ')
[ -n "$n" ] || fail "no blocking row under the reader thread: $(tr -s ' ' <"$T/zoomed.txt" | head -n 14 | tr '\n' '|')"
down "$n"
tm_keys Enter
tm_wait 'blocking call +read' 5 "Enter on a read: details of the blocking call"
tm_wait 'reader_main +cpu_workload' 5 "the read's stack names the program's function"
tm_keys Escape
sleep 0.3
h=$(row_of '^▾hotspin ')
[ -n "$h" ] || fail "no hotspin row"
# Back to the top, then down to the spinner's thread row.
for ((i = 0; i < n + 2; i++)); do tm_keys Up; done
down "$h"
# Sampling is tick-bound (CPU-time timers fire at the kernel's tick, 250 Hz on some kernels), so
# a ~1 ms cell may hold no sample: step right along the spinner's row to the first cell with one.
found=0
for ((i = 0; i < 40; i++)); do
	tm_keys Enter
	sleep 0.2
	if tm_screen | grep -qE 'CPU samples +[0-9]+ in this cell'; then
		found=1
		break
	fi
	tm_keys Escape Right
	sleep 0.1
done
[ "$found" = 1 ] || fail "Enter on 40 spinner cells: none showed its samples: $(tm_screen | tr -s ' ' | head -n 30 | tr '\n' '|')"
tm_wait ' 0 +cuscope_hot_spin +cpu_workload' 5 "the sample stack's leaf is cuscope_hot_spin"
tm_keys Escape
tm_keys q
tm_wait_exit 0 10
exit 0

#!/usr/bin/env bash
# The ranks pane (R) in `cuscope view`: three ranks started by one shell, rank 1's steps 4x slower
# (rank_steps 40 vs 10, as in t227). The help lists R; R shows the pane with rank 1 first and marked
# as the straggler; Enter on it puts rank 1's process header on the first lane line and the window
# on its slowest step (about 40 ms wide, not the whole capture); Down + Enter goes to the next rank,
# Up + Enter back; Tab moves the focus off and back; a click picks a row; R hides the pane; a capture without ranks says
# so in one line. The jumps run on a 16-line terminal, so that the lanes do not all fit: a header
# goes on top only where the rows below it fill the lanes (rank 1's own process may be the last).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog rank_steps

RS=$PROGS/rank_steps
# Rank 1 starts last, so that its lanes come after the others' (lanes are in the order processes
# connect) and the jump to it has somewhere to go.
cs_record "$T/cap" app -- /bin/sh -c "
RANK=0 '$RS' 10 & a=\$!
RANK=2 '$RS' 10 & c=\$!
sleep 0.3
RANK=1 '$RS' 40 worker & b=\$!
wait \$a; wait \$b; wait \$c"
[ "$RC" = 0 ] || fail "cuscope record exited $RC: $(head -c 300 "$T/app.err")"

# The first lane line: status 0, axis 1 (no GPU header), lanes from line 3 of capture-pane.
first_lane() { tm_screen | sed -n 3p; }
oneline() { tr -s ' ' | tr '\n' '|'; }

tm_run_cuscope view "$T/cap"
tm_wait 'rank 2' 15 "view: the rank lane groups"

tm_keys '?'
tm_wait 'cuscope keys' 5 "help overlay"
tm_screen_has ' R +show / hide the ranks pane' || fail "help lacks R: $(tm_screen | oneline)"
tm_keys Escape
sleep 0.3

tm_keys R
tm_wait 'Ranks by compute time \(Enter' 5 "R shows the ranks pane with the focus"
tm_screen >"$T/pane.txt"
head=$(grep -nE 'rank +pid +steps +step p50 +step p99 +NCCL +compute +GPU idle' "$T/pane.txt" | cut -d: -f1)
[ -n "$head" ] || fail "no ranks heading: $(tail -n 8 "$T/pane.txt" | oneline)"
rows=$(sed -n "$((head + 1)),$((head + 3))p" "$T/pane.txt")
echo "$rows" | sed -n 1p | grep -qE '^ +1 +[0-9]+ +4 +4[0-9.]+ms +[0-9.]+ms +- +(1[6-9][0-9]|2[0-9][0-9])ms +- +< straggler' ||
	fail "want rank 1 (4 steps of ~40 ms, ~160 ms compute) first, marked: $(echo "$rows" | oneline)"
[ "$(echo "$rows" | sed -n 2,3p | grep -cE '^ +[02] +[0-9]+ +4 +[0-9.]+ms')" = 2 ] ||
	fail "want ranks 0 and 2 after rank 1: $(echo "$rows" | oneline)"
echo "$rows" | sed -n 2,3p | grep -q 'straggler' && fail "more than one straggler mark"
pid1=$(echo "$rows" | sed -n 1p | awk '{print $2}')
pid2=$(echo "$rows" | sed -n 2p | awk '{print $2}')
rank2=$(echo "$rows" | sed -n 2p | awk '{print $1}')

tm resize-window -t t -y 16
wait_until 5 tm_screen_has 'Ranks by compute time' || fail "pane gone after the resize"
sleep 0.5
first_lane | grep -q "rank_steps $pid1" && fail "rank 1 already on the first lane line: $(first_lane)"
axis0=$(tm_screen | sed -n 2p)

# Enter: rank 1's lanes on top, its slowest step in view.
tm_keys Enter
tm_wait 'rank 1: slowest step [0-9.]+ms' 5 "Enter says which step it went to"
first_lane | grep -qE "^rank 1 +rank_steps $pid1 " || fail "Enter: rank 1 ($pid1) is not on the first lane line: $(tm_screen | oneline)"
axis1=$(tm_screen | sed -n 2p)
[ "$axis1" != "$axis0" ] || fail "Enter did not move the time window: $axis1"
# The window: the slowest step and an eighth of it either side (1.25 x its length).
d=$(tm_screen | sed -nE 's/.*rank 1: slowest step ([0-9.]+)ms.*/\1/p' | head -n 1)
w=$(tm_screen | sed -n 1p | sed -nE 's/.*window ([0-9.]+)ms.*/\1/p')
awk -v d="$d" -v w="$w" 'BEGIN { e = w - 1.25 * d; exit !(d > 0 && e < 0.3 && e > -0.3) }' ||
	fail "Enter: window ${w}ms, want 1.25 x the ${d}ms step: $(tm_screen | sed -n 1p)"

# Down + Enter: the next rank; Up + Enter: rank 1 again.
tm_keys Down Enter
tm_wait "rank $rank2: slowest step [0-9.]+ms" 5 "Down + Enter goes to the next rank"
first_lane | grep -qE "^rank $rank2 +rank_steps $pid2 " || fail "Down + Enter: rank $rank2 ($pid2) not on the first lane line: $(tm_screen | oneline)"
tm_keys Up Enter
tm_wait 'rank 1: slowest step [0-9.]+ms' 5 "Up + Enter goes back to rank 1"
first_lane | grep -qE "^rank 1 +rank_steps $pid1 " || fail "Up + Enter: rank 1 not on the first lane line: $(tm_screen | oneline)"

# Tab takes the focus off the pane (through the NVTX panel when shown), Tab gives it back.
tab_to()
{
	local i
	for i in 1 2 3; do
		tm_screen_has "$1" && return 0
		tm_keys Tab
		sleep 0.3
	done
	tm_screen_has "$1"
}
tab_to 'Ranks by compute time \(Tab: focus' || fail "Tab did not take the focus off the ranks pane"
tab_to 'Ranks by compute time \(Enter' || fail "Tab did not give the focus back to the ranks pane"

# A click on the third rank's row selects it (X10 report: button, column + 33, line + 33).
rank3=$(echo "$rows" | sed -n 3p | awk '{print $1}')
head=$(tm_screen | grep -nE 'rank +pid +steps' | cut -d: -f1)
[ -n "$head" ] || fail "no ranks heading on the 16-line screen: $(tm_screen | oneline)"
y=$(printf "\\x%x" $((head + 2 + 33)))
tm_keys -l "$(printf '\e[M +%b' "$y")"
tm_keys -l "$(printf '\e[M#+%b' "$y")"
sleep 0.3
tm_keys Enter
tm_wait "rank $rank3: slowest step [0-9.]+ms" 5 "a click on the third row, then Enter"

tm_keys R
tm_wait_gone 'Ranks by compute time' 5 "R did not hide the pane"
tm_keys q
tm_wait_exit 0 10
tm kill-server

# No ranked process: one line says so.
cs_record "$T/plain" plain -- "$RS" 5
[ "$RC" = 0 ] || fail "cuscope record (no ranks) exited $RC"
rm -f "$T/exit"
tm_run_cuscope view "$T/plain"
tm_wait 'rank_steps' 15 "view of the capture without ranks"
tm_keys R
tm_wait 'no ranks: no process has RANK/.*SLURM_PROCID set' 5 "the pane says there are no ranks"
tm_keys q
tm_wait_exit 0 10
exit 0

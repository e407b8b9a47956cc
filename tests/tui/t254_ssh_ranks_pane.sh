#!/usr/bin/env bash
# The ranks pane live across hosts: attach --ssh nodeA,nodeB over a private sshd, two ranks armed on
# each "host" (ranks 0, 1 on nodeA; 2, 3 on nodeB; rank 3's steps twice as long). R shows all four
# ranks, each labelled with the host it runs on (the --ssh name) and its 4 steps; rank 3 is first
# (most compute) and marked as the straggler; Enter on it puts its process header on the first lane
# line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/../runtime/sshd_lib.sh"
need_cuscope
need_prog rank_steps
sshd_start

RS=$PROGS/rank_steps
TM_WIDTH=200 TM_HEIGHT=50 tm_run_cuscope attach --ssh nodeA,nodeB
tm_wait 'LIVE' 20 "live UI"
tm_wait 'nodeA: up \| nodeB: up' 20 "both hosts up"
# Armed once the relays run: an armed process that ends before any viewer came leaves nothing.
export WORLD_SIZE=4
RANK=0 arm "$T/roots/nodeA" a0 -- "$RS" 300
RANK=1 arm "$T/roots/nodeA" a1 -- "$RS" 300
RANK=2 arm "$T/roots/nodeB" b2 -- "$RS" 300
RANK=3 arm "$T/roots/nodeB" b3 -- "$RS" 600
pid3=$ARMED_PID
tm_keys R
tm_wait 'Ranks by compute time' 5 "R shows the ranks pane"
# Every rank with its host and its 4 steps; rank 3 (600 ms steps) first, the straggler.
tm_wait "^ +3 +nodeB +$pid3 +4 +[0-9.]+ms .*< straggler" 30 "rank 3 on nodeB with 4 steps, the straggler"
for want in '0 nodeA' '1 nodeA' '2 nodeB'; do
	set -- $want
	tm_wait "^ +$1 +$2 +[0-9]+ +4 +[0-9.]+ms" 10 "rank $1 on $2 with 4 steps"
done
oneline() { tr -s ' ' | tr '\n' '|'; }
tm_screen >"$T/pane.txt"
head=$(grep -nE 'rank +host +pid +steps' "$T/pane.txt" | cut -d: -f1)
[ -n "$head" ] || fail "no ranks heading with a host column: $(oneline <"$T/pane.txt")"
[ "$(sed -n "$((head + 1)),$((head + 4))p" "$T/pane.txt" | grep -c straggler)" = 1 ] ||
	fail "want one straggler: $(sed -n "$((head + 1)),$((head + 4))p" "$T/pane.txt" | oneline)"
# Enter on rank 3 (the first row) puts its process header on the first lane line.
tm_keys Enter
tm_wait "^rank 3 .*rank_steps $pid3" 5 "Enter on rank 3: its process header first"
tm_keys q
tm_keys d
tm_wait_exit 0 15
exit 0

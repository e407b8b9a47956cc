#!/usr/bin/env bash
# A launcher folds away: live, a shell that starts two ranks (RANK=0, 1) a second after it starts
# shows as a plain open header until its ranks come, then as one folded line "launcher: 2 ranks
# sh PID" (its own lanes hidden) while the ranks keep theirs. f unfolds it, and it stays open while the ranks run on
# (the rule is applied once; the user's choice stands); f folds it again.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

LR=$PROGS/long_running
tm_run_cuscope -- /bin/sh -c "\"sleep 1; RANK=0 '$LR' -t 6 & RANK=1 '$LR' -t 6 & wait\""
tm_wait 'LIVE' 20 "live UI"
tm_wait '^sh [0-9]+ ' 10 "the shell's open header before its ranks come"
tm_wait '^▸launcher: 2 ranks  sh [0-9]+ ' 15 "the shell folded as a launcher once its ranks came"
tm_wait '^rank 1  long_running [0-9]+' 10 "rank 1's header"
tm_screen_has '^rank 0  long_running [0-9]+' || fail "no rank 0 header: $(tm_screen | head -n 20 | tr '\n' '|')"
tm_wait 'lr-main' 10 "the ranks' lanes stay open"
tm_screen_has '^▾sh [0-9]+ ' && fail "the folded launcher shows its own lanes: $(tm_screen | head -n 10 | tr '\n' '|')"

# click_launcher: a click on the launcher's header line (in the gutter: no pan) selects it. Its
# line is looked up: the order of the processes is the order their collectors connected in.
click_launcher()
{
	local y at
	y=$(tm_screen | grep -nE 'launcher: 2 ranks  sh [0-9]+ ' | head -n 1 | cut -d: -f1)
	[ -n "$y" ] || fail "no launcher header to click: $(tm_screen | head -n 10 | tr '\n' '|')"
	at=$(printf '%b%b' "\\$(printf %03o 35)" "\\$(printf %03o $((32 + y)))")
	tm_keys -l "$(printf '\033[M ')$at"
	tm_keys -l "$(printf '\033[M#')$at"
}

# f on the launcher unfolds it (its own lanes come back).
click_launcher
tm_keys f
tm_wait '^launcher: 2 ranks  sh [0-9]+ ' 5 "f unfolds the launcher"
tm_wait '^▾sh [0-9]+ ' 5 "the unfolded launcher's own thread lane"
sleep 2 # rebuilds while the ranks run: it stays open
tm_screen_has '^▸launcher' && fail "the launcher folded again by itself: $(tm_screen | head -n 10 | tr '\n' '|')"
click_launcher
tm_keys f
tm_wait '^▸launcher: 2 ranks  sh [0-9]+ ' 5 "f folds the launcher again"
tm_wait 'EXITED \(code 0\)' 20 "status after the job ends"
tm_keys q
tm_wait_exit 0 10
exit 0

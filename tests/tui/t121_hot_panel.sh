#!/usr/bin/env bash
# Hot-functions panel (H) of a cpu_workload capture: listed in the ? help; for the selected spinner
# thread it names the thread and lists cuscope_hot_spin first with most of the self samples; the
# sample count follows the visible window (zooming in shows fewer); H hides it again.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cpu_workload

cs_record "$T/cap" app -- "$PROGS/cpu_workload" hot
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^done hot" "$T/app.out" || fail "app did not finish: $(head -c 200 "$T/app.out")"
TM_WIDTH=140 TM_HEIGHT=40 tm_run_cuscope view "$T/cap"
tm_wait 'hotspin' 15 "view: hotspin lane"
tm_keys '?'
tm_wait ' H +show / hide hot functions' 5 "? help lists the H key"
tm_wait '\] \[ +next / previous GPU idle gap' 5 "? help lists the ] [ keys"
tm_keys Escape
# Select the spinner's thread row: its index below the process header (where the selection starts).
n=$(tm_screen | awk '/^cpu_workload [0-9]+ / { base = NR } base && /^▾hotspin / { print NR - base; exit }')
[ -n "$n" ] || fail "no hotspin row: $(tm_screen | head -n 8 | tr -s ' ' | tr '\n' '|')"
for ((i = 0; i < n; i++)); do tm_keys Down; done
tm_keys H
tm_wait 'Hot functions of hotspin [0-9]+ in view: [0-9]+ samples' 5 "hot panel for the hotspin thread"
tm_screen >"$T/hot.txt"
first=$(grep -A1 'Hot functions of hotspin' "$T/hot.txt" | tail -n 1)
echo "$first" | grep -qE '^ *[0-9]+ +[0-9.]+% +[0-9]+ +cuscope_hot_spin +cpu_workload' ||
	fail "first hot row is not cuscope_hot_spin: '$first'"
share=$(echo "$first" | awk '{ sub("%", "", $2); print int($2) }')
[ "$share" -gt 50 ] || fail "cuscope_hot_spin share $share% <= 50%"
all=$(grep -oE 'in view: [0-9]+ samples' "$T/hot.txt" | grep -oE '[0-9]+')
tm_keys + + +
sleep 0.5
part=$(tm_screen | grep -oE 'Hot functions of hotspin [0-9]+ in view: [0-9]+ samples' | grep -oE '[0-9]+ samples' | grep -oE '[0-9]+')
[ -n "$part" ] && [ "$part" -gt 0 ] && [ "$part" -lt "$all" ] ||
	fail "zoomed in 8x: panel shows '$part' samples, want fewer than the whole view's $all"
tm_keys H
tm_wait_gone 'Hot functions' 5 "H did not hide the hot panel"
tm_keys q
tm_wait_exit 0 10
exit 0

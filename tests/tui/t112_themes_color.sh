#!/usr/bin/env bash
# Themes (each built-in by name, a user theme file with an unknown key, a missing theme), t cycles,
# NO_COLOR draws no colour escapes, --ascii draws ASCII only, resizing to 80x24 and back.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

cs_record "$T/cap" app -- "$PROGS/long_running" -t 1
[ "$RC" = 0 ] || fail "record exited $RC"

colour_escapes()
{
	tm capture-pane -e -p -t t | "$PYTHON" -c '
import re, sys
n = 0
for m in re.finditer(r"\x1b\[([0-9;:]*)m", sys.stdin.read()):
    ps = [int(p) for p in re.split("[;:]", m.group(1)) if p.isdigit()]
    n += any(30 <= p <= 38 or 40 <= p <= 48 or 90 <= p <= 97 or 100 <= p <= 107 for p in ps)
print(n)'
}

run_view()
{
	tm kill-server 2>/dev/null
	N=$((${N:-0} + 1))
	TMUX_SOCK="cuscope-test-$$-$N" # a fresh server each time: no race with the one going away
	rm -f "$T/exit"
	tm_start "${W:-120}" "${H:-40}" "cd $T && $1 $CUSCOPE view $2 $T/cap; echo EXIT=\$? >$T/exit; exec sleep 3600"
	tm_wait 'lr-main' 15 "view ($1 $2)"
}

for theme in dark light high-contrast; do
	run_view "" "--theme $theme"
	tm_screen_has 'not found|ignored' && fail "theme $theme: warning shown: $(tm_screen | tail -n 1)"
	[ "$(colour_escapes)" -gt 0 ] || fail "theme $theme draws no colour"
done
run_view "" "--theme mono"
[ "$(colour_escapes)" = 0 ] || fail "mono theme drew colour escapes"

run_view "" "--theme nosuchtheme"
tm_wait "theme 'nosuchtheme' not found; using the built-in dark" 5 "missing theme message"

mkdir -p "$T/cfg/cuscope/themes"
printf 'name = mine\nstatus = black on 208\nbogus_key = red\nwhat = ever\n' >"$T/cfg/cuscope/themes/mine.theme"
run_view "XDG_CONFIG_HOME=$T/cfg" "--theme mine"
tm_wait "theme mine: unknown key 'bogus_key' \(line 3\) ignored, and 1 more" 5 "one warning line for unknown keys"
run_view "" "--theme $T/cfg/cuscope/themes/mine.theme"
tm_wait "unknown key 'bogus_key'" 5 "theme by path"

# t cycles through the themes.
run_view "" ""
tm_keys t
tm_wait 'theme light' 5 "t -> light"
tm_keys t
tm_wait 'theme mono' 5 "t -> mono"
sleep 0.3
[ "$(colour_escapes)" = 0 ] || fail "after t to mono, colour escapes remain"

# NO_COLOR: no colour escapes at all, also with the panel and the details overlay up.
run_view "NO_COLOR=1" ""
tm_keys Down Down Enter
sleep 0.5
[ "$(colour_escapes)" = 0 ] || fail "NO_COLOR=1 drew colour escapes"

# ASCII fallback, with help and panel.
run_view "" "--ascii"
tm_keys '?'
tm_wait 'cuscope keys' 5 "help (ascii)"
tm_screen | "$PYTHON" -c '
import sys
bad = sorted({c for c in sys.stdin.read() if ord(c) > 126})
if bad:
    print("--ascii screen has non-ASCII characters: %r" % "".join(bad[:20])); sys.exit(1)' || fail "ascii"
tm_keys Escape

# Resize down to 80x24 and back: everything still drawn, status, axis, panel.
tm resize-window -t t -x 80 -y 24
sleep 0.8
[ "$(tm_screen | wc -l)" -le 24 ] || fail "more than 24 lines after resize"
tm_screen_has 'cuscope' || fail "status line missing at 80x24"
tm_screen_has 'lr-main' || fail "lanes missing at 80x24"
tm_screen_has 'NVTX ranges' || fail "panel missing at 80x24"
tm_screen | awk 'length > 80 {exit 1}' || fail "a line wider than 80 cells"
tm_keys '?'
tm_wait 'Esc or \? closes' 5 "help fits 80x24"
tm_keys Escape
tm resize-window -t t -x 160 -y 50
sleep 0.8
tm_screen_has 'lr-main' || fail "lanes missing after growing back"
tm_screen | sed -n 2p | grep -qE ' (s|ms|us|µs) *$' || fail "axis unit missing after growing back: $(tm_screen | sed -n 2p)"
tm_keys q
tm_wait_exit 0 10
exit 0

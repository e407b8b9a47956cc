#!/usr/bin/env bash
# `d` dumps are outputs like any other: written as FILE.partial (0600) and renamed when complete,
# a link named as the dump file is replaced (what it pointed to untouched), and the live keep
# file in the session is private too.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running
umask 022

echo "link target" >"$T/target.txt"
ln -s "$T/target.txt" "$T/dump.cuscope"
mkdir -m 0700 "$T/sessions"
tm_start 120 40 "cd $T && CUSCOPE_SESSION_ROOT=$T/sessions $CUSCOPE -- $PROGS/long_running -t 12; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'LIVE' 20 "live UI"
sleep 2
keep=$(ls "$T"/sessions/*/live.cuscope* 2>/dev/null | head -n 1)
[ -n "$keep" ] || fail "no live keep file in the session"
[ "$(stat -c %a "$keep")" = 600 ] || fail "live keep file $keep has mode $(stat -c %a "$keep"), want 600"
tm_keys d
tm_wait 'hole capture' 5 "dump scope prompt"
tm_keys w
tm_wait 'dump to file' 5 "dump file prompt"
tm_keys C-u "$T/dump.cuscope" Enter
tm_wait 'dump: wrote' 10 "dump finished message"
[ "$(cat "$T/target.txt")" = "link target" ] || fail "the dump followed a symlink and overwrote its target"
[ -f "$T/dump.cuscope" ] && [ ! -L "$T/dump.cuscope" ] || fail "the dump did not leave a regular file"
[ "$(stat -c %a "$T/dump.cuscope")" = 600 ] || fail "dump created with mode $(stat -c %a "$T/dump.cuscope"), want 600"
[ -e "$T/dump.cuscope.partial" ] && fail "a finished dump left its .partial"
"$CUSCOPE" stats --format=json "$T/dump.cuscope" >"$T/dump.json" 2>"$T/dump.err" ||
	fail "stats of the dump failed: $(cat "$T/dump.err")"
tm_wait 'EXITED' 30 "app end"
tm_keys q
tm_wait_exit 0 10
exit 0

#!/usr/bin/env bash
# `d` in the live UI writes the whole retained capture (w) or the visible window (v) to a named
# file while capture continues; the files read back with `cuscope stats` and hold the app's ranges.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

tm_run_cuscope -- "$PROGS/long_running" -t 12 -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
sleep 2
tm_keys d
tm_wait 'hole capture' 5 "dump scope prompt"
tm_keys w
tm_wait 'dump to file' 5 "dump file prompt"
tm_keys C-u "$T/whole.cuscope" Enter
tm_wait 'dump: wrote' 10 "dump finished message"
tm_keys d
tm_wait 'hole capture' 5 "dump scope prompt (second)"
tm_keys v
tm_keys C-u "$T/window.cuscope" Enter
tm_wait 'dump: wrote' 10 "window dump finished message"
# Capture went on: the status line still says LIVE and events keep arriving.
tm_wait 'LIVE' 5 "still live after the dumps"
for f in whole window; do
	[ -s "$T/$f.cuscope" ] || fail "$f dump file missing"
	"$CUSCOPE" stats --format=json "$T/$f.cuscope" >"$T/$f.json" 2>"$T/$f.err" ||
		fail "stats of the $f dump failed: $(cat "$T/$f.err")"
	grep -q 'recovered\|corrupt' "$T/$f.err" && fail "$f dump is damaged: $(cat "$T/$f.err")"
	py_count=$("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["count"] for r in d["nvtx"] if r["name"]=="step"))' "$T/$f.json")
	[ "${py_count:-0}" -gt 0 ] || fail "$f dump has no step ranges"
done
tm_wait 'EXITED' 30 "app end"
tm_keys q
tm_wait_exit 0 10
exit 0

#!/usr/bin/env bash
# --ascii draws with ASCII only (no box-drawing or block characters); NO_COLOR=1 draws no colour.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

tm_run_cuscope --ascii -- "$PROGS/long_running" -t 4
tm_wait 'LIVE' 20 "live UI (--ascii)"
tm_wait 'loader-1' 10 "thread lane"
sleep 1
tm_screen >"$T/ascii"
"$PYTHON" - "$T/ascii" <<'PY' || exit 1
import sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
bad = sorted({c for c in text if ord(c) > 126})
if bad:
    print("--ascii screen has non-ASCII characters: %r" % "".join(bad[:20]))
    sys.exit(1)
PY
tm kill-server 2>/dev/null

TMUX_SOCK="$TMUX_SOCK-b"
tm_start 120 40 "cd $T && NO_COLOR=1 $CUSCOPE -- $PROGS/long_running -t 4; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'LIVE' 20 "live UI (NO_COLOR=1)"
tm_wait 'loader-1' 10 "thread lane"
sleep 1
tm capture-pane -e -p -t t >"$T/color"
"$PYTHON" - "$T/color" <<'PY' || exit 1
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
for m in re.finditer(r"\x1b\[([0-9;:]*)m", text):
    ps = [int(p) for p in re.split("[;:]", m.group(1)) if p.isdigit()]
    if any(30 <= p <= 38 or 40 <= p <= 48 or 90 <= p <= 97 or 100 <= p <= 107 for p in ps):
        print("NO_COLOR=1 screen has a colour escape %r" % m.group(0))
        sys.exit(1)
PY
exit 0

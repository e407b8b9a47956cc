#!/usr/bin/env bash
# The viewer's terminal hangs up, then the program writes 20 MB: its writes still succeed (what
# drains them outlives the viewer) and the log stays at its cap with the drop count in its note.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

mkdir -m 700 "$T/sess"
cat >"$T/app.sh" <<'APP'
sleep 4
head -c 20000000 /dev/zero | tr '\0' x || exit 3
echo last-line || exit 4
echo "code=0" >"$1"
APP
tm_start 120 40 "cd $T && CUSCOPE_SESSION_ROOT=$T/sess $CUSCOPE --log-mb 1 -- sh $T/app.sh $T/done; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'LIVE' 20 "live UI"
tm_pids
kill -HUP "$CS_PID"
[ -s "$T/done" ] && fail "app finished before the hangup: nothing tested"
wait_until 10 pid_gone "$CS_PID" || fail "viewer still running 10 s after SIGHUP"
wait_until 60 test -s "$T/done" || fail "app did not finish its writes after the hangup"
grep -q 'code=0' "$T/done" || fail "app's writes failed after the hangup: $(cat "$T/done")"
log=$(find "$T/sess" -name output.log | head -n 1)
[ -n "$log" ] || fail "no output.log in the session directory"
size=$(stat -c %s "$log")
[ "$size" -le $((1 << 20)) ] || fail "output log is $size bytes after the hangup, over the 1 MiB cap"
head -n 1 "$log" | grep -q 'earlier bytes dropped' || fail "log lacks the drop note: $(head -c 120 "$log")"
exit 0

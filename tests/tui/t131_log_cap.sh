#!/usr/bin/env bash
# The output log is capped (--log-mb): a program writing 300 MB leaves a log of at most the cap
# holding its newest output under a note counting what was dropped; the status line says so, the
# program's writes all succeed and its exit code passes through.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

mkdir -m 700 "$T/sess"
cat >"$T/app.sh" <<'APP'
yes 'abcdefghijklmnopqrstuvwxyz0123456789' | head -c 300000000 || exit 3
echo last-line-of-output || exit 4
echo ok >"$1"
exit 7
APP
tm_start 120 40 "cd $T && CUSCOPE_SESSION_ROOT=$T/sess $CUSCOPE --log-mb 1 -- sh $T/app.sh $T/done 2>$T/err; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'LIVE|EXITED' 20 "live UI"
wait_until 60 test -s "$T/done" || fail "app did not finish writing 300 MB within 60 s"
tm_wait 'log capped at 1 MiB' 10 "log cap note on the status line"
log=$(find "$T/sess" -name output.log | head -n 1)
[ -n "$log" ] || fail "no output.log in the session directory"
# The keeper writes on its own thread, behind up to 16 MiB of queued output: the program's last
# line reaches the file after the program has gone on (seen late on a loaded 2-core machine).
wait_until 30 grep -q 'last-line-of-output' "$log" || fail "log lost the newest output"
size=$(stat -c %s "$log")
[ "$size" -le $((1 << 20)) ] || fail "output log is $size bytes, over the 1 MiB cap"
head -n 1 "$log" | grep -q 'cuscope: output log capped at 1 MiB; [0-9]* earlier bytes dropped' ||
	fail "log lacks the cap note at its top: $(head -c 120 "$log")"
grep -q 'last-line-of-output' "$log" || fail "log lost the newest output"
tm_wait 'EXITED \(code 7\)' 20 "app end"
tm_keys q
tm_wait_exit 7 60
grep -q 'cuscope: output log capped at 1 MiB: .* MB dropped' "$T/err" ||
	fail "no cap note on stderr at exit: $(head -c 200 "$T/err")"
exit 0

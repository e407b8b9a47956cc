#!/usr/bin/env bash
# On a full disk (a 1 MiB tmpfs holds the session) the program's output is still consumed: its
# writes succeed, what the log cannot hold is counted on the status line, its exit code passes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ "$(id -u)" = 0 ] || skip "needs root (mounts a small tmpfs)"

mkdir "$T/small"
mount -t tmpfs -o size=1m,mode=0700 cuscope-test "$T/small" || skip "cannot mount a tmpfs here"
trap 'umount -l "$T/small" 2>/dev/null; lib_cleanup' EXIT
cat >"$T/app.sh" <<'APP'
dd if=/dev/zero bs=64k count=80 status=none || { echo "dd failed" >"$1"; exit 9; }
echo "writes ok" >"$1"
exit 7
APP
tm_start 120 40 "cd $T && CUSCOPE_SESSION_ROOT=$T/small $CUSCOPE -- sh $T/app.sh $T/done 2>$T/err; echo EXIT=\$? >$T/exit; exec sleep 3600"
tm_wait 'LIVE|EXITED' 20 "live UI"
wait_until 30 test -s "$T/done" || fail "app did not finish writing within 30 s"
grep -q 'writes ok' "$T/done" || fail "the program's writes failed on the full disk: $(cat "$T/done")"
tm_wait 'EXITED \(code 7\)' 20 "app end"
tm_wait 'log: [0-9.]+ MB dropped \(No space left on device\)' 10 "full-disk note on the status line"
tm_keys q
tm_wait_exit 7 30
exit 0

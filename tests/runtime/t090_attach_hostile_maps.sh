#!/usr/bin/env bash
# Root's attach cannot be held by what the target controls:
#  - a FIFO named like a library in the target's memory map ("libc.so.6 (deleted)", the mapped
#    file deleted): the mapped files are read through /proc/PID/map_files (device and inode of
#    the maps line checked), so the attach completes and records;
#  - a collector socket that accepts but never says HELLO: the handshake's deadline ends the
#    attach with one line, exit 1, and no FILE.partial left behind.
# Needs root; the target runs as an unprivileged user.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fifo_libc
[ "$(id -u)" = 0 ] || skip "needs root (plays root attaching to another user's process)"
user=${CUSCOPE_TEST_USER:-cuscopeci}
id "$user" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$user" ||
	skip "cannot create user $user"
uid=$(id -u "$user")
as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups env -u XDG_RUNTIME_DIR HOME=/tmp "$@"; }
as_user test -x "$PROGS/fifo_libc" || skip "$PROGS/fifo_libc is not reachable by $user"
U=$(mktemp -d /tmp/cuscope-t090-user.XXXXXX)
chown "$user" "$U"
base=/tmp/cuscope-$uid
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup_user()
{
	rm -rf "$U" "$base"
	lib_cleanup
}
trap cleanup_user EXIT
rm -rf "$base"

# --- a FIFO where the maps line points --------------------------------------------------------
as_user "$PROGS/fifo_libc" "$U" >"$U/fifo.out" 2>&1 &
BG_PIDS+=("$!")
wait_until 10 grep -q '^pid ' "$U/fifo.out" || fail "the target did not start: $(cat "$U/fifo.out")"
app=$(sed -n 's/^pid //p' "$U/fifo.out")
BG_PIDS+=("$app")
[ -p "$U/libc.so.6 (deleted)" ] || fail "the target left no FIFO"
first=$(grep -m1 'libc\.so' "/proc/$app/maps")
case $first in *"$U/libc.so.6 (deleted)") ;; *) fail "the FIFO's mapping is not the first libc.so in the maps: $first" ;; esac
timeout 60 "$CUSCOPE" attach --record -o "$T/fifo.cap" --duration 1 "$app" >"$T/fifo.out" 2>"$T/fifo.err"
rc=$?
[ "$rc" != 124 ] || fail "root's attach blocked (on the FIFO named in the target's maps?)"
[ "$rc" = 0 ] || fail "attach exited $rc: $(tr '\n' '|' <"$T/fifo.err")"
[ -e "$T/fifo.cap.partial" ] && fail "attach left $T/fifo.cap.partial"
"$CUSCOPE" info "$T/fifo.cap" >"$T/fifo.info" 2>&1 || fail "info failed: $(head -c 300 "$T/fifo.info")"
grep -q "^  pid $app " "$T/fifo.info" || fail "the capture lacks pid $app: $(grep '^  pid' "$T/fifo.info")"
kill -0 "$app" 2>/dev/null || fail "the target did not survive the attach"
kill -KILL "$app"

# --- a "collector" that accepts and never answers ----------------------------------------------
rm -rf "$base"
as_user mkdir -m 0700 "$base" "$base/sess" || fail "could not make the user's session"
as_user /usr/bin/python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind("%s/%d.sock" % (sys.argv[1], os.getpid()))
s.listen(8)
print("pid %d" % os.getpid(), flush=True)
conns = []
while True:
    c, _ = s.accept()
    conns.append(c)
' "$base/sess" >"$U/mute.out" 2>&1 &
BG_PIDS+=("$!")
wait_until 10 grep -q '^pid ' "$U/mute.out" || fail "the mute collector did not start: $(cat "$U/mute.out")"
mute=$(sed -n 's/^pid //p' "$U/mute.out")
BG_PIDS+=("$mute")
start=$(date +%s)
timeout 90 "$CUSCOPE" attach --record -o "$T/mute.cap" "$mute" >"$T/mute.out" 2>"$T/mute.err"
rc=$?
took=$(($(date +%s) - start))
echo "attach to a mute collector ended after ${took}s (exit $rc)" >&2
[ "$rc" != 124 ] || fail "root's attach to a collector that never answers ran past 90 s"
[ "$rc" = 1 ] || fail "attach to a mute collector exited $rc, want 1: $(tr '\n' '|' <"$T/mute.err")"
one_line_error "$T/mute.err" "attach to a mute collector"
grep -q "handshake" "$T/mute.err" || fail "the line does not say what timed out: $(cat "$T/mute.err")"
[ -e "$T/mute.cap.partial" ] && fail "attach left $T/mute.cap.partial"
[ -e "$T/mute.cap" ] && fail "attach left $T/mute.cap"
kill -0 "$mute" 2>/dev/null || fail "the target did not survive the attach"
exit 0

#!/usr/bin/env bash
# Root attaching to another user's process cannot be tricked by that user or a third one:
#  - a `live.cuscope` link planted in the target's session never leads root's viewer anywhere
#    (root keeps its files in its own session directory);
#  - swapping the target's session directory for a link during the attach empties nothing;
#  - a detach never removes the armed process's own output log;
#  - a session directory a third user made first under /tmp/cuscope-UID is not trusted (no
#    connection to the socket planted there; one clear line instead);
#  - nothing the target names is executed for the manifest (a "python3" of the user's own);
#  - a collector never takes its session from a rendezvous file in a base a third user made.
# Needs root and creates a second user (cuscopeci2), which it removes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running
[ "$(id -u)" = 0 ] || skip "needs root (plays root attaching to another user's process)"
user=${CUSCOPE_TEST_USER:-cuscopeci}
id "$user" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$user" ||
	skip "cannot create user $user"
other=cuscopeci2
made_other=0
if ! id "$other" >/dev/null 2>&1; then
	useradd --no-create-home --shell /usr/sbin/nologin "$other" || skip "cannot create user $other"
	made_other=1
fi
uid=$(id -u "$user")
as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups env -u XDG_RUNTIME_DIR HOME=/tmp "$@"; }
as_other() { setpriv --reuid="$other" --regid="$(id -g "$other")" --clear-groups env HOME=/tmp "$@"; }
as_user test -x "$CUSCOPE" || skip "$CUSCOPE is not reachable by $user (build in a world-readable folder)"
# A folder of the user's own, outside root's private test directory.
U=$(mktemp -d /tmp/cuscope-t050-user.XXXXXX)
chown "$user" "$U"
base=/tmp/cuscope-$uid
cleanup_users()
{
	rm -rf "$U" "$base"
	[ "$made_other" = 1 ] && userdel "$other" 2>/dev/null
	lib_cleanup
}
trap cleanup_users EXIT
# This test owns the user's /tmp base while it runs.
rm -rf "$base"

# --- a third user made /tmp/cuscope-UID first, with a fake collector socket in it ------------
as_user "$PROGS/long_running" -t 30 >"$U/lr0.out" 2>&1 &
BG_PIDS+=("$!")
wait_until 10 grep -q '^pid ' "$U/lr0.out" || fail "the user's target did not start"
victim=$(sed -n 's/^pid //p' "$U/lr0.out")
BG_PIDS+=("$victim")
as_other mkdir -m 0700 "$base" "$base/evil" || fail "$other could not pre-create $base"
as_other /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
s.settimeout(20)
try:
    c, _ = s.accept()
    open(sys.argv[2], "w").write("connected\n")
except socket.timeout:
    pass
' "$base/evil/$victim.sock" "/tmp/cuscope-t050-fake-$$" &
fake=$!
BG_PIDS+=("$fake")
wait_until 10 test -S "$base/evil/$victim.sock" || fail "the fake collector socket did not appear"
timeout 60 "$CUSCOPE" attach --record -o "$T/fake.cap" --duration 1 "$victim" >"$T/fake.out" 2>"$T/fake.err"
rc=$?
sleep 0.3
if [ -e "/tmp/cuscope-t050-fake-$$" ]; then
	rm -f "/tmp/cuscope-t050-fake-$$"
	fail "root's attach connected to a socket in a directory $other made"
fi
[ "$rc" != 0 ] || fail "attach exited 0 although /tmp/cuscope-$uid belongs to $other"
one_line_error "$T/fake.err" "attach with a foreign base"
grep -q "not a private directory" "$T/fake.err" || fail "the line does not say why: $(cat "$T/fake.err")"
[ -e "$T/fake.cap" ] && fail "a failed attach left $T/fake.cap"
kill "$fake" "$victim" 2>/dev/null
wait "$victim" 2>/dev/null
rm -rf "$base"

# --- an armed process of the user; links planted in its session --------------------------------
as_user "$CUSCOPE" run --detached -- "$PROGS/long_running" -t 40 >"$U/run.out" 2>"$U/run.err" ||
	fail "run --detached as $user failed: $(cat "$U/run.err")"
app=$(sed -n 's/^pid \([0-9]*\) armed.*/\1/p' "$U/run.out")
log=$(sed -n 's/^pid [0-9]* armed; output in \(.*\)$/\1/p' "$U/run.out")
[ -n "$app" ] && [ -n "$log" ] || fail "run --detached did not say its pid and log: $(cat "$U/run.out")"
BG_PIDS+=("$app")
session=$(dirname "$log")
wait_until 10 test -S "$session/$app.sock" || fail "the armed process has no socket in $session"
# Root's precious files, which the user can name but not touch.
echo precious >"$T/precious"
mkdir "$T/victimdir"
echo one >"$T/victimdir/a.txt"
echo two >"$T/victimdir/$app.sock.txt"
as_user ln -s "$T/precious" "$session/live.cuscope" || fail "could not plant the live.cuscope link"

# The live viewer (in a terminal), left with SIGTERM: its keep file must not follow the link.
tm_run_cuscope attach "$app"
tm_wait 'LIVE|pid' 20 "root's live attach"
sleep 1
CS_PID=$(pgrep -P "$(tm display-message -p -t t '#{pane_pid}')" | head -n 1)
[ -n "$CS_PID" ] || fail "no cuscope process in the terminal"
kill -TERM "$CS_PID"
wait_until 15 test -s "$T/exit" || fail "the live viewer did not leave after SIGTERM"
[ "$(cat "$T/precious")" = precious ] || fail "root's viewer wrote through the planted live.cuscope link"
[ -e "$log" ] || fail "detaching removed the armed process's output log $log"

# attach --record while the user swaps the session directory for a link to root's folder.
timeout 60 "$CUSCOPE" attach --record -o "$T/swap.cap" --duration 3 "$app" >"$T/swap.out" 2>"$T/swap.err" &
att=$!
BG_PIDS+=("$att")
sleep 1.5
as_user mv "$session" "$session.moved" || fail "the user could not move their session directory"
as_user ln -s "$T/victimdir" "$session" || fail "the user could not plant the directory link"
bg_wait "$att" 60
[ -e "$T/victimdir/a.txt" ] && [ -e "$T/victimdir/$app.sock.txt" ] ||
	fail "root's detach removed files of the folder the session link pointed to: $(ls "$T/victimdir" | tr '\n' ' ')"
[ "$(cat "$T/precious")" = precious ] || fail "root's precious file changed"
as_user rm -f "$session"
as_user mv "$session.moved" "$session"
kill -TERM "$app" 2>/dev/null

# --- a "python3" of the user's own: attach --record must never run it -------------------------
cat >"$U/python3" <<EOF
#!/bin/sh
touch "$U/ran-as-\$(id -u)"
EOF
chmod 0755 "$U/python3"
chown "$user" "$U/python3"
# The target's command line is exactly that path (cat, blocked on a pipe, under that name).
sleep 30 | as_user bash -c "exec -a '$U/python3' cat" &
sleep 0.5
py=$(pgrep -u "$user" -x cat | head -n 1)
[ -n "$py" ] || fail "the python3-named target did not start"
BG_PIDS+=("$py")
timeout 60 "$CUSCOPE" attach --record -o "$T/py.cap" --duration 1 "$py" >"$T/py.out" 2>"$T/py.err"
rc=$?
[ "$rc" = 0 ] || fail "attach to the python3-named target exited $rc: $(cat "$T/py.err")"
ls "$U"/ran-as-* >/dev/null 2>&1 && fail "attach --record executed the target's own '$U/python3' ($(ls "$U"/ran-as-*))"
kill "$py" 2>/dev/null

# --- a third user's rendezvous for the user's next collector: ignored ---------------------------
rm -rf "$base"
as_other mkdir -m 0755 "$base" || fail "$other could not make $base"
as_other mkdir -m 0777 "$base/evilsession"
lib=$(dirname "$CUSCOPE")/../lib/cuscope/libcuscope.so
as_user sh -c "echo \$\$ >'$U/rv.pid'; sleep 1; exec env LD_PRELOAD='$lib' '$PROGS/long_running' -t 3" >"$U/rv.out" 2>&1 &
BG_PIDS+=("$!")
wait_until 10 test -s "$U/rv.pid" || fail "the user's process did not start"
rv=$(cat "$U/rv.pid")
BG_PIDS+=("$rv")
as_other sh -c "printf 'CUSCOPE_SESSION=$base/evilsession\n' >'$base/attach-$rv.env' && chmod 0644 '$base/attach-$rv.env'" ||
	fail "$other could not plant the rendezvous"
if wait_until 5 test -S "$base/evilsession/$rv.sock"; then
	fail "the user's collector took its session from a rendezvous in a directory $other made"
fi
exit 0

#!/usr/bin/env bash
# The collector never writes to an fd it did not create: when it cannot listen (session directory
# gone, or a chroot child that cannot reach it) the program's stderr stays exactly the program's.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog exit_code chroot_fork
LIB=$BUILD/lib/cuscope/libcuscope.so

# A session directory that does not exist: the collector cannot make its socket.
CUSCOPE_SESSION=$T/missing/session LD_PRELOAD=$LIB timeout 30 "$PROGS/exit_code" 3 >"$T/a.out" 2>"$T/a.err"
rc=$?
[ "$rc" = 3 ] || fail "exit_code 3 with an unreachable session exited $rc"
[ -s "$T/a.err" ] && fail "collector wrote to the program's stderr: $(head -c 200 "$T/a.err")"

# A directory the program cannot write: same.
mkdir -p "$T/ro" && chmod 0500 "$T/ro"
if [ "$(id -u)" = 0 ] && id cuscopeci >/dev/null 2>&1; then
	runner=(runuser -u cuscopeci --)
	chmod 0755 "$T"
else
	runner=()
fi
if [ "$(id -u)" != 0 ] || [ ${#runner[@]} -gt 0 ]; then
	"${runner[@]}" env CUSCOPE_SESSION="$T/ro" LD_PRELOAD="$LIB" timeout 30 "$PROGS/exit_code" 4 >"$T/b.out" 2>"$T/b.err"
	rc=$?
	[ "$rc" = 4 ] || fail "exit_code 4 with a read-only session directory exited $rc"
	[ -s "$T/b.err" ] && fail "collector wrote to the program's stderr (read-only session): $(head -c 200 "$T/b.err")"
fi

# A child in a chroot, under record: its collector cannot reach the session directory.
[ "$(id -u)" = 0 ] || skip "chroot case needs root (the rest passed)"
mkdir -p "$T/jail"
cs_record "$T/cap" app -- "$PROGS/chroot_fork" "$T/jail"
[ "$RC" = 0 ] || fail "record of chroot_fork exited $RC, want 0: $(head -c 300 "$T/app.out")"
grep -q "child .* done" "$T/app.out" || fail "chroot child did not run: $(head -c 300 "$T/app.out")"
[ -s "$T/app.err" ] && grep -v '^cuscope: ' "$T/app.err" | grep -q . &&
	fail "collector of the chroot child wrote to the program's stderr: $(grep -v '^cuscope: ' "$T/app.err" | head -c 200)"
grep -q 'cannot listen\|collector in pid' "$T/app.err" && fail "collector message on stderr: $(head -c 200 "$T/app.err")"
exit 0

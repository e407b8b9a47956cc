#!/usr/bin/env bash
# cuscope attach failures: one clear line each and a non-zero exit, the target never killed or
# left stopped: no such process, not a process id, a statically linked target, another user's
# process (run as an unprivileged user: CUSCOPE_TEST_USER, the user .ci/run creates, or nobody).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target

# A pid that surely does not exist: one that just ended.
sh -c 'exit 0' &
gone=$!
wait "$gone"
one_line nopid 1 'no such process' "$CUSCOPE" attach --record -o "$T/x.cap" "$gone"
one_line notnum 2 'not a process id' "$CUSCOPE" attach --record -o "$T/x.cap" 12abc

# A statically linked program has no loader to call: refused, and it runs on to its normal end.
if printf '#include <unistd.h>\nint main(void){for(int i=0;i<40;i++)usleep(50000);return 4;}\n' >"$T/static.c" &&
	cc -static -O1 -o "$T/static" "$T/static.c" 2>/dev/null; then
	"$T/static" &
	st=$!
	BG_PIDS+=("$st")
	sleep 0.2
	one_line static 1 'statically linked' "$CUSCOPE" attach --record -o "$T/x.cap" "$st"
	state=$(awk '{print $3}' /proc/"$st"/stat)
	[ "$state" != T ] && [ "$state" != t ] || fail "static target left stopped (state $state)"
	wait "$st"
	[ $? = 4 ] || fail "static target did not finish normally after the refused attach"
else
	echo "note: no static libc: statically linked case not checked" >&2
fi

# Another user's process.
if [ "$(id -u)" = 0 ]; then
	user=${CUSCOPE_TEST_USER:-}
	[ -n "$user" ] || { id cuscopeci >/dev/null 2>&1 && user=cuscopeci; }
	[ -n "$user" ] || user=nobody
	if setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups test -x "$CUSCOPE" 2>/dev/null; then
		"$PROGS/attach_target" 4 >"$T/root_target.out" 2>&1 &
		rt=$!
		BG_PIDS+=("$rt")
		sleep 0.3
		one_line otheruser 1 'not permitted' setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
			env HOME=/tmp "$CUSCOPE" attach --record -o /tmp/cuscope-t042-$$.cap "$rt"
		kill -0 "$rt" 2>/dev/null || fail "root's target died after the refused attach"
		wait "$rt"
		[ $? = 3 ] || fail "root's target did not finish normally"
	else
		echo "note: $CUSCOPE not executable by $user: other-user case not checked" >&2
	fi
fi
exit 0

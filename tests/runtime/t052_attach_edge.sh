#!/usr/bin/env bash
# Attach edge cases and session housekeeping, each one clear line or a working capture:
#  - a zombie is called a zombie (not "statically linked"); exit 1;
#  - a stopped process is refused (exit 1, left stopped: continuing it is not ours to decide),
#    and runs to its normal end once continued;
#  - a second concurrent attach says another viewer is attached (exit 1), the first one records;
#  - a relative CUSCOPE_SESSION_ROOT still finds a child that changed directory;
#  - a session path longer than sun_path (108 bytes) still records;
#  - stale sessions of dead processes are removed at the next start, live ones and links stay;
#  - (root) a target in another mount namespace with its own /tmp is reached through
#    /proc/PID/root; one in another PID namespace is refused in one line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target nvtx_threads

# --- a zombie: a child its parent (which exec'd a sleep) never reaps ---------------------------
bash -c 'sleep 0.1 & exec sleep 20' &
parent=$!
BG_PIDS+=("$parent")
zombie_found() { zombie=$(pgrep -P "$parent" | head -n 1); [ -n "$zombie" ] && [ "$(awk '{print $3}' /proc/"$zombie"/stat 2>/dev/null)" = Z ]; }
wait_until 10 zombie_found || fail "could not make a zombie"
one_line zombie 1 'zombie' "$CUSCOPE" attach --record -o "$T/z.cap" "$zombie"
[ -e "$T/z.cap" ] && fail "a refused attach left a capture file"
kill -KILL "$parent"

# --- a stopped process -------------------------------------------------------------------------
"$PROGS/attach_target" 3 >"$T/stopped.out" 2>&1 &
st=$!
BG_PIDS+=("$st")
sleep 0.3
kill -STOP "$st"
is_stopped() { [ "$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)" = T ]; }
wait_until 10 is_stopped "$st" || fail "the target did not stop"
one_line stopped 1 'stopped' "$CUSCOPE" attach --record -o "$T/s.cap" --duration 1 "$st"
state=$(awk '{print $3}' /proc/"$st"/stat)
[ "$state" = T ] || fail "the stopped target is in state $state after the refused attach, want T"
kill -CONT "$st"
wait "$st"
[ $? = 3 ] || fail "the stopped target did not finish normally once continued"

# --- a second concurrent attach ------------------------------------------------------------------
"$PROGS/attach_target" 12 >"$T/two.out" 2>&1 &
two=$!
BG_PIDS+=("$two")
sleep 0.3
timeout 60 "$CUSCOPE" attach --record -o "$T/first.cap" --duration 4 "$two" >"$T/first.out" 2>"$T/first.err" &
first=$!
BG_PIDS+=("$first")
sleep 2
one_line second 1 'already has a viewer' "$CUSCOPE" attach --record -o "$T/second.cap" --duration 1 "$two"
[ -e "$T/second.cap" ] && fail "the refused second attach left a capture"
bg_wait "$first" 60
[ "$RC" = 0 ] || fail "the first attach exited $RC: $(cat "$T/first.err")"
cs_stats "$T/first.cap" "$T/first.json"
grep -q '"cuscope_attach_hot"' "$T/first.json" || fail "the first attach recorded no samples of the hot function"
kill -TERM "$two" 2>/dev/null

# --- a relative session root and a child that changes directory ---------------------------------
mkdir "$T/rel"
(cd "$T/rel" && CUSCOPE_SESSION_ROOT=sessions timeout 60 "$CUSCOPE" record -o "$T/rel.cap" -- \
	sh -c "cd / && exec '$PROGS/nvtx_threads'" >"$T/rel.out" 2>"$T/rel.err")
rc=$?
[ "$rc" = 0 ] || fail "record with a relative CUSCOPE_SESSION_ROOT exited $rc: $(cat "$T/rel.err")"
cs_stats "$T/rel.cap" "$T/rel.json"
grep -q '"name": *"w1.outer"' "$T/rel.json" || fail "the child that changed directory was not recorded (relative session root)"

# --- a session path longer than sun_path ---------------------------------------------------------
long=$T/$(printf 'long-session-root-%.0s' 1 2 3 4 5 6 7)
mkdir -p -m 0700 "$long"
[ "${#long}" -gt 120 ] || fail "test setup: session root only ${#long} bytes"
CUSCOPE_SESSION_ROOT=$long timeout 60 "$CUSCOPE" record -o "$T/long.cap" -- "$PROGS/nvtx_threads" >"$T/long.out" 2>"$T/long.err"
rc=$?
if [ "${#long}" -gt 450 ]; then
	# Beyond what the viewer keeps for a session path: one clear line, nothing silently lost.
	[ "$rc" = 2 ] || fail "record with a ${#long}-byte session root exited $rc, want 2: $(cat "$T/long.err")"
	one_line_error "$T/long.err" "a ${#long}-byte session root"
	grep -q 'too long' "$T/long.err" || fail "the line does not say the path is too long: $(cat "$T/long.err")"
else
	[ "$rc" = 0 ] || fail "record with a ${#long}-byte session root exited $rc: $(cat "$T/long.err")"
	cs_stats "$T/long.cap" "$T/long.json"
	grep -q '"name": *"w1.outer"' "$T/long.json" || fail "nothing recorded through a session path over sun_path (${#long} bytes)"
fi

# --- stale sessions are swept; live ones and links are not ---------------------------------------
root=$T/sweep
mkdir -m 0700 "$root" "$root/99999999-1" "$root/$$-2" "$T/victim"
echo x >"$root/99999999-1/output.log"
touch -d '2 days ago' "$root/99999999-1/output.log"
echo y >"$root/99999999-1/live.cuscope"
echo keep >"$T/victim/file"
ln -s "$T/victim" "$root/99999998-3"
CUSCOPE_SESSION_ROOT=$root timeout 60 "$CUSCOPE" record -o "$T/sweep.cap" -- /bin/true >/dev/null 2>"$T/sweep.err" ||
	fail "record with a session root holding stale sessions failed: $(cat "$T/sweep.err")"
[ -e "$root/99999999-1" ] && fail "a stale session of a dead process was not removed"
[ -d "$root/$$-2" ] || fail "the session of a live process was removed"
[ -e "$T/victim/file" ] || fail "sweeping followed a link out of the session root"
[ -L "$root/99999998-3" ] || fail "a link in the session root was removed or followed"

# --- namespaces (root) ---------------------------------------------------------------------------
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
	case $ROOT/ in
	/tmp/*) echo "note: the build is under /tmp: own-/tmp mount namespace case not checked" >&2 ;;
	*)
		unshare -m --propagation private sh -c "mount -t tmpfs none /tmp && exec '$PROGS/attach_target' 8" \
			>"$T/ns.out" 2>&1 &
		BG_PIDS+=("$!")
		wait_until 10 grep -q '^pid ' "$T/ns.out" || fail "the target in its own mount namespace did not start"
		ns=$(sed -n 's/^pid //p' "$T/ns.out")
		BG_PIDS+=("$ns")
		sleep 0.3
		timeout 60 "$CUSCOPE" attach --record -o "$T/ns.cap" --duration 1.5 "$ns" >/dev/null 2>"$T/ns.err"
		rc=$?
		[ "$rc" = 0 ] || fail "attach into another mount namespace exited $rc: $(cat "$T/ns.err")"
		cs_stats "$T/ns.cap" "$T/ns.json"
		grep -q '"cuscope_attach_hot"' "$T/ns.json" || fail "attach into another mount namespace recorded no samples"
		;;
	esac
	if unshare -p -f --mount-proc true 2>/dev/null; then
		unshare -p -f --mount-proc "$PROGS/attach_target" 8 >"$T/pidns.out" 2>&1 &
		BG_PIDS+=("$!")
		wait_until 10 grep -q '^pid ' "$T/pidns.out" || fail "the target in its own PID namespace did not start"
		sleep 0.3
		inner=$(pgrep -f "^$PROGS/attach_target 8" | while read -r p; do
			[ "$(readlink /proc/"$p"/ns/pid)" != "$(readlink /proc/self/ns/pid)" ] && echo "$p"
		done | head -n 1)
		[ -n "$inner" ] || fail "could not find the target in its PID namespace"
		BG_PIDS+=("$inner")
		one_line pidns 1 'namespace' "$CUSCOPE" attach --record -o "$T/pidns.cap" --duration 1 "$inner"
	fi
fi
exit 0

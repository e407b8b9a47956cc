#!/usr/bin/env bash
# A thread of the program closes every fd number it does not own (3..1023), over and over, opens
# files of its own onto the freed numbers and checks them (still open, same file, same content and
# offset), while the collector runs with its defaults and is kept busy with short-lived fds: the
# /proc/self/task scan and comm reads (48 sleeping threads, a stream of short renamed ones),
# counters' /proc reads, the sampler's status reads, symbol files (the program's own functions
# named one by one, libc, a dlopen'ed libm), /proc/self/maps, a growing perf map, the listening
# socket it makes again. None of the program's files may be read, written or closed by the
# collector, the program must not crash (a thread scan cut short by a taken-over directory fd
# once unmapped live threads' rings), and its exit code passes through. Then the same armed with
# no viewer. Before fd.c's short-lived helpers, 8-9 runs in 10 failed. What remains is the gap of
# one system call between a check and its close (a shared fd table has no close-if-same): on a
# heavily loaded machine, where the sender may be preempted right there, a run can still fail.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fd_closer

check_out()
{
	local what=$1 out=$2 rc=$3
	grep -q "^fd_closer: ok" "$out" || fail "$what: $(grep -m1 '^fd_closer' "$out" || echo "no verdict, exit $rc"): $(tr '\n' '|' <"$out" | tail -c 300)"
	[ "$rc" = 0 ] || fail "$what: exit $rc, want 0"
	local rounds churned entries
	rounds=$(awk '/^rounds/ {print $2}' "$out")
	churned=$(awk '/^threads_churned/ {print $2}' "$out")
	entries=$(awk '/^perf_map_entries/ {print $2}' "$out")
	# The checks must have run, against a collector with work to do.
	[ "${rounds:-0}" -ge 5 ] || fail "$what: only ${rounds:-0} close/reopen rounds"
	[ "${churned:-0}" -ge 8 ] || fail "$what: only ${churned:-0} short threads"
	[ "${entries:-0}" -ge 3 ] || fail "$what: only ${entries:-0} perf map entries"
}

mkdir -p "$T/files"
"$CUSCOPE" record -o "$T/cap" -- "$PROGS/fd_closer" "$T/files" 3 >"$T/app.out" 2>"$T/app.err" </dev/null &
CS_PID=$!
BG_PIDS+=("$CS_PID")
bg_wait "$CS_PID" 90
[ "$RC" = 124 ] && fail "cuscope record of fd_closer ran past 90 s"
check_out "recorded with defaults" "$T/app.out" "$RC"
[ -s "$T/cap" ] || fail "no capture written"

# Armed, no viewer: only the collector's own fds, made again as the program takes them.
rm -rf "$T/files" && mkdir -p "$T/files" "$T/root"
CUSCOPE_SESSION_ROOT=$T/root LD_PRELOAD=$BUILD/lib/cuscope/libcuscope.so CUSCOPE_ARM=1 \
	timeout 60 "$PROGS/fd_closer" "$T/files" 2 >"$T/armed.out" 2>"$T/armed.err"
check_out armed "$T/armed.out" "$?"
[ -s "$T/armed.err" ] && fail "armed: the collector wrote to the program's stderr: $(head -c 200 "$T/armed.err")"
exit 0

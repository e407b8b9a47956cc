#!/usr/bin/env bash
# A short-lived child pays only for what it uses: a process that ends within the collector's lazy
# start (10 ms) and made no event makes no socket, opens no perf event, scans no /proc/self/task
# and reads no /proc/cpuinfo, yet leaves its stream with final counts in PID.final for the
# viewer. A process that lives longer is sampled and listens as before. (The cost itself is
# measured by tests/bench/short_children.sh, not timed here.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
command -v strace >/dev/null || skip "no strace"
LIB=$BUILD/lib/cuscope/libcuscope.so
mkdir -m 0700 "$T/s"

CUSCOPE_SESSION=$T/s CUSCOPE_WAIT_VIEWER_MS=2000 strace -f -qq -o "$T/trace" \
	-e trace=socket,bind,listen,perf_event_open,timer_create,openat \
	env LD_PRELOAD="$LIB" /bin/true
rc=$?
[ "$rc" = 0 ] || fail "/bin/true under the collector exited $rc"
for what in 'socket(' 'bind(' 'listen(' 'perf_event_open(' 'timer_create(' '/proc/cpuinfo' '/proc/self/task'; do
	grep -qF "$what" "$T/trace" && fail "a short-lived child paid for $what: $(grep -m1 -F "$what" "$T/trace")"
done
n=$(find "$T/s" -name '*.final' | wc -l)
[ "$n" = 1 ] || fail "want the child's PID.final in the session, found $n files: $(ls -a "$T/s")"

# A process that lives past the lazy start listens and samples as before.
# shellcheck disable=SC2016 # the loop is the child shell's
CUSCOPE_SESSION=$T/s CUSCOPE_WAIT_VIEWER_MS=2000 strace -f -qq -o "$T/trace2" \
	-e trace=bind,timer_create,perf_event_open env LD_PRELOAD="$LIB" sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
grep -q 'bind(' "$T/trace2" || fail "a longer-lived process never made its socket"
grep -qE 'timer_create\(|perf_event_open\(' "$T/trace2" || fail "a longer-lived process was never sampled"

# The whole capture still holds every child (t072 checks the counts too).
cs_record "$T/cap" loop -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done'
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/loop.err")"
got=$("$CUSCOPE" info "$T/cap" 2>&1 | grep -c '  pid .* /bin/true ')
[ "$got" = 10 ] || fail "capture holds $got /bin/true processes, want 10"
exit 0

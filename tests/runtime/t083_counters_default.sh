#!/usr/bin/env bash
# Default counters cost the program's threads nothing: while a program runs under `record` with
# default options it holds no perf_event descriptor (per-thread perf events would be switched at
# every context switch of its threads), yet task-clock, context-switches and page-faults arrive
# for every thread, with values that mean what perf's do. `--counters default` is the same set,
# `none` sends none. An explicit hardware list gets perf events: where the PMU refuses them
# (virtual machines), one notice names them all and the software counters continue.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running cpu_workload

# perf_fds PID: how many of PID's descriptors are perf events.
perf_fds()
{
	local f n=0
	for f in /proc/"$1"/fd/*; do
		case $(readlink "$f" 2>/dev/null) in *perf_event*) n=$((n + 1)) ;; esac
	done
	echo "$n"
}

# run_watched NAME OPTIONS...: records long_running (3 loaders, 2.5 s) with OPTIONS; once its
# threads have been found, counts its perf_event fds into $T/NAME.fds.
run_watched()
{
	local name=$1
	shift
	"$CUSCOPE" record "$@" -o "$T/$name.cap" -- "$PROGS/long_running" -t 2.5 -n 3 \
		>"$T/$name.out" 2>"$T/$name.err" </dev/null &
	local rec=$!
	BG_PIDS+=("$rec")
	wait_until 20 grep -q '^pid ' "$T/$name.out" || fail "$name: long_running never started: $(head -c 300 "$T/$name.err")"
	local pid
	pid=$(awk '/^pid / {print $2; exit}' "$T/$name.out")
	# The collector is in the program, and its thread scan (every 0.2 s) has seen the loaders.
	wait_until 10 grep -q libcuscope "/proc/$pid/maps" || fail "$name: collector not loaded in $pid"
	sleep 1
	perf_fds "$pid" >"$T/$name.fds"
	bg_wait "$rec" 60
	[ "$RC" = 0 ] || fail "$name: record exited $RC, want 0: $(head -c 300 "$T/$name.err")"
	cs_stats "$T/$name.cap" "$T/$name.json"
}

run_watched dflt
n=$(cat "$T/dflt.fds")
[ "$n" = 0 ] || fail "defaults: the program holds $n perf_event descriptors, want none"
notices='counters unavailable|counter descriptor|have no counters|page-faults may be missing|counter .* skipped'
grep -Eq "$notices" "$T/dflt.err" && fail "defaults: a counters notice: $(grep -Eh "$notices" "$T/dflt.err" | head -2)"

# Every thread has the three software counters; loaders sleep (switches) and run (CPU time).
py_check "$T/dflt.json" <<'PY'
pid = J["processes"][0]["pid"]
rows = [r for r in J["counters"] if r["pid"] == pid and not r["event"].startswith("sampling-")]
by = {}
for r in rows:
    by.setdefault(r["thread"], {})[r["event"]] = r["value"]
for t in ("lr-main", "loader-0", "loader-1", "loader-2"):
    c = by.get(t)
    if c is None:
        fail("no counters for thread %s; threads with counters: %r" % (t, sorted(by)))
    if sorted(c) != ["context-switches", "page-faults", "task-clock"]:
        fail("thread %s counters %r, want context-switches, page-faults, task-clock" % (t, sorted(c)))
    if c["task-clock"] <= 0 or c["task-clock"] > 3 * 10**9:
        fail("thread %s task-clock %d ns, want between 0 and the run's 2.5 s" % (t, c["task-clock"]))
    if c["context-switches"] < 10:
        fail("thread %s has %d context switches, want many (it sleeps every step)" % (t, c["context-switches"]))
main = by["lr-main"]
if main["page-faults"] < 10:
    fail("lr-main has %d page faults, want at least the start-up's" % main["page-faults"])
PY

# A spinner's task-clock is its CPU time (ns), as perf's task-clock is, up to its end.
cs_record "$T/hot.cap" hot -- "$PROGS/cpu_workload" hot
[ "$RC" = 0 ] || fail "hot: record exited $RC: $(head -c 300 "$T/hot.err")"
cs_stats "$T/hot.cap" "$T/hot.json"
py_check "$T/hot.json" "$T/hot.out" <<'PY'
tid = app_tid("hotspin")
rs = [r for r in J["counters"] if r["tid"] == tid and r["event"] == "task-clock"]
# Its final value comes from the thread itself as it ends (a procfs poll cannot see it then), so
# it holds the whole second the spinner spins for, however late the last poll was.
if len(rs) != 1 or not (10**9 <= rs[0]["value"] <= 1.5 * 10**9):
    fail("hotspin task-clock %r, want its 1 s (and a little) of CPU in ns" % rs)
PY

# --counters default is the default set; none sends no counters (the sampler's rates stay).
"$CUSCOPE" record --counters default -o "$T/named.cap" -- "$PROGS/long_running" -t 0.6 -n 1 \
	>/dev/null 2>"$T/named.err" </dev/null || fail "--counters default: record failed: $(head -c 300 "$T/named.err")"
"$CUSCOPE" record --counters none -o "$T/none.cap" -- "$PROGS/long_running" -t 0.6 -n 1 \
	>/dev/null 2>"$T/none.err" </dev/null || fail "--counters none: record failed: $(head -c 300 "$T/none.err")"
cs_stats "$T/named.cap" "$T/named.json"
cs_stats "$T/none.cap" "$T/none.json"
py_check "$T/named.json" <<'PY'
ev = sorted({r["event"] for r in J["counters"] if not r["event"].startswith("sampling-")})
if ev != ["context-switches", "page-faults", "task-clock"]:
    fail("--counters default gives %r" % ev)
PY
py_check "$T/none.json" <<'PY'
ev = sorted({r["event"] for r in J["counters"] if not r["event"].startswith("sampling-")})
if ev:
    fail("--counters none still gives %r" % ev)
PY

# The old default list, named: hardware events through perf, the rest as before.
run_watched hw --counters task-clock,context-switches,page-faults,cycles,instructions,LLC-load-misses
refusals=$(grep -c "counters unavailable" "$T/hw.err")
if grep -Eq "the PMU refuses them|perf events not allowed here" "$T/hw.err"; then
	[ "$refusals" = 1 ] || fail "hardware list: want one PMU-refusal notice, got $refusals: $(grep -h 'counters unavailable' "$T/hw.err")"
	grep -q 'cycles, instructions, LLC-load-misses; software counters continue' "$T/hw.err" ||
		fail "hardware list: the notice does not name the three refused events: $(grep -h 'counters unavailable' "$T/hw.err")"
	n=$(cat "$T/hw.fds")
	[ "$n" = 0 ] || fail "hardware list refused: the program still holds $n perf_event descriptors"
	want='["context-switches", "page-faults", "task-clock"]'
else
	# A PMU that counts: the hardware events are per-thread perf events (4 threads x 3 events).
	[ "$refusals" = 0 ] || fail "hardware list: unexpected notice: $(grep -h 'counters unavailable' "$T/hw.err")"
	n=$(cat "$T/hw.fds")
	[ "$n" -ge 12 ] || fail "hardware list: $n perf_event descriptors, want 3 per thread"
	want='["LLC-load-misses", "context-switches", "cycles", "instructions", "page-faults", "task-clock"]'
fi
py_check "$T/hw.json" <<PY
pid = J["processes"][0]["pid"]
ev = sorted({r["event"] for r in J["counters"] if r["pid"] == pid and r["thread"] == "loader-0"})
ev = [e for e in ev if not e.startswith("sampling-")]
if ev != $want:
    fail("hardware list: loader-0 counters %r, want %r" % (ev, $want))
PY
# Bounded: 300 threads alive together get counters for the first 256 only, with one notice.
cat >"$T/threads.py" <<'PY'
import threading, time
stop = threading.Event()
ts = [threading.Thread(target=stop.wait) for _ in range(300)]
for t in ts:
    t.start()
time.sleep(1.5)
stop.set()
for t in ts:
    t.join()
PY
"$CUSCOPE" record --no-gpu -o "$T/many.cap" -- "$PYTHON" "$T/threads.py" >/dev/null 2>"$T/many.err" </dev/null ||
	fail "300 threads: record failed: $(head -c 300 "$T/many.err")"
n=$(grep -c 'more than 256 threads: thread [0-9]* and later ones have no counters' "$T/many.err")
[ "$n" = 1 ] || fail "300 threads: want one thread-cap notice, got $n: $(head -c 300 "$T/many.err")"
cs_stats "$T/many.cap" "$T/many.json"
py_check "$T/many.json" <<'PY'
# (python3 may be a launcher script: count the process with the most threads)
by_pid = {}
for r in J["counters"]:
    if r["event"] == "task-clock":
        by_pid.setdefault(r["pid"], set()).add(r["tid"])
tids = max(by_pid.values(), key=len) if by_pid else set()
if len(tids) != 256:
    fail("300 threads: %d threads have counters, want the cap of 256" % len(tids))
PY
# An unprivileged user: software counters need no perf at all; a named hardware event is asked
# for user-side counts where perf_event_paranoid keeps users out of kernel counts (as perf stat
# does), so it is refused only by the PMU or by a paranoid level that forbids perf to users.
[ "$(id -u)" = 0 ] || skip "not root: the unprivileged-user case of hardware counters not checked"
user=${CUSCOPE_TEST_USER:-cuscopeci}
id "$user" >/dev/null 2>&1 || skip "no user $user (.ci/run creates it): unprivileged case not checked"
as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups env HOME=/tmp "$@"; }
as_user test -x "$CUSCOPE" || skip "$CUSCOPE not executable by $user: unprivileged case not checked"
chmod 0777 "$T"
(cd "$T" && as_user "$CUSCOPE" record --no-gpu --counters default,cycles -o "$T/user.cap" -- \
	"$PROGS/cpu_workload" hot >"$T/user.out" 2>"$T/user.err" </dev/null) ||
	fail "as $user: record failed: $(head -c 300 "$T/user.err")"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
if [ "$paranoid" -le 2 ]; then
	grep -q 'perf events not allowed' "$T/user.err" &&
		fail "as $user (perf_event_paranoid $paranoid): cycles refused for permission: $(head -c 300 "$T/user.err")"
fi
n=$(grep -c 'counters unavailable' "$T/user.err")
[ "$n" -le 1 ] || fail "as $user: $n counters notices, want at most one: $(head -c 300 "$T/user.err")"
cs_stats "$T/user.cap" "$T/user.json"
py_check "$T/user.json" "$T/user.out" <<'PY'
tid = app_tid("hotspin")
ev = sorted(r["event"] for r in J["counters"] if r["tid"] == tid and not r["event"].startswith("sampling-"))
if [e for e in ("context-switches", "page-faults", "task-clock") if e not in ev]:
    fail("as an unprivileged user, hotspin counters %r lack the software set" % ev)
PY
exit 0

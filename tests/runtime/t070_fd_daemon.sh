#!/usr/bin/env bash
# A daemon-style program closes fds 3..1023 at start (the collector's sockets among them), opens
# its own files on those numbers and rewrites/rereads them with known content: the collector must
# never read, write, close or poll them (it checks each fd's identity before use and makes its
# listening socket again), its sender must stay cheap, and the recording still gets every mark.
# The same holds armed with no viewer at all, and with every CPU source on (sampling, counters,
# blocking calls: their fds and libunwind's are checked too). The first run has sampling and
# counters off, so it pins the collector's own sockets and wake-ups.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fd_daemon

mkdir -p "$T/files"
"$CUSCOPE" record --sample-hz 0 --counters none -o "$T/cap" -- "$PROGS/fd_daemon" "$T/files" 2 >"$T/app.out" 2>"$T/app.err" </dev/null &
CS_PID=$!
BG_PIDS+=("$CS_PID")
bg_wait "$CS_PID" 60
[ "$RC" = 124 ] && fail "cuscope record of fd_daemon ran past 60 s"
grep -q "^fd_daemon: ok" "$T/app.out" || fail "recorded: $(grep -m1 '^fd_daemon' "$T/app.out" | tail -1): $(tail -c 300 "$T/app.out" | tr '\n' '|')"
[ "$RC" = 0 ] || fail "cuscope record exited $RC, want 0"
cpu=$(awk '/^sender_cpu_ms/ {print $2}' "$T/app.out")
[ -n "$cpu" ] && [ "$cpu" -ge 0 ] || fail "no sender thread found in the program (sender_cpu_ms '$cpu')"
[ "$cpu" -le 300 ] || fail "sender thread used $cpu ms of CPU in 2 s (spinning on an fd it lost?)"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
rounds = app("rounds")
r = row("fd_daemon.round", "", "Mark")
if r["count"] + sum(x["count"] for x in J["losses"]) < rounds or r["count"] > rounds:
    fail("capture holds %d marks (+ %d counted lost), the program made %d" % (r["count"], sum(x["count"] for x in J["losses"]), rounds))
if r["count"] == 0:
    fail("no marks captured: the viewer never reached the collector again")
PY

# Defaults: every CPU-side source on.
rm -rf "$T/files" && mkdir -p "$T/files"
"$CUSCOPE" record -o "$T/cap2" -- "$PROGS/fd_daemon" "$T/files" 2 >"$T/app2.out" 2>"$T/app2.err" </dev/null &
CS_PID=$!
BG_PIDS+=("$CS_PID")
bg_wait "$CS_PID" 60
[ "$RC" = 124 ] && fail "cuscope record (defaults) of fd_daemon ran past 60 s"
grep -q "^fd_daemon: ok" "$T/app2.out" || fail "recorded with defaults: $(grep -m1 '^fd_daemon' "$T/app2.out" | tail -1): $(tail -c 300 "$T/app2.out" | tr '\n' '|')"
[ "$RC" = 0 ] || fail "cuscope record (defaults) exited $RC, want 0"

# Armed, no viewer: the sockets it loses are re-made, the program's files stay intact.
rm -rf "$T/files" && mkdir -p "$T/files" "$T/root"
CUSCOPE_SAMPLE_HZ=0 CUSCOPE_COUNTERS=none CUSCOPE_SESSION_ROOT=$T/root LD_PRELOAD=$BUILD/lib/cuscope/libcuscope.so CUSCOPE_ARM=1 \
	timeout 30 "$PROGS/fd_daemon" "$T/files" 1 >"$T/armed.out" 2>"$T/armed.err"
rc=$?
grep -q "^fd_daemon: ok" "$T/armed.out" || fail "armed: $(tail -c 300 "$T/armed.out" | tr '\n' '|')"
[ "$rc" = 0 ] || fail "armed fd_daemon exited $rc"
[ -s "$T/armed.err" ] && fail "armed: the collector wrote to the program's stderr: $(head -c 200 "$T/armed.err")"
exit 0

#!/usr/bin/env bash
# SIGTERM and SIGINT to `cuscope record` mid-run: the signal is forwarded to the app, the capture
# is finalized and holds every range the app completed (the app reports its counts on exit), and
# record exits with the app's exit code. With the app at default signal actions, record exits
# 128+15 and the capture still reads.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

# record_then_signal SIG NAME APPARGS...: starts a record, waits for the app's first output plus
# 1 s, sends SIG to the cuscope process only, waits for it to end.
record_then_signal()
{
	local sig=$1 name=$2
	shift 2
	# Background jobs of a script start with SIGINT ignored; give cuscope a terminal's default.
	env --default-signal=INT "$CUSCOPE" record -o "$T/$name.cap" -- "$PROGS/long_running" "$@" \
		>"$T/$name.out" 2>"$T/$name.err" </dev/null &
	CS_PID=$!
	BG_PIDS+=("$CS_PID")
	wait_until 20 file_has "$T/$name.out" '^pid ' || fail "$name: app did not start under cuscope record"
	sleep 1
	kill -"$sig" "$CS_PID"
	bg_wait "$CS_PID" 30
	[ "$RC" = 124 ] && fail "$name: cuscope record still running 30 s after SIG$sig"
	return 0
}

for sig in TERM INT; do
	case $sig in TERM) want=115 ;; INT) want=102 ;; esac
	record_then_signal "$sig" "$sig" -o "$T/$sig.done"
	[ "$RC" = "$want" ] || fail "SIG$sig: record exited $RC, want the app's $want"
	[ -f "$T/$sig.done" ] || fail "SIG$sig: the app did not finish (signal not forwarded?)"
	cs_stats "$T/$sig.cap" "$T/$sig.json"
	py_check "$T/$sig.json" "$T/$sig.out" <<'PY'
line = [l for l in OUT.splitlines() if l.startswith("done ")]
if not line:
    fail("app did not print its done line")
kv = dict(x.split("=") for x in line[0].split()[1:])
steps, loads = int(kv["steps"]), int(kv["loads"])
if steps < 20:
    fail("only %d steps in 1 s" % steps)
expect_nvtx([
    ("step", "", "PushPop", steps),
    ("fwd", "", "PushPop", steps),
    ("bwd", "", "PushPop", steps),
    ("load", "", "PushPop", loads),
    ("epoch", "", "Mark", steps // 10),
])
no_losses()
names = sorted(t["name"] for t in J["threads"])
for n in ("loader-0", "loader-1", "lr-main"):
    if n not in names:
        fail("thread %r missing from threads %r" % (n, names))
PY
done

# Default actions: the app dies by SIGTERM; what it sent before is in the capture.
record_then_signal TERM dflt -d -o "$T/dflt.done"
[ "$RC" = 143 ] || fail "default SIGTERM: record exited $RC, want 143"
[ -f "$T/dflt.done" ] && fail "default SIGTERM: the app finished instead of dying"
cs_stats "$T/dflt.cap" "$T/dflt.json"
py_check "$T/dflt.json" "$T/dflt.out" <<'PY'
process(app("pid"))
if row("step")["count"] < 20:
    fail("only %d steps in the capture after 1 s" % row("step")["count"])
PY
exit 0

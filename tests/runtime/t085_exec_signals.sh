#!/usr/bin/env bash
# No sampler signal survives an exec: a program that replaces itself 200 times (every exec
# variant), CPU-busy between execs with every signal blocked for the last half (as launchers do
# around an exec), sampled at the highest rate, with two busy loops beside it so the race is
# likely, ends with its own exit code (7), never killed by a real-time signal of ours; the mask it
# set before each exec arrives unchanged (it exits 9 otherwise), and an exec that fails first in
# each generation returns ENOENT and lets it carry on (it exits 5 otherwise). With CPU-time timers and with
# perf events (whose fd signals POLL_HUP when closed at exec; timer signals of deleted timers are
# dropped by Linux >= 6.13 but not by older kernels).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog exec_loop

# Load beside the program: each loop spins only while this test's shell lives, so it ends with
# the test however the test ends (a SIGKILLed `timeout` wrapper would leave its child spinning).
for _ in 1 2; do
	sh -c "while kill -0 $$ 2>/dev/null; do :; done" &
	BG_PIDS+=($!)
	disown $! # killed by the cleanup without a job-control line
done

for mode in timer perf; do
	start=$(date +%s%N)
	# Sampling from the start of each image (no lazy start), so every exec races a live sampler.
	CUSCOPE_LAZY_START_MS=0 CUSCOPE_SAMPLER_MODE=$mode timeout 100 "$CUSCOPE" record --sample-hz 10000 -o "$T/$mode.cap" -- \
		"$PROGS/exec_loop" 200 3000 >"$T/$mode.out" 2>"$T/$mode.err" </dev/null
	rc=$?
	echo "$mode: 200 execs under record: $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
	[ "$rc" = 124 ] && fail "$mode: record ran past 100 s"
	[ "$rc" = 9 ] && fail "$mode: the signal mask changed across an exec: $(head -c 300 "$T/$mode.err")"
	[ "$rc" = 5 ] && fail "$mode: a failed exec did not return ENOENT: $(head -c 300 "$T/$mode.err")"
	[ "$rc" = 7 ] || fail "$mode: record exited $rc, want the program's 7 (killed by signal $((rc - 128))?): $(head -c 300 "$T/$mode.err")"
done
exit 0

#!/usr/bin/env bash
# A program that starts with every signal blocked (a mask inherited across its own exec) and
# unblocks them later is neither killed nor handed a signal of ours: the sampler's calibration
# used to tgkill the program's thread 16 times, all left pending; at the unblock they arrived as
# signals not ours and took the default action (rc 192). Nothing is pending at its start, it
# lives, and it is sampled once it unblocks. Under both sampler modes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog signal_harm

for mode in timer perf; do
	CUSCOPE_SAMPLER_MODE=$mode timeout 60 "$CUSCOPE" record -o "$T/$mode.cap" -- "$PROGS/signal_harm" blockexec \
		>"$T/$mode.out" 2>"$T/$mode.err" </dev/null
	rc=$?
	out=$(tr '\n' ' ' <"$T/$mode.out")
	[ "$rc" = 0 ] || fail "$mode: record exited $rc, want 0 (program: $out): $(head -c 300 "$T/$mode.err")"
	grep -q "^pending 0$" "$T/$mode.out" || fail "$mode: signals pending at the program's start: $out"
	grep -q "^alive$" "$T/$mode.out" || fail "$mode: the program did not live past its unblock: $out"
	cs_stats "$T/$mode.cap" "$T/$mode.json"
	py_check "$T/$mode.json" <<'PY'
hot = [r for r in J.get("hot", []) if r["function"] == "signal_harm_spin"]
if not hot or hot[0]["samples"] < 20:
    fail("not sampled after the unblock: hot rows for signal_harm_spin %r" % hot)
PY
done
exit 0

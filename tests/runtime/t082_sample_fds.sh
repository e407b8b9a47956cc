#!/usr/bin/env bash
# A program that closes its descriptors daemon-style while being sampled (timers and perf events,
# counters on) and reuses the numbers for pipes: no byte of its pipes is read, written or closed
# by the collector (libunwind's validation pipe, perf sampling and counter fds), no crash, still
# sampled after the close.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog sample_stress

for mode in timer perf; do
	CUSCOPE_SAMPLER_MODE=$mode timeout 60 "$CUSCOPE" record -o "$T/$mode.cap" -- "$PROGS/sample_stress" fds \
		>"$T/$mode.out" 2>"$T/$mode.err" </dev/null
	rc=$?
	[ "$rc" = 0 ] || fail "$mode: record exited $rc, want 0: $(head -c 300 "$T/$mode.err")"
	grep -q "^corrupt 0$" "$T/$mode.out" || fail "$mode: the program's pipes were touched: $(tr '\n' ' ' <"$T/$mode.out")"
	grep -q "^closed 0$" "$T/$mode.out" || fail "$mode: the program's fds were closed or replaced: $(tr '\n' ' ' <"$T/$mode.out")"
	cs_stats "$T/$mode.cap" "$T/$mode.json"
	py_check "$T/$mode.json" <<'PY'
hot = [r for r in J.get("hot", []) if r["function"] == "sample_stress_spin"]
if not hot or hot[0]["samples"] < 20:
    fail("not sampled: hot rows for sample_stress_spin %r" % hot)
PY
done
exit 0

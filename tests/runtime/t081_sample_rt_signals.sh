#!/usr/bin/env bash
# A program with its own handlers for every real-time signal SIGRTMIN..SIGRTMAX, installed first
# thing or after sampling has started, never receives a sampler signal (it counts what arrives and
# tells its own queued signals from others), gets each of its own signals, reads its handlers
# back, and is still sampled; with CPU-time timers and with perf events. The later claim is said
# in one notice.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog sample_stress

for mode in timer perf; do
	for when in early late; do
		name=$mode-$when
		CUSCOPE_SAMPLER_MODE=$mode timeout 60 "$CUSCOPE" record -o "$T/$name.cap" -- "$PROGS/sample_stress" rt $when \
			>"$T/$name.out" 2>"$T/$name.err" </dev/null
		rc=$?
		[ "$rc" = 0 ] || fail "$name: record exited $rc, want 0: $(head -c 300 "$T/$name.out") $(head -c 300 "$T/$name.err")"
		n=$(sed -n 's/^signals //p' "$T/$name.out")
		grep -q "^foreign 0$" "$T/$name.out" || fail "$name: the program's handlers got signals it did not send: $(tr '\n' ' ' <"$T/$name.out")"
		grep -q "^own $n$" "$T/$name.out" || fail "$name: the program did not get each of its $n own signals: $(tr '\n' ' ' <"$T/$name.out")"
		cs_stats "$T/$name.cap" "$T/$name.json"
		py_check "$T/$name.json" <<'PY'
hot = [r for r in J.get("hot", []) if r["function"] == "sample_stress_spin"]
if not hot or hot[0]["samples"] < 20:
    fail("not sampled: hot rows for sample_stress_spin %r" % hot)
PY
		if [ $when = late ]; then
			"$CUSCOPE" info "$T/$name.cap" >"$T/$name.info" 2>&1
			c=$(grep -c "CPU sampling \(moved\|stays\)" "$T/$name.info")
			[ "$c" = 1 ] || fail "$name: want one notice about the claimed signal, got $c"
		fi
	done
done
exit 0

#!/usr/bin/env bash
# A program that closes its descriptors daemon-style while being sampled (timers and perf events)
# with perf-event counters on, and reuses the numbers for eventfds and epoll fds (anonymous inodes
# like the collector's perf fds: st_dev/st_ino cannot tell them apart) and pipes, then ends a
# second sampled thread: none of its eventfds, epoll fds or pipes is read, written, closed or
# replaced by the collector (perf sampling and counter fds, libunwind's validation pipe), no
# crash, still sampled after the close.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog sample_stress

# Counters that are perf events on every machine (software ones, through libpfm4), so counter fds
# exist in both modes; without libpfm4 only the sampler's perf fds are exercised.
counters=perf::cpu-clock
[ -e /usr/lib/x86_64-linux-gnu/libpfm.so.4 ] || ldconfig -p 2>/dev/null | grep -q libpfm.so.4 || counters=default

for mode in timer perf; do
	CUSCOPE_SAMPLER_MODE=$mode timeout 60 "$CUSCOPE" record --counters "$counters" -o "$T/$mode.cap" -- \
		"$PROGS/sample_stress" fds >"$T/$mode.out" 2>"$T/$mode.err" </dev/null
	rc=$?
	[ "$rc" = 0 ] || fail "$mode: record exited $rc, want 0: $(head -c 300 "$T/$mode.err")"
	out=$(tr '\n' ' ' <"$T/$mode.out")
	grep -q "^corrupt 0$" "$T/$mode.out" || fail "$mode: the program's pipes were touched: $out"
	grep -q "^closed 0$" "$T/$mode.out" || fail "$mode: the program's pipes were closed or replaced: $out"
	grep -q "^anon_bad 0$" "$T/$mode.out" ||
		fail "$mode: the program's eventfds/epoll fds were read, closed or replaced: $out $(head -c 300 "$T/$mode.err")"
	grep -Eq "^anon [1-9]" "$T/$mode.out" || fail "$mode: no eventfd/epoll fd reused a number: $out"
	cs_stats "$T/$mode.cap" "$T/$mode.json"
	py_check "$T/$mode.json" <<'PY'
hot = [r for r in J.get("hot", []) if r["function"] == "sample_stress_spin"]
if not hot or hot[0]["samples"] < 20:
    fail("not sampled: hot rows for sample_stress_spin %r" % hot)
PY
done
exit 0

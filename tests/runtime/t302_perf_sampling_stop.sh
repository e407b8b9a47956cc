#!/usr/bin/env bash
# Perf-event sampling (CUSCOPE_SAMPLER_MODE=perf) at 10 kHz ends without killing the program: a
# sample signal queued as the collector disarmed and closed a thread's perf fd used to arrive after
# the fd was forgotten, was taken for the program's own signal and got its default action, which
# ends the process (exit 192, signal 64, in 5 of 900 short runs on the 2-core VM before the fix).
# Now a closed fd's signals stay recognised. 300 short recordings, two at a time; every one must
# pass the program's exit status 0 through. (A race: a regression fails this run most times, not
# every time.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog sample_stress
CUSCOPE_SAMPLER_MODE=perf timeout 30 "$CUSCOPE" record --sample-hz 10000 -o "$T/probe.cap" -- true \
	>/dev/null 2>"$T/probe.err" || fail "record in perf mode failed: $(head -c 300 "$T/probe.err")"
"$CUSCOPE" info "$T/probe.cap" 2>&1 | grep -qi 'perf.*unavailable\|sampling unavailable' &&
	skip "perf-event sampling unavailable here"

bad=()
for i in $(seq 150); do
	for j in 1 2; do
		(
			CUSCOPE_SAMPLER_MODE=perf timeout 60 "$CUSCOPE" record --sample-hz 10000 -o "$T/r$j.cap" \
				-- "$PROGS/sample_stress" cpu 1000 >/dev/null 2>"$T/r$j.err" </dev/null
			echo $? >"$T/r$j.rc"
		) &
	done
	wait
	for j in 1 2; do
		rc=$(cat "$T/r$j.rc")
		[ "$rc" = 0 ] || bad+=("run $i.$j exit $rc")
	done
done
[ "${#bad[@]}" = 0 ] || fail "${#bad[@]} of 300 recordings did not pass exit 0 through: ${bad[*]:0:4}"
exit 0

#!/usr/bin/env bash
# Runs the libFuzzer harnesses built by `make fuzz` for FUZZ_SECONDS each (default 60) on a seed
# corpus made from real captures (tests/progs recorded with build/bin/cuscope when it is built,
# plus tests/bench/gen_capture output) and hand-made frame streams. Prints executions and crashes
# per harness; exits 1 if any harness found a crash, leak or timeout (reproducers in build-fuzz/).
set -u
cd "$(dirname "$0")/../.." || exit 2
F=${FUZZ_BUILD:-build-fuzz}
B=${BUILD:-build}
SECS=${FUZZ_SECONDS:-60}
mkdir -p "$F/seeds/capture" "$F/seeds/wire" "$F/seeds/elfsym" "$F/seeds/relay" "$F/seeds/trigger" \
	"$F/corpus/capture" "$F/corpus/wire" "$F/corpus/elfsym" "$F/corpus/relay" "$F/corpus/trigger" "$F/artifacts"

# Seeds: captures of real programs (small ones, so mutations stay fast).
if [ -x "$B/bin/cuscope" ]; then
	export CUSCOPE_COLLECTOR=${CUSCOPE_COLLECTOR:-$PWD/$B/lib/cuscope/libcuscope.so}
	for p in nvtx_threads nvtx_domains nvtx_unbalanced nvtx_payload exit_code; do
		[ -x "$B/tests/progs/$p" ] || continue
		timeout 60 "$B/bin/cuscope" record -o "$F/seeds/capture/$p.cap" -- "$B/tests/progs/$p" >/dev/null 2>&1
	done
fi
if [ -f "$B/obj/libviewer.a" ] && cc -O2 -Iinclude -D_GNU_SOURCE -o "$F/gen_capture" tests/bench/gen_capture.c \
	"$B/obj/libviewer.a" -lzstd -lz -lstdc++ -lm -lpthread 2>/dev/null; then
	"$F/gen_capture" "$F/seeds/capture/gen20.cap" 20 >/dev/null
	"$F/gen_capture" "$F/seeds/capture/gen200.cap" 200 >/dev/null
fi
# A format 1 capture, and small crafted ones (bomb, many sources, overlapping ranges) in both formats.
cp tests/data/*.cap "$F/seeds/capture/" 2>/dev/null
if cc -O2 -Iinclude -D_GNU_SOURCE -o "$F/crafted_capture" tests/runtime/crafted_capture.c -lzstd -lz 2>/dev/null; then
	for kind in bomb sources async manifests; do
		for ver in 1 2; do
			"$F/crafted_capture" "$kind" "$F/seeds/capture/crafted-$kind-$ver.cap" 64 "$ver" >/dev/null
		done
	done
fi
python3 tests/fuzz/make_wire_seeds.py "$F/seeds/wire"
# Relay streams (attach --ssh's local side) made of the same frames.
python3 tests/fuzz/make_relay_seeds.py "$F/seeds/wire" "$F/seeds/relay"
# ELF seeds: small real binaries, one stripped (no .symtab: .dynsym, build-id, debuglink paths).
for p in exit_code strip_spin; do
	[ -f "$B/tests/progs/$p" ] && cp "$B/tests/progs/$p" "$F/seeds/elfsym/$p"
done
[ -f "$F/seeds/elfsym/strip_spin" ] && objcopy --strip-all --add-gnu-debuglink="$F/seeds/elfsym/exit_code" \
	"$F/seeds/elfsym/strip_spin" "$F/seeds/elfsym/stripped" 2>/dev/null

# Trigger texts: notices as a viewer writes them, expressions; a capture holding firings.
printf '%s' 'trigger time_ns=123 pid=4 value_ns=5 pre_ns=6 held_ns=7 cause=sleep file=3:a b expr=range:x>5ms' \
	>"$F/seeds/trigger/notice"
printf '%s' 'range:train/step>p99*2' >"$F/seeds/trigger/pct"
printf '%s' 'gpu-idle>1.5ms' >"$F/seeds/trigger/idle"
[ -x "$B/tests/progs/trigger_stall" ] && [ -x "$B/bin/cuscope" ] &&
	timeout 60 "$B/bin/cuscope" record -o "$F/seeds/capture/trigger.cap" --trigger 'range:step>20ms' \
		-- "$B/tests/progs/trigger_stall" ranges 8 2 4 30 20 50 >/dev/null 2>&1

status=0
for h in ${FUZZ_HARNESSES:-capture wire elfsym relay trigger}; do
	bin=$F/fuzz_$h
	[ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz)"; exit 2; }
	log=$F/fuzz_$h.log
	# Fork mode keeps going after an out-of-memory or a timeout (saved as oom-*/timeout-* and
	# counted apart); a crash (ASan/UBSan report, leak, abort) stops the run and fails.
	"$bin" -fork=1 -ignore_ooms=1 -ignore_timeouts=1 -ignore_crashes=0 -max_total_time="$SECS" -timeout=10 \
		-rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=262144 \
		-artifact_prefix="$F/artifacts/$h-" "$F/corpus/$h" "$F/seeds/$h" >"$log" 2>&1
	rc=$?
	execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
	crashes=$(find "$F/artifacts" -name "$h-crash-*" -o -name "$h-leak-*" -o -name "$h-undefined-*" | wc -l)
	ooms=$(find "$F/artifacts" -name "$h-oom-*" | wc -l)
	touts=$(find "$F/artifacts" -name "$h-timeout-*" | wc -l)
	echo "fuzz_$h: ${SECS}s, ${execs:-?} executions, $(ls "$F/corpus/$h" | wc -l) corpus inputs, exit $rc, $crashes crashes, $ooms out-of-memory, $touts timeouts (artifacts: $F/artifacts/$h-*)"
	# fork mode exits non-zero after ignored OOMs/timeouts; only crashes (or a failure without any) count
	if [ "$crashes" != 0 ] || { [ "$rc" != 0 ] && [ $((ooms + touts)) = 0 ]; }; then
		status=1
		grep -m3 -E 'ERROR|SUMMARY|Test unit written' "$log" | sed 's/^/    /'
	fi
done
exit $status

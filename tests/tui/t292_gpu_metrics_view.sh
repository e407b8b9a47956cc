#!/usr/bin/env bash
# GPU hardware metrics in the UI (the crafted capture of t290, metrics_capture.c): under the GPU
# header "GPU0 H200" one counter lane per metric labelled by its short name ("sm", "tensor rt",
# "dram rd") with the value at the time cursor, drawn as spark cells; the GPU's header line has the
# last second's percentages with a bar ("tensor rt ▄38%") and rates ("dram rd 5.0 GB/s"), not the
# raw cycle counts.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ -f "$BUILD/obj/libviewer.a" ] || skip "no $BUILD/obj/libviewer.a"
for san in "" "-fsanitize=address,undefined"; do
	# shellcheck disable=SC2086
	cc -O2 $san -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/runtime/metrics_capture.c" \
		"$BUILD/obj/libviewer.a" -lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" && break
done
[ -x "$T/gen" ] || fail "cannot build metrics_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/m.cap" || fail "metrics_capture failed"

tm_run_cuscope view "$T/m.cap"
tm_wait 'GPU0 H200' 15 "view: the GPU header row"
tm_wait '   sm [0-9.]+ [kMGT]?cyc/s' 5 "view: the sm lane with its value"
tm_wait '   tensor rt [0-9]+%' 5 "view: the tensor lane with its value"
tm_wait '   dram rd [0-9.]+ [kMGT]?B/s' 5 "view: the dram read lane with its value"
tm_screen >"$T/screen"
# The header (second line): the last second's tensor mean (37.5 %) with its bar, the dram rate.
head=$(sed -n 2p "$T/screen")
case $head in
*"GPU0 H200"*"tensor rt "[▁▂▃▄▅▆▇█]"38%"*"dram rd "[0-9.]*" GB/s"*) ;;
*) fail "GPU header lacks the hardware metrics: $head" ;;
esac
case $head in *cyc/s*) fail "GPU header shows raw cycle counts: $head" ;; esac
# Spark cells on the tensor lane (it is 0, 25, 50, 75 % in turn).
grep -E '   tensor rt' "$T/screen" | grep -qE '[▁▂▃▄▅▆▇█]' || fail "tensor lane has no spark cells: $(grep 'tensor rt' "$T/screen")"
tm_keys q
tm_wait_exit 0 10
exit 0

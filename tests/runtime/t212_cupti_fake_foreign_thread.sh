#!/usr/bin/env bash
# CUPTI without a GPU: activity buffers that fill up are handed back on a thread of the stand-in
# libcupti (as CUPTI's own worker thread does), a thread the collector does not own and never saw
# make a CUDA call, while the program's threads go on launching (two at once, after the first); with the periodic flush pushed out
# (CUSCOPE_FLUSH_MS=10000) at least one buffer comes back that way. Every kernel is still linked to
# its thread, by callback and by activity record, and no record is dropped (the collector's spare
# buffers come back to it from the sender). The program's exit does not wait out that period.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti

export CUSCOPE_FLUSH_MS=10000
for mode in callback activity; do
	# 216 bytes a kernel record (+ 40 an API record): 19 418 kernels fill a 4 MiB buffer; 30 000.
	t0=$(date +%s%N)
	fc_record "$mode" "$mode" 10000 1 2 concurrent
	# The program's exit joins the flush thread: it once slept out its whole 10 s period.
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -lt 9000 ] || fail "$mode: recording took $ms ms with a 10 s flush period (exit waited for it?)"
	fc_check "$mode" 10000 1
done
exit 0

#!/usr/bin/env bash
# CUPTI without a GPU (stand-in libcupti, tests/support/fake_cupti.c), one thread: with API calls
# recorded by callback (adaptive, the default; both domains; runtime only) and by activity record, every kernel and copy is linked to the call that
# launched it, each recorded call is there once by name, the 8 cheap calls (cudaGetDevice) made
# before each launch are not recorded, and the program's exit status comes through. The first
# call lasts 150 ms (CUDA creates its context then), long enough for the collector to switch its
# clock to ticks inside it: recorded by callback, that call was once dropped (as ring_full). The
# program's first call, cudaFree(0), injects the collector while under way (as the CUDA driver
# does): its exit callback comes without an entry, and it was once recorded as starting at boot.
# Records carry CUPTI's clock, moved to CLOCK_MONOTONIC as they are decoded; once more with the
# timestamp callback instead (CUSCOPE_CUPTI_MONO_CLOCK=1). Then the same program armed (run --detached) and attached twice for a second while it launches:
# the late start, the detach (CUPTI finalized at the next call's exit) and a new start.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti

for mode in adaptive callback callback-runtime activity; do
	fc_record "$mode" "$mode" 3000 8 0
	fc_check "$mode" 3000
	fc_attach "$mode" "$mode-attach"
done
CUSCOPE_CUPTI_MONO_CLOCK=1 fc_record activity mono-clock 3000 8 0
FC_WANT_TIMESTAMP_CALLBACK=1 fc_check mono-clock 3000
exit 0

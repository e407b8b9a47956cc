#!/usr/bin/env bash
# CUPTI without a GPU: three threads launch at once (the main thread first, then two together),
# each after 8 cheap calls a launch; by callback and by activity record, every kernel is linked to
# the thread that launched it. Correlation ids are then sparse (9 a recorded launch) and, by
# callback, a drain's API calls of all threads reach the viewer before their kernels: the store's
# correlation map once grew too slowly for that and lost the links of one thread's kernels.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti

for mode in callback activity; do
	fc_record "$mode" "$mode" 1000 8 2 concurrent
	fc_check "$mode" 1000
done
exit 0

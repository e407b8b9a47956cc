#!/usr/bin/env bash
# CUPTI without a GPU: eight threads, one after another, each launch 300 kernels and end right
# after their last CUDA call (the program ends right after the last one). By callback the API
# records wait in the rings of threads that are gone; they are still all drained and every kernel
# is linked to the thread that launched it; by activity record alike.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti

for mode in callback activity; do
	fc_record "$mode" "$mode" 300 2 8 short
	fc_check "$mode" 300
done
exit 0

#!/usr/bin/env bash
# GPU tests (CUPTI kernels, memcpy, streams). They run only where a GPU answers nvidia-smi;
# elsewhere this prints a visible "SKIP: no GPU" and exits 77.
set -u
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU"
	exit 77
fi
echo "SKIP: GPU tests not written yet ($(nvidia-smi -L | head -n 1))"
exit 77

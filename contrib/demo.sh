#!/usr/bin/env bash
# `make demo`: opens the live UI on something worth watching. On a GPU host with a CUDA workload
# (CUSCOPE_DEMO_CMD, or a CUDA test program if one is built) it traces that; otherwise it runs
# the CPU-only NVTX demo: a main thread doing step/fwd/bwd ranges and named loader threads.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CUSCOPE=$BUILD/bin/cuscope
[ -x "$CUSCOPE" ] || {
	echo "demo: $CUSCOPE not built (run make)" >&2
	exit 1
}
[ -t 1 ] || {
	echo "demo: needs a terminal (the live UI is interactive)" >&2
	exit 1
}

if [ -n "${CUSCOPE_DEMO_CMD:-}" ]; then
	echo "demo: tracing \$CUSCOPE_DEMO_CMD: $CUSCOPE_DEMO_CMD"
	# shellcheck disable=SC2086 # the command is words on purpose
	exec "$CUSCOPE" -- $CUSCOPE_DEMO_CMD
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	for prog in "$BUILD"/tests/gpu/*; do
		if [ -x "$prog" ] && [ -f "$prog" ]; then
			echo "demo: GPU found ($(nvidia-smi -L | head -n 1)); tracing $prog"
			exec "$CUSCOPE" -- "$prog"
		fi
	done
	echo "demo: GPU found but no CUDA workload built yet; running the CPU NVTX demo"
else
	echo "demo: no GPU; running the CPU NVTX demo (threads lr-main, loader-0..3)"
fi
echo "demo: q quits (then [s]top), Ctrl-C stops the demo program; it ends by itself after 120 s"
sleep 1
exec "$CUSCOPE" -- "$BUILD/tests/progs/long_running" -t 120 -n 4

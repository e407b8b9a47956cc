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

# The demo ends when the user stops it: [s]top sends SIGTERM, Ctrl-C SIGINT, and a program that
# dies of either makes cuscope exit 128+N (143, 130). That is not a failure of `make demo`; any
# other status (cuscope could not start, the program failed) is passed through.
run_demo()
{
	"$CUSCOPE" -- "$@"
	rc=$?
	case $rc in 0 | 130 | 143) exit 0 ;; *) exit "$rc" ;; esac
}
if [ -n "${CUSCOPE_DEMO_CMD:-}" ]; then
	echo "demo: tracing \$CUSCOPE_DEMO_CMD: $CUSCOPE_DEMO_CMD"
	# shellcheck disable=SC2086 # the command is words on purpose
	run_demo $CUSCOPE_DEMO_CMD
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	gpu=$(nvidia-smi -L | head -n 1)
	if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
		echo "demo: GPU found ($gpu); tracing a PyTorch training loop with NVTX ranges for 120 s"
		run_demo python3 tests/gpu/torch_loop.py --seconds 120
	fi
	if [ -x "$BUILD/tests/gpu/launch_bench" ]; then
		echo "demo: GPU found ($gpu), no PyTorch; tracing the CUDA launch workload"
		run_demo "$BUILD/tests/gpu/launch_bench"
	fi
	echo "demo: GPU found but no CUDA workload built yet; running the CPU NVTX demo"
else
	echo "demo: no GPU; running the CPU NVTX demo (threads lr-main, loader-0..3)"
fi
echo "demo: q quits (then [s]top), Ctrl-C stops the demo program; it ends by itself after 120 s"
sleep 1
# -d: die of SIGINT/SIGTERM like any program. Without it long_running catches them and exits
# 100+N (102, 115), the exit-code tests' marker, which the demo would report as a failure.
run_demo "$BUILD/tests/progs/long_running" -t 120 -n 4 -d

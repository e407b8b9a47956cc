#!/usr/bin/env bash
# Builds the CUDA test and benchmark programs of tests/gpu/ into $BUILD/tests/gpu/ (default
# build/tests/gpu). Run on the build machine (needs nvcc, no GPU); the GPU host only runs them.
# Environment: BUILD (default build), CUDA_HOME (default /usr/local/cuda), NVCC_ARCH (default sm_90).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
ARCH=${NVCC_ARCH:-sm_90}
OUTDIR=$BUILD/tests/gpu
if [ ! -x "$NVCC" ]; then
	echo "tests/gpu/build.sh: $NVCC not found; GPU test programs not built" >&2
	exit 0
fi
mkdir -p "$OUTDIR"
for src in tests/gpu/cuda_counts.cu tests/gpu/cuda_graph.cu tests/gpu/cupti_rival.cu tests/gpu/launch_bench.cu; do
	bin=$OUTDIR/$(basename "$src" .cu)
	if [ "$bin" -nt "$src" ] && [ "$bin" -nt tests/gpu/build.sh ]; then
		continue
	fi
	echo "  NVCC $src"
	# cudart is linked statically (nvcc's default), so the binaries need only the driver and,
	# for cupti_rival, libcupti.so.13 (dlopened) at run time.
	"$NVCC" -O2 -arch="$ARCH" -lineinfo -o "$bin" "$src" -ldl
done

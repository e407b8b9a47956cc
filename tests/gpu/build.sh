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
# The overhead floor (bench.sh): a CUPTI kernels-only injector, linked against the toolkit's libcupti
# with a run path, since the GPU host has the same toolkit layout.
floor=$OUTDIR/libfloor_injector.so
if [ ! "$floor" -nt tests/gpu/floor_injector.c ] || [ ! "$floor" -nt tests/gpu/build.sh ]; then
	echo "  CC tests/gpu/floor_injector.c"
	${CC:-gcc} -O2 -shared -fPIC -fvisibility=hidden -I"$CUDA_HOME/include" -I"$CUDA_HOME/extras/CUPTI/include" \
		-o "$floor" tests/gpu/floor_injector.c -L"$CUDA_HOME/extras/CUPTI/lib64" -L"$CUDA_HOME/lib64" \
		-lcupti -lpthread "-Wl,-rpath,$CUDA_HOME/extras/CUPTI/lib64:$CUDA_HOME/lib64"
fi
# The PM-sampling counter availability image of a GPU (the data of tests/unit/test_pmconfig.c's
# GH100 case), linked like the floor injector; libcuda from the toolkit's stub, the driver's at run time.
pmav=$OUTDIR/pm_availability
if [ ! "$pmav" -nt tests/gpu/pm_availability.c ] || [ ! "$pmav" -nt tests/gpu/build.sh ]; then
	echo "  CC tests/gpu/pm_availability.c"
	${CC:-gcc} -O2 -Wall -Wextra -I"$CUDA_HOME/include" -I"$CUDA_HOME/extras/CUPTI/include" \
		-o "$pmav" tests/gpu/pm_availability.c -L"$CUDA_HOME/extras/CUPTI/lib64" -L"$CUDA_HOME/lib64" \
		-L"$CUDA_HOME/lib64/stubs" -lcupti -lcuda "-Wl,-rpath,$CUDA_HOME/extras/CUPTI/lib64:$CUDA_HOME/lib64"
fi
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

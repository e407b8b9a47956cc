#!/usr/bin/env bash
# Installs what building and testing cuscope needs (`make deps`). As root, missing Debian/Ubuntu
# packages are installed with apt-get; otherwise the missing ones are listed and we go on.
# Then build/venv gets the `nvtx` Python package for the Python test (skipped quietly offline).
set -u
cd "$(dirname "$0")/.." || exit 1

PACKAGES="build-essential pkg-config libncurses-dev libcmocka-dev tmux python3 python3-venv python3-pip"
PACKAGES="$PACKAGES libunwind-dev libpfm4-dev libzstd-dev zlib1g-dev procps"
# libiberty: the C++ demangler; libc6-dbg, binutils, xz-utils: the separate-debug-file tests.
PACKAGES="$PACKAGES libiberty-dev libc6-dbg binutils xz-utils"
# openssh-client, openssh-server: the attach --ssh tests start a private sshd on 127.0.0.1.
PACKAGES="$PACKAGES openssh-client openssh-server"
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

say()
{
	echo "deps: $*"
}

missing=""
if command -v dpkg-query >/dev/null 2>&1; then
	for p in $PACKAGES; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
		case $status in *" installed") ;; *) missing="$missing $p" ;; esac
	done
else
	say "no dpkg-query: not a Debian/Ubuntu system, install by hand: $PACKAGES"
fi

if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q || say "apt-get update failed"
		# shellcheck disable=SC2086 # one word per package
		apt-get install -y -q --no-install-recommends $missing || {
			say "apt-get install failed"
			exit 1
		}
	else
		say "missing packages (not root, not installing):$missing"
		say "  sudo apt-get install --no-install-recommends$missing"
	fi
else
	say "all packages present"
fi

if [ -d "$CUDA_HOME/include/nvtx3" ]; then
	say "NVTX headers: $CUDA_HOME/include/nvtx3"
else
	say "WARNING: $CUDA_HOME/include/nvtx3 not found: install the CUDA toolkit (or set CUDA_HOME);"
	say "         the collector and the test programs need the NVTX3 headers to build"
fi

# Python venv with the nvtx package, for tests/runtime/t010_python_nvtx.sh.
VENV=$BUILD/venv
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import nvtx' 2>/dev/null; then
	say "python venv: $VENV (nvtx present)"
elif ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
	say "no python3 venv module: the Python NVTX test will be skipped"
else
	mkdir -p "$BUILD"
	if { [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV" >/dev/null 2>&1; } &&
		timeout 300 "$VENV/bin/python" -m pip install -q --disable-pip-version-check nvtx \
			>"$BUILD/venv-pip.log" 2>&1; then
		say "python venv: $VENV (installed nvtx)"
	else
		say "could not install the nvtx Python package (offline?): the Python NVTX test will be skipped"
	fi
fi
# The official Perfetto protos (perfetto wheel) and protobuf >= 6.31 in the same venv, for
# tests/runtime/t162_export_perfetto.sh (which makes a venv of its own, or skips, without them).
if [ -x "$VENV/bin/python" ]; then
	if "$VENV/bin/python" -c 'import google.protobuf as p, sys; from perfetto.protos.perfetto.trace import perfetto_trace_pb2
sys.exit(tuple(map(int, p.__version__.split(".")[:2])) < (6, 31))' 2>/dev/null; then
		say "python venv: $VENV (perfetto protos present)"
	elif timeout 300 "$VENV/bin/python" -m pip install -q --disable-pip-version-check perfetto 'protobuf>=6.31' \
		>"$BUILD/venv-pip-perfetto.log" 2>&1; then
		say "python venv: $VENV (installed perfetto, protobuf)"
	else
		say "could not install perfetto/protobuf (offline?): the Perfetto export test makes its own venv or skips"
	fi
fi
exit 0

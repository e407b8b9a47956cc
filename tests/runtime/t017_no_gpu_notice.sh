#!/usr/bin/env bash
# A CUDA program on a machine without a GPU or driver: record warns in exactly one line that GPU
# tracing is unavailable and why, and still passes the exit code through and keeps CPU lanes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cuda_probe
if nvidia-smi -L >/dev/null 2>&1; then
	skip "a GPU is present: the driver initialises, so there is nothing to warn about"
fi
cudart=""
for c in "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcudart.so.* "${CUDA_HOME:-/usr/local/cuda}"/targets/x86_64-linux/lib/libcudart.so.*; do
	[ -f "$c" ] && cudart=$c && break
done
[ -n "$cudart" ] || skip "no libcudart in the CUDA toolkit"

"$CUSCOPE" record -o "$T/cap" -- "$PROGS/cuda_probe" "$cudart" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] || fail "record exited $rc, want the app's 0; stderr: $(cat "$T/err")"
grep -q '^devices 0' "$T/out" || fail "probe did not run as expected: $(cat "$T/out")"
n=$(grep -c 'GPU tracing' "$T/err")
[ "$n" = 1 ] || fail "want exactly one 'GPU tracing' warning line, got $n: $(tr '\n' '|' <"$T/err")"
grep -q 'no GPU or no driver' "$T/err" || fail "warning does not say why: $(cat "$T/err")"
"$CUSCOPE" stats --format=json "$T/cap" >"$T/stats.json" || fail "stats failed on the capture"
grep -q '"threads"' "$T/stats.json" || fail "no threads section"
exit 0

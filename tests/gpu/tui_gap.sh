#!/usr/bin/env bash
# GPU-host TUI test: a PyTorch loop with a planted ~500 ms GPU idle gap (tests/gpu/torch_gap.py) is
# recorded, then shown by `cuscope view` under tmux: the gap is shaded on the stream lane with its
# length written in it ("idle 5xxms"), the header shows SM busy, and the NVTX panel shows the slow
# steps (max >= 400 ms while p50 is far below). Standalone: sources nothing, SKIPs without a GPU.
# usage: tests/gpu/tui_gap.sh   (exit 0 pass, 1 fail, 77 skip); or source it and call tui_gap_test.
# Environment: CUSCOPE (default build/bin/cuscope), PYTHON (default python3).

tui_gap_test()
{
	local root cuscope py tmp sock screen rc
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	cuscope=${CUSCOPE:-$root/build/bin/cuscope}
	py=${PYTHON:-python3}
	if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
		echo "SKIP: no GPU"
		return 77
	fi
	if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
		echo "SKIP: no PyTorch with CUDA"
		return 77
	fi
	command -v tmux >/dev/null || { echo "SKIP: no tmux"; return 77; }
	[ -x "$cuscope" ] || { echo "FAIL: $cuscope not built"; return 1; }
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-tui-gap.XXXXXX")
	sock="cuscope-tui-gap-$$"
	rc=0
	timeout 300 "$cuscope" record -o "$tmp/cap" -- "$py" "$root/tests/gpu/torch_gap.py" 24 >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^gaps 3 steps 24' "$tmp/out"; then
		echo "FAIL: record exited $rc: $(tail -n 2 "$tmp/err" | tr '\n' '|') $(cat "$tmp/out")"
		rm -rf "$tmp"
		return 1
	fi
	export LC_ALL=C.UTF-8 LANG=C.UTF-8
	tmux -L "$sock" -f /dev/null new-session -d -s t -x 200 -y 50 \
		"$cuscope view --gap-ms 100 $tmp/cap; sleep 3600" || { echo "FAIL: tmux new-session failed (tmux server?)"; return 1; }
	screen() { tmux -L "$sock" capture-pane -p -t t; }
	local ok=0 i
	for i in $(seq 100); do
		screen | grep -qE 'idle [0-9.]+ms' && ok=1 && break
		sleep 0.2
	done
	screen >"$tmp/screen"
	tmux -L "$sock" send-keys -t t q
	sleep 0.5
	tmux -L "$sock" kill-server 2>/dev/null
	if [ "$ok" != 1 ]; then
		echo "FAIL: no shaded 'idle NNNms' gap on the stream lanes; screen: $(head -n 12 "$tmp/screen" | tr -s ' ' | tr '\n' '|')"
		rm -rf "$tmp"
		return 1
	fi
	grep -qE 'idle (4[0-9]{2}|5[0-9]{2}|6[0-9]{2})(\.[0-9])?ms' "$tmp/screen" ||
		{ echo "FAIL: gap length not ~500 ms: $(grep -oE 'idle [0-9.]+ms' "$tmp/screen" | sort -u | tr '\n' ' ')"; rm -rf "$tmp"; return 1; }
	grep -qE 'SM .* +[0-9]+%' "$tmp/screen" || { echo "FAIL: no SM busy header"; rm -rf "$tmp"; return 1; }
	# NVTX panel: the step row's max shows the stall (>= 400 ms, in ms or s) while p50 is small.
	if ! "$py" - "$tmp/screen" <<'PY'; then
import re, sys
rows = [l for l in open(sys.argv[1], encoding="utf-8") if re.match(r"\s*step\s+\d+\s", l)]
if not rows:
    print("FAIL: NVTX panel has no 'step' row"); sys.exit(1)
f = rows[0].split()
def ns(t):
    m = re.match(r"([0-9.]+)(ns|us|ms|s)$", t)
    return float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
n, p50, p90, p99, mx = int(f[1]), ns(f[2]), ns(f[3]), ns(f[4]), ns(f[5])
if n != 24 or mx < 400e6 or p50 > mx / 2:
    print("FAIL: step row %r: want n 24, max >= 400ms, p50 well below max" % rows[0].strip()); sys.exit(1)
PY
		rm -rf "$tmp"
		return 1
	fi
	echo "PASS: gap shaded ($(grep -oE 'idle [0-9.]+ms' "$tmp/screen" | head -n 1)), slow steps in the NVTX panel"
	rm -rf "$tmp"
	return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	tui_gap_test
	exit $?
fi

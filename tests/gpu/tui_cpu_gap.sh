#!/usr/bin/env bash
# GPU-host TUI test: a PyTorch loop whose main-thread data loading sleeps 0.3 s every 5th step
# (tests/gpu/torch_loader_sleep.py) is recorded and opened with `cuscope view` under tmux; `]`
# jumps from GPU idle gap to gap, and Enter on a ~300 ms gap explains it: the launching thread was
# blocked in the sleep (clock_nanosleep, nanosleep or select) for most of the gap.
# Standalone: sources nothing, SKIPs without a GPU.
# usage: tests/gpu/tui_cpu_gap.sh   (exit 0 pass, 1 fail, 77 skip); or source it and call
# tui_cpu_gap_test. Environment: CUSCOPE (default build/bin/cuscope), PYTHON (default python3).

tui_cpu_gap_test()
{
	local root cuscope py tmp sock rc
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
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-tui-cpu-gap.XXXXXX")
	sock="cuscope-tui-cpu-gap-$$"
	rc=0
	timeout 300 "$cuscope" record -o "$tmp/cap" -- "$py" "$root/tests/gpu/torch_loader_sleep.py" 20 \
		>"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^stalls 4 steps 20' "$tmp/out"; then
		echo "FAIL: record exited $rc: $(tail -n 2 "$tmp/err" | tr '\n' '|') $(cat "$tmp/out")"
		rm -rf "$tmp"
		return 1
	fi
	export LC_ALL=C.UTF-8 LANG=C.UTF-8
	tmux -L "$sock" -f /dev/null new-session -d -s t -x 200 -y 60 \
		"$cuscope view --gap-ms 100 $tmp/cap; sleep 3600" || { echo "FAIL: tmux new-session failed (tmux server?)"; return 1; }
	screen() { tmux -L "$sock" capture-pane -p -t t; }
	keys() { tmux -L "$sock" send-keys -t t "$@"; sleep 0.4; }
	local i ok=0 seen="" gaps=0
	for i in $(seq 50); do
		screen | grep -q 'step' && break
		sleep 0.2
	done
	keys Home
	# Gap after gap: Enter explains each; a ~300 ms one must name the sleep.
	for _ in $(seq 12); do
		keys ']'
		screen >"$tmp/screen"
		grep -q 'no GPU idle gap after the cursor' "$tmp/screen" && break
		keys Enter
		screen >"$tmp/details"
		grep -qE 'GPU idle +[0-9.]+m?s on ' "$tmp/details" || { keys Escape; continue; }
		gaps=$((gaps + 1))
		seen="$seen $(grep -oE 'GPU idle +[0-9.]+m?s' "$tmp/details" | head -n 1 | awk '{ print $3 }')"
		if grep -qE 'GPU idle +(2[5-9][0-9]|3[0-4][0-9])(\.[0-9])?ms' "$tmp/details" &&
			grep -qE 'blocked in +(clock_nanosleep|nanosleep|select) ' "$tmp/details"; then
			ok=1
			break
		fi
		keys Escape
	done
	tmux -L "$sock" send-keys -t t Escape q
	sleep 0.5
	tmux -L "$sock" kill-server 2>/dev/null
	if [ "$ok" != 1 ]; then
		echo "FAIL: no ~300 ms GPU gap explained by the sleep ($gaps gaps explained, lengths:$seen); last details: $(grep -E 'GPU idle|thread|blocked|on CPU|NVTX' "$tmp/details" 2>/dev/null | tr -s ' ' | tr '\n' '|')"
		rm -rf "$tmp"
		return 1
	fi
	echo "PASS: $(grep -oE 'GPU idle +[0-9.]+ms' "$tmp/details" | head -n 1 | tr -s ' ') explained: $(grep -oE 'blocked in +[a-z_]+ [0-9.]+m?s' "$tmp/details" | head -n 1 | tr -s ' ')"
	rm -rf "$tmp"
	return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	tui_cpu_gap_test
	exit $?
fi

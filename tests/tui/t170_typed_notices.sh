#!/usr/bin/env bash
# Typed notices (wire version 2: a topic next to the level). The UI finds "GPU unavailable" and the
# overhead-budget note by topic:
# - a capture written by wire version 1 (tests/data/capture_wire1.cap: `record --sample-hz 10000
#   --overhead-budget 3 -- sh -c "./cuda_probe libcudart.so; ./sample_stress pingpong 60000"` by the
#   cuscope before the bump) still opens in view, info and stats, its notices with their topics;
# - a capture recorded now shows the same, the collector having set the topics.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog sample_stress
need_prog cuda_probe

OLD=$ROOT/tests/data/capture_wire1.cap

# view_shows CAPTURE GPU(0|1) WHAT: the process header says why GPU lanes are missing (when GPU=1)
# and the status line carries the overhead-budget note.
view_shows()
{
	TM_WIDTH=160 TM_HEIGHT=30 tm_run_cuscope view "$1"
	tm_wait '^ cuscope .*overhead budget 3%: ' 15 "$3: the status line carries the budget note"
	if [ "$2" = 1 ]; then
		tm_wait 'cuda_probe [0-9]+ .*GPU: unavailable \(GPU tracing: the program loaded CUDA' 5 \
			"$3: the cuda_probe header says GPU is unavailable"
	fi
	tm_screen | grep -E 'sample_stress [0-9]+ ' | grep -q 'GPU: unavailable' &&
		fail "$3: a process without a GPU notice says GPU unavailable"
	tm_keys q
	tm_wait_exit 0 10
	tm kill-session -t t
	rm -f "$T/exit"
}

# The wire version 1 capture.
"$CUSCOPE" info "$OLD" >"$T/old.info" 2>&1 || fail "info of the wire 1 capture failed: $(head -c 300 "$T/old.info")"
grep -q '^processes   3$' "$T/old.info" || fail "info of the wire 1 capture: not 3 processes: $(head -c 600 "$T/old.info")"
grep -q '0 corrupt, complete' "$T/old.info" || fail "info of the wire 1 capture: chunks refused: $(grep chunks "$T/old.info")"
"$CUSCOPE" stats --format=json "$OLD" >"$T/old.json" 2>"$T/old.err" || fail "stats of the wire 1 capture failed: $(cat "$T/old.err")"
grep -q 'sample_stress' "$T/old.json" || fail "stats of the wire 1 capture: no sample_stress process"
view_shows "$OLD" 1 "wire 1 capture"

# A capture recorded now (wire 2): the GPU notice needs a CUDA runtime to load.
cudart=""
for c in "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcudart.so.* "${CUDA_HOME:-/usr/local/cuda}"/targets/x86_64-linux/lib/libcudart.so.*; do
	[ -f "$c" ] && cudart=$c && break
done
gpu=0
probe=true
if [ -n "$cudart" ] && ! nvidia-smi -L >/dev/null 2>&1; then
	gpu=1
	probe="$PROGS/cuda_probe $cudart"
fi
timeout 120 "$CUSCOPE" record --sample-hz 10000 --overhead-budget 3 -o "$T/new.cap" -- \
	sh -c "$probe; $PROGS/sample_stress pingpong 60000" >"$T/new.out" 2>"$T/new.err" </dev/null ||
	fail "record failed: $(head -c 300 "$T/new.err")"
view_shows "$T/new.cap" "$gpu" "wire 2 capture"
exit 0

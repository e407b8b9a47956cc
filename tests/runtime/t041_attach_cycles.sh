#!/usr/bin/env bash
# 20 attach/detach cycles on one process: every attach records samples, no collector thread is
# left behind after each detach, and the process finishes with its normal output and exit code.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target

"$PROGS/attach_target" 30 >"$T/app.out" 2>&1 &
app=$!
BG_PIDS+=("$app")
sleep 0.3
for i in $(seq 1 20); do
	timeout 30 "$CUSCOPE" attach --record -o "$T/c$i" --duration 0.3 "$app" >/dev/null 2>"$T/err$i"
	rc=$?
	[ "$rc" = 0 ] || fail "attach $i exited $rc: $(cat "$T/err$i")"
	"$CUSCOPE" stats --format=json --report=hot "$T/c$i" >"$T/s$i.json" 2>/dev/null || fail "stats of attach $i failed"
	n=$("$PYTHON" -c 'import json,sys; print(sum(r["samples"] for r in json.load(open(sys.argv[1]))["hot"]))' "$T/s$i.json")
	[ "${n:-0}" -gt 0 ] || fail "attach $i recorded no samples"
	# Detach leaves the library inert: its threads stop (allow a moment for them to exit).
	for _ in $(seq 1 50); do
		[ "$(ls /proc/"$app"/task | wc -l)" = 1 ] && break
		sleep 0.1
	done
	threads=$(ls /proc/"$app"/task | wc -l)
	[ "$threads" = 1 ] || fail "after detach $i the target has $threads threads (collector threads left running)"
done
kill -0 "$app" 2>/dev/null || fail "the target died during the cycles"
kill -TERM "$app"
wait "$app"
exit 0

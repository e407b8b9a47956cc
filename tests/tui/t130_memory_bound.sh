#!/usr/bin/env bash
# The live viewer's memory is bounded (--memory-mb): under a steady flood of NVTX ranges for 20 s
# its RSS stays under the cap + 100 MB, the status line says how far back memory reaches and older
# time shows as a "not in memory" band. Unbounded, the viewer grows by tens of MB a second here.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_flood

CAP_MB=32
TM_WIDTH=160 tm_run_cuscope --memory-mb $CAP_MB --window 60 -- "$PROGS/nvtx_flood" 20 1
tm_wait 'LIVE' 20 "live UI"
tm_pids
max=0
for _ in $(seq 1 24); do
	sleep 1
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$CS_PID/status" 2>/dev/null)
	[ -n "$rss" ] || break
	[ "$rss" -gt "$max" ] && max=$rss
	tm_screen_has 'EXITED' && break
done
limit_kb=$(((CAP_MB + 100) * 1024))
[ "$max" -gt 0 ] || fail "could not read the viewer's RSS"
[ "$max" -le "$limit_kb" ] || fail "viewer RSS reached $((max / 1024)) MB, over the cap $CAP_MB MB + 100 MB"
tm_wait 'memory: last [0-9.]+ ?(ms|s|us|µs)' 10 "memory reach on the status line"
tm_wait 'not in memory' 10 "the not-in-memory band"
tm_wait 'EXITED \(code 0\)' 30 "app end"
tm_keys q
tm_wait_exit 0 20
echo "max RSS $((max / 1024)) MB (cap $CAP_MB MB)"
exit 0

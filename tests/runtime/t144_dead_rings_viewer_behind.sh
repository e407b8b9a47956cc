#!/usr/bin/env bash
# Rings of threads that ended are freed even while the viewer is behind: a stopped recorder, a
# burst that fills its send queue, then 3,000 short-lived threads each making one range. The
# program's resident set must not grow with the number of ended threads (it grew ~12 kB per
# thread when paced drains skipped dead rings too).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog thread_churn

"$CUSCOPE" record --buffer-mb 1 -o "$T/c.cap" -- "$PROGS/thread_churn" 1500 300000 3000 >"$T/out" 2>"$T/err" &
rec=$!
for _ in $(seq 100); do
	grep -q '^pid ' "$T/out" 2>/dev/null && break
	sleep 0.05
done
sleep 0.5 # the recorder is connected (the program sleeps 1.5 s before its burst)
kill -STOP "$rec"
for _ in $(seq 600); do
	grep -q '^rss_kb_growth ' "$T/out" && break
	sleep 0.1
done
kill -CONT "$rec"
wait "$rec"
growth=$(sed -n 's/^rss_kb_growth //p' "$T/out")
[ -n "$growth" ] || fail "the program did not finish: $(tr '\n' '|' <"$T/out") $(head -c 300 "$T/err")"
[ "$growth" -lt 12000 ] || fail "resident set grew by $growth kB over 3000 ended threads while the viewer was stopped"
exit 0

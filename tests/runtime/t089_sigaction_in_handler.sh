#!/usr/bin/env bash
# sigaction is async-signal-safe: a SIGALRM handler (every 50 us) that calls sigaction on the
# sampler's signal while the program's main loop calls sigaction on it too must not hang (the
# collector's lock for its recorded dispositions was a spinlock a handler could wait on for ever
# when it interrupted the thread holding it).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog signal_harm

timeout 60 "$CUSCOPE" record -o "$T/storm.cap" -- "$PROGS/signal_harm" sigaction-storm \
	>"$T/storm.out" 2>"$T/storm.err" </dev/null
rc=$?
[ "$rc" = 124 ] && fail "the program hung (sigaction from a signal handler)"
[ "$rc" = 0 ] || fail "record exited $rc: $(head -c 300 "$T/storm.err")"
grep -q "^storm 200000 alarms some$" "$T/storm.out" || fail "program: $(tr '\n' ' ' <"$T/storm.out")"
exit 0

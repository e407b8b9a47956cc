#!/usr/bin/env bash
# With CPU sampling on (the default), a program with its own SIGPROF/SIGALRM handlers fed by
# setitimer, 1,000 short threads, and a fork + exec prints the same output and exits with the same
# code under `cuscope record` as without; no foreign signal reaches its handlers.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog cpu_signals

rc=0
timeout 60 "$PROGS/cpu_signals" >"$T/plain.out" 2>"$T/plain.err" </dev/null || rc=$?
[ "$rc" = 3 ] || fail "cpu_signals alone exited $rc, want 3: $(head -c 200 "$T/plain.out")"
grep -q '^foreign 0$' "$T/plain.out" || fail "cpu_signals alone: $(tr '\n' '|' <"$T/plain.out")"

cs_record "$T/cap" app -- "$PROGS/cpu_signals"
[ "$RC" = 3 ] || fail "cuscope record exited $RC, want the app's 3: $(head -c 300 "$T/app.err")"
cmp -s "$T/plain.out" "$T/app.out" || fail "output differs under record: $(tr '\n' '|' <"$T/app.out") vs $(tr '\n' '|' <"$T/plain.out")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
if len(J["processes"]) != 2:
    fail("want 2 processes (parent, exec'd child), got %r" % J["processes"])
PY
exit 0

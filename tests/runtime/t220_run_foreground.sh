#!/usr/bin/env bash
# `cuscope run -- CMD` (no --detached): waits for CMD with its output on our stdout, passes its
# exit code (and 128+signal), arms it for attach while it runs, forwards SIGTERM (the job step's
# cancellation) and SIGINT, and leaves no session directory behind.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
mkdir -m 700 "$T/sess"
export CUSCOPE_SESSION_ROOT=$T/sess

# Exit code and output pass through; stdout is the program's own, not a log.
"$CUSCOPE" run -- "$PROGS/exit_code" 7 >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 7 ] || fail "run passed exit code $rc, not 7 ($(cat "$T/err"))"
grep -q "exiting with code 7" "$T/out" || fail "the program's output did not reach run's stdout: $(cat "$T/out")"
grep -q "armed; watch it with: cuscope attach" "$T/err" || fail "run did not say how to attach: $(cat "$T/err")"
"$CUSCOPE" run -- "$PROGS/exit_code" signal 9 >/dev/null 2>&1
rc=$?
[ "$rc" = 137 ] || fail "a program killed by SIGKILL gave $rc, not 137"

# While it runs it is armed: attach --record sees its past ranges; then SIGTERM to run reaches it.
"$CUSCOPE" run -- "$PROGS/long_running" -o "$T/done" >"$T/lr.out" 2>"$T/lr.err" &
runner=$!
BG_PIDS+=("$runner")
for _ in $(seq 100); do grep -q "^pid " "$T/lr.out" 2>/dev/null && break; sleep 0.1; done
pid=$(awk '/^pid /{print $2; exit}' "$T/lr.out")
[ -n "$pid" ] || fail "long_running did not start under run: $(cat "$T/lr.err")"
sleep 1
"$CUSCOPE" attach --record -o "$T/a.cuscope" --duration 1 "$pid" >"$T/attach.out" 2>&1 ||
	fail "attach to a program started with run failed: $(cat "$T/attach.out")"
"$CUSCOPE" stats --format=json "$T/a.cuscope" >"$T/a.json" 2>&1 || fail "stats failed: $(cat "$T/a.json")"
grep -qE '"name": *"step"' "$T/a.json" || fail "the attach capture holds no step range: $(head -c 600 "$T/a.json")"
kill -TERM "$runner"
wait "$runner"
rc=$?
[ "$rc" = 115 ] || fail "run gave $rc after SIGTERM, not long_running's 115 (SIGTERM caught): $(cat "$T/lr.err")"
grep -q "code=115" "$T/done" 2>/dev/null || fail "long_running did not get the SIGTERM: $(cat "$T/done" 2>/dev/null)"
kill -0 "$pid" 2>/dev/null && fail "long_running still runs after run returned"
left=$(find "$T/sess" -mindepth 1 -maxdepth 2 2>/dev/null)
[ -z "$left" ] || fail "run left its session directory behind: $left"
exit 0

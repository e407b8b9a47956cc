#!/usr/bin/env bash
# A child forked while another thread of the program holds one of the dynamic loader's locks
# inherits it held for good: the collector in that child must not unwind a stack or look a module up through
# the loader (a blocking call's stack would hang the child in dl_iterate_phdr). The program forks
# under record with defaults; its child sleeps 300 ms (a recorded blocking call) and must exit.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
# Rounds 1-2: the lock of dl_iterate_phdr (libunwind's way to unwind tables); 3-4: dlopen's (held
# while a library's constructor runs), which dlsym takes too: a wrapper first called in the child
# must not look its libc function up then.
for round in 1 2 3 4; do
	mode=()
	[ "$round" -ge 3 ] && mode=(dlopen "$PROGS/lib/slow_ctor.so")
	timeout 60 "$CUSCOPE" record -o "$T/r$round.cuscope" -- "$PROGS/fork_loader_lock" 1500 "${mode[@]}" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = 0 ] || fail "round $round: exit $rc: $(cat "$T/out") $(head -c 400 "$T/err")"
	grep -q "exited" "$T/out" || fail "round $round: the child did not end: $(cat "$T/out")"
done
# The parent's own blocking calls still carry stacks (the loader stays usable where it was never forked).
"$CUSCOPE" stats --format=json "$T/r1.cuscope" >"$T/s.json" 2>&1 || fail "stats failed: $(head -c 300 "$T/s.json")"
grep -q '"nanosleep"' "$T/s.json" || fail "no nanosleep blocking call recorded: $(head -c 600 "$T/s.json")"
exit 0

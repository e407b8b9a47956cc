#!/usr/bin/env bash
# While the sampler measures its signal's cost on the collector's own thread at start (perf mode:
# about 30 ms with the signal unblocked there), a program that blocks every signal and sends
# itself that signal number (process-directed, taken with sigtimedwait) still gets every one: the
# ones the kernel hands to the collector's thread meanwhile go back to the process, none ends it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog signal_harm

for mode in perf timer; do
	for round in 1 2 3; do
		name=$mode-$round
		CUSCOPE_SAMPLER_MODE=$mode timeout 60 "$CUSCOPE" record -o "$T/$name.cap" -- "$PROGS/signal_harm" flood 400 \
			>"$T/$name.out" 2>"$T/$name.err" </dev/null
		rc=$?
		[ "$rc" = 0 ] || fail "$name: record exited $rc, want 0 (program: $(tr '\n' ' ' <"$T/$name.out")): $(head -c 300 "$T/$name.err")"
		read -r _ sent _ got <"$T/$name.out"
		{ [ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$got" = "$sent" ]; } ||
			fail "$name: sent ${sent:-?} got ${got:-?} of its own signals"
		rm -f "$T/$name.cap"
	done
done
exit 0

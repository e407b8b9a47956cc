#!/usr/bin/env bash
# A daemon-style program that blocks every signal and takes them with sigtimedwait, sigwaitinfo,
# sigwait or a signalfd receives exactly its own signals, never the sampler's (its timers and perf
# events used to fire in the blocked thread and leave theirs for the program to take: 20 of 20
# rounds). Its own signal on the sampler's number (SIGRTMAX, which it does not handle) still
# arrives. Under both sampler modes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog signal_harm

for mode in timer perf; do
	for kind in timedwait waitinfo wait signalfd; do
		name=$mode-$kind
		CUSCOPE_SAMPLER_MODE=$mode timeout 60 "$CUSCOPE" record -o "$T/$name.cap" -- "$PROGS/signal_harm" wait $kind \
			>"$T/$name.out" 2>"$T/$name.err" </dev/null
		rc=$?
		out=$(tr '\n' ' ' <"$T/$name.out")
		[ "$rc" = 0 ] || fail "$name: record exited $rc, want 0 (program: $out): $(head -c 300 "$T/$name.err")"
		grep -q "^own 20$" "$T/$name.out" || fail "$name: the program's own signals did not all arrive: $out"
		grep -q "^unexpected 0$" "$T/$name.out" || fail "$name: the program was handed signals not its own: $out"
	done
done
exit 0

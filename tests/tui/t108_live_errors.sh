#!/usr/bin/env bash
# Live mode (on a terminal) errors: a missing command exits 127, a non-executable one 126, an
# unusable session root non-zero; each with one "cuscope: " line and the terminal left usable.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

printf '#!/bin/sh\necho hi\n' >"$T/noexec.sh"
chmod 0644 "$T/noexec.sh"
n=0
for spec in "127:$T/no-such-program" "126:$T/noexec.sh" "nonzero:/proc/nonexistent:/bin/true"; do
	want=${spec%%:*}
	rest=${spec#*:}
	env=""
	cmd=$rest
	if [ "$want" = nonzero ]; then
		env="CUSCOPE_SESSION_ROOT=${rest%%:*}"
		cmd=${rest#*:}
	fi
	n=$((n + 1))
	TMUX_SOCK="cuscope-test-$$-$n"
	rm -f "$T/exit"
	tm_start 120 20 "cd $T && $env $CUSCOPE -- $cmd 2>$T/err; echo EXIT=\$? >$T/exit; exec sleep 3600"
	wait_until 15 test -s "$T/exit" || fail "cuscope -- $cmd did not exit within 15 s"
	got=$(sed -n 's/^EXIT=//p' "$T/exit")
	if [ "$want" = nonzero ]; then
		[ "$got" != 0 ] || fail "$env cuscope -- $cmd exited 0"
	else
		[ "$got" = "$want" ] || fail "cuscope -- $cmd exited $got, want $want"
	fi
	one_line_error "$T/err" "$env cuscope -- $cmd"
	tm kill-server 2>/dev/null
done
exit 0

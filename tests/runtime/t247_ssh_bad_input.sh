#!/usr/bin/env bash
# attach --ssh's bad input, each one line: a relay of another cuscope version (the mismatch is
# said, nothing is written, exit 1, at once rather than at --duration), a remote command that is
# no relay at all, host names ssh would read as options, one -o file for several hosts, --via
# without {host}, a relative --remote-cuscope, a PID with --ssh, the live view without a
# terminal. No sshd: --via runs the relay.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

printf '#!/bin/sh\necho "cuscope-relay 1 9.9.9 farhost"\nexec cat >/dev/null\n' >"$T/old-cuscope"
printf '#!/bin/sh\necho "Welcome to farhost"\nexec cat >/dev/null\n' >"$T/motd"
chmod +x "$T/old-cuscope" "$T/motd"

start=$(date +%s)
one_line mismatch 1 "attach: h1: version mismatch: the remote cuscope is 9\.9\.9 \(relay protocol 1\), this one is [0-9.]+" \
	"$CUSCOPE" attach --ssh h1 --via 'env H={host}' --remote-cuscope "$T/old-cuscope" \
	--record -o "$T/run-%h.cuscope" --duration 30
[ $(($(date +%s) - start)) -lt 10 ] || fail "a mismatched host kept attach until --duration"
if [ -e "$T/run-h1.cuscope" ] || [ -e "$T/run-h1.cuscope.partial" ]; then
	fail "a capture was left for h1"
fi

one_line notrelay 1 "attach: h1: the remote command is not a cuscope relay \(it said \"Welcome to farhost\"\)" \
	"$CUSCOPE" attach --ssh h1 --via 'env H={host}' --remote-cuscope "$T/motd" \
	--record -o "$T/run-%h.cuscope" --duration 30

one_line optionhost 2 "attach: --ssh: '-oProxyCommand=touch' is not a host name" \
	"$CUSCOPE" attach --ssh 'a,-oProxyCommand=touch' --record -o "$T/run-%h.cuscope"
no_runs() { ! compgen -G "$T/run-*" >/dev/null; }
no_runs || fail "a file was made for a refused host list: $(ls "$T")"
one_line samefile 2 "attach: -o $T/one.cuscope names one file for a and b: put %h in it" \
	"$CUSCOPE" attach --ssh a,b --record -o "$T/one.cuscope"
one_line nohost 2 "attach: --via needs a command with \{host\} in it" \
	"$CUSCOPE" attach --ssh a --via 'srun --overlap' --record -o "$T/run-%h.cuscope"
no_runs || fail "a file was left for a bad --via: $(ls "$T")"
one_line relative 2 "attach: --remote-cuscope needs an absolute path, not 'bin/cuscope'" \
	"$CUSCOPE" attach --ssh a --remote-cuscope bin/cuscope --record -o "$T/run-%h.cuscope"
one_line withpid 2 "attach: --ssh takes no process id" \
	"$CUSCOPE" attach --ssh a --record -o "$T/run-%h.cuscope" 1234
one_line live 2 "attach: the live view needs a terminal; use --record" "$CUSCOPE" attach --ssh a
exit 0

#!/usr/bin/env bash
# Help and version text is output like any verb's: written to a working standard output it exits
# 0 with nothing on stderr; written to a full one (/dev/full) it exits 1 with one "cuscope:" line,
# for every verb and the top level alike (live mode, record, attach and run used to exit 0).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ -c /dev/full ] || skip "no /dev/full"

while read -r args; do
	# shellcheck disable=SC2086 # the words of $args are the command line
	"$CUSCOPE" $args >"$T/out" 2>"$T/err" || fail "cuscope $args exited $?: $(head -c 200 "$T/err")"
	[ -s "$T/out" ] || fail "cuscope $args printed nothing"
	[ -s "$T/err" ] && fail "cuscope $args wrote to stderr: $(head -c 200 "$T/err")"
	rc=0
	# shellcheck disable=SC2086
	"$CUSCOPE" $args >/dev/full 2>"$T/err" || rc=$?
	[ "$rc" = 1 ] || fail "cuscope $args >/dev/full exited $rc, want 1"
	one_line_error "$T/err" "cuscope $args >/dev/full"
done <<'ARGS'
--help
--ascii -h
--ascii -V
--version
help
help record
record --help
attach -h
run --help
view --help
stats --help
export --help
diff --help
info --help
ARGS
exit 0

#!/usr/bin/env bash
# Error paths: each is a non-zero exit with exactly one stderr line starting "cuscope: ".
# Missing command 127, not executable 126, bad/foreign/empty/missing capture files, unknown
# options (2), an unusable session root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

# expect_error WANT_RC NAME CMD...: runs CMD (60 s max), checks exit status and the stderr line.
expect_error()
{
	local want=$1 name=$2 rc=0
	shift 2
	timeout 60 "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null || rc=$?
	[ "$rc" = 124 ] && fail "$name: hung (killed after 60 s)"
	if [ "$want" = nonzero ]; then
		[ "$rc" != 0 ] || fail "$name: exit 0, want non-zero"
		[ "$rc" -lt 128 ] || fail "$name: died with status $rc (crash?)"
	else
		[ "$rc" = "$want" ] || fail "$name: exit $rc, want $want; stderr: $(head -c 200 "$T/$name.err")"
	fi
	one_line_error "$T/$name.err" "$name"
}

expect_error 127 record-missing "$CUSCOPE" record -o "$T/x.cap" -- "$T/no-such-program"
expect_error 127 record-missing-path "$CUSCOPE" record -o "$T/x.cap" -- no-such-program-cuscope-test
printf '#!/bin/sh\necho hi\n' >"$T/noexec.sh"
chmod 0644 "$T/noexec.sh"
expect_error 126 record-noexec "$CUSCOPE" record -o "$T/x.cap" -- "$T/noexec.sh"
expect_error 126 record-directory "$CUSCOPE" record -o "$T/x.cap" -- "$T"

expect_error nonzero stats-missing-file "$CUSCOPE" stats "$T/does-not-exist.cap"
: >"$T/empty.cap"
expect_error nonzero stats-empty "$CUSCOPE" stats "$T/empty.cap"
expect_error nonzero stats-foreign "$CUSCOPE" stats /etc/passwd
head -c 65536 /dev/urandom >"$T/random.cap"
expect_error nonzero stats-random "$CUSCOPE" stats "$T/random.cap"
# Right magic, garbage after it.
{ printf 'CUSCOPE\0'; head -c 4096 /dev/urandom; } >"$T/magic-garbage.cap"
expect_error nonzero stats-magic-garbage "$CUSCOPE" stats --format=json "$T/magic-garbage.cap"
expect_error nonzero stats-directory "$CUSCOPE" stats "$T"
expect_error nonzero view-foreign "$CUSCOPE" view /etc/passwd

expect_error 2 bad-option "$CUSCOPE" --no-such-option -- /bin/true
expect_error 2 bad-verb-option "$CUSCOPE" stats --no-such-option "$T/empty.cap"
expect_error 2 bad-format "$CUSCOPE" stats --format=xml "$T/empty.cap"
expect_error 2 record-no-output "$CUSCOPE" record -- /bin/true
expect_error 2 record-no-command "$CUSCOPE" record -o "$T/x.cap"

expect_error nonzero record-unwritable-output "$CUSCOPE" record -o /proc/nonexistent/x.cap -- /bin/true
CUSCOPE_SESSION_ROOT=/proc/nonexistent expect_error nonzero session-root \
	"$CUSCOPE" record -o "$T/x.cap" -- /bin/true
exit 0

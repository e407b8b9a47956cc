#!/usr/bin/env bash
# --help, VERB --help and --version exit 0 and print to stdout; help names every verb.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

out=$("$CUSCOPE" --version 2>"$T/err") || fail "cuscope --version exited non-zero"
echo "$out" | grep -qE '^cuscope [0-9]+\.[0-9]+\.[0-9]+' || fail "--version printed '$out'"
[ -s "$T/err" ] && fail "--version wrote to stderr"
"$CUSCOPE" --help >"$T/help" 2>"$T/err" || fail "cuscope --help exited non-zero"
[ -s "$T/help" ] || fail "--help printed nothing on stdout"
for w in record view stats --ascii --window --buffer-mb; do
	grep -q -- "$w" "$T/help" || fail "--help does not mention $w"
done
for v in record view stats; do
	"$CUSCOPE" "$v" --help >"$T/$v.help" 2>"$T/err" || fail "cuscope $v --help exited non-zero"
	grep -q -- "$v" "$T/$v.help" || fail "cuscope $v --help does not name $v"
done
grep -q -- '--duration' "$T/record.help" || fail "record --help lacks --duration"
grep -q -- '--format' "$T/stats.help" || fail "stats --help lacks --format"
exit 0

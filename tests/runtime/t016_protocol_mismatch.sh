#!/usr/bin/env bash
# A collector speaking another protocol version: cuscope record says so in one line naming the
# pid and which side is newer, and exits non-zero; the launched command still runs to its end.
# Version 1 (notices without a topic) is older since the bump to 2.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
command -v "$PYTHON" >/dev/null || skip "no $PYTHON"

for spec in "99:newer" "0:older" "1:older"; do
	version=${spec%%:*}
	word=${spec##*:}
	timeout 60 "$CUSCOPE" record -o "$T/cap" -- env -u LD_PRELOAD "$PYTHON" "$ROOT/tests/runtime/fake_collector.py" \
		"$version" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" != 0 ] || fail "version $version: record exited 0 on a protocol mismatch"
	[ "$rc" != 124 ] || fail "version $version: record hung"
	lines=$(grep -c 'cuscope:' "$T/err")
	[ "$lines" = 1 ] || fail "version $version: want one cuscope: line on stderr, got $lines: $(tr '\n' '|' <"$T/err")"
	grep -q "protocol mismatch.*$word" "$T/err" || fail "version $version: stderr does not say '$word': $(cat "$T/err")"
	grep -q "fake collector done" "$T/out" || fail "version $version: the launched command did not finish"
done
exit 0

#!/usr/bin/env bash
# Names chosen by a traced program (NVTX ranges, a mark, a domain, a thread name, its command line)
# hold terminal escapes: an OSC that retitles the terminal, a CSI clear, a C1 CSI and DEL. Every
# reader (stats as table/CSV/JSON, diff as table/JSON, info, export, the error lines echoing a
# hostile file name) prints them escaped: no raw ESC, BEL, C1 or DEL byte, and "\x1b" where the
# text had ESC; JSON and CSV still parse back to the original names. Writers that cannot write
# (stdout on /dev/full) exit non-zero with one line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog hostile_names

cs_record "$T/cap" app -- "$PROGS/hostile_names" $'arg\e]0;argv\a'
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"

# no_raw FILE WHAT: fails if FILE holds ESC, BEL, DEL, a C1 control (raw or UTF-8) or invalid UTF-8.
no_raw()
{
	"$PYTHON" - "$1" "$2" <<'PY' || exit 1
import sys
b = open(sys.argv[1], "rb").read()
for i, c in enumerate(b):
    if (c < 0x20 and c not in (0x0a,)) or c == 0x7f:
        print("%s: raw control byte 0x%02x at %d: %r" % (sys.argv[2], c, i, b[max(0, i - 20):i + 20])); sys.exit(1)
try:
    t = b.decode("utf-8")
except UnicodeDecodeError as e:
    print("%s: not valid UTF-8: %s" % (sys.argv[2], e)); sys.exit(1)
for i, ch in enumerate(t):
    if 0x80 <= ord(ch) < 0xa0:
        print("%s: raw C1 control U+%04X" % (sys.argv[2], ord(ch))); sys.exit(1)
PY
}

# run_ok WHAT CMD...: runs CMD with stdout to $T/o and stderr to $T/e; fails unless it exits 0.
run_ok()
{
	local what=$1 rc=0
	shift
	"$@" >"$T/o" 2>"$T/e" || rc=$?
	[ "$rc" = 0 ] || fail "$what exited $rc: $(head -c 300 "$T/e")"
	no_raw "$T/o" "$what stdout"
	no_raw "$T/e" "$what stderr"
}

run_ok "stats table" "$CUSCOPE" stats "$T/cap"
for want in '\x1b]0;pwned\x07' '\x1b[2J\x1b[Hclear' '\xc2\x9b2Jc1 mark \x7f' 'dom\x1b]2;x\x07' '\x1b[31mred\x07'; do
	grep -qF -- "$want" "$T/o" || fail "stats table does not show '$want' escaped: $(grep -a pwned "$T/o" | head -3)"
done
run_ok "stats csv" "$CUSCOPE" stats --format=csv "$T/cap"
grep -qF '"\x1b[2J\x1b[Hclear, ""quoted"""' "$T/o" || fail "csv field not quoted per RFC 4180: $(grep -a clear "$T/o")"
"$PYTHON" - "$T/o" <<'PY' || exit 1
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], newline="")) if r and not r[0].startswith("#")]
names = [r[0] for r in rows]
if '\\x1b[2J\\x1b[Hclear, "quoted"' not in names:
    print("csv does not parse back to the escaped name: %r" % names[:8]); sys.exit(1)
PY
run_ok "stats json" "$CUSCOPE" stats --format=json "$T/cap"
"$PYTHON" - "$T/o" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
names = {r["name"] for r in d["nvtx"]}
want = {"\x1b]0;pwned\x07", "\x1b[2J\x1b[Hclear, \"quoted\"", "\u009b2Jc1 mark \x7f", "in domain\x1b[5m"}
if not want <= names:
    print("json names do not round-trip: missing %r" % (want - names)); sys.exit(1)
if "\x1b[31mred\x07" not in {t["name"] for t in d["threads"]}:
    print("thread name missing from json"); sys.exit(1)
PY
run_ok "diff table" "$CUSCOPE" diff "$T/cap" "$T/cap"
grep -qF '\x1b]0;pwned\x07' "$T/o" || fail "diff table does not show the escaped name"
run_ok "diff json" "$CUSCOPE" diff --format=json "$T/cap" "$T/cap"
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(r["name"]=="\x1b]0;pwned\x07" for r in d["rows"])' "$T/o" ||
	fail "diff json does not round-trip the name"
run_ok "info" "$CUSCOPE" info "$T/cap"
grep -qF 'arg\x1b]0;argv\x07' "$T/o" || fail "info does not show the escaped command line: $(grep -a pid "$T/o" | head -2)"
run_ok "export" "$CUSCOPE" export -o - "$T/cap"
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(e.get("name")=="\x1b]0;pwned\x07" for e in d["traceEvents"])' "$T/o" ||
	fail "export json does not round-trip the name"

# A file name is a name too: error lines echo it escaped, in one line.
cp "$T/cap" "$T/"$'evil\e]0;file\a.cap'
: >"$T/"$'empty\e[2J.cap'
for verb in stats info export; do
	rc=0
	"$CUSCOPE" "$verb" "$T/"$'empty\e[2J.cap' >"$T/o" 2>"$T/e" || rc=$?
	[ "$rc" = 2 ] || fail "$verb on an empty file exited $rc, want 2"
	one_line_error "$T/e" "$verb on an empty file"
	no_raw "$T/e" "$verb error line"
	grep -qF 'empty\x1b[2J.cap' "$T/e" || fail "$verb error line does not name the file escaped: $(cat -v "$T/e")"
done
run_ok "info on a hostile file name" "$CUSCOPE" info "$T/"$'evil\e]0;file\a.cap'

# Output that cannot be written is an error, said once.
if [ -w /dev/full ]; then
	for cmd in "stats" "stats --format=csv" "stats --format=json" "info" "diff" "export -o -" "stats --help" "info --help"; do
		args=("$T/cap")
		[ "$cmd" = diff ] && args=("$T/cap" "$T/cap")
		case $cmd in *--help) args=() ;; esac
		rc=0
		# shellcheck disable=SC2086
		"$CUSCOPE" $cmd "${args[@]}" >/dev/full 2>"$T/e" || rc=$?
		[ "$rc" != 0 ] || fail "$cmd > /dev/full exited 0"
		grep -v '^cuscope: warning: ' "$T/e" >"$T/e1"
		one_line_error "$T/e1" "$cmd > /dev/full"
		grep -q 'writing output: No space left on device' "$T/e1" || fail "$cmd > /dev/full: $(cat "$T/e1")"
	done
fi
exit 0

#!/usr/bin/env bash
# The output log keeper, exactly: `run --detached --log-mb 1` of a program printing ~2.9 MB leaves
# a log of at most 1 MiB: a note line whose drop count plus the bytes kept equals everything the
# program wrote, followed by the exact newest bytes of its output; the program's writes succeed.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

mkdir -m 700 "$T/sess"
# shellcheck disable=SC2016 # expanded by the inner sh
CUSCOPE_SESSION_ROOT=$T/sess "$CUSCOPE" run --detached --log-mb 1 -- \
	sh -c 'seq 1 400000; echo "rc=$?" >"$0"' "$T/done" >"$T/run.out" 2>"$T/run.err" ||
	fail "run --detached failed: $(cat "$T/run.err")"
wait_until 60 test -s "$T/done" || fail "program did not finish"
grep -q 'rc=0' "$T/done" || fail "the program's writes failed: $(cat "$T/done")"
log=$(find "$T/sess" -name output.log | head -n 1)
[ -n "$log" ] || fail "no output.log"
seq 1 400000 >"$T/want"
check()
{
	"$PYTHON" - "$log" "$T/want" <<'PY'
import re, sys
log = open(sys.argv[1], "rb").read()
want = open(sys.argv[2], "rb").read()
nl = log.find(b"\n")
m = re.match(rb"\[cuscope: output log capped at 1 MiB; (\d+) earlier bytes dropped\] *$", log[:nl])
if not m:
    print("no note line: %r" % log[:130]); sys.exit(1)
body = log[nl + 1:]
if len(log) > 1 << 20:
    print("log is %d bytes, over 1 MiB" % len(log)); sys.exit(1)
if int(m.group(1)) + len(body) != len(want):
    print("dropped %s + kept %d != written %d" % (m.group(1), len(body), len(want))); sys.exit(1)
if not want.endswith(body):
    print("kept bytes are not the newest output"); sys.exit(1)
PY
}
# The keeper may still be writing the last bytes when the program's marker appears.
wait_until 10 check >/dev/null || check || exit 1
exit 0

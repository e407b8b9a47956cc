#!/usr/bin/env bash
# Names from a separate debug file found by build-id: a program spinning in memcpy has its hot
# leaf in libc.so.6 named (e.g. __memmove_avx_unaligned_erms, found only in libc6-dbg's
# /usr/lib/debug/.build-id/xx/yyyy.debug), not "libc.so.6+0x...". Skips without libc6-dbg.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog libc_spin

libc=$(ldd "$PROGS/libc_spin" | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -n "$libc" ] || skip "cannot find libc of libc_spin"
id=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID:/ { print $3 }')
[ -n "$id" ] || skip "$libc has no build-id"
debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ -f "$debug" ] || skip "no $debug (install libc6-dbg)"

cs_record "$T/cap" app -- "$PROGS/libc_spin" 1.5
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^done libc_spin" "$T/app.out" || fail "app did not finish: $(head -c 200 "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" <<'PY'
rows = [r for r in J["hot"] if r["module"].startswith("libc.so")]
if not rows:
    fail("no hot rows in libc: %r" % [(r["function"], r["module"]) for r in J["hot"][:5]])
top = max(rows, key=lambda r: r["samples"])
if top["samples"] < 20:
    fail("only %d samples in libc's top function %r" % (top["samples"], top["function"]))
if top["function"].startswith("libc.so") or "+0x" in top["function"]:
    fail("libc's hottest function is unnamed: %r (%d samples)" % (top["function"], top["samples"]))
if "mem" not in top["function"]:
    fail("libc's hottest function is %r, want a memcpy/memmove variant" % top["function"])
PY
exit 0

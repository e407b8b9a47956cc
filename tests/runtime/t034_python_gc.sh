#!/usr/bin/env bash
# Python GC ranges: a forced gc.collect() after creating cyclic garbage shows as a GC range on the
# main thread; stats puts GC in the "osrt" section as call "python_gc" (all generations together).
# Needs the stats_cpu sections wired into stats.c: skips while stats JSON has no "osrt" key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
command -v "$PYTHON" >/dev/null 2>&1 || skip "no $PYTHON"
# The interpreter itself, not a wrapper script (a pyenv shim is a tree of shells before python).
PY_EXE=$("$PYTHON" -c 'import sys; print(sys.executable)') || skip "$PYTHON does not run"
[ -x "$PY_EXE" ] || skip "$PYTHON reports no executable"

cat >"$T/gc.py" <<'PYEOF'
import gc, os
class Node:
    pass
def garbage(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.other, b.other = b, a
gc.disable()
garbage(200000)
found = gc.collect()
print("collected", "many" if found >= 400000 else found)
print("pid", os.getpid())
PYEOF
cs_record "$T/cap" app -- "$PY_EXE" "$T/gc.py"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^collected many" "$T/app.out" || fail "python did not collect the garbage: $(head -c 200 "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"
grep -q '"osrt"' "$T/stats.json" || skip "stats JSON has no \"osrt\" section (stats_cpu not wired into stats.c yet)"

py_check "$T/stats.json" "$T/app.out" <<'PY'
pid = app("pid")
rs = [r for r in J["osrt"] if r["pid"] == pid and r["tid"] == pid and r["call"] == "python_gc"]
if len(rs) != 1:
    fail("want one python_gc row on the main thread of %d, got %r (calls there: %r)" % (
        pid, rs, [(r["tid"], r["call"]) for r in J["osrt"] if r["pid"] == pid]))
r = rs[0]
if r["count"] < 1 or r["max_ns"] < 1000:
    fail("python_gc row: %r (want a collection of 400k objects to take > 1 us)" % r)
PY
exit 0

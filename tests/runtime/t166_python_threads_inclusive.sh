#!/usr/bin/env bash
# Python where people look (CPython >= 3.12 with perf trampolines, else a visible SKIP):
# - `threading` names reach the lanes through the Python hook: MainThread, a named thread, a thread
#   renamed while it runs, and a long UTF-8 name cut to 63 bytes at a character boundary;
# - `stats --report=hot-inclusive` lists a Python thread's Python functions only, as FILE:QUALNAME,
#   by inclusive samples: the hot pair crunch/leaf on top;
# - the program's own output and exit code are untouched by the hook, which does not import
#   `threading` before the program does (gevent must patch it first);
# - the /tmp/perf-PID.map CPython wrote is removed once the process has ended, but only where
#   --python-perf turned the trampolines on (a user's own PYTHONPERFSUPPORT=1 keeps it for perf).
# Interpreter: PYTHON312=/path/to/python3.12, else /usr/bin/python3.1[2-9], else pyenv's 3.12+.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
PY=${PYTHON312:-}
if [ -z "$PY" ]; then
	for v in /usr/bin/python3.1[2-9] /root/.pyenv/versions/3.1[2-9]*/bin/python3; do
		[ -x "$v" ] && { PY=$v; break; }
	done
fi
[ -n "$PY" ] || skip "SKIP: no CPython >= 3.12 on this machine (set PYTHON312)"
"$PY" -c 'import sys, sysconfig; sys.exit(sys.version_info < (3, 12) or not sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE"))' ||
	skip "SKIP: $PY is not a CPython >= 3.12 with perf trampolines"

cat >"$T/hot.py" <<'PYEOF'
import sys
print("early_threading", int("threading" in sys.modules))
import os, threading, time
def leaf(x):
    return x * 3 + 1
def crunch(n):
    s = 0
    for i in range(n):
        s += leaf(i)
    return s
def spin(deadline):
    while time.monotonic() < deadline:
        crunch(2000)
deadline = time.monotonic() + 1.5
loader = threading.Thread(target=spin, args=(deadline,), name="loader-0")
loader.start()
go = threading.Event()
later = threading.Thread(target=go.wait, name="before-rename")
later.start()
time.sleep(0.2)
later.name = "renamed-later"
long_name = "x" + "загрузчик-" * 6
long_t = threading.Thread(target=time.sleep, args=(0.3,), name=long_name)
long_t.start()
spin(deadline)
go.set()
for t in (loader, later, long_t):
    t.join()
print("pid", os.getpid())
print("loader", loader.native_id)
print("later", later.native_id)
print("long", long_t.native_id)
sys.exit(7)
PYEOF
RC=0
timeout 120 "$CUSCOPE" record --python-perf -o "$T/cap" -- "$PY" "$T/hot.py" >"$T/app.out" 2>"$T/app.err" </dev/null || RC=$?
[ "$RC" = 7 ] || fail "record exited $RC, want the program's 7: $(head -c 300 "$T/app.err")"
grep -q "^long [0-9]" "$T/app.out" || fail "the program did not finish: $(head -c 300 "$T/app.out")"
want=$("$PY" -c 'import sys; print(int("threading" in sys.modules))')
grep -q "^early_threading $want\$" "$T/app.out" || fail "threading imported before the program did: $(grep early "$T/app.out"), want $want"
PID=$(awk '$1 == "pid" {print $2}' "$T/app.out")
[ ! -e "/tmp/perf-$PID.map" ] || fail "/tmp/perf-$PID.map is left after the traced process ended"
cs_stats "$T/cap" "$T/stats.json"
grep -q '"hot-inclusive"' "$T/stats.json" || fail "stats JSON has no \"hot-inclusive\" section"

py_check "$T/stats.json" "$T/app.out" "$T/hot.py" <<'PY'
pid = app("pid")
names = {r["tid"]: r["name"] for r in J["threads"] if r["pid"] == pid}
long_name = "x" + "загрузчик-" * 6
want = {
    pid: "MainThread",
    app("loader"): "loader-0",
    app("later"): "renamed-later",
    app("long"): long_name.encode()[:63].decode("utf-8", "ignore"),
}
for tid, name in want.items():
    if names.get(tid) != name:
        fail("thread %d is named %r, want %r (threads: %r)" % (tid, names.get(tid), name, names))
if len(want[app("long")].encode()) != 62:
    fail("test setup: the long name should be cut to 62 bytes, not %d" % len(want[app("long")].encode()))
path = sys.argv[3]
rows = [r for r in J["hot-inclusive"] if r["pid"] == pid]
for tid in (pid, app("loader")):
    mine = [r for r in rows if r["tid"] == tid]
    funcs = [r["function"] for r in mine]
    if not mine:
        fail("no hot-inclusive rows for thread %d" % tid)
    native = [f for f in funcs if ":" not in f or f.startswith("_Py")]
    if native:
        fail("thread %d: native frames on a Python thread's inclusive list: %r" % (tid, native[:5]))
    if any(r["module"] != "[perf-map]" for r in mine):
        fail("thread %d: rows not from the perf map: %r" % (tid, [r["module"] for r in mine][:5]))
    # crunch holds every leaf call, but the sampler's unwind through the trampolines sometimes
    # stops at the leaf's frame (a sampler limit), so leaf may pass crunch: both lead, in any order.
    if sorted(funcs[:2]) != [path + ":crunch", path + ":leaf"]:
        fail("thread %d: want crunch and leaf on top, got %r" % (tid, funcs[:4]))
    incl = [r["inclusive"] for r in mine]
    if incl != sorted(incl, reverse=True):
        fail("thread %d: rows not by inclusive samples: %r" % (tid, incl))
    crunch = mine[funcs.index(path + ":crunch")]
    if not 0 < float(crunch["share"]) <= 1:
        fail("thread %d: share %r out of range" % (tid, crunch["share"]))
    if crunch["inclusive"] < 20:
        fail("thread %d: crunch in only %d stacks" % (tid, crunch["inclusive"]))
# the exclusive table still lists leaves: the interpreter on a Python thread
leaves = [r["function"] for r in J["hot"] if r["pid"] == pid and r["tid"] == pid]
if not leaves or leaves[0].startswith("/"):
    fail("hot (self) on the main thread should lead with a native leaf, got %r" % leaves[:3])
PY

# The user's own PYTHONPERFSUPPORT: their map stays (perf report reads it after the process ends).
cat >"$T/short.py" <<'PYEOF'
import os
def f():
    return sum(range(1000))
f()
print("pid", os.getpid())
PYEOF
RC=0
PYTHONPERFSUPPORT=1 timeout 60 "$CUSCOPE" record -o "$T/cap2" -- "$PY" "$T/short.py" >"$T/short.out" 2>"$T/short.err" </dev/null || RC=$?
[ "$RC" = 0 ] || fail "record of short.py exited $RC: $(head -c 300 "$T/short.err")"
PID=$(awk '$1 == "pid" {print $2}' "$T/short.out")
[ -f "/tmp/perf-$PID.map" ] || fail "/tmp/perf-$PID.map of the user's own PYTHONPERFSUPPORT=1 was removed"
rm -f "/tmp/perf-$PID.map"
exit 0

#!/usr/bin/env bash
# Named threads with nested push/pop, a prctl rename, an NVTX-named thread, marks and a wide-char
# message: every NVTX row and thread name is checked exactly against tests/progs/nvtx_threads.c.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_threads

cs_record "$T/cap" app -- "$PROGS/nvtx_threads"
[ "$RC" = 0 ] || fail "cuscope record exited $RC, want 0: $(head -c 300 "$T/app.err")"
[ -s "$T/cap" ] || fail "no capture file written"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" "$T/app.out" "$PROGS/nvtx_threads" <<'PY'
expect_nvtx([
    ("w1.outer", "", "PushPop", 5),
    ("w1.inner", "", "PushPop", 20),
    ("w1.leaf", "", "PushPop", 5),
    ("w2.outer", "", "PushPop", 3),
    ("w2.inner", "", "PushPop", 6),
    ("w2.after", "", "PushPop", 4),
    ("n.range", "", "PushPop", 2),
    ("tick", "", "Mark", 7),
    ("wide-\u00b5s-\u2713", "", "PushPop", 1),
])
min_at_least("w1.inner", 2 * 10**6)
min_at_least("w1.outer", 8 * 10**6)
min_at_least("w2.after", 20 * 10**6)
r = row("w1.outer")
if r["total_ns"] < 5 * 8 * 10**6:
    fail("w1.outer total_ns %d < 40 ms" % r["total_ns"])
no_losses()

pid = app("pid")
p = process(pid)
if p["cmdline"] != sys.argv[3]:
    fail("process cmdline %r, want %r" % (p["cmdline"], sys.argv[3]))
if len(J["processes"]) != 1:
    fail("want 1 process, got %r" % J["processes"])
if thread(pid)["name"] != "nvtx_threads":
    fail("main thread name %r, want 'nvtx_threads'" % thread(pid)["name"])
if thread(app_tid("worker-1"))["name"] != "worker-1":
    fail("worker-1 thread named %r" % thread(app_tid("worker-1"))["name"])
n = thread(app_tid("renamed-2"))["name"]
if n != "renamed-2":
    fail("thread renamed by prctl is named %r, want 'renamed-2' (last name)" % n)
n = thread(app_tid("nvtx-named"))["name"]
if n not in ("nvtx-named", "nvtx_threads"):
    fail("thread named by nvtxNameOsThreadA is named %r" % n)
for t in J["threads"]:
    if t.get("pid") != pid:
        fail("thread row with pid %r, want %d: %r" % (t.get("pid"), pid, t))
n = thread(app_tid("idle-thread"))["name"]
if n != "idle-thread":
    fail("thread without NVTX (alive 600 ms) named %r" % n)
PY
exit 0

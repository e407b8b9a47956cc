#!/usr/bin/env bash
# A parent that forks and execs a child: both processes are in the capture, the child with
# ppid = parent and its own ranges; the parent's ppid is the cuscope process.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fork_exec

cs_record "$T/cap" app -- "$PROGS/fork_exec"
[ "$RC" = 0 ] || fail "cuscope record exited $RC, want 0: $(head -c 300 "$T/app.err")"
grep -q "status 3" "$T/app.out" || fail "child did not exit 3: $(cat "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" "$T/app.out" "$CS_PID" "$PROGS/fork_exec" <<'PY'
line = [l.split() for l in OUT.splitlines() if l.startswith("parent ")]
if not line:
    fail("app output lacks the 'parent P child C' line")
ppid_, cpid = int(line[0][1]), int(line[0][3])
parent = process(ppid_)
child = process(cpid)
if parent["ppid"] != int(sys.argv[3]):
    fail("parent ppid %r, want the cuscope pid %s" % (parent["ppid"], sys.argv[3]))
if child["ppid"] != ppid_:
    fail("child ppid %r, want parent pid %d" % (child["ppid"], ppid_))
if child["cmdline"] != sys.argv[4] + " child":
    fail("child cmdline %r, want %r" % (child["cmdline"], sys.argv[4] + " child"))
if len(J["processes"]) != 2:
    fail("want 2 processes, got %r" % J["processes"])
expect_nvtx([
    ("parent.before", "", "PushPop", 2),
    ("parent.after", "", "PushPop", 1),
    ("child.range", "", "PushPop", 5),
    ("child.mark", "", "Mark", 1),
])
tids = {t["tid"]: t for t in J["threads"]}
if cpid not in tids or tids[cpid]["pid"] != cpid:
    fail("child's main thread %d not listed under pid %d" % (cpid, cpid))
no_losses()
PY
exit 0

#!/usr/bin/env bash
# A forked child that does not exec (a DataLoader worker): it inherits the collector and its
# ranges arrive as a second process with ppid = parent.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fork_exec

cs_record "$T/cap" app -- "$PROGS/fork_exec" noexec
[ "$RC" = 0 ] || fail "cuscope record exited $RC, want 0: $(head -c 300 "$T/app.err")"
grep -q "status 4" "$T/app.out" || fail "forked child did not exit 4: $(cat "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" "$T/app.out" <<'PY'
line = [l.split() for l in OUT.splitlines() if l.startswith("parent ")]
ppid_, cpid = int(line[0][1]), int(line[0][3])
process(ppid_)
child = process(cpid)
if child["ppid"] != ppid_:
    fail("forked child ppid %r, want %d" % (child["ppid"], ppid_))
expect_nvtx([
    ("parent.before", "", "PushPop", 2),
    ("parent.after", "", "PushPop", 1),
    ("forked.range", "", "PushPop", 2),
])
no_losses()
PY
exit 0

#!/usr/bin/env bash
# A capture whose frames are protocol version 2 (tests/data/capture_wire2.cap: fork_exec recorded
# by the version 2 build, RANK=4 in its environment, which that collector did not send) still
# reads after the HELLO grew the rank labels: both processes, their names and ranges, no rank.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

W2=$ROOT/tests/data/capture_wire2.cap
"$PYTHON" -c 'import struct,sys; v=struct.unpack_from("<I", open(sys.argv[1],"rb").read(), 32)[0]; sys.exit(v != 2)' "$W2" ||
	fail "$W2 does not hold protocol version 2 frames"
rc=0
"$CUSCOPE" stats --format=json "$W2" >"$T/w2.json" 2>"$T/w2.err" || rc=$?
[ "$rc" = 0 ] || fail "stats on the version 2 capture exited $rc: $(head -c 200 "$T/w2.err")"
[ -s "$T/w2.err" ] && fail "stats on the version 2 capture warned: $(head -c 200 "$T/w2.err")"
"$CUSCOPE" info "$W2" >"$T/w2.info" 2>&1 || fail "info on the version 2 capture failed: $(head -c 200 "$T/w2.info")"
grep -q "    rank " "$T/w2.info" && fail "a version 2 capture shows a rank: $(grep -m1 '    rank ' "$T/w2.info")"
py_check "$T/w2.json" /dev/null <<'PY'
ps = J["processes"]
if len(ps) != 2:
    fail("want 2 processes, got %r" % ps)
for p in ps:
    if (p["rank"], p["local_rank"], p["world_size"], p["restart_count"]) != (-1, -1, -1, -1):
        fail("a version 2 process has labels: %r" % p)
if not ps[1]["cmdline"].endswith("fork_exec child") or ps[1]["ppid"] != ps[0]["pid"]:
    fail("the child process is not intact: %r" % ps)
expect_nvtx([
    ("parent.before", "", "PushPop", 2),
    ("parent.after", "", "PushPop", 1),
    ("child.range", "", "PushPop", 5),
    ("child.mark", "", "Mark", 1),
])
no_losses()
PY
exit 0

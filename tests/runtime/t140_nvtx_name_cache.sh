#!/usr/bin/env bash
# The collector sends an NVTX message's bytes only when its pointer is new to the thread (or its
# bytes changed): every name must still be exact when a program rewrites a buffer in place,
# reuses a stack or heap address, passes strings ending just before an unreadable page (the
# comparison must not read past them), names longer than a cache slot, more pointers than slots,
# categories, wide, registered and domain messages, on several threads. Counts are exact.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_names

cs_record "$T/cap" app -- "$PROGS/nvtx_names"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
spec = [("buf.0", "", "PushPop", 44), ("buf", "", "PushPop", 4), ("mark.buf", "", "Mark", 4)]
spec += [("buf.%d" % i, "", "PushPop", 40) for i in range(1, 5)]
spec += [("abc", "", "PushPop", 30), ("abcd", "", "PushPop", 30), ("ab", "", "PushPop", 30)]
spec += [("stack.A", "", "PushPop", 25), ("stack.B", "", "PushPop", 25)]
spec += [("heap.first", "", "PushPop", 1), ("heap.second", "", "PushPop", 1)]
spec += [("edge.0", "", "PushPop", 20), ("edge.1", "", "PushPop", 20), ("edge", "", "PushPop", 20)]
spec += [("long." + "L" * 120, "", "PushPop", 12)]
spec += [("many.%03d" % i, "", "PushPop", 3) for i in range(200)]
spec += [("cat.ascii", "", "PushPop", 7), ("wide.name", "", "PushPop", 5)]
spec += [("reg.name", "", "PushPop", 6), ("dom.name", "dom.N", "PushPop", 9)]
spec += [("thr.0", "", "PushPop", 100), ("thr.1", "", "PushPop", 100)]
expect_nvtx(spec)
no_losses()
PY
exit 0

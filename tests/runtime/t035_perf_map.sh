#!/usr/bin/env bash
# Code with no ELF module behind it (JIT code, CPython >= 3.12 perf trampolines) is named through
# /tmp/perf-PID.map: a program running a JIT'd loop shows "jit_hot_loop" as its hot function.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog jit_perfmap

"$CUSCOPE" record -o "$T/cap" -- "$PROGS/jit_perfmap" 1.5 >"$T/out" 2>"$T/err" || fail "record failed: $(cat "$T/err")"
grep -q 'jit done' "$T/out" || fail "the program did not finish: $(cat "$T/out")"
"$CUSCOPE" stats --format=json --report=hot "$T/cap" >"$T/hot.json" || fail "stats failed"
"$PYTHON" - "$T/hot.json" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["hot"]
if not rows:
    print("no samples"); sys.exit(1)
top = max(rows, key=lambda r: r["samples"])
if top["function"] != "jit_hot_loop" or top["module"] != "[perf-map]":
    print("hottest is %r in %r, want jit_hot_loop in [perf-map]" % (top["function"], top["module"])); sys.exit(1)
PY
exit 0

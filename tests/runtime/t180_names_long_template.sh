#!/usr/bin/env bash
# Names: a C++ program whose hot function has a 2,325-byte mangled name (a template over 60
# namespaced types, like PyTorch's at::native kernels) shows it demangled in stats' hot list:
# "unsigned long deep_hot<at::native::detail::Pack<...Functor059> >(...)".
# (libstdc++'s __cxa_demangle refuses names over 1024 bytes, and the collector cut names at 2 KiB.)
# A 4,600-byte name (longer than a string may be on the wire) is cut, but keeps its module.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null 2>&1 || skip "no C++ compiler ($CXX)"
"$CXX" -O1 -g -o "$T/deep_template" "$(dirname "$0")/../progs/deep_template.cc" 2>"$T/cc.err" ||
	fail "cannot build tests/progs/deep_template.cc: $(head -c 300 "$T/cc.err")"

cs_record "$T/cap" app -- "$T/deep_template" 1.5
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
grep -q "^done deep_template" "$T/app.out" || fail "app did not finish: $(head -c 200 "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" <<'PY'
types = ["at::native::detail::VectorizedElementwiseFunctor%03d" % k for k in range(60)]
pack = "at::native::detail::Pack<%s>" % ", ".join(types)
want = "unsigned long deep_hot<%s >(%s, double)" % (pack, pack)
rows = [r for r in J["hot"] if r["module"] == "deep_template"]
if not rows:
    fail("no hot rows in deep_template: %r" % [(r["function"][:80], r["module"]) for r in J["hot"][:5]])
top = max(rows, key=lambda r: r["samples"])
if top["function"] != want:
    fail("hottest function in deep_template is %r (%d bytes), want the demangled deep_hot<...> (%d bytes)"
         % (top["function"][:160], len(top["function"]), len(want)))
if top["samples"] < 20:
    fail("only %d samples in deep_hot" % top["samples"])
PY

"$CXX" -O1 -g -DPACK120 -o "$T/deep_template" "$(dirname "$0")/../progs/deep_template.cc" 2>"$T/cc.err" ||
	fail "cannot build tests/progs/deep_template.cc -DPACK120: $(head -c 300 "$T/cc.err")"
cs_record "$T/cap120" app120 -- "$T/deep_template" 1.5
[ "$RC" = 0 ] || fail "record (120 types) exited $RC: $(head -c 300 "$T/app120.err")"
cs_stats "$T/cap120" "$T/stats120.json"
py_check "$T/stats120.json" <<'PY'
rows = [r for r in J["hot"] if r["function"].startswith("_Z8deep_hot") or r["function"].startswith("unsigned long deep_hot")]
if not rows:
    fail("no hot row for deep_hot (120 types): %r" % [(r["function"][:60], r["module"]) for r in J["hot"][:5]])
top = max(rows, key=lambda r: r["samples"])
if top["module"] != "deep_template":
    fail("the over-long name lost its module: %r in %r" % (top["function"][:60], top["module"]))
if top["samples"] < 20:
    fail("only %d samples in deep_hot (120 types)" % top["samples"])
PY
exit 0

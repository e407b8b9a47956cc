#!/usr/bin/env bash
# A Python program using the `nvtx` PyPI package (domains, registered strings, decorators,
# start/end across threads): rows checked exactly against tests/runtime/py_nvtx.py.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
VPY=$BUILD/venv/bin/python
[ -x "$VPY" ] || skip "no $VPY (make deps creates it; needs PyPI)"
"$VPY" -c 'import nvtx' 2>/dev/null || skip "nvtx package not installed in $BUILD/venv"

cs_record "$T/cap" app -- "$VPY" "$ROOT/tests/runtime/py_nvtx.py"
[ "$RC" = 0 ] || fail "record of py_nvtx.py exited $RC: $(tail -n 2 "$T/app.err" | head -c 300)"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([
    ("py.push", "", "PushPop", 5),
    ("py.colored", "", "PushPop", 2),
    ("decorated", "", "PushPop", 4),
    ("py.named", "py.dom", "PushPop", 3),
    ("py.ctx", "py.dom", "PushPop", 2),
    ("py.inner", "py.dom", "PushPop", 2),
    ("py.mark", "py.dom", "Mark", 3),
    ("py.async", "", "StartEnd", 2),
])
min_at_least("py.push", 10**6)
min_at_least("py.async", 2 * 10**6, "", "StartEnd")
no_losses()
process(app("pid"))
PY
exit 0

#!/usr/bin/env bash
# A burst of NVTX ranges that the collector's sender converts faster than the recorder reads:
# with rings large enough to hold it (CUSCOPE_RING_KB=65536) and a small send queue
# (--buffer-mb 1), the records wait in the ring while the viewer is behind instead of being
# converted only to be dropped as viewer_slow (1.6 M of 2 M events before). Every range arrives.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_burst_late

CUSCOPE_RING_KB=65536 "$CUSCOPE" record --buffer-mb 1 -o "$T/cap" -- "$PROGS/nvtx_burst_late" 1000000 300 \
	>"$T/app.out" 2>"$T/app.err" </dev/null
rc=$?
[ "$rc" = 0 ] || fail "record exited $rc: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([("burst", "", "PushPop", app("pairs"))])
no_losses()
PY
exit 0

#!/usr/bin/env bash
# attach to a process whose collector is armed under another session root (so the viewer does not
# find its socket): the collector is reached through its load mapping (not a symbolizer's mmap of
# the same file), moves its socket to the viewer's session, the capture gets the samples, and
# the target lives on with its own exit code.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target
mkdir -p "$T/other" && chmod 0700 "$T/other"

for run in 1 2; do
	CUSCOPE_SESSION_ROOT=$T/other LD_PRELOAD=$BUILD/lib/cuscope/libcuscope.so CUSCOPE_ARM=1 \
		"$PROGS/attach_target" 5 >"$T/app.out" 2>&1 &
	app=$!
	BG_PIDS+=("$app")
	# Let the sampler symbolize a while: it maps libcuscope.so whole, at file offset 0.
	sleep 1
	timeout 60 "$CUSCOPE" attach --record -o "$T/cap$run" --duration 1 "$app" >"$T/att.out" 2>"$T/att.err"
	rc=$?
	wait "$app"
	app_rc=$?
	[ "$app_rc" = 3 ] || fail "run $run: the target exited $app_rc after the attach, want its own 3 (attach: rc $rc, $(head -c 200 "$T/att.err"))"
	[ "$rc" = 0 ] || fail "run $run: attach exited $rc: $(head -c 300 "$T/att.err")"
	"$CUSCOPE" stats --format=json "$T/cap$run" >"$T/stats.json" 2>"$T/stats.err" || fail "stats failed: $(cat "$T/stats.err")"
	"$PYTHON" - "$T/stats.json" "$app" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
rows = [r for r in d["hot"] if r["pid"] == pid]
if not rows:
    print("no samples of pid %d in the capture" % pid); sys.exit(1)
PY
done
exit 0

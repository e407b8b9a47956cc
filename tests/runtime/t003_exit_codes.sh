#!/usr/bin/env bash
# cuscope record exits with the app's exit code: 0, 7, and 128+15 for an app that kills itself
# with SIGTERM; the ranges before the exit are in the capture in every case.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog exit_code

for spec in "0:0" "7:7" "signal 15:143" "signal 9:137"; do
	args=${spec%%:*}
	want=${spec##*:}
	# shellcheck disable=SC2086 # args is two words on purpose
	cs_record "$T/cap" app -- "$PROGS/exit_code" $args
	[ "$RC" = "$want" ] || fail "exit_code $args: cuscope record exited $RC, want $want"
	grep -q "^exit_code: exiting with" "$T/app.out" || fail "exit_code $args: app stdout not passed through"
	cs_stats "$T/cap" "$T/stats.json"
	py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([("ec.step", "", "PushPop", 3)])
process(app("pid"))
PY
	rm -f "$T/cap"
done
exit 0

#!/usr/bin/env bash
# Blocking-call stacks within a budget: a thread that blocks over the threshold 3000 times in a row
# (nanosleep 150 µs) has every call recorded (stats osrt count 3000) while unwinding stops once it
# would cost the thread over 1 % of its time, said in one notice ('cuscope info'); a thread that
# blocks 20 times for 2 ms keeps every stack and gets no such notice. The overhead budget is off,
# so that it does not raise the threshold past these calls (what t099 checks).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog blocky

check()
{
	local name=$1 n=$2 want_notice=$3
	local rc=0
	timeout 60 "$CUSCOPE" record --overhead-budget off -o "$T/$name.cap" -- "$PROGS/blocky" "$n" "$4" \
		>"$T/$name.out" 2>"$T/$name.err" </dev/null || rc=$?
	[ "$rc" = 0 ] || fail "$name: record exited $rc: $(head -c 300 "$T/$name.err")"
	grep -q "^done $n" "$T/$name.out" || fail "$name: program output: $(head -c 200 "$T/$name.out")"
	cs_stats "$T/$name.cap" "$T/$name.json"
	py_check "$T/$name.json" "$T/$name.out" "$n" <<'PY'
n = int(sys.argv[3])
rows = [r for r in J["osrt"] if r["call"] == "nanosleep"]
got = sum(r["count"] for r in rows)
if got != n:
    fail("nanosleep calls recorded: %d, want %d (%r)" % (got, n, rows))
PY
	timeout 30 "$CUSCOPE" info "$T/$name.cap" >"$T/$name.info" 2>&1 || fail "$name: info exited $?"
	if [ "$want_notice" = 1 ]; then
		[ "$(grep -c 'recorded without a stack' "$T/$name.info")" = 1 ] ||
			fail "$name: want one stack-budget notice in info: $(grep -i notice -A3 "$T/$name.info" | head -c 400)"
	else
		grep -q 'recorded without a stack' "$T/$name.info" && fail "$name: stack-budget notice for rare blocking calls"
	fi
	return 0
}
check frequent 3000 1 150
check rare 20 0 2000
exit 0

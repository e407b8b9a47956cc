#!/usr/bin/env bash
# _exit from a signal handler while another thread holds the loader's lock (in a dl_iterate_phdr
# callback, or in a dlopen whose constructor never returns) ends the program at once with its
# code: the collector's _exit used to call dlsym and dl_iterate_phdr there and hung for ever. At
# most a bounded wait for the sender (300 ms; the program's run is ~0.2 s). A plain _exit still
# delivers the final counts, and vfork children that _exit leave the parent's collector alone.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog signal_harm

# run NAME OPTIONS... -- ARGS...: records signal_harm ARGS with record OPTIONS; sets RC and MS.
run()
{
	local name=$1 opts=()
	shift
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	local start
	start=$(date +%s%N)
	timeout 30 "$CUSCOPE" record "${opts[@]}" -o "$T/$name.cap" -- "$PROGS/signal_harm" "$@" \
		>"$T/$name.out" 2>"$T/$name.err" </dev/null
	RC=$?
	MS=$(( ($(date +%s%N) - start) / 1000000 ))
	echo "$name: rc $RC, $MS ms" >&2
}

# The sampler's own unwinding also looks up unwind tables through dl_iterate_phdr: the thread
# that holds that lock for ever would stop a sampled thread too, so sampling is off here.
run iterate --sample-hz 0 -- exit-iterate
[ "$RC" = 7 ] || fail "exit-iterate: record exited $RC, want the program's 7: $(head -c 300 "$T/iterate.err")"
[ "$MS" -le 3000 ] || fail "exit-iterate: took $MS ms"
"$CUSCOPE" info "$T/iterate.cap" >"$T/iterate.info" 2>&1 || fail "info of exit-iterate failed"
grep -q incomplete "$T/iterate.info" && fail "exit-iterate: $(grep -m1 incomplete "$T/iterate.info")"

CC=${CC:-cc}
cat >"$T/block_ctor.c" <<'C'
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
/* Sets the program's flag and never returns: dlopen holds the loader's lock meanwhile. */
__attribute__((constructor)) static void block_ctor(void)
{
	const char *p = getenv("HARM_FLAG");
	if (p)
		*(volatile int *)(uintptr_t)strtoul(p, NULL, 16) = 1;
	for (;;)
		pause();
}
C
if "$CC" -shared -fPIC -o "$T/block_ctor.so" "$T/block_ctor.c" 2>"$T/cc.err"; then
	# Sampling on: the sender may block on the loader's lock too (symbols of the vDSO); the
	# exit then waits for it at most its bound, and the capture says its counts are missing.
	run dlopen -- exit-dlopen "$T/block_ctor.so"
	[ "$RC" = 7 ] || fail "exit-dlopen: record exited $RC, want the program's 7: $(head -c 300 "$T/dlopen.err")"
	[ "$MS" -le 3000 ] || fail "exit-dlopen: took $MS ms"
else
	echo "no C compiler ($CC): exit-dlopen not run: $(head -c 200 "$T/cc.err")" >&2
fi

run plain -- exit-plain
[ "$RC" = 5 ] || fail "exit-plain: record exited $RC, want the program's 5: $(head -c 300 "$T/plain.err")"
"$CUSCOPE" info "$T/plain.cap" >"$T/plain.info" 2>&1 || fail "info of exit-plain failed"
grep -q incomplete "$T/plain.info" && fail "exit-plain: $(grep -m1 incomplete "$T/plain.info")"
cs_stats "$T/plain.cap" "$T/plain.json"
py_check "$T/plain.json" <<'PY'
hot = [r for r in J.get("hot", []) if r["function"] == "signal_harm_spin"]
if not hot or hot[0]["samples"] < 20:
    fail("exit-plain: samples before _exit missing: hot rows for signal_harm_spin %r" % hot)
PY

run vfork -- vfork 200
[ "$RC" = 0 ] || fail "vfork: record exited $RC: $(head -c 300 "$T/vfork.err")"
grep -q "^vfork ok 200$" "$T/vfork.out" || fail "vfork: $(tr '\n' ' ' <"$T/vfork.out")"
"$CUSCOPE" info "$T/vfork.cap" >"$T/vfork.info" 2>&1 || fail "info of vfork failed"
grep -q incomplete "$T/vfork.info" && fail "vfork: $(grep -m1 incomplete "$T/vfork.info")"
exit 0

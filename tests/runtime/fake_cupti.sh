# shellcheck shell=bash
# Helpers of the CPU-only CUPTI tests (t210-t214), sourced after lib.sh: `cuscope record` of
# tests/progs/fake_cuda_app with the stand-in libcupti (tests/support/fake_cupti.c) loaded through
# CUSCOPE_CUPTI_PATH; the CLI sets CUDA_INJECTION64_PATH, which the program loads as the CUDA
# driver would. The checks read `cuscope export` (Chrome JSON) and `cuscope stats`.

FAKE_CUPTI=$BUILD/tests/support/libfakecupti.so

need_fake_cupti()
{
	need_cuscope
	need_prog fake_cuda_app
	[ -f "$FAKE_CUPTI" ] || fail "$FAKE_CUPTI not built (make tests-build)"
}

# fc_record [-b BIN] MODE NAME ARGS...: records `fake_cuda_app ARGS` with CUSCOPE_CUDA_API=MODE into
# $T/NAME.cap (app output in $T/NAME.out), fails unless the program's exit status 0 came through,
# then exports $T/NAME.json and writes the stats to $T/NAME.stats.json.
fc_record()
{
	local bin=$CUSCOPE
	if [ "$1" = -b ]; then
		bin=$2
		shift 2
	fi
	local mode=$1 name=$2
	shift 2
	# CUDA's first call is slow (it creates the context): the collector settles its clock meanwhile.
	FAKE_CUPTI_FIRST_CALL_MS=${FAKE_CUPTI_FIRST_CALL_MS:-150} CUSCOPE_CUDA_API=$mode \
		CUSCOPE_CUPTI_PATH=$FAKE_CUPTI cs_record -b "$bin" "$T/$name.cap" "$name" -- \
		"$PROGS/fake_cuda_app" "$@"
	echo "$mode" >"$T/$name.mode"
	[ "$RC" = 0 ] || fail "$name ($mode): cuscope record exited $RC, want the program's 0: $(tail -c 400 "$T/$name.err")"
	grep -q '^fake_cupti ' "$T/$name.out" || fail "$name ($mode): no report from the stand-in libcupti: $(head -c 300 "$T/$name.out")"
	timeout 60 "$bin" export -o "$T/$name.json" "$T/$name.cap" 2>"$T/$name.export.err" ||
		fail "$name ($mode): cuscope export failed: $(head -c 300 "$T/$name.export.err")"
	cs_stats -b "$bin" "$T/$name.cap" "$T/$name.stats.json"
}

# fc_check NAME LAUNCHES [MIN_WORKER_BUFFERS]: every launching thread named by a "tid LABEL TID" line
# made LAUNCHES cudaLaunchKernel calls, one cudaMemcpyAsync and one cudaStreamSynchronize, all
# recorded on its own lane and nothing else (no cudaGetDevice); every kernel and copy is linked by a
# flow to the call that launched it, on the thread that made it; the stand-in dropped nothing, got
# zeroed buffers and system thread ids; the records' CUPTI clock (CLOCK_REALTIME in the stand-in,
# as in libcupti) was moved to CLOCK_MONOTONIC: the main thread's first LAUNCHES calls and their
# ops lie within the span it printed (with FC_WANT_TIMESTAMP_CALLBACK=1, CUSCOPE_CUPTI_MONO_CLOCK's
# path: our timestamp callback was registered instead); waits: every thread's cudaStreamSynchronize
# (which waits in the driver's cuStreamSynchronize) and its direct cuCtxSynchronize are one "stream"
# and one "context" sync each; with callbacks they are made from the recorded calls, on the caller's
# lane, CUPTI's SYNCHRONIZATION kind left off, and the driver wait inside the runtime's is not
# recorded a second time; with API activity records (no callbacks) the kind is on and they come from
# its records; no event lost in the capture.
fc_check()
{
	local name=$1 launches=$2 min_worker=${3:-0}
	"$PYTHON" - "$T/$name.json" "$T/$name.out" "$T/$name.stats.json" "$launches" "$min_worker" \
		"${FC_WANT_TIMESTAMP_CALLBACK:-0}" "$(cat "$T/$name.mode")" <<'PY' >"$T/$name.check" 2>&1 || fail "$name: $(tail -n 1 "$T/$name.check")"
import collections, json, sys

def fail(msg):
    print(msg)
    sys.exit(1)

trace = json.load(open(sys.argv[1]))["traceEvents"]
out = open(sys.argv[2]).read().splitlines()
stats = json.load(open(sys.argv[3]))
launches, min_worker, want_callback = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sync_by_callback = sys.argv[7] != "activity"

tids = {}
report = None
span = None
for line in out:
    f = line.split()
    if len(f) == 3 and f[0] == "tid":
        tids[f[1]] = int(f[2])
    elif len(f) == 3 and f[0] == "main_span_ns":
        span = (int(f[1]), int(f[2]))
    elif f and f[0] == "fake_cupti":
        report = dict(zip(f[1::2], map(int, f[2::2])))
if not tids or report is None:
    fail("program output lacks tid lines or the report: %r" % out[:5])
for key, want in (("dropped", 0), ("dirty_bytes", 0), ("zeroed", 1), ("system_tids", 1), ("timestamp", want_callback),
                  ("sync_kind", 0 if sync_by_callback else 1)):
    if report.get(key) != want:
        fail("stand-in libcupti: %s = %r, want %r (%r)" % (key, report.get(key), want, report))
if report["worker_buffers"] < min_worker:
    fail("stand-in libcupti handed back %d buffers on its own thread, want at least %d" % (report["worker_buffers"], min_worker))

label_of = {tid: label for label, tid in tids.items()}
api = [e for e in trace if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")]
ops = [e for e in trace if e.get("ph") == "X" and e.get("cat") in ("kernel", "memcpy")]
starts = [e for e in trace if e.get("ph") == "s"]
finishes = [e for e in trace if e.get("ph") == "f"]

# API calls: by thread and name, exactly the program's.
got = collections.Counter((e["tid"], e["name"]) for e in api)
want = collections.Counter()
for label, tid in tids.items():
    want[(tid, "cudaLaunchKernel_v7000")] = launches
    want[(tid, "cudaMemcpyAsync_v3020")] = 1
    want[(tid, "cudaStreamSynchronize_v3020")] = 1
    if sync_by_callback:
        want[(tid, "cuCtxSynchronize")] = 1
if got != want:
    diff = sorted(set(got.items()) ^ set(want.items()))[:8]
    fail("API calls by (tid, name) differ from the program's (got ^ want): %r" % diff)
api_by_corr = {}
for e in api:
    c = e["args"]["correlation"]
    if c in api_by_corr:
        fail("two API calls with correlation %d" % c)
    api_by_corr[c] = e

# GPU ops: LAUNCHES kernels named after each thread's label, one copy a thread.
names = collections.Counter(e["name"] for e in ops)
want_names = collections.Counter({"fake_kernel_" + l: launches for l in tids})
want_names["Memcpy HtoD"] = len(tids)
if names != want_names:
    fail("GPU ops %r, want %r" % (dict(names), dict(want_names)))

# Flows: one pair per op, from the launching call's thread to the op's lane.
op_by_corr = {e["args"]["correlation"]: e for e in ops}
if len(op_by_corr) != len(ops):
    fail("GPU ops share correlation ids")
if len(starts) != len(ops) or len(finishes) != len(ops):
    unlinked = sorted(c for c in op_by_corr if c not in {s["id"] & 0xffffffff for s in starts})
    fail("%d flow starts and %d finishes for %d GPU ops (unlinked correlations %r...)"
         % (len(starts), len(finishes), len(ops), unlinked[:6]))
fin_by_id = {f["id"]: f for f in finishes}
for s in starts:
    corr = s["id"] & 0xffffffff
    op = op_by_corr.get(corr)
    if op is None:
        fail("flow %d names no GPU op" % corr)
    call = api_by_corr.get(corr)
    if call is None or s["tid"] != call["tid"]:
        fail("flow of %s (correlation %d) starts on tid %d, its call is on %r" % (op["name"], corr, s["tid"], call and call["tid"]))
    if op["cat"] == "kernel" and op["name"] != "fake_kernel_" + label_of.get(s["tid"], "?"):
        fail("kernel %s (correlation %d) linked to tid %d (%s)" % (op["name"], corr, s["tid"], label_of.get(s["tid"])))
    f = fin_by_id.get(s["id"])
    if f is None or f["tid"] != op["tid"] or abs(f["ts"] - op["ts"]) > 0.002:
        fail("flow %d does not end at its op: %r vs %r" % (corr, f, op))

# Waits: a stream and a context sync a thread; by callback each spans its call on the caller's lane.
syncs = [e for e in trace if e.get("ph") == "X" and e.get("cat") == "sync"]
sync_rows = {r["type"]: r["count"] for r in stats.get("sync", [])}
if sync_rows != {"stream": len(tids), "context": len(tids)}:
    fail("sync rows %r, want stream and context %d each (a cudaStreamSynchronize and a cuCtxSynchronize a thread)"
         % (sync_rows, len(tids)))
if sync_by_callback:
    for name, call_name in (("Sync stream", "cudaStreamSynchronize"), ("Sync context", "cuCtxSynchronize")):
        calls = {e["tid"]: e for e in api if e["name"].startswith(call_name)}
        these = [e for e in syncs if e["name"] == name]
        for e in these:
            c = calls.get(e["tid"])
            if c is None or abs(e["ts"] - c["ts"]) > 0.002 or abs(e["dur"] - c["dur"]) > 0.002:
                fail("%s %r is not its thread's %s %r" % (name, e, call_name, c))
        if sorted(e["tid"] for e in these) != sorted(tids.values()):
            fail("%s on tids %r, want one on each of %r" % (name, sorted(e["tid"] for e in these), sorted(tids.values())))

# One clock: the main thread's first LAUNCHES launches and their kernels, in CLOCK_MONOTONIC ns,
# lie within the span the program measured around them (the stand-in's kernels run at most a few
# ms behind their calls); a record left in CUPTI's wall clock would be ~56 years off.
if span is None:
    fail("program output lacks main_span_ns")
base = json.load(open(sys.argv[1]))["otherData"]["time_base_ns"]
slack = 50000
def mono(e):
    return base + round(e["ts"] * 1000)
main_tid = tids["main"]
main_launches = sorted(mono(e) for e in api if e["tid"] == main_tid and e["name"].startswith("cudaLaunch"))[:launches]
if len(main_launches) < launches or main_launches[0] < span[0] - slack or main_launches[-1] > span[1] + slack:
    fail("main's launches at %r..%r ns, outside the span %r it measured" % (main_launches[:1], main_launches[-1:], span))
main_kernels = sorted(mono(e) for e in ops if e["name"] == "fake_kernel_main")[:launches]
if main_kernels[0] < span[0] - slack or main_kernels[-1] > span[1] + 20000000:
    fail("main's kernels at %r..%r ns, outside the span %r" % (main_kernels[0], main_kernels[-1], span))

# Losses of events (a sample the sampler skipped on a busy machine is not one).
for r in stats.get("losses", []):
    if r.get("count") and r["cause"] != "samples_skipped":
        fail("loss %s = %d, want none" % (r["cause"], r["count"]))
PY
}

# fc_attach MODE NAME: starts fake_cuda_app armed (`cuscope run --detached`, launching for 20 s, the
# stand-in named libcuda.so.1 as the driver is), attaches twice for 1 s (the second after the first
# detached: CUPTI finalized, then subscribed again) into $T/NAME-1.cap and $T/NAME-2.cap and checks
# each: kernels and copies were recorded, each linked to its call on the main thread (but one at
# either edge), only the calls asked for, none longer than a second (a call under way at an attach
# has no entry callback).
fc_attach()
{
	local mode=$1 name=$2 pid i
	export CUSCOPE_SESSION_ROOT=$T/sessions
	[ -d "$T/sessions" ] || mkdir -m 0700 "$T/sessions"
	FAKE_CUDA_APP_SECONDS=20 CUSCOPE_CUDA_API=$mode CUSCOPE_CUPTI_PATH=$FAKE_CUPTI \
		"$CUSCOPE" run --detached -- "$PROGS/fake_cuda_app" 100 8 0 >"$T/$name.run" 2>&1 ||
		fail "$name: run --detached failed: $(cat "$T/$name.run")"
	pid=$(sed -n 's/^pid \([0-9]*\) armed.*/\1/p' "$T/$name.run")
	[ -n "$pid" ] || fail "$name: run --detached printed no pid: $(cat "$T/$name.run")"
	BG_PIDS+=("$pid")
	sleep 1
	for i in 1 2; do
		timeout 30 "$CUSCOPE" attach --record -o "$T/$name-$i.cap" --duration 1 "$pid" \
			>"$T/$name-$i.out" 2>"$T/$name-$i.err" || fail "$name: attach $i failed: $(cat "$T/$name-$i.err")"
		sleep 0.5
	done
	kill -0 "$pid" 2>/dev/null || fail "$name: the program did not run on after the detaches"
	for i in 1 2; do
		timeout 60 "$CUSCOPE" export -o "$T/$name-$i.json" "$T/$name-$i.cap" 2>"$T/$name-$i.export.err" ||
			fail "$name: export of attach $i failed: $(head -c 300 "$T/$name-$i.export.err")"
		"$PYTHON" - "$T/$name-$i.json" "$pid" <<'PY' >"$T/$name-$i.check" 2>&1 ||
import json, sys
trace = json.load(open(sys.argv[1]))["traceEvents"]
pid = int(sys.argv[2])
api = [e for e in trace if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"]
ops = [e for e in trace if e.get("ph") == "X" and e.get("cat") in ("kernel", "memcpy")]
flows = [e for e in trace if e.get("ph") == "s"]
if not ops:
    print("no GPU op recorded")
    sys.exit(1)
names = {e["name"] for e in api}
if not names <= {"cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cudaStreamSynchronize_v3020"}:
    print("API calls recorded: %r" % sorted(names))
    sys.exit(1)
long = [e for e in api if e["dur"] > 1e6 or e["tid"] != pid]
if long:
    print("%d API calls longer than 1 s or off the main thread, e.g. %r" % (len(long), long[0]))
    sys.exit(1)
# Only an op at either edge may lack its call: launched under way at the attach (its entry
# callback came before tracing) or finishing as the detach stops it.
linked = {s["id"] & 0xffffffff for s in flows}
edge = sorted(ops, key=lambda e: e["ts"])
edge = {e["args"]["correlation"] for e in edge[:2] + edge[-2:]}
unlinked = [e for e in ops if e["args"]["correlation"] not in linked]
if len(flows) > len(ops) or any(e["args"]["correlation"] not in edge for e in unlinked):
    print("%d flows for %d GPU ops, unlinked ones not at the edges: %r" % (len(flows), len(ops), unlinked[:3]))
    sys.exit(1)
if any(s["tid"] != pid for s in flows):
    print("a flow starts off the main thread")
    sys.exit(1)
PY
			fail "$name: attach $i: $(tail -n 1 "$T/$name-$i.check")"
	done
	unset CUSCOPE_SESSION_ROOT
}

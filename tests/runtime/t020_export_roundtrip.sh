#!/usr/bin/env bash
# export round trip: recorded captures (nvtx_domains, nvtx_threads) exported to JSON, JSON.gz and
# stdout; the JSON parses and its X/i events per (name, domain, style) equal stats' nvtx counts
# exactly; thread names equal. A synthetic GPU capture (tests/bench/gen_capture.c, known truth)
# checks kernel/copy/memset args, GPU stream tracks, flows and the --from/--to window exactly.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_domains nvtx_threads

GEN=$T/gen_capture
cc -O2 -I"$ROOT/include" -D_GNU_SOURCE -o "$GEN" "$ROOT/tests/bench/gen_capture.c" "$BUILD/obj/libviewer.a" \
	-lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" || fail "cannot build gen_capture: $(head -c 300 "$T/cc.err")"

check_export()
{
	local cap=$1 name=$2 rc=0
	timeout 60 "$CUSCOPE" export -o "$T/$name.json" "$cap" 2>"$T/$name.err" || rc=$?
	[ "$rc" = 0 ] || fail "export $name exited $rc: $(head -c 300 "$T/$name.err")"
	[ -s "$T/$name.err" ] && fail "export $name wrote to stderr: $(head -c 300 "$T/$name.err")"
	timeout 60 "$CUSCOPE" export -o "$T/$name.json.gz" "$cap" 2>/dev/null || fail "export to .gz failed"
	gzip -t "$T/$name.json.gz" || fail "$name.json.gz is not gzip"
	zcat "$T/$name.json.gz" | cmp -s - "$T/$name.json" || fail "gzip export differs from plain export"
	timeout 60 "$CUSCOPE" export "$cap" >"$T/$name.stdout" 2>/dev/null || fail "export to stdout failed"
	cmp -s "$T/$name.stdout" "$T/$name.json" || fail "export to stdout differs from -o FILE"
	timeout 60 "$CUSCOPE" export -o - "$cap" >"$T/$name.dash" 2>/dev/null || fail "export -o - failed"
	cmp -s "$T/$name.dash" "$T/$name.json" || fail "export -o - differs from -o FILE"
	cs_stats "$cap" "$T/$name.stats.json"
	py_check "$T/$name.stats.json" /dev/null "$T/$name.json" <<'PY'
import collections
try:
    E = json.load(open(sys.argv[3], encoding="utf-8"))
except Exception as e:
    fail("export JSON does not parse: %s" % e)
ev = E["traceEvents"]
got = collections.Counter()
for e in ev:
    for k in ("ph", "pid", "tid"):
        if k not in e:
            fail("event lacks %r: %r" % (k, e))
    if e["ph"] in ("X", "i") and e["cat"] not in ("kernel", "memcpy", "memset", "sync", "cuda_runtime", "cuda_driver"):
        a = e["args"]
        want_cat = a["domain"] if a["domain"] else "nvtx"
        if e["cat"] != want_cat:
            fail("event cat %r, domain %r" % (e["cat"], a["domain"]))
        got[(e["name"], a["domain"], a["style"])] += 1
        if e["ph"] == "X" and e["dur"] < 0:
            fail("negative dur: %r" % e)
want = collections.Counter({(r["name"], r["domain"], r["style"]): r["count"] for r in J["nvtx"]})
if got != want:
    fail("export NVTX counts differ from stats: only in export %r, only in stats %r" % (dict(got - want), dict(want - got)))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
for t in J["threads"]:
    if names.get((t["pid"], t["tid"])) != t["name"]:
        fail("thread %d named %r in export, %r in stats" % (t["tid"], names.get((t["pid"], t["tid"])), t["name"]))
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
for p in J["processes"]:
    if procs.get(p["pid"]) != p["cmdline"]:
        fail("process %d named %r, cmdline %r" % (p["pid"], procs.get(p["pid"]), p["cmdline"]))
if E.get("otherData", {}).get("clock") != "CLOCK_MONOTONIC":
    fail("otherData lacks the clock")
PY
}

cs_record "$T/domains.cap" app1 -- "$PROGS/nvtx_domains"
[ "$RC" = 0 ] || fail "record nvtx_domains exited $RC"
check_export "$T/domains.cap" domains
cs_record "$T/threads.cap" app2 -- "$PROGS/nvtx_threads"
[ "$RC" = 0 ] || fail "record nvtx_threads exited $RC"
check_export "$T/threads.cap" threads

# Synthetic GPU capture with known truth.
"$GEN" "$T/gen.cap" 3000 20000 50000 >"$T/gen.truth" || fail "gen_capture failed"
check_export "$T/gen.cap" gen
for win in "0.0051 0.0102" "0 0.001" "0.1 0.2" "0.15 1000"; do
	set -- $win
	rc=0
	timeout 60 "$CUSCOPE" export --from "$1" --to "$2" -o "$T/win.json" "$T/gen.cap" 2>"$T/win.err" || rc=$?
	[ "$rc" = 0 ] || fail "export --from $1 --to $2 exited $rc: $(head -c 200 "$T/win.err")"
	"$PYTHON" - "$T/gen.truth" "$T/win.json" "$T/gen.json" "$1" "$2" <<'PY' || exit 1
import collections, json, sys
def fail(m):
    print(m); sys.exit(1)
truth = json.load(open(sys.argv[1]))
W = json.load(open(sys.argv[2]))["traceEvents"]
F = json.load(open(sys.argv[3]))["traceEvents"]
lo, hi = float(sys.argv[4]) * 1e6, float(sys.argv[5]) * 1e6   # us
full = collections.Counter((e["ph"], e["name"]) for e in F)
# whole export: exact truth
for key, n in (("step", truth["step"]), ("inner", truth["inner"]), ("async", truth["async"]),
               ("kernel(float*, int)", truth["kernel"]), ("cudaLaunchKernel", truth["cudaLaunchKernel"]),
               ("Memcpy HtoD", truth["memcpy"]), ("Memset", truth["memset"])):
    if full[("X", key)] != n:
        fail("full export: %d X events %r, want %d" % (full[("X", key)], key, n))
if full[("i", "tick")] != truth["tick"]:
    fail("full export: %d tick marks, want %d" % (full[("i", "tick")], truth["tick"]))
flows = truth["kernel"] + truth["memcpy"] + truth["memset"]
if full[("s", "launch")] != flows or full[("f", "launch")] != flows:
    fail("flows s=%d f=%d, want %d each" % (full[("s", "launch")], full[("f", "launch")], flows))
k = [e for e in F if e["ph"] == "X" and e["cat"] == "kernel"][0]
a = k["args"]
if (a["grid"], a["block"], a["registers"], a["shared_static"], a["shared_dynamic"], a["device"], a["stream"]) != \
        ([128, 1, 1], [256, 1, 1], 32, 1024, 2048, 0, 7):
    fail("kernel args %r" % a)
if abs(k["dur"] - truth["kernel_ns"] / 1000.0) > 1e-9:
    fail("kernel dur %r us, want %r" % (k["dur"], truth["kernel_ns"] / 1000.0))
c = [e for e in F if e["ph"] == "X" and e["cat"] == "memcpy"][0]["args"]
if (c["bytes"], c["kind"], c["src_mem"], c["dst_mem"], c["async"]) != (4096, "HtoD", "pinned", "device", True):
    fail("memcpy args %r" % c)
tracks = {e["args"]["name"] for e in F if e["ph"] == "M" and e["name"] == "thread_name"}
if "GPU0 s7" not in tracks or "gen-main" not in tracks:
    fail("tracks %r lack GPU0 s7 / gen-main" % sorted(tracks))
ktids = {e["tid"] for e in F if e["ph"] == "X" and e["cat"] == "kernel"}
gtid = [e["tid"] for e in F if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"] == "GPU0 s7"]
if ktids != set(gtid):
    fail("kernels on tids %r, GPU0 s7 track is %r" % (ktids, gtid))
# window: X events kept exactly when they overlap [lo, hi)
for key in ("step", "inner", "kernel(float*, int)", "Memcpy HtoD"):
    want = sum(1 for e in F if e["ph"] == "X" and e["name"] == key and e["ts"] < hi and e["ts"] + e["dur"] > lo)
    got = sum(1 for e in W if e["ph"] == "X" and e["name"] == key)
    if got != want:
        fail("window [%s,%s) s: %d %r events, want %d" % (sys.argv[4], sys.argv[5], got, key, want))
want = sum(1 for e in F if e["ph"] == "i" and lo <= e["ts"] < hi)
got = sum(1 for e in W if e["ph"] == "i")
if got != want:
    fail("window: %d marks, want %d" % (got, want))
PY
done

# bad windows and arguments: one line, exit 2
for args in "--from 2 --to 1" "--from -1" "--to abc" "--bogus" ""; do
	rc=0
	# shellcheck disable=SC2086 # word splitting wanted
	"$CUSCOPE" export $args "$T/gen.cap" >/dev/null 2>"$T/bad.err" || rc=$?
	if [ -z "$args" ]; then
		[ "$rc" = 0 ] || fail "plain export exited $rc"
		continue
	fi
	[ "$rc" = 2 ] || fail "export $args exited $rc, want 2"
	one_line_error "$T/bad.err" "export $args"
done
rc=0
"$CUSCOPE" export -o "$T/no/such/dir/x.json" "$T/gen.cap" 2>"$T/bad.err" || rc=$?
[ "$rc" != 0 ] || fail "export to a missing directory exited 0"
one_line_error "$T/bad.err" "export to a missing directory"

# the sanitized binary exports the same bytes
if [ -x "$CUSCOPE_ASAN" ]; then
	rc=0
	"$CUSCOPE_ASAN" export -o "$T/asan.json" "$T/gen.cap" 2>"$T/asan.err" || rc=$?
	[ "$rc" = 0 ] || fail "ASan export exited $rc: $(head -c 300 "$T/asan.err")"
	no_sanitizer_report "$T/asan.err"
	cmp -s "$T/asan.json" "$T/gen.json" || fail "ASan export differs"
fi
exit 0

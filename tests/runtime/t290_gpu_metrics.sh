#!/usr/bin/env bash
# GPU hardware metric samples in captures (crafted by metrics_capture.c, known truth): `stats` has
# a gpu_metrics section (per GPU and metric: samples, min, lower median, max, mean, unit; samples
# that are no measurement are not counted), the same in table/CSV/JSON; the Chrome JSON export has
# one "C" series per GPU metric under the sampling process, and the Perfetto export the same values
# on counter tracks of the same names; several captures move the samples with their clocks;
# captures of older protocols (3: the one before; 1) read whole, with an empty section.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ -f "$BUILD/obj/libviewer.a" ] || skip "no $BUILD/obj/libviewer.a"
for san in "" "-fsanitize=address,undefined"; do
	# shellcheck disable=SC2086
	cc -O2 $san -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/runtime/metrics_capture.c" \
		"$BUILD/obj/libviewer.a" -lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" && break
done
[ -x "$T/gen" ] || fail "cannot build metrics_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/m.cap" || fail "metrics_capture failed"

U1=GPU-11223344-5566-7788-99aa-bbccddeeff01
U2=GPU-02020202-0202-0202-0202-020202020202
TENSOR=TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed
want="# gpu_metrics
gpu,device,metric,source,samples,min,median,max,mean,unit
$U1,H200,sm__cycles_active.avg,pm,100,1000,1049,1099,1049.5,cycles
$U1,H200,$TENSOR,pm,100,0,25,75,37.5,percent
$U1,H200,dram__bytes_read.sum,pm,100,1000000,50000000,100000000,50500000,bytes
$U2,,nvml:gpu_util,nvml,3,10,20,90,40,percent"
"$CUSCOPE" stats --format=csv --report=gpu_metrics "$T/m.cap" >"$T/m.csv" 2>"$T/m.err" || fail "stats: $(head -c 200 "$T/m.err")"
[ "$(cat "$T/m.csv")" = "$want" ] || fail "stats gpu_metrics: $(tr '\n' '|' <"$T/m.csv")"

"$CUSCOPE" stats --format=json "$T/m.cap" >"$T/all.json" 2>/dev/null || fail "stats json failed"
"$PYTHON" - "$T/all.json" <<'PY' || exit 1
import json, sys
g = json.load(open(sys.argv[1])).get("gpu_metrics")
if not g or len(g) != 4:
    print("json gpu_metrics: %r" % (g,)); sys.exit(1)
t = g[1]
if (t["metric"].endswith("pct_of_peak_sustained_elapsed") and t["samples"] == 100 and t["min"] == 0
        and t["median"] == 25 and t["max"] == 75 and t["mean"] == 37.5 and t["unit"] == "percent"
        and t["source"] == "pm" and t["device"] == "H200"):
    sys.exit(0)
print("json tensor row: %r" % (t,)); sys.exit(1)
PY
"$CUSCOPE" stats "$T/m.cap" >"$T/all.txt" 2>/dev/null || fail "stats table failed"
grep -A6 '^== gpu_metrics ==' "$T/all.txt" | grep -qE "^$U2 +nvml:gpu_util +nvml +3 +10 +20 +90 +40 +percent" ||
	fail "table gpu_metrics: $(grep -A6 '^== gpu_metrics ==' "$T/all.txt" | tr '\n' '|')"

# info: the samples, and per GPU its metrics, sampler and source.
"$CUSCOPE" info "$T/m.cap" >"$T/info.txt" 2>&1 || fail "info failed: $(head -c 200 "$T/info.txt")"
grep -qx 'gpu metrics 303 samples' "$T/info.txt" || fail "info: $(grep -i metric "$T/info.txt")"
grep -qxF "  $U1  GPU0 H200: 3 metrics from pid 5151, CUPTI PM sampling" "$T/info.txt" || fail "info U1: $(grep GPU- "$T/info.txt")"
grep -qxF "  $U2  GPU0: 1 metric from pid 5152, NVML utilisation" "$T/info.txt" || fail "info U2: $(grep GPU- "$T/info.txt")"
"$CUSCOPE" info "$ROOT/tests/data/capture_v1.cap" 2>&1 | grep -q 'gpu metrics' && fail "info of a capture without metrics names them"

# Chrome JSON: "C" events under pid 5151 (one per sample and one closing the series).
"$CUSCOPE" export -o "$T/m.json" "$T/m.cap" >/dev/null 2>"$T/ex.err" || fail "export: $(head -c 200 "$T/ex.err")"
"$CUSCOPE" export --format=perfetto -o "$T/m.pftrace" "$T/m.cap" >/dev/null 2>"$T/pf.err" || fail "export perfetto: $(head -c 200 "$T/pf.err")"
"$PYTHON" - "$T/m.json" "$T/m.pftrace" "$TENSOR" <<'PY' || exit 1
import collections, json, struct, sys
J = json.load(open(sys.argv[1]))
tensor = sys.argv[3]
series = collections.defaultdict(list)
for e in J["traceEvents"]:
    if e.get("ph") == "C" and e["name"].startswith("GPU"):
        series[(e["pid"], e["name"])].append((e["ts"], e["args"]["value"]))
want_names = {(5151, "GPU0 sm__cycles_active.avg"), (5151, "GPU0 " + tensor),
              (5151, "GPU0 dram__bytes_read.sum"), (5152, "GPU0 nvml:gpu_util")}
if set(series) != want_names:
    print("json counter series: %r" % sorted(series)); sys.exit(1)
sm = sorted(series[(5151, "GPU0 sm__cycles_active.avg")])
if len(sm) != 101 or [v for _, v in sm[:100]] != [1000 + i for i in range(100)] or sm[100][1] != 1099:
    print("json sm series: %d points %r" % (len(sm), sm[:3])); sys.exit(1)
if abs((sm[1][0] - sm[0][0]) - 10000) > 0.01 or abs((sm[100][0] - sm[0][0]) - 1000000) > 0.01:
    print("json sm times (us): %r %r %r" % (sm[0][0], sm[1][0], sm[100][0])); sys.exit(1)
nv = sorted(series[(5152, "GPU0 nvml:gpu_util")])
if [v for _, v in nv] != [10, 90, 20, 20]:
    print("json nvml series: %r" % nv); sys.exit(1)

# Perfetto, read with a minimal protobuf decoder: counter track names, double counter values.
def fields(b):
    i = 0
    while i < len(b):
        key = 0; shift = 0
        while True:
            c = b[i]; i += 1; key |= (c & 0x7f) << shift; shift += 7
            if c < 0x80: break
        f, wt = key >> 3, key & 7
        if wt == 0:
            v = 0; shift = 0
            while True:
                c = b[i]; i += 1; v |= (c & 0x7f) << shift; shift += 7
                if c < 0x80: break
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 2:
            n = 0; shift = 0
            while True:
                c = b[i]; i += 1; n |= (c & 0x7f) << shift; shift += 7
                if c < 0x80: break
            v = b[i:i + n]; i += n
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        else:
            raise SystemExit("bad wire type %d" % wt)
        yield f, v
data = open(sys.argv[2], "rb").read()
names, values = {}, collections.defaultdict(list)
seq_track = {}
for f, pkt in fields(data):
    if f != 1: continue
    pf = list(fields(pkt))
    seq = [v for k, v in pf if k == 10]
    seq = seq[0] if seq else 0
    for k, v in pf:
        if k == 60:
            td = dict((a, b) for a, b in fields(v))
            if 8 in td:
                names[td[1]] = td[2].decode()
                seq_track[seq] = td[1]
        if k == 11:
            te = list(fields(v))
            d = [x for a, x in te if a == 44]
            if d:
                tr = [x for a, x in te if a == 11]
                values[tr[0] if tr else seq_track.get(seq)].append(struct.unpack("<d", d[0])[0])
got = {}
for uuid, name in names.items():
    if name.startswith("GPU"):
        got[name] = values.get(uuid, [])
want = {n: [v for _, v in sorted(series[(p, n)])] for p, n in want_names}
if got != want:
    print("perfetto counters differ: %r" % {k: (len(v), v[:3]) for k, v in got.items()}); sys.exit(1)
PY

# Two captures read together (the second host's clock 2.5 s ahead): the second one's samples sit
# 2.5 s later on the common axis, like its other events.
"$T/gen" "$T/m2.cap" 2500000000 || fail "metrics_capture (shifted) failed"
"$CUSCOPE" export -o "$T/two.json" "$T/m.cap" "$T/m2.cap" >/dev/null 2>"$T/two.err" || fail "export of two captures: $(head -c 200 "$T/two.err")"
"$PYTHON" - "$T/two.json" <<'PY' || exit 1
import json, sys
J = json.load(open(sys.argv[1]))
first, kern = {}, {}
for e in J["traceEvents"]:
    if e.get("ph") == "C" and e["name"] == "GPU0 sm__cycles_active.avg":
        first[e["pid"]] = min(first.get(e["pid"], 1e300), e["ts"])
    if e.get("ph") == "X" and e.get("name") == "gemm_bf16":
        kern[e["pid"]] = e["ts"]
if len(first) != 2 or set(first) != set(kern):
    print("two captures: series of pids %r, kernels of pids %r" % (sorted(first), sorted(kern))); sys.exit(1)
a, b = sorted(first, key=lambda p: first[p])
if abs((first[b] - first[a]) - 2500000) > 1 or abs((first[b] - kern[b]) - (first[a] - kern[a])) > 1:
    print("two captures: samples at %r, kernels at %r (us), want the second 2.5 s later with its kernel" % (first, kern)); sys.exit(1)
PY

# A capture of protocol version 3, the one before GPU metrics (tests/data/capture_wire3.cap:
# fork_exec recorded by that build with RANK=4), reads whole: both processes with their rank label,
# their ranges, no warning, an empty gpu_metrics section.
W3=$ROOT/tests/data/capture_wire3.cap
"$PYTHON" -c 'import struct,sys; v=struct.unpack_from("<I", open(sys.argv[1],"rb").read(), 32)[0]; sys.exit(v != 3)' "$W3" ||
	fail "$W3 does not hold protocol version 3 frames"
"$CUSCOPE" stats --format=json "$W3" >"$T/w3.json" 2>"$T/w3.err" || fail "stats on the version 3 capture: $(head -c 200 "$T/w3.err")"
[ -s "$T/w3.err" ] && fail "stats on the version 3 capture warned: $(head -c 200 "$T/w3.err")"
"$PYTHON" - "$T/w3.json" <<'PY' || exit 1
import json, sys
J = json.load(open(sys.argv[1]))
ps = J["processes"]
if len(ps) != 2 or [p["rank"] for p in ps] != [4, 4] or not ps[1]["cmdline"].endswith("fork_exec child"):
    print("version 3 processes: %r" % ps); sys.exit(1)
n = {(r["name"], r["style"]): r["count"] for r in J["nvtx"]}
if n.get(("child.range", "PushPop")) != 5 or n.get(("parent.before", "PushPop")) != 2 or J["gpu_metrics"]:
    print("version 3 ranges or metrics: %r %r" % (n, J["gpu_metrics"])); sys.exit(1)
PY

# An older protocol's capture reads as before, with an empty section.
"$CUSCOPE" stats --format=csv --report=gpu_metrics "$ROOT/tests/data/capture_v1.cap" >"$T/v1.csv" 2>/dev/null || fail "stats of the v1 capture failed"
[ "$(cat "$T/v1.csv")" = '# gpu_metrics
gpu,device,metric,source,samples,min,median,max,mean,unit' ] || fail "v1 capture gpu_metrics: $(tr '\n' '|' <"$T/v1.csv")"
exit 0

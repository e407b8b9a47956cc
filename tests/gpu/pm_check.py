"""Checks the GPU hardware metrics of a `cuscope record` of tests/gpu/pm_gemm.py.

  python3 pm_check.py TRACE_JSON STATS_JSON APP_STDOUT RECORD_STDERR

TRACE_JSON is `cuscope export` of the capture ("C" series "GPU0 METRIC" under the sampling pid),
STATS_JSON its `cuscope stats --format=json`. With CUPTI PM sampling: a tensor-pipe metric reads
>= 20 % on average over the middle 80 % of the GEMM phase and >= 10x its average over the sleep
phase. When PM sampling was refused the check SKIPs, giving the collector's reason, after
checking the fallback it named (NVML GPM: its tensor metric the same way; NVML utilisation: the
GEMM phase reads more than the sleep phase). Prints every metric's two averages (which metrics
the GPU permits and what they read) and the collector's cost for the metrics, one line
"PASS|FAIL|SKIP<TAB>text"; exits 0, 1 or 77.
"""
import json
import sys


def out(status, text):
    print("%s\t%s" % (status, text[:1500]))
    sys.exit({"PASS": 0, "SKIP": 77}.get(status, 1))


def phases(stdout):
    p = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] == "phase":
            p[f[1]] = (int(f[2]), int(f[3]))
    return p


def series(trace):
    base = trace["otherData"]["time_base_ns"]
    s = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "C" and e.get("name", "").startswith("GPU0 "):
            s.setdefault((e["pid"], e["name"][5:]), []).append((base + int(round(e["ts"] * 1000)), e["args"]["value"]))
    for v in s.values():
        v.sort()
    return s


def mean(points, span):
    """Time-weighted mean of a step series (each value holds until the next point) over span."""
    a, b = span
    total = weight = 0.0
    for (t0, v), (t1, _) in zip(points, points[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi > lo:
            total += v * (hi - lo)
            weight += hi - lo
    return total / weight if weight else None


def middle(span):
    a, b = span
    return (a + (b - a) // 10, b - (b - a) // 10)


def main(argv):
    trace = json.load(open(argv[1]))
    stats = json.load(open(argv[2]))
    p = phases(open(argv[3]).read())
    err = open(argv[4]).read()
    if "gemm" not in p or "sleep" not in p:
        out("FAIL", "pm_gemm.py did not print both phases")
    s = series(trace)
    pids = sorted({pid for pid, _ in s})
    table = []
    for (pid, name), pts in sorted(s.items()):
        g, z = mean(pts, middle(p["gemm"])), mean(pts, middle(p["sleep"]))
        table.append("%s gemm=%s sleep=%s n=%d" % (name, "%.3g" % g if g is not None else "-",
                                                 "%.3g" % z if z is not None else "-", len(pts)))
    cost = [c for c in stats.get("cost", []) if c["source"] == "gpu_metrics"]
    cost_text = "; cost: " + ", ".join("cpu %.1f ms for %d samples" % (c["cpu_ns"] / 1e6, c["events"]) for c in cost)
    info = "; ".join(table) + cost_text
    warn = [l for l in err.splitlines() if "GPU metrics" in l]
    if len(pids) > 1:
        out("FAIL", "GPU0's metrics came from %d processes %r (one sampler per GPU): %s" % (len(pids), pids, info))

    def tensor_ok(names, label):
        best = None
        for name in names:
            for (pid, n), pts in s.items():
                if n != name:
                    continue
                g, z = mean(pts, middle(p["gemm"])), mean(pts, middle(p["sleep"]))
                if g is None or z is None:
                    continue
                if best is None or g > best[0]:
                    best = (g, z, name)
        if best is None:
            return "no %s tensor series covering both phases" % label
        g, z, name = best
        if g < 20 or g < 10 * z:
            return "%s: GEMM %.1f %%, sleep %.2f %% (want >= 20 %% and >= 10x)" % (name, g, z)
        return None

    refused = [l for l in warn if "unavailable" in l or "from NVML" in l]
    if refused:
        why = refused[0].split("GPU metrics", 1)[1]
        if "from NVML GPM" in refused[0]:
            bad = tensor_ok(["nvml:gpm_tensor_util"], "NVML GPM")
            if bad:
                out("FAIL", "PM sampling refused and the GPM fallback is wrong: %s | %s" % (bad, info))
            out("SKIP", "PM sampling refused (%s); fallback NVML GPM checked | %s" % (why.strip(), info))
        if "utilisation only" in refused[0]:
            pts = s.get((pids[0], "nvml:gpu_util")) if pids else None
            g = mean(pts, middle(p["gemm"])) if pts else None
            z = mean(pts, middle(p["sleep"])) if pts else None
            if g is None or z is None or g <= z:
                out("FAIL", "PM sampling and GPM refused, NVML utilisation wrong: gemm %r sleep %r | %s" % (g, z, info))
            out("SKIP", "PM sampling and GPM refused (%s); fallback NVML utilisation checked | %s" % (why.strip(), info))
        out("SKIP", "GPU metrics unavailable (%s) | %s" % (why.strip(), info))
    bad = tensor_ok(["TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
                     "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                     "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"], "PM")
    if bad:
        out("FAIL", "%s | warnings: %s | %s" % (bad, " / ".join(warn) or "none", info))
    out("PASS", info + ("; warnings: " + " / ".join(warn) if warn else ""))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (OSError, ValueError, KeyError) as e:
        out("FAIL", "checker error: %s: %s" % (type(e).__name__, e))

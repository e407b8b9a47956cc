"""Checks tests/gpu/run.sh's torch_ops result: `cuscope record --torch` of bench_torch.py --model mlp.

  python3 torch_ops_check.py STATS_JSON APP_STDOUT RECORD_STDERR TRACE_JSON TOTAL_STEPS [TABLE_OUT]

- stats lists PyTorch's operators by name with exact counts: every step runs 8 Linear layers, so
  aten::linear and aten::addmm come TOTAL_STEPS * 8 times each (the first step, the warm-up and
  the timed steps: the ranges start when torch is imported); no row carries torch's per-call
  suffix (" = "); no string-table losses;
- the backward operators are there too (autograd's device threads inherit the ranges);
- kernels are linked to operators: in the JSON export, the flow from each kernel's launch call
  starts inside an operator's range on the launching thread, and the addmm ranges hold at least
  one kernel launch each;
- the notice says which thread is covered.
TABLE_OUT gets the operator table (count, total ms, kernels launched inside) for the closing note.
Prints one line "PASS<TAB>numbers", "FAIL<TAB>reason" or "SKIP<TAB>reason"; exits 0, 1 or 77.
Only the standard library is used.
"""
import bisect
import json
import sys


class Result(Exception):
    def __init__(self, status, text):
        Exception.__init__(self, text)
        self.status = status
        self.text = text


def fail(msg):
    raise Result("FAIL", msg)


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception as e:  # noqa: BLE001 - any read or parse problem is the reason
        fail("%s %s does not parse: %s" % (what, path, e))


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e))


def is_op(name):
    """An operator's range as torch names them: aten::..., the autograd engine's, optimizers'."""
    return "::" in name or name.endswith("Backward0") or name.startswith("Optimizer.")


def check(stats_path, out_path, err_path, trace_path, total_steps, table_path):
    stats = load(stats_path, "stats JSON")
    out, err = read(out_path), read(err_path)
    if "ms_per_step" not in out:
        fail("bench_torch.py did not finish: stdout %r" % out.splitlines()[:3])
    if "--torch: operator ranges are recorded on " not in err:
        cant = [l for l in err.splitlines() if "--torch" in l]
        fail("no notice of the covered thread: %s" % (cant[0][:300] if cant else "no --torch line"))
    rows = {r["name"]: r for r in stats.get("nvtx", []) if r.get("style") == "PushPop" and not r.get("domain")}
    raw = [n for n in rows if " = " in n]
    if raw:
        fail("%d rows named by torch's raw per-call message, e.g. %r" % (len(raw), raw[:2]))
    lost = [r for r in stats.get("losses", []) if r.get("cause") == "string_table_full" and r.get("count")]
    if lost:
        fail("string table full: %d names lost" % lost[0]["count"])
    want = total_steps * 8
    for name in ("aten::linear", "aten::addmm"):
        got = rows.get(name, {}).get("count", 0)
        if got != want:
            fail("%s: %d ranges, want %d (8 per step, %d steps); aten rows: %r" % (
                name, got, want, total_steps,
                sorted((r["count"], n) for n, r in rows.items() if n.startswith("aten::"))[-8:]))
    backward = [n for n in rows if "AddmmBackward" in n]
    if not backward:
        fail("no backward operators (AddmmBackward0): autograd's threads do not carry the ranges")
    bw_count = max(rows[n]["count"] for n in backward)

    trace = load(trace_path, "JSON export")
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        fail("JSON export has no traceEvents array")
    kernels = set()
    ranges = {}  # (pid, tid) -> [(start, end, name)]
    launches = []  # (pid, tid, ts) of each kernel's launch flow
    for e in events:
        ph = e.get("ph")
        if ph == "X" and e.get("cat") == "kernel":
            kernels.add((e["pid"], e.get("args", {}).get("correlation")))
        elif ph == "X" and e.get("cat") == "nvtx" and is_op(e.get("name", "")):
            ranges.setdefault((e["pid"], e["tid"]), []).append(
                (e["ts"], e["ts"] + e.get("dur", 0), e["name"]))
    for e in events:
        if e.get("ph") == "s" and e.get("cat") == "cuda_flow":
            if (e["pid"], e["id"] & 0xFFFFFFFF) in kernels:
                launches.append((e["pid"], e["tid"], e["ts"]))
    if not kernels:
        fail("no kernels in the export (GPU tracing off?)")
    if not launches:
        fail("%d kernels but no launch flows (API records missing?)" % len(kernels))
    starts = {}
    for key, rs in ranges.items():
        rs.sort()
        starts[key] = [r[0] for r in rs]
    inside = {}  # innermost operator -> kernel launches
    linked = 0
    for pid, tid, ts in launches:
        rs = ranges.get((pid, tid))
        if not rs:
            continue
        i = bisect.bisect_right(starts[(pid, tid)], ts) - 1
        # The innermost enclosing range is the latest-starting one that still holds ts.
        for j in range(i, max(-1, i - 5000), -1):
            if rs[j][1] >= ts:
                inside[rs[j][2]] = inside.get(rs[j][2], 0) + 1
                linked += 1
                break
    share = linked / len(launches)
    addmm_kernels = inside.get("aten::addmm", 0)
    table = sorted(((r["count"], n) for n, r in rows.items() if is_op(n)), reverse=True)
    if table_path:
        with open(table_path, "w", encoding="utf-8") as f:
            f.write("%-60s %8s %10s %8s\n" % ("operator", "count", "total_ms", "kernels"))
            for count, n in table:
                f.write("%-60s %8d %10.3f %8d\n" % (n[:60], count, rows[n]["total_ns"] / 1e6, inside.get(n, 0)))
    if share < 0.9:
        fail("only %d of %d kernel launches (%.0f%%) lie inside an operator's range" % (
            linked, len(launches), 100 * share))
    if addmm_kernels < want:
        fail("aten::addmm ranges hold %d kernel launches, want at least one each (%d)" % (addmm_kernels, want))
    top = ", ".join("%s=%d" % (n, c) for c, n in table[:4])
    return ("ops=%d rows (%s); backward %s=%d; kernels linked to an operator %d/%d (%.1f%%), "
            "aten::addmm->%d kernels" % (len(table), top, backward[0].split(": ")[-1], bw_count,
                                          linked, len(launches), 100 * share, addmm_kernels))


def main(argv):
    if len(argv) < 6:
        print("FAIL\tusage: torch_ops_check.py STATS_JSON APP_STDOUT RECORD_STDERR TRACE_JSON TOTAL_STEPS [TABLE_OUT]")
        return 1
    try:
        msg = check(argv[1], argv[2], argv[3], argv[4], int(argv[5]), argv[6] if len(argv) > 6 else None)
    except Result as r:
        print("%s\t%s" % (r.status, r.text.replace("\n", " ")[:600]))
        return 77 if r.status == "SKIP" else 1
    except (KeyError, TypeError, ValueError, IndexError) as e:
        print("FAIL\tchecker error (stats or export layout?): %s: %s" % (type(e).__name__, e))
        return 1
    print("PASS\t%s" % msg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

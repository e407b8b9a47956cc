"""Checks that a capture of tests/gpu/cuda_counts puts CUPTI's records on the collector's clock.

usage: clock_check.py EXPORT_JSON PROGRAM_OUTPUT

The program printed "SPAN_NS T0 T1", CLOCK_MONOTONIC around its work. CUPTI stamps records in its
own clock, which the collector moves to CLOCK_MONOTONIC: every CUDA API call of the program after
T0 (all but the first, cudaSetDevice) and every kernel and copy must lie within [T0, T1], and no
kernel or copy may start before the call that launched it. Prints one line "PASS<TAB>numbers" or
"FAIL<TAB>reason" (tests/gpu/run.sh's verdict format).
"""
import json
import sys

SLACK_NS = 5000  # the collector's clock pair is taken within a few us; CUPTI's GPU-to-host map


def fail(msg):
    print("FAIL\t" + msg)
    sys.exit(1)


def main(argv):
    trace = json.load(open(argv[1]))
    span = None
    for line in open(argv[2]):
        f = line.split()
        if len(f) == 3 and f[0] == "SPAN_NS":
            span = (int(f[1]), int(f[2]))
    if span is None:
        fail("the program printed no SPAN_NS line")
    base = trace["otherData"]["time_base_ns"]
    events = trace["traceEvents"]

    def start(e):
        return base + round(e["ts"] * 1000)

    def end(e):
        return start(e) + round(e.get("dur", 0) * 1000)

    api = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"
           and not e["name"].startswith("cudaSetDevice")]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "memcpy", "memset")]
    if not api or not ops:
        fail("%d API calls and %d GPU operations in the export" % (len(api), len(ops)))
    t0, t1 = span
    outside = [e for e in api + ops if start(e) < t0 - SLACK_NS or end(e) > t1 + SLACK_NS]
    if outside:
        e = outside[0]
        fail("%d of %d records outside the program's span [%d, %d] ns, e.g. %s at %d..%d ns"
             % (len(outside), len(api) + len(ops), t0, t1, e["name"], start(e), end(e)))
    call_by_corr = {e["args"]["correlation"]: e for e in api if "correlation" in e.get("args", {})}
    early, lead = [], []
    for op in ops:
        call = call_by_corr.get(op["args"].get("correlation"))
        if call is None:
            continue
        lead.append(start(op) - start(call))
        if start(op) < start(call) - SLACK_NS:
            early.append((op["name"], start(call) - start(op)))
    if early:
        fail("%d operations start before their launching call, e.g. %s by %d ns" % (len(early), *early[0]))
    if not lead:
        fail("no GPU operation is linked to its call")
    lead.sort()
    print("PASS\t%d calls and %d operations within the program's %.1f ms; %d operations start "
          "%d..%d ns (median %d) after their call" % (len(api), len(ops), (t1 - t0) / 1e6, len(lead),
                                                      lead[0], lead[-1], lead[len(lead) // 2]))


if __name__ == "__main__":
    main(sys.argv)

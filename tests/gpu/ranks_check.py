"""Checks of the ranks work on the GPU host (tests/gpu/run.sh "ranks_gloo" and "nccl_payload").

  ranks_check.py gloo STATS_JSON CUSCOPE_RUN_OUT PROFILER_RUN_OUT
    torchrun --nproc-per-node 2 ddp_ranks.py --backend gloo under cuscope record: the stats
    "ranks" section has ranks 0 and 1, each with the script's steps; each rank's kernels (the
    "streams" rows of its pid) equal what torch.profiler saw in a separate run of the same script
    (PROFILER_RUN_OUT), and the two ranks' streams are apart (rows keyed by pid).
  ranks_check.py nccl STATS_JSON EXPORT_JSON RUN_OUT
    a world-size-1 NCCL process group under cuscope record: NCCL's NVTX ranges (domain NCCL) are
    there by name, with decoded payload fields in the export's args, and NCCL kernels ran.

Prints one line "PASS<TAB>numbers" or "FAIL<TAB>reason" (tests/gpu/run.sh's verdict format).
"""
import json
import sys


def fail(msg):
    print("FAIL\t" + msg)
    sys.exit(1)


def lines_of(path, key):
    """{rank: fields after the key} of lines "rank R KEY ..." in a program's output."""
    out = {}
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) >= 4 and f[0] == "rank" and f[2] == key:
            out[int(f[1])] = f[3:]
    return out


def gloo(stats_path, run_out, prof_out):
    j = json.load(open(stats_path))
    pids = {r: int(v[0]) for r, v in lines_of(run_out, "pid").items()}
    prof = {r: int(v[0]) for r, v in lines_of(prof_out, "profiler_kernels").items()}
    if sorted(pids) != [0, 1] or sorted(prof) != [0, 1]:
        # What each run printed, so that a rank's missing line can be told from a garbled one.
        fail("want ranks 0 and 1 in both runs' output, got %r and %r; cuscope run's output: %r"
             % (sorted(pids), sorted(prof), open(run_out, errors="replace").read()[-400:]))
    steps = {r: int(lines_of(run_out, "pid")[r][2]) for r in pids}
    rows = {r["rank"]: r for r in j.get("ranks", [])}
    if sorted(rows) != [0, 1]:
        fail("stats ranks section has ranks %r, want [0, 1]" % sorted(rows))
    for r in (0, 1):
        if rows[r]["pid"] != pids[r]:
            fail("rank %d: stats pid %r, the program said %d" % (r, rows[r]["pid"], pids[r]))
        if rows[r]["steps"] != steps[r]:
            fail("rank %d: %r steps in stats, want %d" % (r, rows[r]["steps"], steps[r]))
    kernels = {r: sum(s["kernels"] for s in j.get("streams", []) if s["pid"] == pids[r]) for r in (0, 1)}
    for r in (0, 1):
        if kernels[r] != prof[r]:
            fail("rank %d: %d kernels in the capture, torch.profiler saw %d" % (r, kernels[r], prof[r]))
    mixed = [s for s in j.get("streams", []) if s["pid"] in pids.values() and s["rank"] not in (0, 1)]
    if mixed:
        fail("streams of the ranks' pids without their rank: %r" % mixed[:3])
    print("PASS\tranks 0,1 steps %d/%d kernels %d/%d (= torch.profiler %d/%d)" % (
        steps[0], steps[1], kernels[0], kernels[1], prof[0], prof[1]))


def is_nccl_kernel(name):
    """NCCL's kernels: ncclDevKernel_* and friends, and its one-rank reduction (ncclLaunchOneRank)."""
    name = name[5:] if name.startswith("void ") else name
    if name.startswith("nccl"):
        return True
    name = name[len("(anonymous namespace)::"):] if name.startswith("(anonymous namespace)::") else name
    return name.startswith(("oneRankReduce<", "oneRankReduce("))


def nccl(stats_path, export_path, run_out):
    j = json.load(open(stats_path))
    trace = json.load(open(export_path))["traceEvents"]
    # An NVTX range's cat is its domain; its args are domain, style, then the payload's fields.
    ranges = [e for e in trace if e.get("ph") == "X" and e.get("cat") == "NCCL"]
    if not ranges:
        domains = sorted({r.get("domain") for r in j.get("nvtx", [])})
        fail("no NVTX range of domain NCCL in the export (stats domains: %r)" % domains)
    with_args = [e for e in ranges if set(e.get("args", {})) - {"domain", "style", "unfinished"}]
    kernels = sorted(j.get("kernels", []), key=lambda k: -k.get("count", 0))
    nccl_kernels = sum(k["count"] for k in kernels if is_nccl_kernel(str(k.get("name", ""))))
    problems = []
    if not nccl_kernels:
        problems.append("no NCCL kernel (nccl*, oneRankReduce) in the stats kernels section (kernels: %s)"
                        % ", ".join("%s x%d" % (str(k.get("name"))[:60], k.get("count", 0)) for k in kernels[:6]))
    if not with_args:
        problems.append("%d NCCL ranges, none with payload fields in args (e.g. %r)" % (len(ranges), ranges[0]))
    if problems:
        fail("; ".join(problems))
    names = sorted({e["name"] for e in ranges})
    print("PASS\t%d NCCL ranges (%s), %d with payload args (e.g. %s), %d NCCL kernels" % (
        len(ranges), ", ".join(names[:4]), len(with_args), json.dumps(with_args[0]["args"])[:120], nccl_kernels))


def main(argv):
    try:
        if argv[1] == "gloo":
            gloo(argv[2], argv[3], argv[4])
        elif argv[1] == "nccl":
            nccl(argv[2], argv[3], argv[4])
        else:
            fail("unknown mode %r" % argv[1])
    except (OSError, ValueError, KeyError, IndexError) as e:
        fail("checker error: %s: %s" % (type(e).__name__, e))


if __name__ == "__main__":
    main(sys.argv)

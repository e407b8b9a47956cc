"""Checks one tests/gpu/run.sh result against the truth its program printed.

  python3 check.py CHECK STATS_JSON APP_STDOUT [RECORD_STDERR RECORD_EXIT]
  python3 check.py profiler APP_STDOUT

Prints one line "PASS<TAB>numbers", "FAIL<TAB>reason" or "SKIP<TAB>reason" and exits 0, 1 or 77.
Only the standard library (json) is used, so it runs with any python3.
"""
import json
import re
import sys


class Result(Exception):
    def __init__(self, status, text):
        Exception.__init__(self, text)
        self.status = status
        self.text = text


def fail(msg):
    raise Result("FAIL", msg)


def skip(msg):
    raise Result("SKIP", msg)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except Exception as e:  # noqa: BLE001 - any parse problem is a failure reason
        fail("stats JSON %s does not parse: %s" % (path, e))
    if not isinstance(j, dict):
        fail("stats JSON is not one object")
    return j


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e))


def app_value(out, key):
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == key:
            return parts[1:]
    return None


def app_int(out, key):
    v = app_value(out, key)
    if v is None:
        fail("app stdout lacks a %r line (did the program finish? stdout passed through?)" % key)
    try:
        return int(v[0])
    except ValueError:
        fail("app stdout line %r %r is not an integer" % (key, v))


def truth(out):
    for line in out.splitlines():
        if line.startswith("TRUTH "):
            try:
                return json.loads(line[6:])
            except ValueError as e:
                fail("TRUTH line does not parse: %s" % e)
    fail("app stdout has no TRUTH line (program failed or stdout lost); first lines: %r"
         % out.splitlines()[:3])


def section(j, name, required=True):
    s = j.get(name)
    if s is None and not required:
        return []
    if not isinstance(s, list):
        fail("stats JSON: section %r missing or not an array (have %s)" % (name, sorted(j)))
    return s


def num(r, k):
    v = r.get(k)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        fail("row lacks numeric %r: %r" % (k, r))
    return v


def clean_kernel_name(name):
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    return name


def kernel_matches(name, want):
    n = clean_kernel_name(name)
    return n == want or n.startswith(want + "(") or n.startswith(want + "<")


def kernel_count(j, want):
    return sum(num(r, "count") for r in section(j, "kernels") if kernel_matches(r.get("name", ""), want))


def kernels_total(j):
    return sum(num(r, "count") for r in section(j, "kernels", required=False))


def check_kernel_rows(j, want, exact=True):
    """want: {name: count}. exact: no other kernel rows (with count > 0) allowed."""
    rows = section(j, "kernels")
    for r in rows:
        for k in ("name", "count", "total_ns", "min_ns", "p50_ns", "p99_ns", "max_ns"):
            if k not in r:
                fail("kernels row lacks %r: %r" % (k, r))
        if r["name"].startswith("_Z"):
            fail("kernel name not demangled: %r" % r["name"])
        if r["count"] > 0 and not (0 <= r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]):
            fail("kernels row %r: min<=p50<=p99<=max does not hold: %r" % (r["name"], r))
    for name, count in want.items():
        got = kernel_count(j, name)
        if got != count:
            have = sorted((r["name"], r["count"]) for r in rows)[:10]
            fail("kernel %s: count %d, want %d (rows: %r)" % (name, got, count, have))
    if exact:
        extra = [(r["name"], r["count"]) for r in rows
                 if r["count"] and not any(kernel_matches(r["name"], w) for w in want)]
        if extra:
            fail("unexpected kernel rows: %r" % extra[:6])


def loss_count(j, cause):
    return sum(num(r, "count") for r in section(j, "losses") if r.get("cause") == cause)


def no_gpu_losses(j):
    bad = ["%s=%d" % (c, loss_count(j, c)) for c in ("cupti_dropped", "gpu_buffer_refused")
           if loss_count(j, c)]
    if bad:
        fail("GPU records lost: %s" % ", ".join(bad))


def api_name(n):
    return re.sub(r"(_v\d+)?(_ptsz|_ptds)?$", "", n)


def check_api(j, want):
    """Exact API call counts where the api section has the row; returns notes for missing rows."""
    rows = section(j, "api", required=False)
    notes = []
    if not rows:
        return ["api section empty"]
    for name, count in want.items():
        got = [r for r in rows if api_name(r.get("name", "")) == name]
        if not got:
            notes.append(name)
            continue
        n = sum(num(r, "count") for r in got)
        if n != count:
            fail("api %s: count %d, want %d" % (name, n, count))
    return ["api rows missing: " + ",".join(notes)] if notes else []


def nvtx_count(j, name, domain="", style="PushPop"):
    return sum(num(r, "count") for r in section(j, "nvtx")
               if r.get("name") == name and r.get("domain", "") == domain and r.get("style") == style)


def check_nvtx(j, want):
    for name, count in want.items():
        got = nvtx_count(j, name)
        if got != count:
            have = sorted((r.get("name"), r.get("domain"), r.get("count")) for r in section(j, "nvtx"))[:10]
            fail("nvtx %r: count %d, want %d (rows: %r)" % (name, got, count, have))


def process_row(j, pid):
    rs = [p for p in section(j, "processes") if p.get("pid") == pid]
    if len(rs) != 1:
        fail("want one processes row for pid %d, got %d: %r" % (pid, len(rs), section(j, "processes")[:6]))
    return rs[0]


def gpu_name(j):
    g = section(j, "gpus")
    if not g:
        fail("gpus section empty")
    return str(g[0].get("name", "?")).replace(" ", "_")


# --- checks ------------------------------------------------------------------------------------

def c_counts(j, out, _err, _rc):
    t = truth(out)
    no_gpu_losses(j)
    check_kernel_rows(j, t["kernels"])
    # memcpy rows, summed by (kind, src_mem, dst_mem, async)
    got = {}
    for r in section(j, "memcpy"):
        for k in ("kind", "src_mem", "dst_mem", "async", "count", "bytes", "total_ns"):
            if k not in r:
                fail("memcpy row lacks %r: %r" % (k, r))
        key = (r["kind"], r["src_mem"], r["dst_mem"], bool(r["async"]))
        c, b = got.get(key, (0, 0))
        got[key] = (c + r["count"], b + r["bytes"])
    want = {}
    for m in t["memcpy"]:
        want[(m["kind"], m["src_mem"], m["dst_mem"], m["async"])] = (m["count"], m["bytes"])
    for key, (c, b) in want.items():
        gc, gb = got.get(key, (0, 0))
        if (gc, gb) != (c, b):
            fail("memcpy %s %s->%s %s: count %d bytes %d, want count %d bytes %d; rows: %r"
                 % (key[0], key[1], key[2], "async" if key[3] else "sync", gc, gb, c, b,
                    sorted(got.items())))
    extra = {k: v for k, v in got.items() if k not in want and v[0]}
    if extra:
        fail("unexpected memcpy rows: %r" % sorted(extra.items()))
    # memset
    ms = section(j, "memset")
    mc = sum(num(r, "count") for r in ms)
    mb = sum(num(r, "bytes") for r in ms)
    if (mc, mb) != (t["memset"]["count"], t["memset"]["bytes"]):
        fail("memset: count %d bytes %d, want count %d bytes %d" % (mc, mb, t["memset"]["count"], t["memset"]["bytes"]))
    # sync
    sy = {}
    for r in section(j, "sync"):
        sy[r.get("type")] = sy.get(r.get("type"), 0) + num(r, "count")
    for ty, c in t["sync"].items():
        if sy.get(ty, 0) != c:
            fail("sync %s: count %d, want %d (rows: %r)" % (ty, sy.get(ty, 0), c, sy))
    extra = {k: v for k, v in sy.items() if k not in t["sync"] and v}
    if extra:
        fail("unexpected sync rows: %r" % extra)
    # streams: exactly the two created (non-default) streams carry kernels
    st = [r for r in section(j, "streams") if num(r, "kernels") > 0]
    ks = sorted(r["kernels"] for r in st)
    if ks != sorted(t["streams"]):
        fail("streams with kernels: %r, want kernel counts %r (rows: %r)" % (ks, sorted(t["streams"]), st[:6]))
    if any(r.get("default") for r in st):
        fail("a default stream carries kernels, want only the two created streams: %r" % st)
    if len({(r.get("device"), r.get("stream")) for r in st}) != len(st):
        fail("streams rows not distinct: %r" % st)
    for r in st:
        if num(r, "busy_ns") <= 0:
            fail("stream %r has kernels but busy_ns %r" % (r.get("stream"), r.get("busy_ns")))
    notes = check_api(j, t["api"])
    kA, kB = (kernel_count(j, n) for n in t["kernels"])
    msg = "gpu=%s kernels=%d+%d memcpy_rows=%d memset=%d sync=%s" % (
        gpu_name(j), kA, kB, len(want), mc, ",".join("%s:%d" % kv for kv in sorted(sy.items())))
    if notes:
        msg += " (%s)" % "; ".join(notes)
    return msg


def c_graph(j, out, _err, _rc):
    t = truth(out)
    no_gpu_losses(j)
    check_kernel_rows(j, t["kernels"])
    notes = check_api(j, t["api"])
    g = kernel_count(j, "graphKernel")
    msg = "graph_kernels=%d (=%dx%d) plain=%d" % (g, t["graph_nodes"], t["graph_launches"], kernel_count(j, "plainKernel"))
    if notes:
        msg += " (%s)" % "; ".join(notes)
    return msg


def c_torch_nvtx(j, out, _err, _rc):
    t = truth(out)
    check_nvtx(j, t["nvtx"])
    k = kernels_total(j)
    if k <= 0:
        fail("no kernels recorded (kernels section sums to %d)" % k)
    pid = app_int(out, "pid")
    p = process_row(j, pid)
    if "python" not in str(p.get("cmdline", "")):
        fail("process %d cmdline %r lacks python" % (pid, p.get("cmdline")))
    extra = [(r.get("name"), r.get("domain")) for r in section(j, "nvtx")
             if (r.get("name"), r.get("domain", "")) not in {(n, "") for n in t["nvtx"]}]
    return "steps=%d kernels=%d api_rows=%d other_nvtx_rows=%d" % (
        t["nvtx"]["step"], k, len(section(j, "api", required=False)), len(extra))


def c_dataloader(j, out, _err, rc):
    if rc != 0:
        fail("cuscope record exited %d, want 0" % rc)
    t = truth(out)
    pid = app_int(out, "pid")
    process_row(j, pid)
    k = kernels_total(j)
    if k <= 0:
        fail("parent's kernels missing (kernels section sums to %d)" % k)
    check_nvtx(j, {"train": t["nvtx"]["train"]})
    if len(t["workers"]) < 2:
        fail("program saw %d worker pids, want >= 2" % len(t["workers"]))
    for w in t["workers"]:
        r = [p for p in section(j, "processes") if p.get("pid") == w]
        if not r:
            fail("worker pid %d not in processes (have %r)" % (w, [(p.get("pid"), p.get("ppid")) for p in section(j, "processes")]))
        if r[0].get("ppid") != pid:
            fail("worker %d has ppid %r, want parent %d" % (w, r[0].get("ppid"), pid))
    loads = nvtx_count(j, "load")
    return "kernels=%d workers=%d processes=%d worker_load_ranges=%d/%d (info)" % (
        k, len(t["workers"]), len(section(j, "processes")), loads, t["nvtx"]["load"])


def c_rival(j, out, err, rc):
    if "TRUTH " not in out:
        tail = [l for l in err.splitlines() if l.strip()][-3:]
        fail("program did not finish (record exit %d); stdout %r; stderr tail %r"
             % (rc, out.splitlines()[:3], tail))
    t = truth(out)
    if rc != t["exit"]:
        fail("cuscope record exited %d, want the program's %d" % (rc, t["exit"]))
    check_nvtx(j, t["nvtx"])
    pid = app_int(out, "pid")
    process_row(j, pid)
    if not [th for th in section(j, "threads") if th.get("pid") == pid]:
        fail("no threads rows for pid %d (CPU data missing)" % pid)
    warn = [l for l in err.splitlines()
            if l.startswith("cuscope") and ("GPU tracing" in l or "CUPTI" in l)]
    k = kernels_total(j)
    rival = app_value(out, "rival_subscribe")
    rival_rc = rival[0] if rival else None
    prof = app_value(out, "profiler_cuda_events")
    info = "kernels=%d warnings=%d" % (k, len(warn))
    if rival_rc is not None:
        info += " rival_subscribe=%s" % rival_rc
    if prof is not None:
        info += " profiler_cuda_events=%s" % prof[0]
    if len(warn) > 1:
        fail("%d GPU/CUPTI warning lines on stderr, want one: %r" % (len(warn), warn[:3]))
    if warn:
        if k:
            fail("warned %r but still recorded %d kernels" % (warn[0], k))
        if "CUPTI" not in warn[0] and "another" not in warn[0]:
            fail("warning does not name the other CUPTI client: %r" % warn[0])
        return "winner=other " + info + " warning=%r" % warn[0][:160]
    if rival_rc == "0":
        fail("the other CUPTI client subscribed first (rc 0) but cuscope printed no warning (%s)" % info)
    if k <= 0:
        fail("no kernels and no warning: GPU data lost silently (%s)" % info)
    return "winner=cuscope " + info


def c_torch_steps(j, out, err, rc):
    """Steps without annotations: the loop's steps, inferred from its kernels, number the truth +- 1."""
    if rc != 0:
        fail("cuscope record exited %d, want 0" % rc)
    n = app_int(out, "steps")
    pid = app_int(out, "pid")
    process_row(j, pid)
    if kernels_total(j) <= 0:
        fail("no kernels recorded: nothing to infer steps from")
    rows = [r for r in section(j, "nvtx") if r.get("domain") == "inferred"]
    other = [r for r in section(j, "nvtx") if r.get("domain") != "inferred" and r.get("count", 0) >= 3]
    if len(rows) != 1 or rows[0].get("name") != "step":
        fail("want one nvtx row 'step' in domain 'inferred', got %r (repeating NVTX rows: %r)"
             % (rows, [(r.get("name"), r.get("count")) for r in other][:5]))
    got = rows[0]["count"]
    if abs(got - n) > 1:
        fail("inferred %d steps, the loop ran %d" % (got, n))
    return "inferred=%d steps=%d p50=%.2fms max=%.2fms" % (got, n, rows[0]["p50_ns"] / 1e6, rows[0]["max_ns"] / 1e6)


def c_profiler(out):
    n = app_int(out, "profiler_cuda_events")
    if n <= 0:
        fail("torch.profiler recorded %d CUDA events after the cuscope run" % n)
    return "profiler_cuda_events=%d cpu_events=%d" % (n, app_int(out, "profiler_cpu_events"))


CHECKS = {"counts": c_counts, "graph": c_graph, "torch_nvtx": c_torch_nvtx, "torch_steps": c_torch_steps,
          "dataloader": c_dataloader, "rival": c_rival}


def main(argv):
    try:
        if len(argv) >= 3 and argv[1] == "profiler":
            msg = c_profiler(read(argv[2]))
        elif len(argv) >= 4 and argv[1] in CHECKS:
            err = read(argv[4]) if len(argv) > 4 else ""
            rc = int(argv[5]) if len(argv) > 5 else 0
            msg = CHECKS[argv[1]](load_json(argv[2]), read(argv[3]), err, rc)
        else:
            print("FAIL\tusage: check.py CHECK STATS_JSON APP_STDOUT [STDERR RC] | check.py profiler OUT")
            return 1
    except Result as r:
        print("%s\t%s" % (r.status, r.text.replace("\n", " ")[:600]))
        return 0 if r.status == "PASS" else (77 if r.status == "SKIP" else 1)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        print("FAIL\tchecker error (stats layout?): %s: %s" % (type(e).__name__, e))
        return 1
    print("PASS\t%s" % msg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

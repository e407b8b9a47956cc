"""Checks of the trigger tests (t260-t269): the firings in `cuscope stats --format=json` against
the crossings a tests/progs/trigger_stall run printed ("crossing NS", CLOCK_MONOTONIC).

usage: trigger_check.py STATS_JSON APP_OUT EXPR [--exact] [--tolerance-ms 2] [--dumps DIR]
  every crossing has a firing of EXPR within the tolerance (--exact: and no other firing of EXPR);
  the firings' pid is the app's; with --dumps, each firing's file lies in DIR, 0600, and reads with
  `cuscope stats` (CUSCOPE in the environment), listing that firing with itself as its file.
Prints one line and exits 1 on the first failure."""
import json, os, stat, subprocess, sys


def fail(msg):
    print(msg)
    sys.exit(1)


def firings(path, expr):
    try:
        j = json.load(open(path))
    except Exception as e:
        fail("stats JSON %s does not parse: %s" % (path, e))
    if not isinstance(j.get("triggers"), list):
        fail("stats JSON %s has no triggers section" % path)
    for r in j["triggers"]:
        for k in ("time_ns", "expr", "value", "pid", "file", "cause", "pre_ns", "pre_held_ns"):
            if k not in r:
                fail("triggers row lacks %r: %r" % (k, r))
    return [r for r in j["triggers"] if r["expr"] == expr]


def main():
    args = sys.argv[1:]
    stats_path, out_path, expr = args[:3]
    exact = "--exact" in args
    tol = float(args[args.index("--tolerance-ms") + 1]) if "--tolerance-ms" in args else 2.0
    dumps = args[args.index("--dumps") + 1] if "--dumps" in args else None
    crossings, pid = [], None
    for line in open(out_path, errors="replace"):
        f = line.split()
        if len(f) == 2 and f[0] == "crossing":
            crossings.append(int(f[1]))
        elif len(f) == 2 and f[0] == "pid" and pid is None:
            pid = int(f[1])
    if not crossings:
        fail("the program printed no crossing")
    rows = firings(stats_path, expr)
    for c in sorted(crossings):
        near = [r for r in rows if abs(r["time_ns"] - c) <= tol * 1e6]
        if not near:
            got = ", ".join("%+.3f ms" % ((r["time_ns"] - c) / 1e6) for r in rows) or "none"
            fail("%s: no firing within %.1f ms of the crossing at %d (firings relative to it: %s)"
                 % (expr, tol, c, got))
    if exact and len(rows) != len(crossings):
        fail("%s: %d firings for %d planted crossings" % (expr, len(rows), len(crossings)))
    for r in rows:
        if r["pid"] != pid:
            fail("%s: firing pid %r, want the program's %r" % (expr, r["pid"], pid))
        if r["pre_held_ns"] > r["pre_ns"]:
            fail("%s: pre_held_ns %d above pre_ns %d" % (expr, r["pre_held_ns"], r["pre_ns"]))
    if dumps is None:
        return
    left = [n for n in os.listdir(dumps) if n.endswith(".partial")]
    if left:
        fail("dump directory holds %r" % left)
    cuscope = os.environ["CUSCOPE"]
    for r in rows:
        if not r["file"]:
            continue
        if os.path.dirname(os.path.abspath(r["file"])) != os.path.abspath(dumps):
            fail("dump %r is not in %s" % (r["file"], dumps))
        st = os.lstat(r["file"])
        if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o600:
            fail("dump %s: mode %o, want a regular file 0600" % (r["file"], st.st_mode))
        p = subprocess.run([cuscope, "stats", "--format=json", r["file"]], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            fail("cuscope stats %s exited %d: %s" % (r["file"], p.returncode, p.stderr.strip()[:200]))
        d = json.loads(p.stdout)
        mine = [x for x in d.get("triggers", []) if x["time_ns"] == r["time_ns"] and x["file"] == r["file"]]
        if not mine:
            fail("dump %s does not list its own firing at %d: %r" % (r["file"], r["time_ns"], d.get("triggers")))
        if not any(n.get("count", 0) > 0 for n in d.get("nvtx", [])) and not d.get("kernels"):
            fail("dump %s holds no events" % r["file"])


main()

#!/usr/bin/env bash
# Several captures in one `export`: two `cuscope record` runs of nvtx_at (RANK=0, RANK=1) whose
# first "step" range began at one wall-clock instant; `export A B` (Chrome JSON) has both
# processes, apart and named with their host, and puts their first steps within 3 ms of each
# other once the programs' own wake-up difference (each prints when it began) is taken out.
# The Perfetto form of the same export is written too.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_at

host=$(hostname)
at=$(($(date +%s%N) + 1500000000))
RANK=0 "$CUSCOPE" record -o "$T/a.cuscope" -- "$PROGS/nvtx_at" "$at" >"$T/a.out" 2>"$T/a.err" </dev/null &
a=$!
BG_PIDS+=("$a")
RANK=1 "$CUSCOPE" record -o "$T/b.cuscope" -- "$PROGS/nvtx_at" "$at" >"$T/b.out" 2>"$T/b.err" </dev/null &
b=$!
BG_PIDS+=("$b")
bg_wait "$a" 60
[ "$RC" = 0 ] || fail "record a exited $RC: $(head -c 300 "$T/a.err")"
bg_wait "$b" 60
[ "$RC" = 0 ] || fail "record b exited $RC: $(head -c 300 "$T/b.err")"

timeout 60 "$CUSCOPE" export -o "$T/ab.json" "$T/a.cuscope" "$T/b.cuscope" 2>"$T/ab.err" ||
	fail "export A B exited $?: $(head -c 300 "$T/ab.err")"
[ -s "$T/ab.err" ] && fail "export A B said: $(head -c 300 "$T/ab.err")"
timeout 60 "$CUSCOPE" export --format=perfetto -o "$T/ab.pb" "$T/a.cuscope" "$T/b.cuscope" 2>"$T/pb.err" ||
	fail "export --format=perfetto A B exited $?: $(head -c 300 "$T/pb.err")"
[ -s "$T/ab.pb" ] || fail "the Perfetto export is empty"

# export_check JSON ARGS... <<'PY': the Python check on stdin, with J the export and fail().
export_check()
{
	"$PYTHON" -c "import json, sys
def fail(msg):
    print(msg)
    sys.exit(1)
J = json.load(open(sys.argv[1]))
$(cat)" "$@" || exit 1
}

export_check "$T/ab.json" "$T/a.out" "$T/b.out" "$host" <<'PY'
def out(path):
    words = open(path).read().split()
    return int(words[words.index("pid") + 1]), int(words[words.index("start") + 1])
pid_a, start_a = out(sys.argv[2])
pid_b, start_b = out(sys.argv[3])
host = sys.argv[4]
names, first = {}, {}
for e in J["traceEvents"]:
    if e.get("ph") == "M" and e.get("name") == "process_name":
        names[e["pid"]] = e["args"]["name"]
    if e.get("name") == "step" and e.get("ph") in ("X", "B"):
        first[e["pid"]] = min(first.get(e["pid"], e["ts"]), e["ts"])
if set(first) != {pid_a, pid_b}:
    fail("step ranges of pids %r, want %r" % (sorted(first), sorted({pid_a, pid_b})))
for pid in (pid_a, pid_b):
    if not names.get(pid, "").endswith("(%s)" % host):
        fail("process %d is named %r, want its host (%s) at the end" % (pid, names.get(pid), host))
# Microseconds: the export's gap between the first steps against the programs' own wall clocks.
gap = (first[pid_b] - first[pid_a]) - (start_b - start_a) / 1000.0
if abs(gap) > 3000:
    fail("first steps %.0f us apart after the programs' own %.0f us: off by %.0f us" %
         (first[pid_b] - first[pid_a], (start_b - start_a) / 1000.0, gap))
PY
exit 0

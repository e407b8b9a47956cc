#!/usr/bin/env bash
# export --format=perfetto: recorded captures (nvtx_threads: threads, marks, async ranges;
# nvtx_domains; cpu_workload: thread counters; hostile_names under a command line that is not valid
# UTF-8) and a synthetic GPU capture (tests/bench/gen_capture.c, known truth: kernels, copies,
# memsets, syncs, flows) are exported as JSON and as Perfetto protobuf. The protobuf is parsed with
# perfetto_trace_pb2.Trace (the `perfetto` wheel's official protos, protobuf >= 6.31) and replayed
# as a reader does (tests/runtime/perfetto_check.py): every slice, instant, arg, track name, flow and
# counter equals the JSON's, timestamps are in order on every sequence, every sequence clears its
# incremental state before its interned names are used; NVTX counts equal stats', GPU counts and flows
# equal the generator's truth, counter values equal stats'. Plus .gz, stdout, windows, bad formats.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_domains nvtx_threads cpu_workload hostile_names

# A Python with the official Perfetto protos: build/venv (make deps installs them), else a venv of our own.
PFPY=$BUILD/venv/bin/python
pf_ok()
{
	"$1" - 2>/dev/null <<'PY'
import google.protobuf as pb
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
v = tuple(int(x) for x in pb.__version__.split(".")[:2])
raise SystemExit(0 if v >= (6, 31) else 1)
PY
}
if ! [ -x "$PFPY" ] || ! pf_ok "$PFPY"; then
	PFPY=$T/venv/bin/python
	{ "$PYTHON" -m venv "$T/venv" >/dev/null 2>&1 &&
		timeout 300 "$PFPY" -m pip install -q --disable-pip-version-check perfetto 'protobuf>=6.31' \
			>"$T/pip.log" 2>&1 && pf_ok "$PFPY"; } ||
		skip "SKIP: no Python with the perfetto wheel and protobuf >= 6.31 (make deps installs them; pip: $(tail -n 1 "$T/pip.log" 2>/dev/null))"
fi

GEN=$T/gen_capture
cc -O2 -I"$ROOT/include" -D_GNU_SOURCE -o "$GEN" "$ROOT/tests/bench/gen_capture.c" "$BUILD/obj/libviewer.a" \
	-lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" || fail "cannot build gen_capture: $(head -c 300 "$T/cc.err")"

# pf_export CAPTURE NAME [ARGS...]: JSON and Perfetto exports of the same window, compared exactly.
pf_export()
{
	local cap=$1 name=$2 rc=0
	shift 2
	timeout 60 "$CUSCOPE" export "$@" -o "$T/$name.json" "$cap" 2>"$T/$name.jerr" || rc=$?
	[ "$rc" = 0 ] || fail "JSON export $name exited $rc: $(head -c 300 "$T/$name.jerr")"
	timeout 60 "$CUSCOPE" export --format=perfetto "$@" -o "$T/$name.pftrace" "$cap" 2>"$T/$name.err" || rc=$?
	[ "$rc" = 0 ] || fail "perfetto export $name exited $rc: $(head -c 300 "$T/$name.err")"
	[ -s "$T/$name.err" ] && fail "perfetto export $name wrote to stderr: $(head -c 300 "$T/$name.err")"
	"$PFPY" "$ROOT/tests/runtime/perfetto_check.py" "$T/$name.pftrace" "$T/$name.json" "$T/$name.sum" \
		>"$T/$name.check" || fail "$name: $(cat "$T/$name.check")"
}

# NVTX counts per (name, domain, style) equal stats' (the known workload's truth as the store has it).
nvtx_vs_stats()
{
	local cap=$1 name=$2
	cs_stats "$cap" "$T/$name.stats.json"
	py_check "$T/$name.stats.json" /dev/null "$T/$name.json" <<'PY'
import collections
E = json.load(open(sys.argv[3], encoding="utf-8"))["traceEvents"]
got = collections.Counter()
for e in E:
    if e["ph"] in ("X", "B", "i") and "domain" in e.get("args", {}):
        got[(e["name"], e["args"]["domain"], e["args"]["style"])] += 1
want = collections.Counter({(r["name"], r["domain"], r["style"]): r["count"] for r in J["nvtx"]})
if got != want:
    fail("NVTX counts differ from stats: only in export %r, only in stats %r" % (dict(got - want), dict(want - got)))
PY
}

cs_record "$T/threads.cap" app1 -- "$PROGS/nvtx_threads"
[ "$RC" = 0 ] || fail "record nvtx_threads exited $RC"
pf_export "$T/threads.cap" threads
nvtx_vs_stats "$T/threads.cap" threads
cs_record "$T/domains.cap" app2 -- "$PROGS/nvtx_domains"
[ "$RC" = 0 ] || fail "record nvtx_domains exited $RC"
pf_export "$T/domains.cap" domains
nvtx_vs_stats "$T/domains.cap" domains
"$PFPY" - "$T/threads.sum" "$T/domains.sum" <<'PY' || exit 1
import json, sys
for path in sys.argv[1:]:
    s = json.load(open(path))["slices"]
    if not any(k.startswith("X|") for k in s) or not any(k.startswith("i|") for k in s):
        print("%s: no slices or no marks exported: %r" % (path, s)); sys.exit(1)
PY

# Counters: thread counters (task-clock) equal stats' values, on their thread.
cs_record "$T/cpu.cap" app3 -- "$PROGS/cpu_workload" hot
[ "$RC" = 0 ] || fail "record cpu_workload exited $RC"
pf_export "$T/cpu.cap" cpu
cs_stats "$T/cpu.cap" "$T/cpu.stats.json"
if grep -q '"counters"' "$T/cpu.stats.json"; then
	py_check "$T/cpu.stats.json" /dev/null "$T/cpu.sum" <<'PY'
got = {(c[0], c[1], c[2]): c[4] for c in json.load(open(sys.argv[3]))["counters"]}
want = {(r["pid"], r["tid"], r["event"]): r["value"] for r in J["counters"]}
if not want:
    fail("cpu_workload recorded no counters")
if got != want:
    fail("perfetto counters %r, stats %r" % (got, want))
PY
fi

# Names: controls kept, a command line that is not valid UTF-8 gets U+FFFD (as the JSON's \ufffd).
cs_record "$T/names.cap" app4 -- "$PROGS/hostile_names" $'bad\xff\xfeutf8'
[ "$RC" = 0 ] || fail "record hostile_names exited $RC"
pf_export "$T/names.cap" names
"$PFPY" - "$T/names.pftrace" <<'PY' || exit 1
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace(); t.ParseFromString(open(sys.argv[1], "rb").read())
names = [p.track_descriptor.process.process_name for p in t.packet if p.track_descriptor.HasField("process")]
if not any(n.endswith("bad\ufffd\ufffdutf8") for n in names):
    print("process name %r lacks the replaced bytes" % names); sys.exit(1)
PY

# Synthetic GPU capture with known truth: counts, flows, kernel args.
"$GEN" "$T/gen.cap" 3000 20000 50000 >"$T/gen.truth" || fail "gen_capture failed"
pf_export "$T/gen.cap" gen
"$PFPY" - "$T/gen.truth" "$T/gen.sum" <<'PY' || exit 1
import json, sys
truth = json.load(open(sys.argv[1]))
S = json.load(open(sys.argv[2]))
def count(kind, name):
    return sum(n for k, n in S["slices"].items() if k.split("|")[0] == kind and k.split("|", 2)[2] == name)
for kind, name, want in (("X", "step", truth["step"]), ("X", "inner", truth["inner"]), ("X", "async", truth["async"]),
                         ("X", "kernel(float*, int)", truth["kernel"]), ("X", "cudaLaunchKernel", truth["cudaLaunchKernel"]),
                         ("X", "Memcpy HtoD", truth["memcpy"]), ("X", "Memset", truth["memset"]), ("i", "tick", truth["tick"])):
    if count(kind, name) != want:
        print("%s %r: %d, want %d" % (kind, name, count(kind, name), want)); sys.exit(1)
flows = truth["kernel"] + truth["memcpy"] + truth["memset"]
if S["flows"] != flows:
    print("flows %d, want %d" % (S["flows"], flows)); sys.exit(1)
tracks = {k.split("|")[1] for k in S["slices"]}
if "GPU0 s7" not in tracks:
    print("no GPU0 s7 track: %r" % sorted(tracks)); sys.exit(1)
PY
for win in "0.0051 0.0102" "0.1 0.2"; do
	set -- $win
	pf_export "$T/gen.cap" win --from "$1" --to "$2"
done

# .gz and stdout carry the same bytes; smaller than the JSON.
timeout 60 "$CUSCOPE" export --format=perfetto -o "$T/gen.pftrace.gz" "$T/gen.cap" 2>/dev/null || fail "export to .gz failed"
zcat "$T/gen.pftrace.gz" | cmp -s - "$T/gen.pftrace" || fail "gzip perfetto export differs"
timeout 60 "$CUSCOPE" export -f perfetto "$T/gen.cap" >"$T/gen.stdout" 2>/dev/null || fail "perfetto export to stdout failed"
cmp -s "$T/gen.stdout" "$T/gen.pftrace" || fail "perfetto export to stdout differs from -o FILE"
[ "$(stat -c %s "$T/gen.pftrace")" -lt "$(stat -c %s "$T/gen.json")" ] || fail "perfetto export is not smaller than JSON"

# a bad format: one line, exit 2, nothing written
rc=0
"$CUSCOPE" export --format=perfetto2 -o "$T/bad.out" "$T/gen.cap" >/dev/null 2>"$T/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "export --format=perfetto2 exited $rc, want 2"
one_line_error "$T/bad.err" "export --format=perfetto2"
[ -e "$T/bad.out" ] && fail "a bad format still wrote the output"

# the sanitized binary writes the same bytes
if [ -x "$CUSCOPE_ASAN" ]; then
	rc=0
	"$CUSCOPE_ASAN" export --format=perfetto -o "$T/asan.pftrace" "$T/gen.cap" 2>"$T/asan.err" || rc=$?
	[ "$rc" = 0 ] || fail "ASan perfetto export exited $rc: $(head -c 300 "$T/asan.err")"
	no_sanitizer_report "$T/asan.err"
	cmp -s "$T/asan.pftrace" "$T/gen.pftrace" || fail "ASan perfetto export differs"
fi
exit 0

#!/usr/bin/env bash
# NVTX extended payloads (NCCL's kind): tests/progs/nvtx_payload registers an enum, a static and a
# dynamic schema in domain "NCCL" through the real nvtx3 headers and sends ranges whose payloads
# decode into fields; the Chrome export's args of each range are checked exactly, the payloads that
# cannot be decoded (unknown schema, NULL, too short) are ranges without fields and counted, and the
# program's output and exit code are those of a run without cuscope.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_payload

rc0=0
"$PROGS/nvtx_payload" >"$T/plain.out" 2>"$T/plain.err" || rc0=$?
[ "$rc0" = 7 ] || fail "nvtx_payload alone exited $rc0, want 7"

cs_record "$T/cap" app -- "$PROGS/nvtx_payload"
[ "$RC" = 7 ] || fail "cuscope record exited $RC, want the program's 7: $(head -c 300 "$T/app.err")"
# Only the pid differs between the two runs.
diff <(grep -v '^pid ' "$T/plain.out") <(grep -v '^pid ' "$T/app.out") >/dev/null ||
	fail "program output changed under cuscope: $(head -c 300 "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"
timeout 60 "$CUSCOPE" export -o "$T/trace.json" "$T/cap" 2>"$T/export.err" ||
	fail "export failed: $(head -c 300 "$T/export.err")"

py_check "$T/stats.json" "$T/app.out" <<'PY'
expect_nvtx([
    ("ncclAllReduce", "NCCL", "PushPop", 3),
    ("ncclCommInitRank", "NCCL", "PushPop", 1),
    ("ncclBroadcast", "NCCL", "PushPop", 3),
    ("ncclAllReduce", "NCCL", "Mark", 1),
    ("ncclGroup", "NCCL", "StartEnd", 1),
])
# The three payloads that cannot be decoded, and nothing else lost.
if loss("payload_undecoded") != 3:
    fail("payload_undecoded = %d, want 3" % loss("payload_undecoded"))
no_losses("payload_undecoded")

T = json.load(open(sys.argv[1].replace("stats.json", "trace.json"), encoding="utf-8"))
events = T["traceEvents"] if isinstance(T, dict) else T
pid = app("pid")
def fields(e):
    return {k: v for k, v in e.get("args", {}).items() if k not in ("domain", "style", "unfinished")}
got = sorted((e["name"], e["ph"], json.dumps(fields(e), sort_keys=True))
             for e in events if e.get("pid") == pid and e.get("cat") == "NCCL")
def coll(comm, nbytes, root, op, scale):
    return {"comm": comm, "bytes": nbytes, "root": root, "op": op, "scale": scale}
# The reduction op by its name in the registered enum; a value it does not name as a number.
ops = ["Sum", "Prod", "Max"]
want = ([("ncclAllReduce", "X", coll(0x1000 + i, 4096 << i, -i, ops[i], 0.5 * i)) for i in range(3)] +
              [("ncclCommInitRank", "X", {"newcomm": 77, "nranks": 8, "myrank": 3, "cudaDev": -1})] +
              [("ncclBroadcast", "X", {})] * 3 +
              [("ncclAllReduce", "i", coll(9, 1, 0, "Avg", -2.25))] +
              [("ncclGroup", "X", coll(5, 6, 7, 7, 1e300))])
want = sorted((n, ph, json.dumps(a, sort_keys=True)) for n, ph, a in want)
if got != want:
    fail("NCCL events and their args:\n got  %r\n want %r" % (got, want))
# The fields come in schema order, after domain and style.
first = [e for e in events if e.get("pid") == pid and e.get("name") == "ncclCommInitRank"][0]
if list(first["args"]) != ["domain", "style", "newcomm", "nranks", "myrank", "cudaDev"]:
    fail("args order %r" % list(first["args"]))
PY

# Perfetto: the same fields as debug annotations, typed (tests/runtime/perfetto_check.py compares
# every slice's args with the JSON's), where a Python with the Perfetto protos is at hand (t162).
PFPY=$BUILD/venv/bin/python
if [ -x "$PFPY" ] && "$PFPY" -c 'from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace' 2>/dev/null; then
	timeout 60 "$CUSCOPE" export --format=perfetto -o "$T/trace.pftrace" "$T/cap" 2>"$T/pf.err" ||
		fail "perfetto export failed: $(head -c 300 "$T/pf.err")"
	"$PFPY" "$ROOT/tests/runtime/perfetto_check.py" "$T/trace.pftrace" "$T/trace.json" "$T/pf.sum" \
		>"$T/pf.check" || fail "perfetto: $(cat "$T/pf.check")"
	grep -q '"scale"' "$T/trace.json" || fail "JSON export lacks the payload's fields"
fi
exit 0

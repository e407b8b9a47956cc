#!/usr/bin/env bash
# Corrupt chunks cost only themselves. In a capture of one process over many chunks:
#  - a flipped byte in the process's first chunk (its HELLO and names) loses that chunk's events
#    only: every later chunk is read, with the process's identity and names intact;
#  - a damaged chunk header loses that chunk only: the reader finds the next valid header.
# And a capture written in format 1 (tests/data/capture_v1.cap, recorded from nvtx_domains by the
# format-1 writer) still reads, with its known NVTX truth.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

cc -O2 -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/bench/gen_capture.c" "$BUILD/obj/libviewer.a" \
	-lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" || fail "cannot build gen_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/good.cap" 20000 >/dev/null || fail "gen_capture failed"

# damage GOOD OUT WHERE: writes OUT with one byte of a chunk changed (WHERE = first-payload:
# the middle of the first FRAMES chunk's payload; middle-header: the length field of a FRAMES
# chunk in the middle); prints "TOTAL_EVENTS LOST_EVENTS LATER_FRAMES_CHUNKS".
damage()
{
	"$PYTHON" - "$@" <<'PY'
import struct, sys
good, out, where = sys.argv[1:4]
d = bytearray(open(good, "rb").read())
off, chunks, index = 64, [], []
while off + 40 <= len(d):
    magic, typ, src, length = struct.unpack_from("<IIII", d, off)
    chunks.append((off, typ, src, length))
    if typ == 5:
        for i in range(length // 40):
            index.append(struct.unpack_from("<QQQIIII", d, off + 40 + 40 * i))
    off += 40 + length
events = {e[0]: e[6] for e in index}
frames = [c for c in chunks if c[1] in (1, 4)]
if len(frames) < 13:
    sys.exit("only %d frames chunks" % len(frames))
c = frames[0] if where == "first-payload" else frames[len(frames) // 2]
if where == "first-payload":
    d[c[0] + 40 + c[3] // 2] ^= 0x10
else:
    d[c[0] + 12] ^= 0x01
open(out, "wb").write(d)
later = sum(1 for f in frames if f[0] > c[0])
print(sum(events.values()), events[c[0]], later)
PY
}

# info_field FILE KEY: the first number on info's KEY line.
info_field()
{
	awk -v k="$2" '$1 == k { print $2; exit }' "$1"
}

"$CUSCOPE" info "$T/good.cap" >"$T/good.info" 2>"$T/good.err" || fail "info on the good capture failed"
for where in first-payload middle-header; do
	read -r total lost later < <(damage "$T/good.cap" "$T/bad.cap" "$where") || fail "cannot damage the capture"
	[ "$(info_field "$T/good.info" events)" = "$total" ] || fail "good capture: info events $(info_field "$T/good.info" events), index says $total"
	rc=0
	"$CUSCOPE" info "$T/bad.cap" >"$T/bad.info" 2>"$T/bad.err" || rc=$?
	[ "$rc" = 0 ] || fail "info on $where damage exited $rc: $(head -c 200 "$T/bad.err")"
	grep -q '1 corrupt chunk skipped' "$T/bad.err" || fail "$where: want one corrupt chunk: $(head -c 300 "$T/bad.err")"
	got=$(info_field "$T/bad.info" events)
	[ "$got" = $((total - lost)) ] ||
		fail "$where damage: read $got events, want $((total - lost)) (all but the $lost of the damaged chunk; $later later chunks)"
	grep -q 'pid 4242 .*gen prog' "$T/bad.info" || fail "$where: process identity lost: $(grep pid "$T/bad.info")"
	"$CUSCOPE" stats --format=json "$T/bad.cap" >"$T/bad.json" 2>/dev/null || fail "stats on $where damage failed"
	"$PYTHON" - "$T/bad.json" "$where" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
names = {r["name"] for r in d["nvtx"]}
if not {"step", "inner"} <= names:
    print("%s: NVTX names lost after damage: %r" % (sys.argv[2], sorted(names))); sys.exit(1)
if not d["kernels"] or not all(k["name"] for k in d["kernels"]):
    print("%s: kernel names lost after damage: %r" % (sys.argv[2], d["kernels"][:2])); sys.exit(1)
PY
	echo "$where: $got of $total events read, $later later chunks kept"
done

# Format 1 still reads.
V1=$ROOT/tests/data/capture_v1.cap
"$PYTHON" -c 'import struct,sys; v=struct.unpack_from("<I", open(sys.argv[1],"rb").read(), 8)[0]; sys.exit(v != 1)' "$V1" ||
	fail "$V1 is not a format 1 capture"
rc=0
"$CUSCOPE" stats --format=json "$V1" >"$T/v1.json" 2>"$T/v1.err" || rc=$?
[ "$rc" = 0 ] || fail "stats on the format 1 capture exited $rc: $(head -c 200 "$T/v1.err")"
[ -s "$T/v1.err" ] && fail "stats on the format 1 capture warned: $(head -c 200 "$T/v1.err")"
"$PYTHON" - "$T/v1.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
got = sorted((r["name"], r["domain"], r["style"], r["count"]) for r in d["nvtx"])
want = sorted([("a.ascii", "dom.A", "PushPop", 3), ("a.registered", "dom.A", "PushPop", 4),
    ("a.registered", "dom.A", "Mark", 1), ("a.mark", "dom.A", "Mark", 2), ("a.outer", "dom.A", "PushPop", 2),
    ("same-name", "dom.A", "PushPop", 1), ("b.ascii", "dom.B", "PushPop", 2), ("same-name", "dom.B", "PushPop", 2),
    ("dom-wide-\u00e9", "dom.B", "PushPop", 1), ("b.async", "dom.B", "StartEnd", 2), ("same-name", "", "PushPop", 3),
    ("d.inner", "", "PushPop", 2), ("handoff", "", "StartEnd", 6)])
if got != want:
    print("format 1 capture: NVTX rows differ: %r" % got); sys.exit(1)
PY
"$CUSCOPE" info "$V1" >"$T/v1.info" 2>&1 || fail "info on the format 1 capture failed"
grep -q 'complete' "$T/v1.info" || fail "format 1 capture not complete: $(head -3 "$T/v1.info")"
exit 0

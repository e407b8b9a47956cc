"""Writes seed frame streams for fuzz_wire: HELLO, strings, NVTX events, GPU records, cost readings and
GPU metric samples.

Each seed starts with an even byte (raw stream: the HELLO is in the seed) or an odd one (the harness
prepends a HELLO and the seed holds only the frames after it).
"""
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def frame(t, payload):
    return struct.pack("<II", t, len(payload)) + payload


def hello(pid=99):
    argv = b"prog\0arg"
    # version 4 (3's hello, GPU metric frames added): ids (rank and world size known), rank, local_rank,
    # world_size, restart_count
    h = struct.pack("<8sIIiiQQQQ64sIIiiii", b"CUSCOPE\0", 4, 144, pid, 1, 10**9, 10**9, 0, 3, b"host", len(argv),
                    5, 1, 0, 4, 0)
    return frame(1, h + argv)


def string(i, s):
    b = s.encode()
    return frame(2, struct.pack("<II", i, len(b)) + b)


def ev(t, kind, name=0, dom=0, value=0, tid=99, flags=0):
    return struct.pack("<QQIIIHH", t, value, tid, name, dom, kind, flags)


def gpu(kind, start, end, name=0, corr=0, stream=7, sub=0, nbytes=0, tid=99):
    return struct.pack("<QQQIIIIIHHI3i3iIIIBBBBI", start, end, nbytes, corr, name, 0, 1, stream, kind, sub, tid,
                       128, 1, 1, 256, 1, 1, 32, 0, 0, 2, 3, 1, 0, 0)


body = string(1, "step") + string(2, "dom") + string(3, "_Z6kernelPfi") + string(4, "cudaLaunchKernel") + string(5, "w\u00e9")
evs = b"".join([ev(10**9 + 10, 16, 5), ev(10**9 + 100, 1, 1), ev(10**9 + 150, 1, 1, 2), ev(10**9 + 180, 5, 1, 2),
                ev(10**9 + 200, 2, 0, 2), ev(10**9 + 300, 2), ev(10**9 + 310, 3, 1, 0, 7), ev(10**9 + 400, 4, 0, 0, 7),
                ev(10**9 + 500, 17)])
# NVTX payload fields (WIRE_EV_NVTX_ARG, 20) after a push, a start and a mark, one stray, one of an unknown
# type, enum values (3) named by a string and by an id never sent.
args = b"".join([ev(10**9 + 600, 1, 1, 2), ev(10**9 + 600, 20, 5, 0, 7), ev(10**9 + 600, 20, 1, 0, 2**64 - 1, flags=1),
                 ev(10**9 + 610, 3, 1, 0, 9), ev(10**9 + 610, 20, 5, 0, 0x3FE0000000000000, flags=2),
                 ev(10**9 + 620, 5, 1), ev(10**9 + 620, 20, 5, 0, 1, flags=9), ev(10**9 + 620, 20, 5, 1, 0, flags=3),
                 ev(10**9 + 620, 20, 5, 77, 0, flags=3), ev(10**9 + 630, 2),
                 ev(10**9 + 640, 20, 5), ev(10**9 + 650, 4, 0, 0, 9)])
g = b"".join([gpu(7, 0, 0, stream=1), gpu(5, 10**9 + 100, 10**9 + 150, 4, 1), gpu(1, 10**9 + 200, 10**9 + 260, 3, 1),
              gpu(2, 10**9 + 300, 10**9 + 320, 0, 2, sub=1, nbytes=4096), gpu(3, 10**9 + 330, 10**9 + 340, 0, 3, nbytes=64),
              gpu(4, 10**9 + 350, 10**9 + 360, sub=3)])
losses = frame(4, struct.pack("<IIQ", 1, 0, 5) + struct.pack("<IIQ", 7, 0, 2))
dev = frame(7, struct.pack("<II16sQIIII", 0, 5, b"\x01" * 16, 1 << 30, 80, 9, 0, 0))
# level WARNING, topic GPU_UNAVAILABLE (wire version 2: a topic next to the level)
notice = frame(8, struct.pack("<III", 1, 1, 5) + b"hello")


def cost(t, source, cpu, added, events, backoffs=0, level=0, flags=0):
    return struct.pack("<QQQQIIII", t, cpu, added, events, source, backoffs, level, flags)


# The collector's own cost: cumulative readings a second apart, sampling reduced by the budget in the second.
costs = frame(12, cost(10**9 + 100, 4, 1000, 50, 3, 0, 1000) + cost(10**9 + 100, 1, 2000, 0, 9)) + frame(
    12, cost(2 * 10**9 + 100, 4, 3000, 250, 7, 1, 250, 1) + cost(2 * 10**9 + 100, 9, 1, 1, 1))


def metric(start, end, value, name, uuid=b"\x01" * 16, device=0, source=1):
    return struct.pack("<QQd16sIHH", start, end, value, uuid, name, device, source)


# GPU metric samples (13): in order, one late, one NaN, one backwards, one unnamed, one of another GPU.
metrics = frame(13, b"".join([metric(10**9 + 100, 10**9 + 200, 42.0, 1), metric(10**9 + 200, 10**9 + 300, 7.5, 1),
                              metric(10**9 + 150, 10**9 + 160, 3.0, 1), metric(10**9 + 300, 10**9 + 400, float("nan"), 1),
                              metric(10**9 + 500, 10**9 + 400, 1.0, 1), metric(10**9 + 500, 10**9 + 600, 1.0, 0),
                              metric(10**9 + 500, 10**9 + 600, 1e9, 4, b"\x02" * 16, 1, 3)]))
bye = frame(5, struct.pack("<QiI", 10**9 + 1000, 0, 0))
stream = body + frame(3, evs) + frame(6, g) + losses + dev + notice + costs + metrics + bye
seeds = {
    "raw_full": b"\x00" + hello() + stream,
    "hello_only": b"\x00" + hello(),
    "pre_full": b"\x01" + stream,
    "pre_events": b"\x01" + body + frame(3, evs),
    "pre_args": b"\x01" + body + frame(3, args),
    "pre_gpu": b"\x01" + body + frame(6, g),
    "pre_cost": b"\x01" + costs,
    "pre_metrics": b"\x01" + body + dev + metrics,
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)

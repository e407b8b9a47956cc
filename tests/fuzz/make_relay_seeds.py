"""Writes seed inputs for fuzz_relay from the wire seeds (make_wire_seeds.py's directory).

Each wire seed's frames become relay records of two sources (RELAY_FRAME), then a loss count and the
sources' ends; the stream goes to host 0 and, in a second seed, to both hosts with a relay restart
in between. Input layout: see tests/fuzz/fuzz_relay.c.
"""
import os
import struct
import sys

wire_dir, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
HELLO = None


def frames(data):
    off = 0
    while len(data) - off >= 8:
        t, n = struct.unpack_from("<II", data, off)
        off += 8
        if n > len(data) - off:
            return
        yield t, data[off:off + n]
        off += n


def record(kind, source, t, payload):
    return struct.pack("<IIII", kind, source, t, len(payload)) + payload


def relay_stream(data):
    out, k = b"", 0
    for t, payload in frames(data):
        out += record(1, k % 2, t, payload)
        if t == 1:  # a second source announces itself too
            out += record(1, 1, t, payload)
        k += 1 if t != 1 else 0
    out += record(2, 0, 0, struct.pack("<QQ", 3, 300))
    out += record(3, 0, 0, b"") + record(4, 1, 0, b"a line\nwith\x1b[31m control")
    return out


def pieces(host, stream, end_first=False):
    b = b""
    for i in range(0, len(stream), 4096):
        chunk = stream[i:i + 4096]
        ctl = host | (2 if end_first and i == 0 else 0)
        b += bytes([ctl]) + struct.pack("<H", len(chunk)) + chunk
    return b


for name in sorted(os.listdir(wire_dir)):
    data = open(os.path.join(wire_dir, name), "rb").read()
    if not data:
        continue
    body = data[1:]
    if data[0] & 1:  # fuzz_wire prepends a HELLO to these: take one from a raw seed
        if HELLO is None:
            continue
        body = HELLO + body
    elif HELLO is None:
        for t, payload in frames(body):
            if t == 1:
                HELLO = struct.pack("<II", t, len(payload)) + payload
            break
    stream = relay_stream(body)
    with open(os.path.join(out, name + ".one"), "wb") as f:
        f.write(bytes([3]) + pieces(0, stream))
    with open(os.path.join(out, name + ".two"), "wb") as f:
        f.write(bytes([3]) + pieces(0, stream) + pieces(1, stream) + pieces(0, stream, end_first=True))

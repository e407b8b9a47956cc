"""A stand-in collector, for tests of what a viewer accepts from a peer.

Run as the launched command with LD_PRELOAD removed (so the real collector is absent): it
listens on $CUSCOPE_SESSION/<pid>.sock like a collector.

  fake_collector.py VERSION   greets every viewer with a HELLO whose version is VERSION, then
                              keeps the connection open for a few seconds.
  fake_collector.py forge-exit socket|final
                              forks a child that claims its end was SIGKILL with an EXIT frame
                              (over its socket or in <pid>.final), then says HELLO and, once the
                              child is gone, BYE itself (an honest peer); exits 3.
"""
import os
import socket
import struct
import sys
import time

session = os.environ["CUSCOPE_SESSION"]


def wire_version():
    """WIRE_VERSION from include/cuscope/wire.h, so an honest HELLO follows the protocol's bumps."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include", "cuscope", "wire.h")
    with open(header) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "#define" and parts[1] == "WIRE_VERSION":
                return int(parts[2].rstrip("uU"))
    raise SystemExit("fake_collector: WIRE_VERSION not found in " + header)


def hello(version=None):
    if version is None:
        version = wire_version()
    # magic[8] version hello_size pid ppid start anchor_mono anchor_real features host[64] cmdline_len ids
    # rank local_rank world_size restart_count (the last four from version 3 on)
    size = 144 if version >= 3 else 128
    body = struct.pack("<8sIIiiQQQQ64sII", b"CUSCOPE\0", version, size, os.getpid(), os.getppid(),
                       0, 0, 0, 0, b"fakehost", 0, 0)
    if version >= 3:
        body += struct.pack("<iiii", 0, 0, 0, 0)
    return frame(1, body)


def frame(ftype, body):
    return struct.pack("<II", ftype, len(body)) + body


def listen():
    path = os.path.join(session, "%d.sock" % os.getpid())
    try:
        os.unlink(path)  # the real collector of the exec'ing wrapper left one at this pid
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(10)
    return srv


if sys.argv[1:2] != ["forge-exit"]:
    version = int(sys.argv[1]) if len(sys.argv) > 1 else 99
    conn, _ = listen().accept()
    conn.sendall(hello(version))
    time.sleep(3)
    print("fake collector done")
    sys.exit(0)

# struct wire_bye: time_ns exit_code reserved; struct wire_exit: pid exit_code signal reserved
bye = frame(5, struct.pack("<QiI", time.monotonic_ns(), 0, 0))
child = os.fork()
if child == 0:
    forged = hello() + frame(11, struct.pack("<iiiI", os.getpid(), -1, 9, 0))
    if sys.argv[2] == "final":
        fd = os.open(os.path.join(session, "%d.final" % os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, forged)
        os.close(fd)
    else:
        conn, _ = listen().accept()
        conn.sendall(forged)
        time.sleep(1)
    os._exit(0)
print("forging child %d" % child, flush=True)
conn, _ = listen().accept()
conn.sendall(hello())
os.waitpid(child, 0)
time.sleep(0.5)
conn.sendall(bye)
print("fake collector done", flush=True)
sys.exit(3)

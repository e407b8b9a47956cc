"""A stand-in collector that speaks another protocol version, for the mismatch test.

Run as the launched command with LD_PRELOAD removed (so the real collector is absent): it
listens on $CUSCOPE_SESSION/<pid>.sock like a collector and greets every viewer with a HELLO
whose version is argv[1], then keeps the connection open for a few seconds.
"""
import os
import socket
import struct
import sys
import time

version = int(sys.argv[1]) if len(sys.argv) > 1 else 99
path = os.path.join(os.environ["CUSCOPE_SESSION"], "%d.sock" % os.getpid())
try:
    os.unlink(path)  # the real collector of the exec'ing wrapper left one at this pid
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
srv.settimeout(10)
conn, _ = srv.accept()
# magic[8] version hello_size pid ppid start anchor_mono anchor_real features host[64] cmdline_len reserved
hello = struct.pack("<8sIIiiQQQQ64sII", b"CUSCOPE\0", version, 128, os.getpid(), os.getppid(),
                    0, 0, 0, 0, b"fakehost", 0, 0)
conn.sendall(struct.pack("<II", 1, len(hello)) + hello)
time.sleep(3)
print("fake collector done")

"""Target for t010_python_nvtx: the `nvtx` PyPI package (CORE2 domain API, registered strings).

Expected rows (name, domain, style, count):
  py.push       ""      PushPop   5    push_range/pop_range, default domain
  py.colored    ""      PushPop   2    with color and an int payload
  decorated     ""      PushPop   4    @nvtx.annotate() -> the function's name
  py.named      py.dom  PushPop   3    @nvtx.annotate("py.named", domain="py.dom")
  py.ctx        py.dom  PushPop   2    with nvtx.annotate(...)
  py.inner      py.dom  PushPop   2    nested inside py.ctx
  py.mark       py.dom  Mark      3
  py.async      ""      StartEnd  2    start_range here, end_range on another thread
"""
import os
import threading
import time

import nvtx

for _ in range(5):
    nvtx.push_range("py.push")
    time.sleep(0.001)
    nvtx.pop_range()
for i in range(2):
    nvtx.push_range("py.colored", color="red", payload=i)
    nvtx.pop_range()


@nvtx.annotate()
def decorated():
    time.sleep(0.001)


@nvtx.annotate("py.named", domain="py.dom")
def named():
    pass


for _ in range(4):
    decorated()
for _ in range(3):
    named()
for _ in range(2):
    with nvtx.annotate("py.ctx", domain="py.dom"):
        with nvtx.annotate("py.inner", domain="py.dom"):
            time.sleep(0.001)
for _ in range(3):
    nvtx.mark("py.mark", domain="py.dom")

ranges = [nvtx.start_range("py.async") for _ in range(2)]


def ender():
    time.sleep(0.002)
    for r in ranges:
        nvtx.end_range(r)


t = threading.Thread(target=ender)
t.start()
t.join()
time.sleep(0.1)
print("pid %d" % os.getpid(), flush=True)

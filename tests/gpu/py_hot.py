"""CPU-bound Python for the perf-trampoline check: most time in cuscope_py_hot (pure Python)."""
import sys
import time


def cuscope_py_hot(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


if __name__ == "__main__":
    end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2.0)
    while time.monotonic() < end:
        cuscope_py_hot(20000)
    print("py_hot done")

sync_calls = 0


def synchronize():
    """Counts: a real one starts CUDA, which the hook must never do at import time."""
    global sync_calls
    sync_calls += 1

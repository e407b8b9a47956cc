import torch
from torch.autograd import (ProfilerConfig, ProfilerState, _ExperimentalConfig, _disable_profiler,
                            _enable_profiler)

_is_profiler_enabled = False


def _run_on_profiler_start():
    global _is_profiler_enabled
    _is_profiler_enabled = True


def _run_on_profiler_stop():
    global _is_profiler_enabled
    _is_profiler_enabled = False


def _config(state):
    return ProfilerConfig(state, False, False, False, False, False, _ExperimentalConfig())


class profile:
    def __enter__(self):
        _run_on_profiler_start()
        _enable_profiler(_config(ProfilerState.KINETO), set())
        return self

    def __exit__(self, *exc):
        self.events = _disable_profiler()
        _run_on_profiler_stop()
        return False


class emit_nvtx:
    def __init__(self, enabled=True, record_shapes=False):
        self.record_shapes = record_shapes

    def __enter__(self):
        torch.cuda.synchronize()
        _run_on_profiler_start()
        _enable_profiler(_config(ProfilerState.NVTX), set())
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()
        _disable_profiler()
        _run_on_profiler_stop()
        return False

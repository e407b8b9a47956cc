"""Stand-in for torch._C._autograd: one profiler state per thread, as libtorch keeps it."""
import ctypes, os, threading, time

_lib = ctypes.CDLL(os.environ["FAKE_TORCH_NVTX_LIB"])
_lib.nvtx_calls_push.argtypes = (ctypes.c_char_p,)
_tls = threading.local()
_next_op_id = [0]
_seq = [0]


class ProfilerState:
    Disabled, CPU, CUDA, NVTX, ITT, KINETO = range(6)


class ProfilerConfig:
    def __init__(self, state, report_input_shapes, profile_memory, with_stack, with_flops,
                 with_modules, experimental_config):
        self.state = state


class _ExperimentalConfig:
    pass


def _enable_profiler(config, activities, scopes=None):
    if getattr(_tls, "state", None) is not None:
        raise RuntimeError("Profiler is already enabled on this thread.")
    if config.state == ProfilerState.NVTX and os.environ.get("FAKE_TORCH_CPU_BUILD") == "1":
        raise RuntimeError("Can't use NVTX profiler - PyTorch was compiled without CUDA")
    _tls.state = config.state
    _tls.events = []


def _disable_profiler():
    if getattr(_tls, "state", None) is None:
        raise RuntimeError("Can't disable Kineto profiler when it's not running")
    _tls.state = None
    return _tls.events


def _enable_profiler_legacy(config):
    _enable_profiler(config, set())


def _disable_profiler_legacy():
    return _disable_profiler()


def _profiler_enabled():
    return getattr(_tls, "state", None) is not None


def _op(name, seconds=0):
    """An operator: an NVTX range under the NVTX state, an event under any other profiler."""
    _next_op_id[0] += 1
    _seq[0] += 1
    state = getattr(_tls, "state", None)
    if state == ProfilerState.NVTX:
        _lib.nvtx_calls_push(("%s, seq = %d, op_id = %d" % (name, _seq[0], _next_op_id[0])).encode())
        if seconds:
            time.sleep(seconds)
        _lib.nvtx_calls_pop()
        return
    if seconds:
        time.sleep(seconds)
    if state is not None:
        _tls.events.append(name)

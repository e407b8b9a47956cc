"""cuscope's Python hook, put first on PYTHONPATH by `cuscope` launch mode.

Reports garbage-collection pauses to the injected collector (shown as ranges on the thread lane),
then runs the sitecustomize that would have run without cuscope, so nothing the environment set
up is lost. Does nothing when the collector is not loaded.
"""
import os
import sys


def _cuscope_install_gc_hook():
    try:
        import ctypes
        import gc

        report = ctypes.CDLL(None).cuscope_python_gc  # exported by the preloaded collector
    except (ImportError, OSError, AttributeError):
        return
    report.argtypes = (ctypes.c_int, ctypes.c_int)
    report.restype = None

    def _cuscope_gc_callback(phase, info):
        report(1 if phase == "start" else 0, int(info.get("generation", 2)))

    gc.callbacks.append(_cuscope_gc_callback)


def _cuscope_chain_sitecustomize():
    """Runs the next sitecustomize on sys.path after this one, as Python would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from importlib.machinery import PathFinder
        import importlib.util
    except ImportError:
        return
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_cuscope_install_gc_hook()
_cuscope_chain_sitecustomize()

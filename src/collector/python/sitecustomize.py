"""cuscope's Python hook, put first on PYTHONPATH by `cuscope` launch mode.

Reports garbage-collection pauses to the injected collector (shown as ranges on the thread lane)
and the `threading` name of each Python thread against its native thread id (lanes read
"MainThread" or "loader-0" rather than "python3"), then runs the sitecustomize that would have run
without cuscope, so nothing the environment set up is lost. Does nothing when the collector is not
loaded; never lets an error of its own reach the program.
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


def _cuscope_install_thread_names():
    """Names threads once each: at start-up, when a thread starts, when one is renamed, after fork.

    Nothing runs per Python call: only Thread._bootstrap_inner (once per thread) and the name
    setter are wrapped. `threading` is not imported here (gevent and eventlet must patch it before
    anyone imports it): the hooks go in when the program imports it.
    """
    try:
        import ctypes
        import _thread

        report = ctypes.CDLL(None).cuscope_python_thread_name  # exported by the collector
        report.argtypes = (ctypes.c_ulong, ctypes.c_char_p)
        report.restype = None
        get_native_id = _thread.get_native_id  # 3.8+
    except (ImportError, OSError, AttributeError):
        return

    def _report(native_id, name):
        try:
            if native_id and isinstance(name, str):
                report(native_id, name.encode("utf-8", "replace")[:255])
        except Exception:
            pass

    def _after_fork_in_child():
        # The forking thread goes on as the child's only thread, under a new native id (without
        # `threading`, only the main thread has a name).
        try:
            threading = sys.modules.get("threading")
            name = threading.current_thread().name if threading else "MainThread"
            _report(get_native_id(), name)
        except Exception:
            pass

    try:
        os.register_at_fork(after_in_child=_after_fork_in_child)
    except (AttributeError, ValueError):
        pass

    # sitecustomize runs on the main thread, which `threading` will call MainThread.
    _report(get_native_id(), "MainThread")
    if "threading" in sys.modules:
        try:
            _cuscope_hook_threading(_report, get_native_id)
        except Exception:
            pass
    else:
        try:
            sys.meta_path.insert(0, _CuscopeThreadingFinder(
                lambda: _cuscope_hook_threading(_report, get_native_id)))
        except Exception:
            pass


class _CuscopeThreadingLoader(object):
    """The real loader of `threading`, then the hooks once the module has run."""

    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._then()
        except Exception:
            pass


class _CuscopeThreadingFinder(object):
    """A sys.meta_path entry that waits for the program's own `import threading` (any other name
    is declined at once) and leaves the path on it."""

    def __init__(self, then):
        self._then = then

    def find_spec(self, name, path=None, target=None):
        if name != "threading":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            spec.loader = _CuscopeThreadingLoader(spec.loader, self._then)
            return spec
        except Exception:
            return None


def _cuscope_hook_threading(_report, get_native_id):
    """Wraps Thread._bootstrap_inner and the name setter of an imported `threading`."""
    import threading

    try:
        for t in threading.enumerate():
            _report(getattr(t, "native_id", None), t.name)
    except Exception:
        pass

    try:
        thread_class = threading.Thread
        bootstrap_inner = thread_class._bootstrap_inner
        name_property = thread_class.name
    except AttributeError:
        return

    def _cuscope_bootstrap_inner(self):
        # Runs on the new thread before its target: its own native id is the one to name.
        try:
            _report(get_native_id(), self.name)
        except Exception:
            pass
        return bootstrap_inner(self)

    def _cuscope_set_name(self, name):
        name_property.fset(self, name)
        try:
            native_id = getattr(self, "_native_id", None)
            if native_id and self.is_alive():
                _report(native_id, self.name)
        except Exception:
            pass

    try:
        thread_class._bootstrap_inner = _cuscope_bootstrap_inner
        if isinstance(name_property, property) and name_property.fset is not None:
            thread_class.name = property(name_property.fget, _cuscope_set_name, name_property.fdel,
                                         name_property.__doc__)
    except Exception:
        return



def _cuscope_check_perf_support():
    """Says once (a collector notice) when perf trampolines were asked for but cannot run here."""
    try:
        if not os.environ.get("PYTHONPERFSUPPORT"):
            return
        active = getattr(sys, "is_stack_trampoline_active", None)
        if active is not None and active():
            return
        import ctypes

        notice = ctypes.CDLL(None).cuscope_python_notice
        notice.argtypes = (ctypes.c_char_p,)
        notice.restype = None
        version = "%d.%d" % sys.version_info[:2]
        if sys.version_info < (3, 12) or active is None:
            why = "Python %s has no perf trampolines (CPython 3.12 or later has)" % version
        else:
            why = "this Python %s (%s) runs without perf trampolines (not built with them, or " \
                  "not on this platform)" % (version, sys.executable)
        notice(("--python-perf: %s: stacks show interpreter frames, not Python functions"
                % why).encode("utf-8", "replace"))
    except Exception:
        pass


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
_cuscope_install_thread_names()
_cuscope_check_perf_support()
_cuscope_chain_sitecustomize()

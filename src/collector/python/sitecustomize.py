"""cuscope's Python hook, put first on PYTHONPATH by `cuscope` launch mode.

Reports garbage-collection pauses to the injected collector (shown as ranges on the thread lane)
and the `threading` name of each Python thread against its native thread id (lanes read
"MainThread" or "loader-0" rather than "python3"), turns on PyTorch's operator ranges under
--torch once the program imports torch, then runs the sitecustomize that would have run
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
            sys.meta_path.insert(0, _CuscopeImportFinder(
                "threading", lambda: _cuscope_hook_threading(_report, get_native_id)))
        except Exception:
            pass


class _CuscopeLoader(object):
    """The real loader of a module, then `then()` once the module has run (an import hook that
    never imports the module itself)."""

    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # The module keeps its own loader, as if the hook had never been there.
        try:
            module.__loader__ = self._loader
            module.__spec__.loader = self._loader
        except Exception:
            pass
        try:
            self._then()
        except Exception:
            pass


class _CuscopeImportFinder(object):
    """A sys.meta_path entry that waits for the program's own import of one module (any other
    name is declined at once) and leaves the path on it."""

    def __init__(self, name, then):
        self._name = name
        self._then = then

    def find_spec(self, name, path=None, target=None):
        if name != self._name:
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
            spec.loader = _CuscopeLoader(spec.loader, self._then)
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


def _cuscope_install_torch_hook():
    """--torch: PyTorch's operators as NVTX ranges, turned on when the program imports torch.

    torch is never imported here: an import hook waits for the program's own `import torch`,
    then, on the thread that imported it, does what torch.autograd.profiler.emit_nvtx() does on
    entry, less its torch.cuda.synchronize() (which would start CUDA at import time). torch then
    names each operator's range "aten::addmm, seq = 12, op_id = 345"; the collector keeps the
    operator's name (nvtxname.c).
    """
    try:
        import ctypes

        lib = ctypes.CDLL(None)
        wanted = lib.cuscope_python_torch  # exported by the preloaded collector
        wanted.argtypes = ()
        wanted.restype = ctypes.c_int
        if not wanted():
            return
        notice = lib.cuscope_python_notice
        notice.argtypes = (ctypes.c_char_p,)
        notice.restype = None
    except (ImportError, OSError, AttributeError):
        return

    def _say(text):
        try:
            notice(("--torch: " + text).encode("utf-8", "replace"))
        except Exception:
            pass

    def _then():
        _CuscopeTorchRanges(_say).start()

    if "torch" in sys.modules:
        try:
            _then()
        except Exception:
            pass
        return
    try:
        sys.meta_path.insert(0, _CuscopeImportFinder("torch", _then))
    except Exception:
        pass


class _CuscopeTorchRanges(object):
    """torch's NVTX profiler on one thread, stepping aside while the program runs its own.

    torch allows one profiler per thread: a torch.profiler, autograd profiler, emit_nvtx or
    emit_itt the program enters on our thread would fail with "Profiler is already enabled on
    this thread". So the functions they all enable and disable through are wrapped: on our
    thread, ours stops before theirs starts and starts again once theirs has stopped.
    """

    # Where torch keeps the profiler's enable and disable functions: the C module and the Python
    # modules that bound them when torch was imported (profiler_legacy binds them when imported).
    _MODULES = ("torch._C._autograd", "torch.autograd", "torch.autograd.profiler",
                "torch.autograd.profiler_legacy")
    _ENABLE = ("_enable_profiler", "_enable_profiler_legacy")
    _DISABLE = ("_disable_profiler", "_disable_profiler_legacy")

    def __init__(self, say):
        self._say = say
        self._ident = None  # the thread ours runs on
        self._aside = False  # stopped while the program's own profiler runs
        self._said_aside = False

    def start(self):
        import _thread

        self._get_ident = _thread.get_ident
        torch = sys.modules.get("torch")
        version = getattr(torch, "__version__", "?")
        try:
            prof = sys.modules["torch.autograd.profiler"]
            self._config = prof.ProfilerConfig(prof.ProfilerState.NVTX, False, False, False,
                                               False, False, prof._ExperimentalConfig())
            self._enable = prof._enable_profiler
            self._disable = prof._disable_profiler
            self._on_start = getattr(prof, "_run_on_profiler_start", None)
        except Exception as e:
            self._say("PyTorch %s has no NVTX profiler cuscope knows how to start (%s): no "
                      "operator ranges" % (version, _cuscope_first_line(e)))
            return
        try:
            self._turn_on()
        except Exception as e:
            self._say("PyTorch %s cannot emit operator ranges: %s" % (version,
                                                                       _cuscope_first_line(e)))
            return
        self._ident = self._get_ident()
        self._wrap()
        try:
            import atexit

            atexit.register(self._at_exit)
        except Exception:
            pass
        # The same words in every process (DataLoader workers, ranks), so a recording says it once.
        self._say("operator ranges are recorded on %s (which imported torch) and the autograd "
                  "threads its backward passes run on; operators other threads run are not"
                  % _cuscope_thread_words())

    def _turn_on(self):
        self._enable(self._config, set())
        # torch's "a profiler is on" flag (torch.compile adds its ranges then), once it is on.
        if self._on_start is not None:
            self._on_start()

    def _wrap(self):
        originals = {}
        for module_name in self._MODULES:
            module = sys.modules.get(module_name)
            if module is None:
                continue
            for name in self._ENABLE + self._DISABLE:
                fn = getattr(module, name, None)
                if fn is None:
                    continue
                # The same C function is bound under one name in every module: wrap it once.
                wrapper = originals.get(id(fn))
                if wrapper is None:
                    wrapper = (self._wrap_enable(fn) if name in self._ENABLE
                               else self._wrap_disable(fn))
                    originals[id(fn)] = wrapper
                try:
                    setattr(module, name, wrapper)
                except Exception:
                    pass

    def _wrap_enable(self, enable):
        ranges = self

        def _enable_profiler(*args, **kwargs):
            stepped = False
            if not ranges._aside and ranges._get_ident() == ranges._ident:
                try:
                    ranges._disable()
                    ranges._aside = stepped = True
                except Exception:
                    pass
                if stepped and not ranges._said_aside:
                    ranges._said_aside = True
                    ranges._say("the program started its own torch profiler: operator ranges "
                                "pause while it runs")
            try:
                return enable(*args, **kwargs)
            except BaseException:
                if stepped:
                    ranges._resume()
                raise

        return _cuscope_same_name(_enable_profiler, enable)

    def _wrap_disable(self, disable):
        ranges = self

        def _disable_profiler(*args, **kwargs):
            result = disable(*args, **kwargs)
            if ranges._aside and ranges._get_ident() == ranges._ident:
                ranges._resume()
            return result

        return _cuscope_same_name(_disable_profiler, disable)

    def _at_exit(self):
        """Turns ours off as the interpreter ends, as a `with emit_nvtx()` would have: a profiler
        still on when its thread's state is destroyed makes torch print "Leaked callback handle".
        Registered after torch's import, so the program's own atexit functions still run under
        the ranges. Only the thread that turned them on can turn them off (the main thread, where
        the program imported torch there)."""
        if self._aside or self._get_ident() != self._ident:
            return
        self._aside = True  # for good: nothing resumes it now
        try:
            self._disable()
        except Exception:
            pass

    def _resume(self):
        self._aside = False
        try:
            self._turn_on()
        except Exception as e:
            self._say("operator ranges could not start again after the program's profiler "
                      "stopped: %s" % _cuscope_first_line(e))


def _cuscope_same_name(wrapper, fn):
    """The wrapper answers to fn's name and doc (the program may print or inspect them)."""
    for attr in ("__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except Exception:
            pass
    wrapper.__wrapped__ = fn
    return wrapper


def _cuscope_first_line(e):
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:160]


def _cuscope_thread_words():
    """The calling thread for a notice: "the main thread" or "thread NAME (tid N)"."""
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            current = threading.current_thread()
            if current is threading.main_thread():
                return "the main thread"
            import _thread

            return "thread %s (tid %d)" % (current.name, _thread.get_native_id())
    except Exception:
        pass
    return "the thread"


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
_cuscope_install_torch_hook()
_cuscope_chain_sitecustomize()

"""The compiled call shim: the same results as ctypes, and ctypes wherever it cannot be built."""

import ctypes
import gc
import inspect
import shutil
import sysconfig
import threading
import types
import weakref

import pytest

from accelmath._core import hostcall

HAVE_COMPILER = shutil.which(hostcall._compiler()[0]) is not None
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER, reason="no C compiler on this machine")
LIBC = ctypes.CDLL(None)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """hostcall as in a new process, its cache in a temporary directory."""
    monkeypatch.setattr(hostcall, "_state", {})
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    monkeypatch.delenv("ACCELMATH_HOSTCALL", raising=False)
    return tmp_path


def _recorder(argtypes):
    """A C function pointer (a ctypes callback) that records its arguments and returns their
    count plus 100."""
    seen = []
    proto = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)

    def record(*args):
        seen.append(args)
        return 100 + len(args)

    func = proto(record)
    func.argtypes = argtypes  # what fast() reads, as on the bindings' prototypes
    return func, seen


@needs_compiler
@pytest.mark.parametrize("nargs", range(9))
def test_arguments_arrive_in_order(fresh, nargs):
    argtypes = [ctypes.c_longlong] * nargs
    func, seen = _recorder(argtypes)
    call = hostcall.fast(func)
    assert call is not func
    args = [(-1) ** i * (i + 1) * 1_000_003 for i in range(nargs)]
    if nargs:
        args[-1] = (1 << 62) + 5  # a value that needs all 64 bits
    assert call(*args) == 100 + nargs
    assert seen == [tuple(args)]
    assert hostcall.status().startswith("compiled: ")
    assert list(fresh.glob("hostcall/_hostcall-*"))


@needs_compiler
def test_libc_functions_match_ctypes(fresh):
    labs = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(("abs", LIBC))
    memcmp = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_size_t)(("memcmp", LIBC))
    fast_abs, fast_memcmp = hostcall.fast(labs), hostcall.fast(memcmp)
    for value in (-7, 0, 12, -(2 ** 31) + 1):
        assert fast_abs(value) == labs(value)
    a, b = ctypes.create_string_buffer(b"abcd"), ctypes.create_string_buffer(b"abce")
    pa, pb = ctypes.addressof(a), ctypes.addressof(b)
    for n in (0, 3, 4):
        assert (fast_memcmp(pa, pb, n) > 0) == (memcmp(pa, pb, n) > 0)
        assert (fast_memcmp(pa, pb, n) == 0) == (memcmp(pa, pb, n) == 0)


@needs_compiler
def test_bad_calls_raise(fresh):
    func, seen = _recorder([ctypes.c_int, ctypes.c_void_p])
    call = hostcall.fast(func)
    with pytest.raises(TypeError, match="2 positional arguments"):
        call(1)
    with pytest.raises(TypeError, match="2 positional arguments"):
        call(1, 2, x=3)
    with pytest.raises(TypeError):
        call(1.5, 2)
    assert call(3, None) == 102 and seen == [(3, None)]
    with pytest.raises(ValueError):
        type(call)(0, 1)
    with pytest.raises(ValueError):
        type(call)(1234, 9)


@needs_compiler
def test_built_once_then_loaded(fresh, monkeypatch):
    hostcall.fast(_recorder([ctypes.c_int])[0])
    built = list(fresh.glob("hostcall/_hostcall-*"))
    assert len(built) == 1
    monkeypatch.setattr(hostcall, "_state", {})
    monkeypatch.setenv("CC", "/nonexistent/cc")  # a second build would fail
    assert hostcall.fast(_recorder([ctypes.c_int])[0])(5) == 101
    assert hostcall.status() == f"compiled: {built[0]}"


@needs_compiler
def test_disk_cache_off_builds_in_a_temporary_directory(fresh, monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    func, _ = _recorder([ctypes.c_int])
    assert hostcall.fast(func)(4) == 101
    assert not list(fresh.iterdir())


def test_unsupported_signatures_stay_ctypes(fresh):
    double = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double)(lambda x: 0)
    double.argtypes = [ctypes.c_double]
    assert hostcall.fast(double) is double
    void = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda x: None)
    void.argtypes = [ctypes.c_int]
    assert hostcall.fast(void) is void
    many, _ = _recorder([ctypes.c_int] * 9)
    assert hostcall.fast(many) is many


def test_switched_off_uses_ctypes(fresh, monkeypatch):
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "off")
    func, _ = _recorder([ctypes.c_int])
    assert hostcall.fast(func) is func
    assert hostcall.status() == "ctypes (ACCELMATH_HOSTCALL is off)"


def test_no_compiler_uses_ctypes(fresh, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    func, _ = _recorder([ctypes.c_int])
    assert hostcall.fast(func) is func
    assert hostcall.status().startswith("ctypes (no C compiler")


def test_missing_configured_compiler_falls_back_to_cc(fresh, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    get = sysconfig.get_config_var
    monkeypatch.setattr(hostcall.sysconfig, "get_config_var",
                        lambda name: "/nonexistent/gcc -pthread" if name == "CC" else get(name))
    assert hostcall._compiler() == ["cc"]


def test_failed_build_uses_ctypes(fresh, monkeypatch):
    monkeypatch.setenv("CC", "false")  # a compiler that always fails
    func, _ = _recorder([ctypes.c_int])
    assert hostcall.fast(func) is func
    assert hostcall.status().startswith("ctypes (compiling the call shim failed")


class _Array:
    """An array of the launcher's tests: its pointer, and whether it fits the plan."""

    def __init__(self, ptr, fits=True):
        self.ptr, self.fits = ptr, fits


def _read(a):
    return a.ptr if a.fits else None


class _Launch:
    """A launcher over a recording C function, and a record of what reached the slow path."""

    def __init__(self, nargs=4, status=0):
        proto = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_longlong] * nargs)
        self.calls, self.slow_calls, self.failed = [], [], []

        def record(*args):
            self.calls.append(args)
            return status

        self.func = proto(record)
        self.func.argtypes = [ctypes.c_longlong] * nargs
        self.stream = 7
        self.local = threading.local()
        self.local.state = types.SimpleNamespace(stream=7, handles=[41, 42])
        self.runs = {None: (None, hostcall.fast(self.func), self.fail,
                            -1 if nargs == 4 else None)}
        self.readers = {_Array: _read}
        self.launch = hostcall.launcher(self.slow, self.runs, _Array, _read, self.readers,
                                        lambda: self.stream, self.local, 0xF)

    def slow(self, x=None, *, out=None, direction=None, stream=None):
        """The execute in Python."""
        self.slow_calls.append((x, out, direction, stream))
        return "slow"

    def fail(self, status):
        self.failed.append(status)
        raise RuntimeError(f"status {status}")


@needs_compiler
@pytest.mark.parametrize("nargs", [3, 4])
def test_launcher_calls_c_when_every_check_holds(fresh, nargs):
    launch = _Launch(nargs)
    assert launch.launch is not launch.slow
    x, out = _Array(0x1000), _Array(0x2000)
    assert launch.launch(x, out=out) is out
    assert launch.calls == [(41, 0x1000, 0x2000, -1)[:nargs]] and not launch.slow_calls


@needs_compiler
def test_launcher_passes_the_rest_on(fresh):
    launch = _Launch()
    x, out = _Array(0x1000), _Array(0x2000)
    other = [
        lambda: launch.launch(_Array(0x1000, fits=False), out=out),  # x does not fit
        lambda: launch.launch(x, out=_Array(0x2000, fits=False)),  # out does not fit
        lambda: launch.launch(x, out=_Array(0x2008)),  # misaligned
        lambda: launch.launch(x, out=bytearray(4)),  # out of a type not read yet
        lambda: launch.launch(object(), out=out),  # x of another type
        lambda: launch.launch(x),  # no out
        lambda: launch.launch(x, out=out, direction="inverse"),
        lambda: launch.launch(x=x, out=out),
    ]
    for call in other:
        assert call() == "slow"
    launch.stream = 8  # the handles are on another stream
    assert launch.launch(x, out=out) == "slow"
    launch.stream = 7
    del launch.local.state  # a thread that has not run the plan
    assert launch.launch(x, out=out) == "slow"
    launch.local.state = types.SimpleNamespace(stream=7, handles=[41])
    launch.runs.clear()  # a freed plan
    assert launch.launch(x, out=out) == "slow"
    assert not launch.calls
    assert len(launch.slow_calls) == len(other) + 3
    assert launch.slow_calls[6] == (x, out, "inverse", None)
    assert launch.slow_calls[7] == (x, out, None, None)


@needs_compiler
def test_launcher_raises_what_fail_and_readers_raise(fresh):
    launch = _Launch(status=5)
    x, out = _Array(0x1000), _Array(0x2000)
    with pytest.raises(RuntimeError, match="status 5"):
        launch.launch(x, out=out)
    assert launch.failed == [5] and len(launch.calls) == 1

    def broken(a):
        raise KeyError("reader")

    launch.readers[_Array] = broken
    with pytest.raises(KeyError, match="reader"):
        launch.launch(x, out=out)
    assert not launch.slow_calls


@needs_compiler
def test_launcher_shows_the_slow_execute(fresh):
    launch = _Launch()
    assert launch.launch.__wrapped__ == launch.slow
    assert launch.launch.__doc__ == launch.slow.__doc__
    assert list(inspect.signature(launch.launch).parameters) == ["x", "out", "direction",
                                                                 "stream"]
    slow = weakref.ref(launch)
    del launch
    gc.collect()
    assert slow() is None  # the launcher holds it in a cycle that the collector breaks


def test_launcher_without_the_shim_is_the_slow_execute(fresh, monkeypatch):
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    launch = _Launch()
    assert launch.launch == launch.slow

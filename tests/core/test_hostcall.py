"""The compiled call shim: the same results as ctypes, and ctypes wherever it cannot be built."""

import ctypes
import shutil
import sysconfig

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

"""The call shim built at install time: the same results as ctypes, and ctypes where it is
missing or switched off."""

import ctypes
import gc
import importlib
import importlib.metadata
import inspect
import shlex
import shutil
import sys
import sysconfig
import threading
import time
import types
import weakref
from pathlib import Path

import pytest

from accelmath._core import hostcall
from accelmath._core.hostcall import BoundCall

LIBC = ctypes.CDLL(None)
NOT_BUILT = ("ctypes (the call shim was not built when accelmath was installed, likely no C "
             "compiler then; reinstall with a compiler for ~0.5 us less per call)")


def _have_compiler():
    configured = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return any(shutil.which(name) for name in (configured[0], "cc", "gcc"))


try:
    from accelmath._core import _hostcall
except ImportError:
    _hostcall = None
needs_shim = pytest.mark.skipif(_hostcall is None, reason="the call shim is not built here")


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """hostcall as in a new process, switched on."""
    monkeypatch.setattr(hostcall, "_imported", {})
    monkeypatch.delenv("ACCELMATH_HOSTCALL", raising=False)


@pytest.mark.skipif(not _have_compiler(), reason="no C compiler here, so none at install")
def test_the_shim_was_built_at_install():
    built = sorted(Path(hostcall.__file__).parent.glob("_hostcall.*"))
    built = [path for path in built if path.suffix in (".so", ".pyd")]
    if not built:
        # accelmath imported from a source tree beside a regular install (the tests of a
        # clone): the tree has no build, so ctypes runs, and the install holds the shim
        # (the tree's own egg-info, where an install left one, lists no built files)
        files = [f for found in importlib.metadata.distributions(name="accelmath")
                 for f in found.files or ()]
        assert any(f.name.startswith("_hostcall.") and f.suffix in (".so", ".pyd")
                   for f in files), "the installed accelmath has no call shim"
        assert hostcall.status().startswith("ctypes (the call shim was not built")
        return
    module = importlib.import_module("accelmath._core._hostcall")
    # next to the package's modules, not in a cache directory
    assert Path(module.__file__) == built[0]
    assert hostcall.status() == f"C call shim (built at install: {module.__file__})"
    assert module.MAX_ARGS == 16


@needs_shim
def test_no_compiler_is_needed_at_run_time(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CC", "/bin/false")
    func, _ = _recorder(1)
    assert type(hostcall.fast(func)) is _hostcall.Function
    assert hostcall.status().startswith("C call shim (built at install: ")


def _recorder(nargs, argtype=ctypes.c_longlong, status=None):
    """A C function (a ctypes callback) of ``nargs`` arguments that records them and returns
    ``status``, or one computed from them, and the list it records into."""
    seen = []

    def record(*args):
        seen.append(args)
        if status is not None:
            return status
        return sum((i + 1) * (a or 0) for i, a in enumerate(args)) % 1999 - 999

    func = ctypes.CFUNCTYPE(ctypes.c_int, *[argtype] * nargs)(record)
    func.argtypes = [argtype] * nargs  # what fast() reads, as on the bindings' prototypes
    return func, seen


@needs_shim
@pytest.mark.parametrize("nargs", range(17))
def test_function_matches_ctypes(nargs):
    func, seen = _recorder(nargs)
    call = hostcall.fast(func)
    assert type(call) is _hostcall.Function and call.nargs == nargs
    assert call.address == ctypes.cast(func, ctypes.c_void_p).value
    args = [(-1) ** i * (i + 1) * 1_000_003 for i in range(nargs)]
    if nargs:
        args[-1] = (1 << 62) + 5  # a value that needs all 64 bits, on the stack past six
    expected = func(*args)
    assert call(*args) == expected
    assert seen == [tuple(args)] * 2


@needs_shim
def test_none_is_null_and_ints_wrap_modulo_2_64():
    func, seen = _recorder(3, ctypes.c_void_p)
    call = hostcall.fast(func)
    assert call(None, 0x1000, 2 ** 64 + 0x2000) == func(None, 0x1000, 0x2000)
    assert seen[0] == seen[1] == (None, 0x1000, 0x2000)
    func, seen = _recorder(2, ctypes.c_ulonglong)
    call = hostcall.fast(func)
    call(-1, 2 ** 64 + 5)
    assert seen == [(2 ** 64 - 1, 5)]


@needs_shim
def test_libc_functions_match_ctypes():
    labs = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(("abs", LIBC))
    labs.argtypes = [ctypes.c_int]
    memcmp = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_size_t)(("memcmp", LIBC))
    memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    getpid = ctypes.CFUNCTYPE(ctypes.c_int)(("getpid", LIBC))
    getpid.argtypes = []
    fast_abs, fast_memcmp, fast_getpid = map(hostcall.fast, (labs, memcmp, getpid))
    assert all(type(f) is _hostcall.Function for f in (fast_abs, fast_memcmp, fast_getpid))
    for value in (-7, 0, 12, -(2 ** 31) + 1):
        assert fast_abs(value) == labs(value)
    a, b = ctypes.create_string_buffer(b"abcd"), ctypes.create_string_buffer(b"abce")
    pa, pb = ctypes.addressof(a), ctypes.addressof(b)
    for n in (0, 3, 4):
        assert (fast_memcmp(pa, pb, n) > 0) == (memcmp(pa, pb, n) > 0)
        assert (fast_memcmp(pa, pb, n) == 0) == (memcmp(pa, pb, n) == 0)
    assert fast_getpid() == getpid()


@needs_shim
def test_function_releases_the_gil():
    usleep = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint)(("usleep", LIBC))
    usleep.argtypes = [ctypes.c_uint]
    sleep = hostcall.fast(usleep)
    assert type(sleep) is _hostcall.Function
    longest, stop = [0.0], threading.Event()

    def tick():
        last = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            longest[0], last = max(longest[0], now - last), now

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.05)
        start = time.monotonic()
        assert sleep(500_000) == 0
        slept = time.monotonic() - start
    finally:
        stop.set()
        ticker.join()
    # the call slept; held through it, the GIL would have stopped the ticker that long
    assert slept >= 0.45 and longest[0] < 0.25


@needs_shim
def test_bad_calls_raise():
    func, seen = _recorder(2)
    call = hostcall.fast(func)
    with pytest.raises(TypeError, match="takes 2 positional arguments, got 1 positional"):
        call(1)
    with pytest.raises(TypeError, match="takes 2 positional arguments, got 3 positional"):
        call(1, 2, 3)
    with pytest.raises(TypeError, match="got 2 positional and 1 keyword"):
        call(1, 2, x=3)
    with pytest.raises(TypeError):
        call(1.5, 2)
    assert not seen
    with pytest.raises(ValueError, match="address 0 is NULL"):
        _hostcall.Function(0, 1)
    for nargs in (-1, 17):
        with pytest.raises(ValueError, match=f"nargs={nargs}, should be 0 to 16"):
            _hostcall.Function(call.address, nargs)


def test_unsupported_signatures_stay_ctypes():
    double = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double)(lambda x: 0)
    double.argtypes = [ctypes.c_double]
    void = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda x: None)
    void.argtypes = [ctypes.c_int]
    struct = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))(lambda x: 0)
    struct.argtypes = [ctypes.POINTER(ctypes.c_int)]  # declare it c_void_p to pass addresses
    checked, _ = _recorder(1)
    checked.errcheck = lambda result, func, args: result
    undeclared = ctypes.CDLL(None).abs  # no argtypes
    for func in (double, void, struct, checked, undeclared, _recorder(17)[0]):
        assert hostcall.fast(func) is func


@pytest.mark.parametrize("value", ["0", "off"])
def test_switched_off_is_ctypes_with_the_same_results(monkeypatch, value):
    monkeypatch.setenv("ACCELMATH_HOSTCALL", value)
    func, seen = _recorder(16)
    assert hostcall.fast(func) is func
    plan = _Plan()
    assert plan.launch == plan.slow
    assert plan.launch(plan.x, out=plan.out) == "slow"
    assert hostcall.status() == f"ctypes (ACCELMATH_HOSTCALL={value})"
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "1")  # read at each plan
    assert (type(hostcall.fast(func)) is not type(func)) == (_hostcall is not None)


def test_not_built_is_ctypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "accelmath._core._hostcall", None)  # import fails
    func, _ = _recorder(3)
    assert hostcall.fast(func) is func
    plan = _Plan()
    assert plan.launch == plan.slow
    assert hostcall.status() == NOT_BUILT


def test_unloadable_is_ctypes(monkeypatch):
    def damaged(name):
        raise ImportError(f"{name}: undefined symbol: PyFoo")

    monkeypatch.setattr(hostcall.importlib, "import_module", damaged)
    func, _ = _recorder(3)
    assert hostcall.fast(func) is func
    assert hostcall.status() == (
        "ctypes (the call shim cannot be loaded: accelmath._core._hostcall: undefined symbol: "
        "PyFoo; reinstall accelmath to rebuild it)")


class _Array:
    """An array of the launcher's tests: its pointer, and whether it fits the plan."""

    def __init__(self, ptr, fits=True):
        self.ptr, self.fits = ptr, fits


def _read(a):
    return a.ptr if a.fits else None


def _pointer(a):
    return a.ptr


class _Plan:
    """A launcher over a recording C function, and a record of what reached the slow path."""

    SLOTS = ("handle", "in", "out", "stream", "workspace", 7, -1)

    def __init__(self, slots=SLOTS, status=0):
        self.func, self.calls_made = _recorder(len(slots), status=status)
        self.slow_calls, self.failed = [], []
        self.stream = 7
        self.local = threading.local()
        self.local.state = types.SimpleNamespace(stream=7, handles=[41, 42], workspace=0x9000)
        self.calls = {None: BoundCall(hostcall.fast(self.func), self.fail, slots)}
        self.readers = {_Array: _read}
        self.x, self.out = _Array(0x1000), _Array(0x2000)
        self.launch = hostcall.launcher(self.slow, self.calls, ((_Array, _read, None),),
                                        self.readers, None, lambda: self.stream, self.local, 0xF)

    def slow(self, x=None, *, out=None, direction=None, stream=None):
        """The execute in Python."""
        self.slow_calls.append((x, out, direction, stream))
        return "slow"

    def fail(self, status):
        self.failed.append(status)
        raise RuntimeError(f"status {status}")


@needs_shim
def test_launcher_fills_the_slots():
    plan = _Plan()
    assert type(plan.launch) is _hostcall.Launch
    assert plan.launch(plan.x, out=plan.out) is plan.out
    assert plan.calls_made == [(41, 0x1000, 0x2000, 7, 0x9000, 7, -1)]
    assert not plan.slow_calls and not plan.failed


@needs_shim
@pytest.mark.parametrize("nargs", [0, 1, 16])
def test_launcher_calls_of_any_length(nargs):
    names = ["in", "out", "handle", "stream", "workspace"]
    slots = tuple(names[i] if i < 5 else 1000 + i for i in range(nargs))
    plan = _Plan(slots)
    values = {"in": 0x1000, "out": 0x2000, "handle": 41, "stream": 7, "workspace": 0x9000}
    assert plan.launch(plan.x, out=plan.out) is plan.out
    assert plan.calls_made == [tuple(values.get(s, s) for s in slots)]


@needs_shim
def test_launcher_follows_changes_of_its_inputs():
    plan = _Plan(("handle", "stream", "workspace"))
    plan.stream = plan.local.state.stream = 2 ** 64 - 1  # an int taken modulo 2**64
    plan.local.state.handles[0] = 43
    plan.local.state.workspace = None  # none needed: NULL
    plan.launch(plan.x, out=plan.out)
    func, seen = _recorder(2, status=0)
    plan.calls[None] = BoundCall(hostcall.fast(func), plan.fail, ("out", 3))
    plan.launch(plan.x, out=plan.out)
    assert plan.calls_made == [(43, -1, 0)] and seen == [(0x2000, 3)]


@needs_shim
def test_launcher_passes_the_rest_on_unchanged():
    plan = _Plan()
    launch, x, out = plan.launch, plan.x, plan.out
    other = [
        ((_Array(0x1000, fits=False),), {"out": out}),  # read(x) gives None
        ((x,), {"out": _Array(0x2000, fits=False)}),  # the reader gives None
        ((_Array(0x1004),), {"out": out}),  # a bit of the mask in x's pointer
        ((x,), {"out": _Array(0x2008)}),  # ... in out's
        ((x,), {"out": bytearray(4)}),  # out of a type with no reader
        ((x,), {"out": None}),
        ((object(),), {"out": out}),  # x of another type
        ((_Subarray(0x1000),), {"out": out}),  # a subclass is another type too
        ((x,), {}),
        ((), {}),
        ((x,), {"out": out, "direction": "inverse"}),
        ((x,), {"stream": 3}),
        ((), {"x": x, "out": out}),
    ]
    for args, kwargs in other:
        assert launch(*args, **kwargs) == "slow"
    assert len(plan.slow_calls) == len(other)
    for (args, kwargs), seen in zip(other, plan.slow_calls):
        full = {"x": None, "out": None, "direction": None, "stream": None,
                **dict(zip(["x", "out"], args)), **kwargs}
        assert seen == tuple(full.values())
    assert not plan.calls_made


class _Subarray(_Array):
    pass


@needs_shim
def test_launcher_state_checks_go_to_slow():
    plan = _Plan()
    call = lambda: plan.launch(plan.x, out=plan.out)  # noqa: E731
    plan.stream = 8  # the handles are set to another stream
    assert call() == "slow"
    plan.stream = 7
    in_thread = []
    thread = threading.Thread(target=lambda: in_thread.append(call()))
    thread.start()
    thread.join()
    assert in_thread == ["slow"]  # a thread that has no state yet
    del plan.local.state
    assert call() == "slow"
    plan.local.state = types.SimpleNamespace(stream=7, handles=[41], workspace=0)
    plan.calls[None] = BoundCall(plan.func, plan.fail, _Plan.SLOTS)  # a ctypes function
    assert call() == "slow"
    plan.calls[None] = [hostcall.fast(plan.func), plan.fail, _Plan.SLOTS]  # not a tuple
    assert call() == "slow"
    plan.calls.clear()  # a freed plan
    assert call() == "slow"
    assert not plan.calls_made and len(plan.slow_calls) == 6
    plan.calls[None] = BoundCall(hostcall.fast(plan.func), plan.fail, _Plan.SLOTS)
    assert call() is plan.out and len(plan.calls_made) == 1


@needs_shim
def test_a_nonzero_status_goes_to_fail():
    plan = _Plan(status=5)
    with pytest.raises(RuntimeError, match="status 5"):
        plan.launch(plan.x, out=plan.out)
    assert plan.failed == [5] and len(plan.calls_made) == 1 and not plan.slow_calls


@needs_shim
def test_launcher_raises_what_its_callables_raise():
    plan = _Plan()

    def broken(a):
        raise KeyError("reader")

    plan.readers[_Array] = broken
    with pytest.raises(KeyError, match="reader"):
        plan.launch(plan.x, out=plan.out)
    plan.readers[_Array] = _read
    del plan.local.state.workspace
    with pytest.raises(AttributeError, match="workspace"):
        plan.launch(plan.x, out=plan.out)
    assert not plan.slow_calls and not plan.calls_made


@needs_shim
@pytest.mark.parametrize("slots, message", [
    (("in", "out"), r"slots \('in', 'out'\), should be a tuple of 7 entries"),
    (["in"] * 7, r"slots \['in', .*should be a tuple of 7 entries"),
    (("in", "out", "handle", "stream", "workspace", "inp", 0), r"slot 5 is 'inp', should be"),
    (("in", "out", "handle", "stream", "workspace", "in4", 0), r"slot 5 is 'in4', should be"),
    (("in", "out", "handle", "stream", "workspace", 1.0, 0), r"slot 5 is 1.0, should be"),
])
def test_wrong_slots_raise(slots, message):
    plan = _Plan()
    plan.calls[None] = BoundCall(hostcall.fast(plan.func), plan.fail, slots)
    with pytest.raises(TypeError, match=message):
        plan.launch(plan.x, out=plan.out)
    assert not plan.calls_made


@needs_shim
def test_launcher_shows_the_slow_execute_and_is_collected():
    plan = _Plan()
    assert plan.launch.__wrapped__ == plan.slow
    assert plan.launch.__doc__ == plan.slow.__doc__ == "The execute in Python."
    assert list(inspect.signature(plan.launch).parameters) == ["x", "out", "direction",
                                                               "stream"]
    assert plan.calls in gc.get_referents(plan.launch)
    alive = weakref.ref(plan)
    del plan
    gc.collect()
    assert alive() is None  # the launcher holds it in a cycle that the collector breaks


class _Product:
    """A launcher of two operands bound to the plan, a result it allocates, and a recording
    C function: a matrix product's execute."""

    SLOTS = ("handle", "handle1", "in1", "in0", "out", "stream", "workspace")

    def __init__(self):
        self.func, self.calls_made = _recorder(len(self.SLOTS), status=0)
        self.slow_calls, self.made = [], []
        self.local = threading.local()
        self.local.state = types.SimpleNamespace(stream=7, handles=(41, 42), workspace=0x9000)
        self.calls = {None: BoundCall(hostcall.fast(self.func), None, self.SLOTS)}
        self.a, self.b = _Array(0x1000), _Array(0x2000)
        inputs = ((_Array, _read, self.a), (_Array, _read, self.b))
        self.launch = hostcall.launcher(self.slow, self.calls, inputs, {_Array: _read},
                                        (self.make, _pointer), lambda: 7, self.local, 0xF)

    def make(self):
        out = _Array(0x3000 + 0x100 * len(self.made))
        self.made.append(out)
        return out

    def slow(self, a=None, b=None, c=None, *, out=None, stream=None):
        self.slow_calls.append((a, b, c, out, stream))
        return "slow"


@needs_shim
def test_launcher_of_bound_operands_and_allocated_results():
    plan = _Product()
    result = plan.launch()  # both operands bound, the result allocated
    assert result is plan.made[0]
    other = _Array(0x5000)
    assert plan.launch(other) is plan.made[1]  # a given; b bound
    assert plan.launch(None, other) is plan.made[2]  # None: the bound a
    out = _Array(0x6000)
    assert plan.launch(other, other, out=out) is out
    assert plan.launch(out=None) is plan.made[3]  # out=None: allocated
    assert plan.calls_made == [
        (41, 42, 0x2000, 0x1000, 0x3000, 7, 0x9000),
        (41, 42, 0x2000, 0x5000, 0x3100, 7, 0x9000),
        (41, 42, 0x5000, 0x1000, 0x3200, 7, 0x9000),
        (41, 42, 0x5000, 0x5000, 0x6000, 7, 0x9000),
        (41, 42, 0x2000, 0x1000, 0x3300, 7, 0x9000)]
    assert not plan.slow_calls


@needs_shim
def test_launcher_of_two_operands_passes_the_rest_on():
    plan = _Product()
    a = plan.a
    other = [
        ((a, a, a), {}),  # more operands than inputs
        ((_Array(0x1000, fits=False),), {}),  # read gives None
        ((None, _Array(0x2004)), {}),  # a bit of the mask in b's pointer
        ((object(),), {}),
        ((), {"stream": 3}),
        ((), {"b": a}),  # a keyword other than out
    ]
    for args, kwargs in other:
        assert plan.launch(*args, **kwargs) == "slow"
    assert len(plan.slow_calls) == len(other)
    assert not plan.calls_made and not plan.made
    with pytest.raises(TypeError, match=r"allocate is .*, should be None or a tuple"):
        hostcall.launcher(plan.slow, plan.calls, ((_Array, _read, a),), {},
                          lambda: (_Array(0x3008), 0x3008), lambda: 7, plan.local, 0xF)
    plan.launch = hostcall.launcher(plan.slow, plan.calls, ((_Array, _read, a),), {},
                                    (lambda: _Array(0x3008), str), lambda: 7, plan.local, 0xF)
    with pytest.raises(TypeError):  # a pointer that is no int
        plan.launch()
    plan.launch = hostcall.launcher(plan.slow, plan.calls, ((_Array, _read, a),), {},
                                    (lambda: _Array(0x3008), _pointer), lambda: 7, plan.local,
                                    0xF)
    assert plan.launch() == "slow"  # an allocated result of a misaligned address


@needs_shim
def test_launcher_inputs_are_checked():
    plan = _Product()
    with pytest.raises(ValueError, match="5 inputs, at most 4"):
        hostcall.launcher(plan.slow, {}, ((_Array, _read, None),) * 5, {}, None, int,
                          plan.local, 0)
    with pytest.raises(TypeError, match="input 0 is .*should be a tuple"):
        hostcall.launcher(plan.slow, {}, (_Array,), {}, None, int, plan.local, 0)


def test_a_shim_built_from_older_code_is_not_used(monkeypatch):
    old = types.SimpleNamespace(__file__="/old/_hostcall.so", INTERFACE=1)
    monkeypatch.setattr(hostcall.importlib, "import_module", lambda name: old)
    monkeypatch.setattr(hostcall, "_imported", {})
    assert hostcall._extension() is None
    assert "built from older code" in hostcall.status() and "/old/" in hostcall.status()
    read = hostcall.reader([(slice.stop, 8)], pointer=lambda s: 0x1000 + s.stop)
    assert type(read).__name__ == "function" and read(slice(0, 8)) == 0x1008


@needs_shim
def test_a_front_refuses_a_malformed_table_entry_and_bad_construction():
    """The table is the dispatcher's, but a wrong entry raises rather than crashing: a clock
    that is no iterator, a recency list too short, or one its run emptied."""
    import itertools
    import weakref

    import numpy as np

    miss = object()

    def function(x):
        return ("function", x)

    def learn(key, *args, **kwargs):
        return function(*args, **kwargs)

    x = np.ones(2)
    entry = [None, 0]

    def emptying(x):
        entry.clear()
        return "run"

    for bad in ((lambda x: 1, [None, 0], [1, 2]), (lambda x: 1, [None, 0], None),
                (lambda x: 1, [None], itertools.count()), (lambda x: 1, [None, 0]),
                (emptying, entry, itertools.count())):
        table = {}
        front = _hostcall.Front(function, learn, table, {np.ndarray}, 1, (), miss, "m")
        table[(front, np.ndarray, x.shape, x.dtype, None)] = bad
        with pytest.raises((TypeError, IndexError)):
            front(x)
    for arrays in (0, -1, 16):
        with pytest.raises(ValueError):
            _hostcall.Front(function, learn, {}, set(), arrays, (), miss, "m")
    with pytest.raises(TypeError):
        _hostcall.Front(function, learn, {}, set(), 1, ("n", 2), miss, "m")
    with pytest.raises(TypeError):
        _hostcall.Front(function, learn, [], set(), 1, (), miss, "m")
    front = _hostcall.Front(function, learn, {}, set(), 1, (), miss, "m")
    assert weakref.ref(front)() is front and front(x)[0] == "function"

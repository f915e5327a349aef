"""The call shim's fronts of fused calls and its Chain, on the CPU: a front keys a fused
function by its code and what it reads (by identity) and passes operand tuples on to its run;
a Chain reads the operands, runs its first launcher, writes the kernel's parameter words and
launches it (here through stand-ins of cuLaunchKernel and cuCtxGetCurrent made by ctypes)."""

import ctypes
import itertools

import numpy as np
import pytest

_hostcall = pytest.importorskip("accelmath._core._hostcall")

MISS = object()
SCALE = 2.0


def _front(table, codes):
    calls = []

    def function(x, *, epilogue=None, epilogue_args=()):
        calls.append("function")
        return "function"

    def learn(key, *args, **kwargs):
        calls.append(key)
        return function(*args, **kwargs)

    front = _hostcall.Front(function, learn, table, {np.ndarray}, 1, (), MISS, "m",
                            ("epilogue",), codes, ("epilogue_args",))
    return front, calls


def scaled(y, k):
    return y * k * SCALE


def test_a_fused_function_is_keyed_by_its_code_and_what_it_reads():
    global SCALE
    table, codes = {}, {}
    front, calls = _front(table, codes)
    x, k = np.ones(3), np.ones(3)
    assert front(x, epilogue=scaled, epilogue_args=(k,)) == "function"
    assert calls == ["function"]  # (its code not known to the front: no key)
    codes[scaled.__code__] = ("SCALE",)
    calls.clear()
    front(x, epilogue=scaled, epilogue_args=(k, 2.0))
    key = calls[0]
    code, (kind, *bits) = key[4]  # (a float read by its bits: -0.0 is not 0.0)
    assert (code, kind, bits) == (scaled.__code__, float, [np.float64(SCALE).view(np.uint64), 0])
    assert key[5] == ((np.ndarray, (3,), np.dtype("float64")), float)
    ran = []
    table[key] = (lambda *a: ran.append(a) or "run", [None, 0], itertools.count())
    assert front(x, epilogue=scaled, epilogue_args=(k, 3.0)) == "run"
    assert ran[0][0] is x and ran[0][1] == (k, 3.0)  # (the operand tuple passed on)
    # another value read: another key; the same value made anew: the same key
    old = SCALE
    try:
        for value, same in ((3.0, False), (-0.0, False), (float("2.0"), True)):
            SCALE = value
            calls.clear()
            assert front(x, epilogue=scaled, epilogue_args=(k, 3.0)) == ("run" if same
                                                                        else "function")
            assert same or calls[0] != key
    finally:
        SCALE = old
    # an equal function of the same code finds the same entry; another code has no key
    same = type(scaled)(scaled.__code__, scaled.__globals__)
    assert front(x, epilogue=same, epilogue_args=(k, 3.0)) == "run"
    calls.clear()
    assert front(x, epilogue=lambda y, k: y, epilogue_args=(k, 3.0)) == "function"
    assert calls == ["function"]


def test_numbers_and_tuples_read_are_keyed_by_value_anything_else_by_identity():
    global SCALE
    codes = {scaled.__code__: ("SCALE",)}
    front, calls = _front({}, codes)
    x, k = np.ones(2), np.ones(2)
    old = SCALE
    keys = []
    try:
        for value in ((1, 2.0), (1, 2.0), (1, 2), 2, True, 1, np.float64(2.0),
                      np.float64(2.0)):
            SCALE = value
            calls.clear()
            front(x, epilogue=scaled, epilogue_args=(k,))
            keys.append(calls[0])
    finally:
        SCALE = old
    assert keys[0] == keys[1]  # (an equal tuple made anew)
    assert len({keys[i] for i in (0, 2, 3, 4, 5, 6, 7)}) == 7  # (True is not 1; 2 not 2.0;
    # a NumPy scalar by identity: its bytes do not say its unit, a timedelta64's)


def test_the_values_a_key_holds_read_back_as_the_trace_read_them():
    from accelmath._core.dispatch import MISS as DISPATCH_MISS
    from accelmath.fft._fusion.call import _reads_as_traced
    from accelmath.fusion._elementwise import function_key

    global SCALE
    codes = {scaled.__code__: ("SCALE",)}
    calls = []

    def learn(key, *args, **kwargs):
        calls.append(key)
        return "learn"

    front = _hostcall.Front(lambda x, **kw: None, learn, {}, {np.ndarray}, 1, (),
                            DISPATCH_MISS, "m", ("epilogue",), codes, ("epilogue_args",))
    old = SCALE
    try:
        for value in (2.0, -0.0, 3, "a", (1, (2.5, 1j)), None, np.float32(2), 1 + 2j):
            SCALE = value
            calls.clear()
            front(np.ones(2), epilogue=scaled, epilogue_args=())
            key = calls[0]
            assert _reads_as_traced(key, function_key(scaled))
            SCALE = 7.0  # (changed after the key was made: the trace would read another)
            assert not _reads_as_traced(key, function_key(scaled))
        del globals()["SCALE"]  # (absent: the front's sentinel read back as absent)
        calls.clear()
        front(np.ones(2), epilogue=scaled, epilogue_args=())
        assert _reads_as_traced(calls[0], function_key(scaled))
    finally:
        SCALE = old


def test_more_values_than_a_chain_takes_are_not_keyed():
    codes = {scaled.__code__: ("SCALE",)}
    front, calls = _front({}, codes)
    front(np.ones(2), epilogue=scaled, epilogue_args=(1.0,) * 16)
    assert calls == ["function"]


def test_what_a_fused_function_reads_decides_whether_it_is_keyed():
    codes = {}
    front, calls = _front({}, codes)
    x = np.ones(2)

    def closure(v):
        return lambda y: y * v

    def with_default(y, k=2):
        return y * k

    for fn, keyed in ((closure(2), True), (with_default, False), (print, False)):
        if hasattr(fn, "__code__"):
            codes[fn.__code__] = ()
        calls.clear()
        front(x, epilogue=fn)
        assert (calls[0] != "function") is keyed
    unhashable = closure([1])  # (a value read that is not hashable: no key, no error)
    codes[unhashable.__code__] = ()
    calls.clear()
    front(x, epilogue=unhashable)
    assert calls == ["function"]
    empty = closure(1)
    empty.__closure__[0].cell_contents = 1
    del empty.__closure__[0].cell_contents  # (an empty cell: no key)
    calls.clear()
    front(x, epilogue=empty)
    assert calls == ["function"]


@pytest.mark.parametrize("args, keyed", [
    ((), True), ((1, 2.0, 3j), True), (None, True), ([np.ones(2)], False),
    ((True,), False), ((np.float64(1.0),), False), (("a",), False), ((np.ones(2), [1]), False)])
def test_operand_tuples(args, keyed):
    front, calls = _front({}, {scaled.__code__: ("SCALE",)})
    front(np.ones(2), epilogue=scaled, epilogue_args=args)
    assert (calls[0] != "function") is keyed
    calls.clear()  # (without a function, an operand tuple is not keyed)
    front(np.ones(2), epilogue_args=args)
    assert calls[0] == "function" or args is None


def test_other_keywords_are_not_keyed():
    front, calls = _front({}, {})
    with pytest.raises(TypeError):
        front(np.ones(2), other=1)  # (the function's own error)
    assert calls == []


class _Name(str):
    """A keyword's name that a dict holds many times (each of another hash)."""

    count = 0

    def __hash__(self):
        _Name.count += 1
        return _Name.count

    def __eq__(self, other):
        return self is other


@pytest.mark.parametrize("repeats", [2, 20, 2000])
def test_repeated_keyword_names_are_not_keyed(repeats):
    front, calls = _front({}, {})
    names = {_Name("epilogue_args"): () for _ in range(repeats)}
    with pytest.raises(TypeError):  # (the function's own error: no key was made)
        front(np.ones(2), **names)
    assert calls == []


class _Unhashable:
    def __hash__(self):
        raise ValueError("no hash")


class _Meta(type):
    def __hash__(cls):
        return hash(np.ndarray)

    def __eq__(cls, other):
        return other is np.ndarray or type.__eq__(cls, other)


def test_what_cannot_be_keyed_goes_to_the_function():
    global SCALE
    codes = {scaled.__code__: ("SCALE",)}
    front, calls = _front({}, codes)
    x = np.ones(2)
    old, SCALE = SCALE, _Unhashable()  # (its hash raises: no key, and no error)
    try:
        assert front(x, epilogue=scaled) == "function" and calls == ["function"]
    finally:
        SCALE = old
    impostor = _Meta("impostor", (), {"shape": (2,), "dtype": np.dtype("float64")})
    calls.clear()  # (a type equal to a front's type by its metaclass is not that type)
    assert front(impostor(), epilogue_args=()) == "function" and calls == ["function"]
    calls.clear()
    assert front(x, epilogue_args=(impostor(),)) == "function" and calls == ["function"]


def test_a_function_whose_code_changes_while_keyed_is_keyed_safely():
    class Const:
        def __hash__(self):
            fn.__code__ = (lambda y: y).__code__  # (drops the code being hashed)
            return 1

        def __eq__(self, other):
            return isinstance(other, Const)

    fn = lambda y: y  # noqa: E731
    code = fn.__code__.replace(co_consts=(*fn.__code__.co_consts, Const()))
    fn.__code__ = code
    codes = {code: ()}
    del code
    front, calls = _front({}, codes)
    front(np.ones(2), epilogue=fn)  # (no crash; keyed or not)
    assert calls


# cuLaunchKernel and cuCtxGetCurrent stand-ins: C function pointers that ctypes makes
_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
_CONTEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))


class _Kernel:
    """A kernel of parameters (words: x's, one array's, the result's; then a long long, a
    double and a complex) whose launches are recorded."""

    def __init__(self, status=0, context=77):
        self.words = (ctypes.c_void_p * 3)()
        self.numbers = (ctypes.c_double * 6)()
        base = ctypes.addressof(self.numbers)
        self.parameters = (ctypes.c_void_p * 6)(
            *[ctypes.addressof(self.words) + 8 * k for k in range(3)],
            base, base + 16, base + 32)
        self.launches = []

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra):
            words = [self.words[k] for k in range(3)]
            raw = bytes(self.numbers)
            self.launches.append((function, (gx, gy, gz, bx, by, bz, shared), stream, words,
                                  np.frombuffer(raw[:8], np.int64)[0],
                                  np.frombuffer(raw[16:24], np.float64)[0],
                                  complex(*np.frombuffer(raw[32:48], np.float64))))
            return status

        def current(pointer):
            pointer[0] = context
            return 0

        self.launch, self.current = _LAUNCH(launch), _CONTEXT(current)

    def address(self, function):
        return ctypes.cast(function, ctypes.c_void_p).value


def _chain(kernel, first, read=lambda v: v.ctypes.data, context=77, fail=None):
    elements = (("a", read, 8, 1), ("q", ctypes.addressof(kernel.numbers)),
                ("d", ctypes.addressof(kernel.numbers) + 16),
                ("D", ctypes.addressof(kernel.numbers) + 32))
    return _hostcall.Chain(
        first, lambda y: y.ctypes.data, elements, ctypes.addressof(kernel.words), 3,
        kernel.address(kernel.launch), (5, 1, 2, 3, 4, 5, 6, 7),
        ctypes.addressof(kernel.parameters),
        lambda: 99, fail or (lambda status: (_ for _ in ()).throw(RuntimeError(status))),
        kernel.address(kernel.current), context, MISS, kernel)


def test_a_chain_runs_first_then_launches_with_the_words_written():
    kernel = _Kernel()
    y, k = np.zeros(4), np.ones(4)
    chain = _chain(kernel, lambda x: y)
    assert chain(np.ones(4), (k, 7, 0.5, 1 + 2j)) is y
    (function, dims, stream, words, q, d, z), = kernel.launches
    assert (function, dims, stream) == (5, (1, 2, 3, 4, 5, 6, 7), 99)
    assert words == [y.ctypes.data, k.ctypes.data, y.ctypes.data]
    assert (q, d, z) == (7, 0.5, 1 + 2j)


@pytest.mark.parametrize("values", [
    (np.ones(4), 7, 0.5), (np.ones(4), 7.0, 0.5, 1j), (np.ones(4), 7, 1, 1j),
    (np.ones(4), 2 ** 63, 0.5, 1j), (np.ones(4)[1:], 7, 0.5, 1j), ("a", 7, 0.5, 1j)])
def test_a_chain_misses_before_anything_runs(values):
    kernel, ran = _Kernel(), []

    def read(v):
        return None if not isinstance(v, np.ndarray) or v.base is not None else v.ctypes.data

    chain = _chain(kernel, lambda x: ran.append(x) or np.zeros(4), read=read)
    assert chain(np.ones(4), values) is MISS
    assert ran == [] and kernel.launches == []


def test_a_chain_misses_in_another_context_and_passes_on_first_misses_and_errors():
    kernel = _Kernel(context=5)
    assert _chain(kernel, lambda x: np.zeros(4))(np.ones(4), (np.ones(4), 1, 1.0, 1j)) is MISS
    kernel = _Kernel()
    assert _chain(kernel, lambda x: MISS)(np.ones(4), (np.ones(4), 1, 1.0, 1j)) is MISS
    with pytest.raises(ZeroDivisionError):
        _chain(kernel, lambda x: 1 / 0)(np.ones(4), (np.ones(4), 1, 1.0, 1j))
    assert kernel.launches == []
    with pytest.raises(TypeError):
        _chain(kernel, lambda x: x)(np.ones(4), [np.ones(4), 1, 1.0, 1j])
    assert _chain(kernel, lambda x: x)(np.ones(4), (np.ones(4),)) is MISS


def test_a_failed_launch_goes_to_fail():
    kernel = _Kernel(status=700)
    with pytest.raises(RuntimeError, match="700"):
        _chain(kernel, lambda x: np.zeros(4))(np.ones(4), (np.ones(4), 1, 1.0, 1j))


def test_a_chain_refuses_bad_construction():
    kernel = _Kernel()
    good = dict(first=len, pointer=len, elements=(), words=1, nwords=3, launch=1,
                head=(0,) * 8, parameters=1, stream=len, fail=len, context_get=1, context=0,
                miss=MISS, keep=None)
    assert _hostcall.Chain(**good) is not None
    for bad in (dict(first=1), dict(head=(0,) * 7), dict(nwords=1), dict(words=0),
                dict(elements=(("x", 1),)), dict(elements=(("a", len, 8, 2),)),
                dict(elements=(("q", 0),)), dict(elements=(("a", len, 2 ** 80, 1),)),
                dict(elements=(("a", len, 0, 1),)), dict(elements=(("a", len, 8, 2 ** 80),)),
                dict(elements=(("dd", 8),)), dict(elements=(("a", 1, 8, 1),))):
        with pytest.raises((TypeError, ValueError)):
            _hostcall.Chain(**{**good, **bad})
    del kernel

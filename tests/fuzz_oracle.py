"""What the fuzz tests (``tests/fft/test_fuzz.py``, ``tests/linalg/test_fuzz.py``) share: the
hypothesis settings, strategies of hostile input, and the oracle :func:`agree`.

The oracle runs one call of accelmath and the same call of NumPy or SciPy (on copies of the
arrays) and asserts that accelmath either returned what the reference returned (type, dtype,
shape, and values to a tolerance of the dtype) or raised an
:class:`~accelmath.errors.AccelmathError` whose message names one of the call's arguments;
where the reference raised, accelmath must raise too. Whatever happened, no array given to
the call changed, but ``out=`` (and what shares its memory) where the call returned.

The settings are reproducible (derandomized, no example database) and bounded, so that CI
spends about a minute on them; ``ACCELMATH_FUZZ_EXAMPLES=2000 ACCELMATH_FUZZ_SEED=random``
explores further (other examples each run).
"""

import inspect
import math
import os
import re
import warnings

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accelmath.errors import AccelmathError, StateError

__all__ = ["FUZZ", "NOT_GIVEN", "UNCHECKED", "COMMON", "NUMERIC", "HOSTILE", "JUNK", "drawn",
           "mostly", "arrays", "array_or_junk", "operands", "sizes", "flags", "OUT_KINDS", "OUT",
           "make_out", "reference", "agree", "refuses", "assert_close", "names_argument"]

_EXAMPLES = int(os.environ.get("ACCELMATH_FUZZ_EXAMPLES", "600"))
_RANDOM = os.environ.get("ACCELMATH_FUZZ_SEED") == "random"

#: The settings of every fuzz test: bounded, reproducible, no deadline (a first call may
#: plan or import).
FUZZ = settings(max_examples=_EXAMPLES, deadline=None, database=None,
                derandomize=not _RANDOM, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


NOT_GIVEN = _Marker("NOT_GIVEN")  # an argument left to its default
UNCHECKED = _Marker("UNCHECKED")  # a result the reference cannot give: not compared

# ---- strategies ---------------------------------------------------------------------------

#: dtypes of arrays: those most calls use, what the functions compute in, and what they must
#: refuse clearly
COMMON = ("float64", "float32", "complex128", "complex64", "int64", "bool")
NUMERIC = ("bool", "int8", "uint8", "int64", "float16", "float32", "float64", "longdouble",
           "complex64", "complex128", ">f8", ">c16", ">f4")
HOSTILE = ("object", "U3", "S2", "datetime64[s]")

_SPECIAL = (math.nan, math.inf, -math.inf)


def drawn(**kwargs):
    """The keyword arguments of a call that were drawn (those NOT_GIVEN left to defaults)."""
    return {k: v for k, v in kwargs.items() if v is not NOT_GIVEN}


def mostly(valid, hostile, times=8):
    """A strategy of ``valid`` values, but one time in ``times + 1`` of ``hostile`` ones: a
    call's arguments are mostly valid, so that its results are compared, and the hostile
    ones come one or two at a time, so that the error names them."""
    # (not one_of(valid, valid, ..., hostile): one_of draws each distinct strategy alike)
    return st.integers(0, times).flatmap(lambda i: valid if i < times else hostile)


def _elements(dtype, special):
    """Element values of ``dtype``: small numbers; where ``special``, NaN and infinities too."""
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(0 if dtype.kind == "u" else -4, 4)
    if dtype.kind in "fc":
        width = min(dtype.itemsize * 8 // (2 if dtype.kind == "c" else 1), 64)
        real = st.floats(-8, 8, width=width)
        if special:
            real = st.one_of(real, real, real, st.sampled_from(_SPECIAL))
        if dtype.kind == "c":
            return st.builds(complex, real, real)
        return real
    if dtype.kind == "O":
        return st.sampled_from([1.0, 2, -1.5, None, "x", 1j, math.nan])
    if dtype.kind == "M":
        return st.sampled_from([np.datetime64(0, "s"), np.datetime64(1, "s")])
    return hnp.from_dtype(dtype)


@st.composite
def arrays(draw, dtypes=NUMERIC + HOSTILE, shape=None, min_dims=0, max_dims=3, min_side=0,
           max_side=5):
    """A NumPy array of one of ``dtypes`` (of ``shape``, else a random one), one time in four
    holding NaN or infinities, in C order, Fortran order, a strided view or read-only."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    if shape is None:
        shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                      max_side=max_side))
    special = draw(st.integers(0, 3)) == 0
    x = draw(hnp.arrays(dtype, shape, elements=_elements(dtype, special)))
    layout = draw(st.sampled_from(["c", "c", "c", "f", "strided", "readonly"]))
    if layout == "f":
        x = np.asfortranarray(x)
    elif layout == "strided" and x.ndim:
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    elif layout == "readonly":
        x.flags.writeable = False
    return x


JUNK = st.sampled_from([None, 3.0, [1.0, 2.0, 3.0], [[1.0, 2.0], [3.0]], "abc",
                        [[1.0, 0.0], [0.0, 1.0]], b"\x00\x01", {"a": 1}])


def array_or_junk(array_strategy):
    """Mostly arrays of ``array_strategy``; now and then what is not one: None, a scalar, a
    (ragged) list, a string."""
    return mostly(array_strategy, JUNK)


def operands(max_dims=3, max_side=5):
    """The array of a call: mostly of a common dtype and no empty axis; now and then of any
    dtype and shape (empty ones too), or what is not an array."""
    return mostly(arrays(COMMON, min_dims=1, max_dims=max_dims, min_side=1, max_side=max_side),
                  st.one_of(arrays(NUMERIC, max_dims=max_dims, max_side=max_side),
                            array_or_junk(arrays(max_dims=max_dims, max_side=max_side))),
                  times=3)


#: Integers as sizes and axes: small ones (negative and zero too), huge ones, and what is not
#: an integer. (No huge size asks for less than 2**48 bytes, more than a process can map: a
#: machine that overcommits memory would grant less, and the call then fill it.)
_HUGE = (2**48, 2**62, 2**63, -2**63, 10**30)
_NOT_INTEGERS = (1.5, "4", True, None, np.float64(2.0), (2,))


def sizes(low=-3, high=9):
    """Sizes or axes from ``low`` to ``high`` (Python's and NumPy's integers), huge ones, and
    what is not an integer."""
    return st.one_of(st.integers(low, high), st.integers(low, high),
                     st.integers(low, high).map(np.int64), st.sampled_from(_HUGE),
                     st.sampled_from(_NOT_INTEGERS))


def flags():
    """A boolean option: True, False, and now and then what is not quite one."""
    return mostly(st.sampled_from([True, False]),
                  st.sampled_from([0, 1, np.bool_(True), 2, None, "yes"]))


# ---- out= ---------------------------------------------------------------------------------

OUT_KINDS = ("right", "right", "wrong_shape", "wrong_dtype", "alias", "readonly", "strided",
             "list")
#: Whether and how a call gets out=: mostly not, else of a kind of OUT_KINDS
OUT = mostly(st.none(), st.sampled_from(OUT_KINDS), times=2)


def make_out(kind, shape, dtype, x):
    """An ``out=`` of ``kind`` for a result of ``shape`` and ``dtype``; for "alias", a pair
    ``(x', out)``: x's values in a new array whose memory ``out`` shares (x itself where it
    is not a NumPy array)."""
    dtype = np.dtype(dtype)
    if kind == "right":
        return np.zeros(shape, dtype)
    if kind == "wrong_shape":
        return np.zeros(tuple(shape) + (2,), dtype)
    if kind == "wrong_dtype":
        return np.zeros(shape, np.complex64 if dtype != np.complex64 else np.float64)
    if kind == "readonly":
        out = np.zeros(shape, dtype)
        out.flags.writeable = False
        return out
    if kind == "strided":
        return np.zeros(tuple(shape[:-1]) + (2 * shape[-1],), dtype)[..., ::2] if len(
            shape) else np.zeros(shape, dtype)
    if kind == "list":
        return [0.0] * (shape[0] if len(shape) else 1)
    # "alias": one buffer holds the input (at its start) and the output
    if not isinstance(x, np.ndarray) or x.dtype.kind in "OUSM":
        return x, np.zeros(shape, dtype)
    size = max(x.nbytes, math.prod(shape) * dtype.itemsize) + 16
    buffer = np.zeros(size // 16 + 1, np.complex128).view(np.uint8)
    moved = buffer[:x.nbytes].view(x.dtype).reshape(x.shape)
    moved[...] = x
    out = buffer[:math.prod(shape) * dtype.itemsize].view(dtype).reshape(shape)
    return moved, out


# ---- the oracle ---------------------------------------------------------------------------

def _leaves(value):
    """The NumPy arrays in ``value`` (nested in tuples, lists and dicts)."""
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)


def _copied(value):
    """``value`` with each NumPy array in it copied (as the reference's arguments)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_copied(v) for v in value)
    if isinstance(value, list):
        return [_copied(v) for v in value]
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return value


def _same(x, before):
    """Whether array ``x`` still holds what its copy ``before`` holds."""
    if x.shape != before.shape or x.dtype != before.dtype:
        return False
    if x.dtype.kind == "O":
        return all(p is q for p, q in zip(x.ravel(), before.ravel()))
    if x.dtype.kind in "fc":
        return bool(np.array_equal(x, before, equal_nan=True))
    return np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(before).tobytes()


_TOLERANCE = {"e": 3e-2, "f": 2e-4, "d": 1e-9, "g": 1e-12}


def tolerance(dtype):
    """The relative tolerance of results of ``dtype`` (that of its real part)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        dtype = np.empty(0, dtype).real.dtype
    return _TOLERANCE.get(dtype.char, 0.0)


def assert_close(got, expected, scale=1.0, where="result"):
    """``got`` is ``expected``: the same type, dtype and shape, values within the dtype's
    tolerance (times ``scale``, relative to the largest finite value), not finite where not
    finite; anything where ``expected`` is UNCHECKED."""
    if expected is UNCHECKED:
        return
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), (
            f"{where}: got {type(got).__name__} of {len(got) if isinstance(got, tuple) else '-'}"
            f" items, expected {len(expected)}")
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_close(g, e, scale, f"{where}[{i}]")
        return
    if not isinstance(expected, (np.ndarray, np.generic)) or isinstance(expected, np.bool_):
        assert got == expected, f"{where}: got {got!r}, expected {expected!r}"
        return
    assert type(got) is type(expected), (
        f"{where}: got {type(got).__name__}, expected {type(expected).__name__}")
    assert got.dtype == expected.dtype, f"{where}: got dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{where}: got shape {got.shape}, expected {expected.shape}"
    if expected.dtype.kind == "O":  # (objects: the same ones, a NaN among them too)
        assert all(g is e or g == e for g, e in zip(got.ravel().tolist(),
                                                     expected.ravel().tolist())), (
            f"{where}: got {got!r}, expected {expected!r}")
        return
    if expected.dtype.kind not in "biufc" or not expected.size:
        assert np.array_equal(got, expected), f"{where}: got {got!r}, expected {expected!r}"
        return
    if expected.dtype.kind in "biu":
        assert np.array_equal(got, expected), f"{where}: got {got}, expected {expected}"
        return
    # (where a result is NaN or infinite depends on the order of the operations on
    # infinities: BLAS and NumPy's own loops differ; that it is not finite does not)
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(got), finite), (
        f"{where}: not finite at other places:\n{got}\nexpected\n{expected}")
    largest = float(np.max(np.abs(expected[finite]), initial=1.0))
    tol = tolerance(expected.dtype) * scale
    good = np.abs(got[finite] - expected[finite]) <= tol * largest
    assert good.all(), (f"{where}: differs beyond {tol} x {largest}:\n{got}\nexpected\n"
                        f"{expected}")


# what follows a one-letter argument's name where a message names it ("a: ...", "b has ...",
# "n = 3", "n or s = ...", "s[0] must"), not the article
_AFTER_LETTER = (r"(?=[:=,)\[]| =| has | must | of | is | and | or | \(| does | holds |"
                 r" Operand\(|$)")


def names_argument(message, names):
    """Whether ``message`` names one of ``names``: as a word ("axis" counts for "axes", which
    messages about one of them say), a one-letter name as :data:`_AFTER_LETTER` has it."""
    for name in names:
        for word in (name, "axis") if name == "axes" else (name,):
            after = _AFTER_LETTER if len(word) == 1 else r"(?![\w(])"
            if re.search(rf"(?<![\w.'\"]){re.escape(word)}{after}", message):
                return True
    return False


def _parameters(function):
    """The names of ``function``'s parameters (none for one without a signature)."""
    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return ()


def _call(function, args, kwargs):
    with warnings.catch_warnings():  # (NumPy's deprecations, said by both sides)
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def reference(function, args, kwargs):
    """``function`` on copies of the arguments: ``(result, None, warnings)``, or
    ``(None, exception, warnings)``."""
    args, kwargs = _copied(args), _copied(kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = function(*args, **kwargs)
        except Exception as exc:  # (what the reference refuses, accelmath must refuse too)
            return None, exc, caught
    return result, None, caught


def agree(ours, theirs, args, kwargs, names, *, scale=1.0, compare=None, refusals=(),
          may_refuse=False, expected=NOT_GIVEN):
    """Assert that ``ours(*args, **kwargs)`` agrees with ``theirs`` on copies of them (see
    the module docstring).

    Parameters
    ----------
    names : sequence of str
        The arguments' names, one of which an error message must name (those of ``ours``'s
        signature too).
    scale : float
        Widens the tolerance (ill-conditioned problems).
    compare : callable, optional
        ``compare(got, expected)`` instead of :func:`assert_close` (results that are unique
        only up to signs).
    refusals : tuple of type
        Exceptions of accelmath acceptable without naming an argument where the reference
        raised or warned (a singular matrix: LinAlgError).
    may_refuse : bool
        Accept ``refusals`` wherever they come (a check of accelmath's own, documented).
    expected : tuple, optional
        ``reference(theirs, args, kwargs)`` already computed.
    """
    names = tuple(names) + _parameters(ours)
    arrays = [(x, x.copy()) for x in _leaves((args, kwargs))]
    if expected is NOT_GIVEN:
        expected = reference(theirs, args, kwargs)
    value, error, caught = expected
    try:
        got = _call(ours, args, kwargs)
    except AccelmathError as exc:
        for x, before in arrays:
            assert _same(x, before), f"an argument changed though the call raised {exc!r}"
        if isinstance(exc, refusals) and (error is not None or caught or may_refuse):
            return None
        assert names_argument(str(exc), names), (
            f"{type(exc).__name__}({str(exc)!r}) names none of the arguments {tuple(names)}")
        return None
    assert error is None, f"accelmath returned {got!r} where the reference raised {error!r}"
    out = kwargs.get("out")
    for x, before in arrays:
        if out is None or not np.shares_memory(x, out):
            assert _same(x, before), "an argument (not out=) changed"
    if out is not None:
        assert got is out, "the call with out= did not return out"
    (compare or (lambda g, e: assert_close(g, e, scale)))(got, value)
    return got


def refuses(ours, args, kwargs, names, refusal=AccelmathError, exact=False):
    """Assert that ``ours(*args, **kwargs)`` raises ``refusal`` (an accelmath error) naming
    one of ``names`` (or of ``ours``'s parameters, unless ``exact``), and changes no
    argument (for calls with no reference to run: pivots that would crash SciPy, a plan used
    after free)."""
    names = tuple(names) + (() if exact else _parameters(ours))
    arrays = [(x, x.copy()) for x in _leaves((args, kwargs))]
    try:
        got = _call(ours, args, kwargs)
    except refusal as exc:
        for x, before in arrays:
            assert _same(x, before), f"an argument changed though the call raised {exc!r}"
        assert isinstance(exc, StateError) or names_argument(str(exc), names), (
            f"{type(exc).__name__}({str(exc)!r}) names none of the arguments {tuple(names)}")
        return
    raise AssertionError(f"accelmath returned {got!r}; expected {refusal.__name__}")


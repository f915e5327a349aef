"""Fuzz tests of the public CPU API of :mod:`accelmath.linalg` against ``numpy.linalg`` and
``scipy.linalg`` (matrix products: ``test_matmul_fuzz.py``): stacks of matrices of random
shapes (empty ones too) and dtypes (bool, integers, float16, long double, big-endian, object,
strings), what is not an array, NaN and infinities, singular and indefinite matrices, options
of the wrong type or value, pivots out of range, and the factor objects (``LU``,
``Cholesky``, ``QR``) through their ``solve`` and ``refactor``. The oracle is
:func:`fuzz_oracle.agree`: NumPy's (or SciPy's) result, or an accelmath error that names an
argument, and no input changed."""

import math
import warnings

import numpy as np
import scipy.linalg
import scipy.linalg.blas
from fuzz_oracle import (COMMON, FUZZ, HOSTILE, NOT_GIVEN, NUMERIC, UNCHECKED, agree,
                         array_or_junk, arrays, assert_close, drawn, flags, mostly,
                         names_argument, reference, refuses)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accelmath import linalg
from accelmath.errors import AccelmathError, LinAlgError, StateError

MAYBE = st.just(NOT_GIVEN)
CHECK = st.one_of(MAYBE, flags())
METHODS = mostly(st.sampled_from([NOT_GIVEN, "auto", "cusolver", "batched", "small"]),
                 st.sampled_from(["fast", None]))
EXECUTION = mostly(st.sampled_from([NOT_GIVEN, NOT_GIVEN, "auto", "cpu"]), st.just("GPU"))
TRANS = mostly(st.sampled_from([NOT_GIVEN, 0, 1, 2, "N", "T", "C"]),
               st.sampled_from([3, "X", -1, None]))
FLAG = st.one_of(MAYBE, flags())
# accelmath's own arguments, which the references do not take
OURS_ONLY = ("check", "method", "execution", "stream")
# the reference's failures on matrices a call cannot factor (accelmath: LinAlgError too)
REFUSALS = (LinAlgError,)


@st.composite
def matrices(draw, square=True, dtypes=COMMON, batch_dims=2):
    """A stack of matrices (batch of up to ``batch_dims`` axes, matrices up to 4 x 4, empty
    ones too): as drawn, made diagonally dominant (well conditioned), or Hermitian and
    dominant (positive definite)."""
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=batch_dims, min_side=0, max_side=3))
    m = draw(mostly(st.integers(1, 4), st.just(0)))
    n = m if square else draw(mostly(st.integers(1, 4), st.just(0)))
    a = draw(arrays(dtypes, shape=batch + (m, n)))
    shape = draw(st.sampled_from(["dominant", "dominant", "hermitian", "as drawn"]))
    if shape == "as drawn" or a.dtype.kind not in "iufc" or not a.flags.writeable:
        return a
    with np.errstate(invalid="ignore"):  # (inf - inf)
        if shape == "hermitian" and m == n:
            a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
        return (a + 30 * np.eye(m, n)).astype(a.dtype)


def any_matrices(square=True, batch_dims=2):
    """Mostly :func:`matrices` of a common dtype; now and then of any dtype, an array of any
    shape, or no array at all."""
    return mostly(matrices(square, batch_dims=batch_dims),
                  st.one_of(matrices(square, NUMERIC + HOSTILE, batch_dims),
                            array_or_junk(arrays(max_dims=4))), times=3)


@st.composite
def right_hand_sides(draw, a):
    """Right-hand sides for matrices ``a``: mostly a vector or a stack of its batch, of a
    common dtype; now and then of another shape or dtype, or no array at all."""
    if not isinstance(a, np.ndarray) or a.ndim < 2:
        return draw(array_or_junk(arrays()))
    n, k = a.shape[-2], draw(st.integers(0, 3))
    batch = a.shape[:-2]
    valid = st.sampled_from([(n,), batch + (n, k), batch + (n, k), batch[1:] + (n, k)])
    shape = draw(mostly(valid, st.sampled_from([(n + 1,), batch + (k, n + 1), (n, n, n, k)])))
    return draw(mostly(arrays(COMMON, shape=shape),
                       st.one_of(arrays(shape=shape), array_or_junk(arrays())), times=3))


def _numbers(x):
    return isinstance(x, np.ndarray) and x.dtype.kind in "biufc"


def _nonfinite(*arrays):
    return any(isinstance(x, np.ndarray) and x.dtype.kind in "fc" and not np.isfinite(x).all()
               for x in arrays)


def _scale(a):
    """How much wider than a dtype's tolerance results of matrices ``a`` may differ: their
    condition number (solutions by different LAPACK routes differ by as much)."""
    try:
        a = np.asarray(a, np.complex128)
        if a.ndim < 2 or not a.size or not np.isfinite(a).all():
            return 1.0
        return float(min(np.max(np.linalg.cond(a)), 1e300))
    except (TypeError, ValueError, np.linalg.LinAlgError):
        return 1.0


def _loose(scale):
    """Compare results to the dtype's tolerance times ``scale``, where that is meaningful
    (not for matrices whose condition number leaves no significant digit)."""
    def compare(got, expected):
        assert_close(got, expected, scale=scale if scale < 1e6 else math.inf)

    return compare


def _unchecked(theirs, check):
    """``theirs``, where accelmath runs with ``check`` False (documented: no LinAlgError,
    NaN in the results of a matrix that fails or holds NaN or Inf), giving UNCHECKED where
    the reference fails or an operand holds NaN or Inf."""
    if check is NOT_GIVEN or check not in (False, 0):
        return theirs

    def lenient(*args, **kwargs):
        if _nonfinite(*args):
            return UNCHECKED
        try:
            return theirs(*args, **kwargs)
        except np.linalg.LinAlgError:
            return UNCHECKED

    return lenient


def _numpy(name):
    def theirs(*args, **kwargs):
        for key in OURS_ONLY:
            kwargs.pop(key, None)
        return getattr(np.linalg, name)(*args, **kwargs)

    return theirs


# ---- numpy.linalg's functions ---------------------------------------------------------------

UPLOS = mostly(st.sampled_from([NOT_GIVEN, "L", "U", "l", "u"]), st.sampled_from(["X", 1]))
QR_MODES = mostly(st.sampled_from([NOT_GIVEN, "reduced", "complete", "r", "raw"]),
                  st.sampled_from(["full", "f", "economic", "e", "bogus", None]))
OPTIONS = {
    "inv": dict(check=CHECK, method=METHODS),
    "det": {},
    "slogdet": {},
    "cholesky": dict(upper=FLAG, check=CHECK, method=METHODS),
    "qr": dict(mode=QR_MODES),
    "eigh": dict(UPLO=UPLOS, check=CHECK, method=METHODS),
    "eigvalsh": dict(UPLO=UPLOS, check=CHECK, method=METHODS),
    "svd": dict(full_matrices=FLAG, compute_uv=FLAG, hermitian=FLAG, check=CHECK,
                method=METHODS),
    "svdvals": dict(check=CHECK, method=METHODS),
}
# LAPACK's iterations (SVD, eigenvalues) may not return on NaN: not given to the reference
ITERATIVE = ("svd", "svdvals", "eigh", "eigvalsh", "lstsq")


@FUZZ
@given(st.data(), st.sampled_from(sorted(OPTIONS)))
def test_numpy_functions_of_one_matrix(data, name):
    a = data.draw(any_matrices(square=name not in ("qr", "svd", "svdvals")), "a")
    kwargs = drawn(**{key: data.draw(values, key) for key, values in OPTIONS[name].items()},
                   execution=data.draw(EXECUTION, "execution"))
    theirs = _unchecked(_numpy(name), kwargs.get("check", NOT_GIVEN))
    expected = NOT_GIVEN
    if name in ITERATIVE and _nonfinite(a):
        expected = (UNCHECKED, None, [])
    agree(getattr(linalg, name), theirs, (a,), kwargs, (), refusals=REFUSALS,
          compare=_loose(_scale(a)), expected=expected)


@FUZZ
@given(st.data(), st.sampled_from(["solve", "lstsq"]))
def test_numpy_functions_of_two_operands(data, name):
    # (lstsq takes one matrix: mostly one)
    a = data.draw(any_matrices(square=name == "solve", batch_dims=2 if name == "solve" else 0),
                  "a")
    b = data.draw(right_hand_sides(a), "b")
    if name == "solve":
        kwargs = drawn(check=data.draw(CHECK, "check"), method=data.draw(METHODS, "method"))
    else:
        kwargs = drawn(rcond=data.draw(mostly(st.sampled_from([NOT_GIVEN, None, -1, 1e-3, 0.5]),
                                              st.sampled_from(["x", math.nan, 1j])), "rcond"))
    kwargs.update(drawn(execution=data.draw(EXECUTION, "execution")))
    theirs = _unchecked(_numpy(name), kwargs.get("check", NOT_GIVEN))
    expected = (UNCHECKED, None, []) if name == "lstsq" and _nonfinite(a, b) else NOT_GIVEN
    agree(getattr(linalg, name), theirs, (a, b), kwargs, (), refusals=REFUSALS,
          compare=_loose(_scale(a)), expected=expected)


# ---- scipy.linalg's functions ---------------------------------------------------------------

def _map_arrays(value, function):
    """``value`` with ``function`` applied to each NumPy array in it (in tuples)."""
    if isinstance(value, np.ndarray):
        return function(value)
    if isinstance(value, tuple):
        return tuple(_map_arrays(v, function) for v in value)
    return value


def _promoted(x):
    """Matrices of bool or integers as float64, as NumPy's linalg (and accelmath's factor
    objects) promote them; SciPy's LAPACK wrappers compute the narrow ones in float32.
    Pivots (int32) stay."""
    return x.astype(np.float64) if x.dtype.kind in "biu" and x.dtype != np.int32 else x


def _one_matrix(x):
    """Of an argument of a SciPy solver, one matrix (an identity), pivot vector (zeros) or
    right-hand side (ones): the core of ``x`` without its batch axes."""
    if x.dtype == np.int32:
        return np.zeros(x.shape[-1:], x.dtype)
    if x.ndim == 1:
        return np.ones(x.shape, x.dtype)
    return np.eye(*x.shape[-2:], dtype=x.dtype)


def _batch_of(x):
    return x.shape[:-1] if x.dtype == np.int32 or x.ndim == 1 else x.shape[:-2]


def _scipy(name):
    """scipy.linalg's function ``name`` (whose dtype rules accelmath's SciPy-style functions
    follow). Where SciPy refuses an empty batch ("does not support zero-size batches"),
    which NumPy's functions and accelmath take: empty results of the dtype and matrix shape
    SciPy gives one matrix."""
    function = getattr(scipy.linalg, name)

    def theirs(*args, **kwargs):
        for key in OURS_ONLY:
            kwargs.pop(key, None)
        # (SciPy's wrappers take no NumPy bool for their flags: accelmath takes NumPy's bools)
        kwargs = {k: bool(v) if isinstance(v, np.bool_) else v for k, v in kwargs.items()}
        for key in ("overwrite_a", "overwrite_b"):
            # accelmath never overwrites (documented), and SciPy's batched solvers that do
            # overwrite a broadcast b between its matrices (1.17): their results are wrong
            if kwargs.get(key) in (True, False):
                kwargs[key] = False
        try:
            return _native(name, function(*args, **kwargs), args)
        except ValueError as exc:
            if "zero-size batches" not in str(exc):
                raise
        batches = []
        _map_arrays(args, lambda x: batches.append(_batch_of(x)))
        batch = np.broadcast_shapes(*batches)
        one = _native(name, function(*_map_arrays(args, _one_matrix), **kwargs), args)
        return _map_arrays(one, lambda r: np.empty(batch + r.shape, r.dtype))

    return theirs


def _native(name, result, args=()):
    """SciPy's ``result`` as accelmath gives it, where they differ only in form: in native
    byte order (SciPy gives an empty big-endian matrix back as it is), a tuple (SciPy's
    batches of empty matrices give a list, and cho_factor's ``lower`` as an array), and
    empty results in the dtype SciPy computes ``args`` in (it gives them in the input's)."""
    if isinstance(result, list):
        result = tuple(result)
        if name == "cho_factor" and isinstance(result[1], np.ndarray):
            result = (result[0], bool(result[1].flat[0]) if result[1].size else result[1])
    inputs = []
    _map_arrays(args, lambda x: inputs.append(x) if x.dtype != np.int32 else None)
    computed = scipy.linalg.blas.find_best_blas_type(inputs)[1] if inputs else None

    def native(x):
        x = x.astype(x.dtype.newbyteorder("="))
        if not x.size and computed is not None and x.dtype not in (np.int32, computed):
            x = x.astype(computed)
        return x

    return _map_arrays(result, native)


FINITE = st.one_of(MAYBE, flags())
OVERWRITE = st.one_of(MAYBE, flags())


@FUZZ
@given(st.data(), st.sampled_from(["cho_factor", "lu_factor"]))
def test_scipy_factorizations(data, name):
    a = data.draw(any_matrices(square=name == "cho_factor"), "a")
    kwargs = drawn(overwrite_a=data.draw(OVERWRITE, "overwrite_a"),
                   check_finite=data.draw(FINITE, "check_finite"),
                   check=data.draw(CHECK, "check"), execution=data.draw(EXECUTION, "execution"))
    if name == "cho_factor":
        kwargs.update(drawn(lower=data.draw(FLAG, "lower")))
    check = kwargs.get("check", NOT_GIVEN)
    theirs = _scipy(name)
    if check is not NOT_GIVEN and check in (False, 0):
        theirs = _unchecked_factorization(theirs)
    # (SciPy only warns of a singular matrix; accelmath raises under check: documented)
    agree(getattr(linalg, name), theirs, (a,), kwargs, (), refusals=REFUSALS,
          compare=_loose(_scale(a)))


def _unchecked_factorization(theirs):
    """A SciPy factorization as accelmath's runs under ``check=False`` (documented): NaN and
    Inf not checked, and NaN for a matrix that fails (where SciPy raises, or warns of a
    singular one), which are UNCHECKED."""
    def lenient(a, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            try:
                return theirs(a, **dict(kwargs, check_finite=False))
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
                return UNCHECKED

    return lenient


@FUZZ
@given(st.data())
def test_cho_solve(data):
    a = data.draw(any_matrices(), "a")
    lower = data.draw(mostly(st.booleans(), st.sampled_from([1, None, "no"])), "lower")
    c = a
    if data.draw(st.booleans(), "factored") and isinstance(a, np.ndarray):
        c = reference(scipy.linalg.cho_factor, (a,), {"lower": bool(lower)})[0]
        c = a if c is None else c[0]
    b = data.draw(right_hand_sides(c), "b")
    kwargs = drawn(overwrite_b=data.draw(OVERWRITE, "overwrite_b"),
                   check_finite=data.draw(FINITE, "check_finite"),
                   execution=data.draw(EXECUTION, "execution"))
    agree(linalg.cho_solve, _scipy("cho_solve"), ((c, lower), b), kwargs, ("c", "lower"),
          refusals=REFUSALS, compare=_loose(_scale(c)))


def _factored(a):
    """SciPy's ``(lu, piv)`` of matrices ``a``, or None where it cannot factor them."""
    value, error, _ = reference(scipy.linalg.lu_factor, (a,), {})
    return None if error is not None else value


@FUZZ
@given(st.data())
def test_lu_solve(data):
    a = data.draw(any_matrices(), "a")
    factors = _factored(a) if isinstance(a, np.ndarray) else None
    if factors is None:
        lu, piv = a, data.draw(array_or_junk(arrays()), "piv")
    else:
        lu, piv = factors
        change = data.draw(mostly(st.sampled_from(["none", "none", "int64"]),
                                  st.sampled_from(["float", "shape", "uint8"])), "piv change")
        if change == "int64":
            piv = piv.astype(np.int64)
        elif change == "float":
            piv = piv.astype(np.float64)
        elif change == "uint8":
            piv = piv.astype(np.uint8)
        elif change == "shape":
            piv = piv[..., :-1]
    b = data.draw(right_hand_sides(lu), "b")
    kwargs = drawn(trans=data.draw(TRANS, "trans"),
                   overwrite_b=data.draw(OVERWRITE, "overwrite_b"),
                   check_finite=data.draw(FINITE, "check_finite"),
                   execution=data.draw(EXECUTION, "execution"))
    agree(linalg.lu_solve, _lu_solve_reference, ((lu, piv), b), kwargs, ("lu", "piv"),
          refusals=REFUSALS, compare=_loose(_scale(lu)))


def _lu_solve_reference(lu_and_piv, b, **kwargs):
    """scipy.linalg.lu_solve, given NumPy arrays of numbers only and pivots in range: SciPy
    writes out of bounds for pivots out of range (heap corruption, crashes), and its wrapper
    releases a reference of the int32 dtype too many for some other pivots (None), which
    crashes the interpreter once enough calls did (SciPy 1.17)."""
    arrays = [np.asarray(x) for x in (*lu_and_piv, b)]
    if any(x.dtype.kind not in "biufc" for x in arrays):
        raise TypeError("lu, piv and b must be arrays of numbers")
    lu, piv, b = arrays
    n = lu.shape[-1] if lu.ndim else 0
    if piv.dtype.kind == "c" or not (np.all(piv >= 0) and np.all(piv < n)):
        raise ValueError(f"piv holds pivots outside [0, {n})")
    piv = piv.astype(np.int32)  # (as SciPy's wrapper takes them; int32 stays unpromoted)
    # (accelmath's lu_solve takes solve_triangular's letters too, as it documents)
    trans = kwargs.get("trans")
    if isinstance(trans, str) and trans in ("N", "T", "C"):
        kwargs["trans"] = "NTC".index(trans)
    return _scipy("lu_solve")((lu, piv), b, **kwargs)


@FUZZ
@given(st.data())
def test_lu_solve_pivots_out_of_range(data):
    # (SciPy writes out of bounds for such pivots: no reference is run; accelmath must refuse
    # them, naming piv)
    a = data.draw(matrices(dtypes=("float64", "complex64", "int8")), "a")
    if 0 in a.shape:  # (no pivot to spoil)
        return
    lu, piv = _factored(a) or (a, np.zeros(a.shape[:-1], np.int32))
    piv, n = piv.copy(), lu.shape[-1]
    index = data.draw(st.tuples(*(st.integers(0, s - 1) for s in piv.shape)), "at")
    piv[index] = data.draw(st.sampled_from([-1, -n - 1, n, n + 1, 2**31 - 1, -2**31]), "pivot")
    b = np.ones(data.draw(st.sampled_from([(n,), lu.shape[:-2] + (n, 2)]), "b shape"))
    trans = data.draw(st.sampled_from([0, 1, 2]), "trans")
    refuses(linalg.lu_solve, ((lu, piv), b), {"trans": trans}, ("piv",), exact=True)


@FUZZ
@given(st.data())
def test_solve_triangular(data):
    a = data.draw(any_matrices(), "a")
    b = data.draw(right_hand_sides(a), "b")
    kwargs = drawn(trans=data.draw(TRANS, "trans"),
                   lower=data.draw(FLAG, "lower"), unit_diagonal=data.draw(FLAG, "unit_diagonal"),
                   overwrite_b=data.draw(OVERWRITE, "overwrite_b"),
                   check_finite=data.draw(FINITE, "check_finite"),
                   execution=data.draw(EXECUTION, "execution"))
    agree(linalg.solve_triangular, _scipy("solve_triangular"), (a, b), kwargs, (),
          refusals=REFUSALS, compare=_loose(_scale(a)))


# ---- the factor objects ---------------------------------------------------------------------

def _hermitian_from_lower(a):
    """The Hermitian matrices whose lower triangles ``a`` holds (the diagonal's real part,
    as LAPACK's potrf reads it)."""
    below = np.tril(a, -1)
    diagonal = np.real(np.diagonal(a, axis1=-2, axis2=-1))
    return below + np.conj(np.swapaxes(below, -1, -2)) + diagonal[..., None] * np.eye(
        a.shape[-1], dtype=a.dtype)


def _factor_reference(name, a):
    """What solving with a factorization of ``a`` computes, as NumPy and SciPy would: a
    function of b (raising LinAlgError where they cannot factor a). LU is SciPy's
    lu_factor and lu_solve (a matrix singular but for rounding is singular to one LAPACK
    and not to another: NumPy's inv is not the reference of SciPy's getrf)."""
    a = _promoted(np.asarray(a))
    if name == "LU":
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            try:
                factors = _scipy("lu_factor")(a, check_finite=False)
            except scipy.linalg.LinAlgWarning:  # (an exactly zero pivot)
                raise np.linalg.LinAlgError("Singular matrix") from None
        # (solve checks no b for NaN and Inf, as numpy.linalg.solve: NaN in, NaN out)
        return lambda b: _scipy("lu_solve")(factors, b, check_finite=False)
    if name == "Cholesky":
        h = _hermitian_from_lower(a)
        np.linalg.cholesky(h)  # (raises for one not positive definite)
        return lambda b: np.linalg.solve(h, b)
    # QR: a matrix without full column rank, by the documented rule, has no meaningful
    # solution (refused where checked, anything where not)
    r = np.abs(np.diagonal(np.linalg.qr(a, mode="r"), axis1=-2, axis2=-1))
    bound = max(a.shape[-2:]) * np.finfo(r.dtype).eps * r.max(axis=-1, initial=0.0,
                                                              keepdims=True)
    if r.size and not (r > bound).all():
        raise np.linalg.LinAlgError("Matrix does not have full column rank")
    return lambda b: np.linalg.pinv(a) @ b


@FUZZ
@given(st.data(), st.sampled_from(["LU", "Cholesky", "QR"]))
def test_factor_objects(data, name):
    a = data.draw(any_matrices(square=name != "QR"), "a")
    kwargs = drawn(check=data.draw(CHECK, "check"))
    if name == "Cholesky":
        kwargs.update(drawn(lower=data.draw(FLAG, "lower")))
    # (QR's rank check is its own, documented: a LinAlgError wherever it finds one)
    check = kwargs.get("check", NOT_GIVEN)
    factor = agree(getattr(linalg, name),
                   _unchecked(lambda a, **kwargs: _factor_reference(name, a), check),
                   (a,), kwargs, (), refusals=REFUSALS, may_refuse=name == "QR",
                   compare=lambda got, expected: None)
    if factor is None:
        return
    with factor:
        b = data.draw(right_hand_sides(a), "b")
        solved = agree(factor.solve, _unchecked(lambda b: _factor_reference(name, a)(b), check),
                       (b,), {}, (), refusals=REFUSALS, may_refuse=name == "QR",
                       compare=_loose(_scale(a)))
        a2 = data.draw(st.one_of(st.just(a), matrices(square=name != "QR"),
                                 st.just(np.zeros_like(a) if _numbers(a) else a)), "a2")
        try:
            factor.refactor(a2)
        except AccelmathError as exc:
            # a refused matrix leaves the previous factorization (issue 38, point 6)
            assert isinstance(exc, LinAlgError) or names_argument(str(exc), ("a",)), (
                f"refactor raised {exc!r}")
            if solved is not None:
                assert_close(factor.solve(b), solved, where="solve after a refused refactor")
        else:  # (a2 in the factorization's dtype, as refactor takes it)
            a2 = np.asarray(a2).astype(factor.dtype)
            agree(factor.solve, _unchecked(lambda b: _factor_reference(name, a2)(b), check),
                  (b,), {}, (), refusals=REFUSALS, may_refuse=name == "QR",
                  compare=_loose(_scale(a2)))
    refuses(factor.solve, (b,), {}, ("b",), StateError)


@FUZZ
@given(st.data())
def test_prepare(data):
    dtypes = data.draw(st.lists(mostly(st.sampled_from(["float64", "complex64", np.float32]),
                                       st.sampled_from(["int8", None, "bogus"])), max_size=2),
                       "dtypes")
    kwargs = drawn(device=data.draw(mostly(st.sampled_from([NOT_GIVEN, 0]),
                                           st.sampled_from([1, -1, "x", None])), "device"),
                   wait=data.draw(FLAG, "wait"))
    agree(linalg.prepare, lambda *dtypes, **kwargs: None, tuple(dtypes), kwargs, ("dtype",),
          compare=lambda got, expected: None)

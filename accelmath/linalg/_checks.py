"""Pure argument checks and shape rules of the linear-algebra functions (no device access).

The rules are NumPy's (``numpy.linalg``) for the NumPy functions and SciPy's
(``scipy.linalg``) for ``cho_factor``, ``cho_solve``, ``lu_factor``, ``lu_solve`` and
``solve_triangular``: dtype promotion as ``numpy.linalg._commonType`` does it, NumPy's shape
errors (a :class:`~accelmath.errors.LinAlgError`, which is a ``ValueError``, as NumPy raises),
NumPy 2's right-hand-side rule for ``solve`` and SciPy's for the SciPy functions. Each check
returns the normalized value or raises an accelmath error that names the argument, quotes the
bad value and lists the allowed ones. Every message is written here once; the messages of
failed factorizations (NumPy's words) are here too, for the CPU and the device paths.
"""

import cmath
import warnings
from typing import NamedTuple

import numpy

from accelmath._core.arguments import check_execution, check_flag
from accelmath._core.callers import outside_stacklevel
from accelmath.errors import InvalidArgumentError, LinAlgError, UnsupportedDTypeError

__all__ = ["SINGULAR", "NOT_POSITIVE_DEFINITE", "EIGENVALUES_DID_NOT_CONVERGE",
           "SVD_DID_NOT_CONVERGE", "LSTSQ_DID_NOT_CONVERGE", "RANK_DEFICIENT", "NOT_FINITE",
           "QR_MODES", "QR_DEPRECATED", "deprecated_qr_mode", "METHODS", "result_dtype",
           "scipy_result_dtype",
           "real_dtype", "unsupported_dtype_error", "not_finite_error",
           "check_stacked_2d", "check_stacked_square", "check_2d", "broadcast_batch",
           "solve_rhs", "scipy_rhs", "lstsq_shapes", "factor_pair", "lu_pivots",
           "BadPivot", "bad_pivot", "check_pivots", "check_mode",
           "check_uplo", "check_trans", "check_method", "check_flag", "check_rcond",
           "all_finite", "first_nonfinite", "check_finite"]

# Failed factorizations: NumPy's messages; LinAlgError appends the batch index.
SINGULAR = "Singular matrix"
NOT_POSITIVE_DEFINITE = "Matrix is not positive definite"
EIGENVALUES_DID_NOT_CONVERGE = "Eigenvalues did not converge"
SVD_DID_NOT_CONVERGE = "SVD did not converge"
LSTSQ_DID_NOT_CONVERGE = "SVD did not converge in Linear Least Squares"
RANK_DEFICIENT = "Matrix does not have full column rank"
# NaN or Inf under check_finite: SciPy's words
NOT_FINITE = "array must not contain infs or NaNs"

QR_MODES = ("reduced", "complete", "r", "raw")
METHODS = ("auto", "cusolver", "batched", "small")
_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}

# numpy.linalg's promotion: integers and bool compute in float64; single precision stays
# single only when every operand is single precision.
_PRECISION = {"float32": "single", "complex64": "single", "float64": "double",
              "complex128": "double"}
_INTEGERS = frozenset({"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                       "uint64"})
_RESULT = {("single", False): "float32", ("single", True): "complex64",
           ("double", False): "float64", ("double", True): "complex128"}
_REAL = {"float32": "float32", "float64": "float64", "complex64": "float32",
         "complex128": "float64"}


def unsupported_dtype_error(name, dtype):
    """The error for operand ``name`` of an inexact type numpy.linalg refuses (float16,
    bfloat16, complex32, long double): NumPy's ``TypeError`` message, the argument named."""
    return UnsupportedDTypeError(f"{name}: array type {dtype} is unsupported in linalg")


def not_finite_error(name, index):
    """SciPy's ``check_finite`` error (a LinAlgError, SciPy's words): the matrix of operand
    ``name`` at batch index ``index`` holds a NaN or an infinity."""
    return LinAlgError(f"{name}: {NOT_FINITE}", index)


def result_dtype(*operands):
    """The dtype of the results of a function of operands ``(name, dtype)``, as numpy.linalg
    promotes: integers and bool to float64, float32 with float32 to float32, complex if any
    operand is complex; float16, bfloat16, complex32 and long double refused.

    Examples
    --------
    >>> from accelmath.linalg._checks import result_dtype
    >>> result_dtype(("a", "float32"), ("b", "int64"))
    'float64'
    >>> result_dtype(("a", "float32"), ("b", "complex64"))
    'complex64'
    """
    precision, is_complex = "single", False
    for name, dtype in operands:
        if dtype in _INTEGERS:
            precision = "double"
            continue
        operand_precision = _PRECISION.get(dtype)
        if operand_precision is None:
            raise unsupported_dtype_error(name, dtype)
        if operand_precision == "double":
            precision = "double"
        is_complex = is_complex or dtype.startswith("complex")
    return _RESULT[precision, is_complex]


# SciPy's LAPACK type scores (scipy.linalg.blas.find_best_blas_type): the highest of the
# operands' picks the routine's type (long double data is read in double before: see
# accelmath.linalg._operands.read)
_SCIPY_SCORE = {**dict.fromkeys(("bool", "int8", "uint8", "int16", "uint16", "float16",
                                 "float32"), 1),
                **dict.fromkeys(("int32", "uint32", "int64", "uint64", "float64"), 2),
                "complex64": 3, "complex128": 4}
_SCIPY_TYPE = {1: "float32", 2: "float64", 3: "complex64", 4: "complex128"}


def scipy_result_dtype(*operands):
    """The dtype of the results of a SciPy-style function of operands ``(name, dtype)``, as
    SciPy's LAPACK wrappers choose it: bool, integers of 8 and 16 bits, float16 and float32 in
    single precision, wider integers and float64 in double, complex64 with a double-precision
    real operand in complex128; other dtypes refused.

    Examples
    --------
    >>> from accelmath.linalg._checks import scipy_result_dtype
    >>> scipy_result_dtype(("a", "int16")), scipy_result_dtype(("a", "float16"))
    ('float32', 'float32')
    >>> scipy_result_dtype(("a", "complex64"), ("b", "int64"))
    'complex128'
    """
    scores = []
    for name, dtype in operands:
        score = _SCIPY_SCORE.get(dtype)
        if score is None:
            raise unsupported_dtype_error(name, dtype)
        scores.append(score)
    best = max(scores)
    if best == 3 and 2 in scores:  # (complex64 would lose a double's precision)
        best = 4
    return _SCIPY_TYPE[best]


def real_dtype(dtype):
    """The real dtype of results of ``dtype`` (eigenvalues, singular values).

    Examples
    --------
    >>> from accelmath.linalg._checks import real_dtype
    >>> real_dtype("complex64")
    'float32'
    """
    return _REAL[dtype]


def check_stacked_2d(shape, name="a"):
    """Raise LinAlgError (NumPy's message) unless ``shape`` has at least two dimensions."""
    if len(shape) < 2:
        raise LinAlgError(f"{name}: {len(shape)}-dimensional array given. Array must be at "
                          f"least two-dimensional")


def check_stacked_square(shape, name="a"):
    """Raise LinAlgError (NumPy's messages) unless ``shape`` is a stack of square matrices.

    Examples
    --------
    >>> from accelmath.linalg._checks import check_stacked_square
    >>> check_stacked_square((3, 2, 2))
    >>> check_stacked_square((2, 3))
    Traceback (most recent call last):
    ...
    accelmath.errors.LinAlgError: a: Last 2 dimensions of the array must be square; got shape (2, 3)
    """
    check_stacked_2d(shape, name)
    if shape[-1] != shape[-2]:
        raise LinAlgError(f"{name}: Last 2 dimensions of the array must be square; got shape "
                          f"{tuple(shape)}")


def check_2d(shape, name):
    """Raise LinAlgError (NumPy's message) unless ``shape`` is two-dimensional (lstsq)."""
    if len(shape) != 2:
        raise LinAlgError(f"{name}: {len(shape)}-dimensional array given. Array must be "
                          f"two-dimensional")


def broadcast_batch(shape_a, shape_b, names=("a", "b")):
    """The broadcast of batch shapes ``shape_a`` and ``shape_b`` (NumPy's rules), or
    InvalidArgumentError naming both.

    Examples
    --------
    >>> from accelmath.linalg._checks import broadcast_batch
    >>> broadcast_batch((4, 1), (3,))
    (4, 3)
    """
    try:
        return tuple(numpy.broadcast_shapes(tuple(shape_a), tuple(shape_b)))
    except ValueError:
        raise InvalidArgumentError(
            f"the batch dimensions of {names[0]} {tuple(shape_a)} and {names[1]} "
            f"{tuple(shape_b)} do not broadcast") from None


def solve_rhs(a_shape, b_shape):
    """NumPy 2's rule for ``solve(a, b)``'s right-hand side, ``a`` of shape (..., n, n):
    ``b`` is a vector (n,) only when it is 1-D, else a stack (..., n, k); batch dimensions
    broadcast.

    Returns
    -------
    vector : bool
        Whether ``b`` is one vector.
    batch : tuple of int
        The broadcast batch shape of the result.

    Examples
    --------
    >>> from accelmath.linalg._checks import solve_rhs
    >>> solve_rhs((5, 3, 3), (3,))
    (True, (5,))
    >>> solve_rhs((3, 3), (5, 3, 2))
    (False, (5,))
    """
    return _rhs(a_shape, b_shape, ("a", "b"),
                "solve needs a vector (n,) or a stack of matrices (..., n, k)")


def scipy_rhs(a_shape, b_shape, names=("a", "b")):
    """SciPy's rule for the right-hand side of cho_solve, lu_solve and solve_triangular,
    the matrix of shape (..., n, n): ``b`` of shape (n,) when it is 1-D, else (..., n, k);
    batch dimensions broadcast. Returns ``(vector, batch)`` as :func:`solve_rhs`.

    Examples
    --------
    >>> from accelmath.linalg._checks import scipy_rhs
    >>> scipy_rhs((2, 4, 4), (4, 3))
    (False, (2,))
    """
    return _rhs(a_shape, b_shape, names,
                "a vector (n,) or a stack of matrices (..., n, k) is needed")


def _rhs(a_shape, b_shape, names, needed):
    """solve_rhs's and scipy_rhs's rule (the same; ``needed`` words a 0-d ``b``'s error)."""
    n = a_shape[-1]
    if len(b_shape) == 0:
        raise InvalidArgumentError(f"{names[1]}: 0-dimensional array given; {needed}, n = {n}")
    vector = len(b_shape) == 1
    axis = 0 if vector else len(b_shape) - 2
    if b_shape[axis] != n:
        raise InvalidArgumentError(
            f"{names[1]} of shape {tuple(b_shape)} does not match {names[0]} of shape "
            f"{tuple(a_shape)}: its axis {axis} has length {b_shape[axis]}, {n} needed")
    return vector, broadcast_batch(a_shape[:-2], () if vector else b_shape[:-2], names)


def lstsq_shapes(a_shape, b_shape):
    """numpy.linalg.lstsq's shape rules: ``a`` (m, n), ``b`` (m,) or (m, k); NumPy's
    LinAlgErrors otherwise. Returns whether ``b`` is a vector.

    Examples
    --------
    >>> from accelmath.linalg._checks import lstsq_shapes
    >>> lstsq_shapes((4, 2), (4,))
    True
    """
    vector = len(b_shape) == 1
    check_2d(a_shape, "a")
    check_2d(b_shape + (1,) if vector else b_shape, "b")
    if a_shape[0] != b_shape[0]:
        raise LinAlgError(f"Incompatible dimensions: a has {a_shape[0]} rows, b "
                          f"{b_shape[0]}")
    return vector


def factor_pair(pair, name, parts, maker):
    """A factorization given as one argument (``lu_solve``'s ``lu_and_piv``, ``cho_solve``'s
    ``c_and_lower``): ``pair``, a tuple or list of two items, else InvalidArgumentError
    naming ``name``, what ``maker`` returns (``parts``) and what was given.

    Examples
    --------
    >>> from accelmath.linalg._checks import factor_pair
    >>> factor_pair((1, 2, 3), "lu_and_piv", "(lu, piv)", "lu_factor")
    Traceback (most recent call last):
    ...
    accelmath.errors.InvalidArgumentError: lu_and_piv must be the pair (lu, piv) that ...
    """
    if isinstance(pair, (tuple, list)):
        if len(pair) == 2:
            return pair
        given = f"a {type(pair).__name__} of {len(pair)} items"
    else:  # (an array would unpack into its rows: refused, not read as two parts)
        given = f"an object of type {type(pair).__name__}"
    raise InvalidArgumentError(f"{name} must be the pair {parts} that {maker} returns, got "
                               f"{given}")


def lu_pivots(lu_shape, piv_shape, piv_dtype):
    """Check lu_solve's factors: ``lu`` a stack of square matrices (..., n, n), ``piv``
    integers of shape (..., n) whose batch broadcasts with lu's; InvalidArgumentError
    otherwise. Returns the dtype the pivots are read in: int32 (lu_factor's) as they are,
    any other integers as int64, which keeps every value out of range out of range (a
    uint64 past int64's range turns negative), where int32 would wrap some into it.

    Examples
    --------
    >>> from accelmath.linalg._checks import lu_pivots
    >>> lu_pivots((2, 3, 3), (3,), "int32"), lu_pivots((3, 3), (3,), "uint64")
    ('int32', 'int64')
    """
    check_stacked_square(lu_shape, "lu")
    if piv_dtype not in _INTEGERS or piv_dtype == "bool":
        raise InvalidArgumentError(f"piv must hold integers (as lu_factor gives them), got "
                                   f"dtype {piv_dtype}")
    if len(piv_shape) < 1 or piv_shape[-1] != lu_shape[-1]:
        raise InvalidArgumentError(f"piv of shape {tuple(piv_shape)} does not match lu of "
                                   f"shape {tuple(lu_shape)}: (..., {lu_shape[-1]}) needed")
    broadcast_batch(lu_shape[:-2], piv_shape[:-1], ("lu", "piv"))
    return "int32" if piv_dtype == "int32" else "int64"


_UNSIGNED = {4: numpy.dtype("uint32"), 8: numpy.dtype("uint64")}


class BadPivot(NamedTuple):
    """The first pivot out of range in a stack of lu_solve's pivots (:func:`bad_pivot`'s)."""

    index: tuple  # the batch index of its matrix
    position: int  # its place among the matrix's n pivots
    value: int
    n: int  # the order of the matrices
    one_based: bool  # its matrix's pivots are getrf's 1-based ones (row i's in [i + 1, n])

    def error(self, index=None):
        """The InvalidArgumentError that refuses it, naming ``piv`` and the batch index
        (``index`` where given: the index in piv's own batch, where a broadcast of piv was
        searched)."""
        index = self.index if index is None else tuple(index)
        hint = ("; they look 1-based (LAPACK's ipiv): pass piv - 1" if self.one_based
                else "")
        return InvalidArgumentError(
            f"piv: pivot {self.value} at position {self.position} is out of range for lu of "
            f"order {self.n}: lu_factor's pivots are 0-based, in [0, {self.n}){hint} (batch "
            f"index {index})")


def bad_pivot(piv, n):
    """The first pivot out of [0, n) in host array ``piv`` (..., n) of signed integers
    (lu_solve's, as :func:`lu_pivots` reads them: int32 or int64), as a :class:`BadPivot`,
    or None (one reduction where none is: a negative pivot is a large one as unsigned).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._checks import bad_pivot
    >>> bad_pivot(np.array([[0, 1, 2], [1, -1, 2]], np.int32), 3)
    BadPivot(index=(1,), position=1, value=-1, n=3, one_based=False)
    >>> bad_pivot(np.array([0, 2, 2]), 3) is None
    True
    """
    if piv.itemsize < 4:  # (as unsigned, a negative int8 or int16 may be below n)
        piv = piv.astype(numpy.int64)
    if not piv.size or piv.view(_UNSIGNED[piv.itemsize]).max() < n:
        return None
    bad = (piv < 0) | (piv >= n)
    first = numpy.unravel_index(int(numpy.argmax(bad)), piv.shape)
    index = tuple(int(i) for i in first[:-1])
    own = piv[index]
    return BadPivot(index, int(first[-1]), int(own[first[-1]]), n,
                    bool(((own > numpy.arange(n)) & (own <= n)).all()))


def check_pivots(piv, n):
    """Raise InvalidArgumentError naming ``piv`` and the batch index of the first matrix of
    host array ``piv`` (..., n) with a pivot out of [0, n) (see :func:`bad_pivot`).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._checks import check_pivots
    >>> check_pivots(np.array([1, 2, 3], np.int32), 3)
    Traceback (most recent call last):
    ...
    accelmath.errors.InvalidArgumentError: piv: pivot 3 at position 2 is out of range ...
    """
    found = bad_pivot(piv, n)
    if found is not None:
        raise found.error()


#: NumPy's deprecated modes of qr: the mode each now stands for ("economic": the reflectors of
#: "raw", untransposed), and NumPy's warning.
QR_DEPRECATED = {
    "full": ("reduced", "The 'full' option is deprecated in favor of 'reduced'.\n"
                        "For backward compatibility let mode default."),
    "economic": ("economic", "The 'economic' option is deprecated.")}
QR_DEPRECATED["f"], QR_DEPRECATED["e"] = QR_DEPRECATED["full"], QR_DEPRECATED["economic"]


def deprecated_qr_mode(mode):
    """The mode that NumPy's deprecated qr ``mode`` (a key of :data:`QR_DEPRECATED`) stands
    for, after NumPy's DeprecationWarning.

    Examples
    --------
    >>> import warnings
    >>> from accelmath.linalg._checks import deprecated_qr_mode
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     deprecated_qr_mode("f")
    'reduced'
    >>> seen[0].category.__name__
    'DeprecationWarning'
    """
    now, message = QR_DEPRECATED[mode]
    warnings.warn(message, DeprecationWarning, stacklevel=outside_stacklevel())
    return now


def check_mode(mode):
    """qr's ``mode``: "reduced", "complete", "r" or "raw", else InvalidArgumentError.

    Examples
    --------
    >>> from accelmath.linalg._checks import check_mode
    >>> check_mode("full")
    Traceback (most recent call last):
    ...
    accelmath.errors.InvalidArgumentError: Invalid mode 'full', should be "reduced", ...
    """
    if not isinstance(mode, str) or mode not in QR_MODES:
        raise InvalidArgumentError(
            f'Invalid mode {mode!r}, should be "reduced", "complete", "r" or "raw"')
    return mode


def check_uplo(uplo):
    """``UPLO`` as "L" or "U" (either case, as NumPy), else InvalidArgumentError.

    Examples
    --------
    >>> from accelmath.linalg._checks import check_uplo
    >>> check_uplo("u")
    'U'
    """
    normalized = uplo.upper() if isinstance(uplo, str) else None
    if normalized not in ("L", "U"):
        raise InvalidArgumentError(f"Invalid UPLO {uplo!r}, should be 'L' or 'U'")
    return normalized


def check_trans(trans):
    """``trans`` of lu_solve and solve_triangular as 0, 1 or 2 (0 or "N": a x = b, 1 or
    "T": a^T x = b, 2 or "C": a^H x = b), else InvalidArgumentError.

    Examples
    --------
    >>> from accelmath.linalg._checks import check_trans
    >>> check_trans("C"), check_trans(1)
    (2, 1)
    """
    try:
        normalized = None if isinstance(trans, bool) else _TRANS.get(trans)
    except TypeError:  # unhashable
        normalized = None
    if normalized is None:
        raise InvalidArgumentError(
            f"Invalid trans {trans!r}, should be 0, 1, 2, 'N', 'T' or 'C'")
    return normalized


def check_method(method):
    """``method``: "auto", "cusolver", "batched" or "small", else InvalidArgumentError."""
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidArgumentError(
            f'Invalid method {method!r}, should be "auto", "cusolver", "batched" or "small"')
    return method


def check_rcond(rcond):
    """lstsq's ``rcond``: None (NumPy's default, machine epsilon times max(m, n)) or a real
    number, else InvalidArgumentError."""
    if rcond is None:
        return None
    if not isinstance(rcond, (bool, str, bytes)):
        try:
            return float(rcond)
        except (TypeError, ValueError):
            pass
    raise InvalidArgumentError(f"rcond must be None or a real number, got {rcond!r}")


# Arrays of at most this many entries are summed by vdot in all_finite (OpenBLAS's dot stays on
# one thread up to 10000 entries)
_DOT_SIZE = 4096


def all_finite(array):
    """Whether host array ``array`` surely holds no NaN and no infinity: True where the sum
    of its entries (of their squares, ``vdot``, on a small dense array, where that call
    costs least) is finite, as it is where every entry is. One pass that allocates nothing,
    a third of the time of ``isfinite(array).all()``; False also where a sum of finite
    entries overflows, for the exact search (:func:`first_nonfinite`) to settle.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._checks import all_finite
    >>> all_finite(np.eye(3)), all_finite(np.array([1.0, np.inf]))
    (True, False)
    >>> all_finite(np.array([1e308, 1e308]))  # (an overflow: the exact search settles it)
    False
    """
    if array.__class__ is not numpy.ndarray:  # (numpy.matrix: its products are matrices)
        array = array.view(numpy.ndarray)
    if 0 in array.strides:  # (a broadcast view: its own entries once, not each repeat)
        array = array[tuple(slice(0, 1) if s == 0 else slice(None) for s in array.strides)]
    dense = array.flags.c_contiguous
    if dense and array.size <= _DOT_SIZE:
        total = numpy.vdot(array, array)  # (BLAS's: no floating-point warnings)
    else:  # (NumPy's own loop: BLAS's dot runs on threads on large arrays, to no gain here)
        with numpy.errstate(over="ignore", invalid="ignore"):  # (an overflow, inf - inf)
            # (a dense array as one axis: NumPy's 1-D loop, a fifth faster)
            total = numpy.add.reduce(array.ravel() if dense else array, axis=None)
    return cmath.isfinite(total)


def first_nonfinite(array, core_ndim):
    """The batch index (a tuple) of the first matrix of host array ``array`` (its last
    ``core_ndim`` axes a matrix or vector) that holds a NaN or an infinity, or None."""
    if all_finite(array):
        return None
    finite = numpy.isfinite(array, subok=False)  # (of a numpy.matrix too: an ndarray)
    if finite.all():
        return None
    batch_ndim = array.ndim - core_ndim
    bad = ~finite.reshape(array.shape[:batch_ndim] + (-1,)).all(axis=-1)
    return tuple(int(i) for i in numpy.argwhere(bad)[0])


def check_finite(array, core_ndim, name):
    """SciPy's ``check_finite``: raise LinAlgError (SciPy's words, a ``ValueError`` as
    SciPy raises) naming ``name`` and the batch index of the first matrix of host array
    ``array`` that holds a NaN or an infinity.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._checks import check_finite
    >>> check_finite(np.array([[[1.0]], [[np.nan]]]), 2, "a")
    Traceback (most recent call last):
    ...
    accelmath.errors.LinAlgError: a: array must not contain infs or NaNs (batch index (1,))
    """
    index = first_nonfinite(array, core_ndim)
    if index is not None:
        raise not_finite_error(name, index)


def check_options(check, method, execution):
    """The options most functions share, checked: ``(check, method, execution)``."""
    return (check_flag(check, "check"), check_method(method),
            check_execution(execution))


def finite_names(check, *names):
    """The operands a device call checks for NaN and Inf (where its route finds them: the
    small kernels as they load, cuSOLVER's routes in their copies, else
    :mod:`accelmath.linalg._device.finite`): those named, under ``check=True``; none without it."""
    return names if check else None

"""The rules of matrix products, pure and CPU-testable: NumPy's ``matmul`` shapes and errors,
the dtypes and their precisions, and how row-major operands map to cuBLASLt's column-major
layouts and operations.

cuBLASLt is column-major; NumPy is row-major. A C-ordered m x n result read column-major is
its n x m transpose, so a product ``d = a @ b`` is computed as ``d^T = b^T a^T``: cuBLASLt's
A is ``b^T`` (n x k), its B is ``a^T`` (k x m), its C and D are ``c^T`` and ``d^T`` (n x m).
A C-ordered operand then needs no operation, an F-ordered (transposed) one is read with
``T``, and a lazily conjugated transposed view (torch's ``x.mH``) with ``C``; a layout no
operation expresses is copied first.
"""

import itertools
from typing import NamedTuple

from accelmath._core.arguments import check_flag
from accelmath._core.layout import contiguous_strides
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError

__all__ = ["DTYPES", "Precision", "Product", "Stored", "Batches", "precision", "product",
           "check_dtypes", "check_result", "stored", "dense_stored", "batches",
           "own_batch_strides", "bias_length"]

_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"
_NAMES = ("a", "b")


class Precision(NamedTuple):
    """How cuBLASLt computes products of one dtype.

    Attributes
    ----------
    compute : str
        The ``cublasComputeType_t`` (a key of ``cublas.COMPUTE_TYPE``).
    scale : str
        The dtype of ``alpha`` and ``beta`` (the scale type).
    """

    compute: str
    scale: str


#: dtype -> Precision: half precisions accumulate in single precision, as torch does.
DTYPES = {
    "float16": Precision("32F", "float32"),
    "bfloat16": Precision("32F", "float32"),
    "float32": Precision("32F", "float32"),
    "float64": Precision("64F", "float64"),
    "complex64": Precision("32F", "complex64"),
    "complex128": Precision("64F", "complex128"),
}


def precision(dtype, allow_tf32):
    """The :class:`Precision` of products of ``dtype``; TF32 (float32 operands only) where
    ``allow_tf32`` is True.

    Examples
    --------
    >>> from accelmath.linalg._matmul.rules import precision
    >>> precision("float16", False)
    Precision(compute='32F', scale='float32')
    >>> precision("float32", True).compute
    '32F_FAST_TF32'
    """
    if check_flag(allow_tf32, "allow_tf32", integers=False):
        if dtype != "float32":
            raise InvalidArgumentError(
                f"allow_tf32=True applies to float32 operands (TF32 tensor cores); the "
                f"operands are {dtype}: leave allow_tf32 out")
        return Precision("32F_FAST_TF32", "float32")
    return DTYPES[dtype]


def check_dtypes(named):
    """The one dtype of the operands ``(name, dtype)`` (None dtypes are skipped), or the
    error: a dtype matmul does not take, or two dtypes (cuBLASLt multiplies operands of one
    dtype, and nothing is converted behind the caller's back).

    Examples
    --------
    >>> from accelmath.linalg._matmul.rules import check_dtypes
    >>> check_dtypes([("a", "float32"), ("b", "float32"), ("c", None)])
    'float32'
    """
    first = None
    for name, dtype in named:
        if dtype is None:
            continue
        if dtype not in DTYPES:
            raise UnsupportedDTypeError(
                f"{name} has dtype {dtype}; matmul takes {', '.join(DTYPES)} operands: "
                f"cast it first, e.g. {name}.astype('float64')")
        if first is None:
            first = (name, dtype)
        elif dtype != first[1]:
            raise UnsupportedDTypeError(
                f"{name} has dtype {dtype} but {first[0]} has dtype {first[1]}; matmul "
                f"multiplies operands of one dtype (cuBLASLt does not mix them here): cast "
                f"one, e.g. {name}.astype('{first[1]}') or {first[0]}.astype('{dtype}')")
    return first[1]


class Product(NamedTuple):
    """The shapes of a product, as ``numpy.matmul`` reads them.

    Attributes
    ----------
    batch : tuple of int
        The broadcast leading dimensions.
    m, k, n : int
        ``a`` is m x k, ``b`` k x n (a 1-D ``a`` is 1 x k, a 1-D ``b`` k x 1).
    a_vector, b_vector : bool
        Whether ``a`` or ``b`` is 1-D (its axis of length 1 is removed from the result).
    shape : tuple of int
        The result's shape.
    """

    batch: tuple
    m: int
    k: int
    n: int
    a_vector: bool
    b_vector: bool
    shape: tuple

    @property
    def matrix_shape(self):
        """The result seen as a batch of m x n matrices (the 1-D axes kept)."""
        return self.batch + (self.m, self.n)


def product(a_shape, b_shape):
    """The :class:`Product` of operands of shapes ``a_shape`` and ``b_shape``, or NumPy's
    error naming the operand.

    Examples
    --------
    >>> from accelmath.linalg._matmul.rules import product
    >>> product((5, 1, 2, 3), (4, 3, 6)).shape
    (5, 4, 2, 6)
    >>> product((3,), (3,)).shape
    ()
    """
    for i, shape in enumerate((a_shape, b_shape)):
        if len(shape) == 0:
            raise InvalidArgumentError(
                f"matmul: Input operand {i} ({_NAMES[i]}) does not have enough dimensions "
                f"(has 0, gufunc core with signature {_SIGNATURE} requires 1)")
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    m, k = (1, a_shape[0]) if a_vector else a_shape[-2:]
    kb, n = (b_shape[0], 1) if b_vector else b_shape[-2:]
    if kb != k:
        raise InvalidArgumentError(
            f"matmul: Input operand 1 (b) has a mismatch in its core dimension 0, with gufunc "
            f"signature {_SIGNATURE} (size {kb} is different from {k}): a has shape "
            f"{tuple(a_shape)}, b has shape {tuple(b_shape)}")
    a_batch, b_batch = tuple(a_shape[:-2]), tuple(b_shape[:-2])
    batch = broadcast_batch(a_batch, b_batch)
    shape = batch + (() if a_vector else (m,)) + (() if b_vector else (n,))
    return Product(batch, m, k, n, a_vector, b_vector, shape)


def broadcast_batch(a_batch, b_batch):
    """The broadcast of two batch shapes, or the error naming both."""
    ndim = max(len(a_batch), len(b_batch))
    pa = (1,) * (ndim - len(a_batch)) + a_batch
    pb = (1,) * (ndim - len(b_batch)) + b_batch
    out = []
    for x, y in zip(pa, pb):
        if x != y and 1 not in (x, y):
            raise InvalidArgumentError(
                f"matmul: operands could not be broadcast together: a has batch shape "
                f"{a_batch} and b has batch shape {b_batch}")
        out.append(y if x == 1 else x)
    return tuple(out)


def check_result(shape, expected, name):
    """Raise unless operand ``name`` (``c``, ``out``) has the result's shape."""
    if tuple(shape) != tuple(expected):
        # (out: in NumPy's words too, which its own tests match)
        lead = "non-broadcastable output operand: " if name == "out" else ""
        raise InvalidArgumentError(
            f"{lead}{name} has shape {tuple(shape)}; it must have the result's shape "
            f"{tuple(expected)}")


def bias_length(shape, strides, n, name="bias"):
    """Raise unless ``name`` is a vector of length ``n`` (the result's last axis)."""
    if len(shape) != 1 or shape[0] != n:
        raise InvalidArgumentError(
            f"{name} has shape {tuple(shape)}; it runs along the result's last axis: shape "
            f"({n},)")


def matrix_strides(shape, strides, vector_axis):
    """Strides of an operand as a batch of matrices: a 1-D ``a`` (``vector_axis`` 0) is a
    1 x k row, a 1-D ``b`` (``vector_axis`` 1) a k x 1 column (the new axis: stride 0)."""
    if len(shape) != 1:
        return tuple(shape), tuple(strides)
    if vector_axis == 0:
        return (1, shape[0]), (0, strides[0])
    return (shape[0], 1), (strides[0], 0)


def own_batch_strides(shape, strides, batch):
    """An operand's strides over the broadcast ``batch`` (0 along the axes it broadcasts
    over), from its matrix shape and strides."""
    own = len(shape) - 2
    out = []
    for axis in range(len(batch)):
        i = axis - len(batch) + own
        out.append(0 if i < 0 or shape[i] == 1 else strides[i])
    return tuple(out)


class Stored(NamedTuple):
    """How cuBLASLt reads one of its column-major operands.

    Attributes
    ----------
    op : str
        ``"N"``, ``"T"`` or ``"C"`` (a key of ``cublas.OPERATION``).
    rows, cols, ld : int
        The stored column-major matrix (before ``op``) and its leading dimension.
    """

    op: str
    rows: int
    cols: int
    ld: int


def stored(rows, cols, row_stride, col_stride, conj=False, transposable=True):
    """How cuBLASLt reads a rows x cols operand whose element (r, c) lies at
    ``r * row_stride + c * col_stride``, conjugated where ``conj``: a :class:`Stored`, or
    None where no operation expresses it (negative or zero strides, overlapping or
    gapped rows, a conjugate that is not transposed): the operand is copied then.

    Examples
    --------
    >>> from accelmath.linalg._matmul.rules import stored
    >>> stored(4, 3, 1, 4)   # column-major already
    Stored(op='N', rows=4, cols=3, ld=4)
    >>> stored(4, 3, 3, 1)   # row-major: the transpose of a column-major 3 x 4
    Stored(op='T', rows=3, cols=4, ld=3)
    >>> stored(4, 3, 3, 1, conj=True).op
    'C'
    >>> stored(4, 3, 1, 4, conj=True) is None
    True
    """
    if not conj and (rows == 1 or row_stride == 1) and (
            cols == 1 or col_stride >= max(rows, 1)):
        return Stored("N", rows, cols, col_stride if cols > 1 else max(rows, 1))
    if transposable and (cols == 1 or col_stride == 1) and (
            rows == 1 or row_stride >= max(cols, 1)):
        return Stored("C" if conj else "T", cols, rows,
                      row_stride if rows > 1 else max(cols, 1))
    return None


def dense_stored(rows, cols):
    """The layout of a dense column-major copy of a rows x cols operand."""
    return Stored("N", rows, cols, max(rows, 1))


class Batches(NamedTuple):
    """How a batch of products runs: strided batches of ``count`` matrices, at ``strides``
    (elements, one per operand) apart, once at each of ``offsets`` (tuples of element
    offsets, one per operand).

    Examples
    --------
    >>> from accelmath.linalg._matmul.rules import batches
    >>> batches((4, 3), [(3, 1), (0, 0)])
    Batches(count=12, strides=(1, 0), offsets=((0, 0),))
    """

    count: int
    strides: tuple
    offsets: tuple


def batches(batch, operand_strides):
    """The :class:`Batches` of a batch shape and each operand's strides over it (0 where
    it broadcasts): the innermost axes that step evenly in every operand become one strided
    batch; the outer ones are a loop of offsets."""
    count = len(operand_strides)
    axes = [(n, tuple(s[i] for s in operand_strides)) for i, n in enumerate(batch) if n != 1]
    inner_count, inner = 1, (0,) * count
    if axes:
        inner_count, inner = axes.pop()
    while axes:
        n, strides = axes[-1]
        if any(s != t * inner_count for s, t in zip(strides, inner)):
            break
        inner_count *= n
        axes.pop()
    offsets = []
    for index in itertools.product(*(range(n) for n, _ in axes)):
        offsets.append(tuple(sum(i * strides[o] for i, (_, strides) in zip(index, axes))
                             for o in range(count)))
    return Batches(inner_count, inner, tuple(offsets) if axes else ((0,) * count,))


def dense_batch_strides(own_shape, size):
    """Element strides over the batch axes of a dense copy of an operand's own matrices
    (``size`` elements each; 0 along the axes it broadcasts over, of extent 1)."""
    strides = contiguous_strides(tuple(own_shape))
    return tuple(0 if n == 1 else s * size for n, s in zip(own_shape, strides))

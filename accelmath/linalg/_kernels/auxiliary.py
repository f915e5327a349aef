"""Auxiliary CUDA kernels of the linear-algebra device path: the copies, determinants, pivot
conversions and checks around cuSOLVER calls.

One NVRTC source (:data:`SOURCE`, in :mod:`accelmath.linalg._kernels.source`) holds every
kernel, templated on the element type, with ``extern "C"`` entry points per dtype
(``<kernel>_<dtype>``); it is compiled once per device (and kept in the on-disk store) and
launched on the caller's stream. Every launcher takes device addresses
(ints), sizes, a dtype name, a stream handle and a device ordinal; none synchronizes or
allocates.

Matrices are column-major (Fortran) batches unless a launcher takes strides: element
``(b, i, j)`` of a batch of m x n matrices at ``b*m*n + i + j*m``.
"""

import ctypes
import functools
import itertools
import math

import numpy

from accelmath._core.gpu.kernels import merge_dims
from accelmath._core.gpu.launch import config, launch
from accelmath._core.gpu.modules import SourceModules
from accelmath._core.operand import ITEMSIZE
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._kernels.source import SOURCE
from accelmath.linalg._matmul import small

__all__ = ["DTYPES", "MAX_BATCH_DIMS", "PIVOT_DTYPES", "SOURCE", "copy_matrices", "det",
           "fail_to_nan", "flag_nonfinite", "nonfinite_blocks", "identity", "log_det",
           "pivots_from_scipy", "pivots_to_scipy", "pointer_array", "prepare", "swap_rows",
           "swap_rows_fit", "zero_diagonal"]

DTYPES = ("float32", "float64", "complex64", "complex128")
PIVOT_DTYPES = ("int32", "int64")
MAX_BATCH_DIMS = 6
_TRIANGLES = {None: 0, "L": 1, "U": 2}


class _Batch(ctypes.Structure):
    _fields_ = [("shape", ctypes.c_longlong * MAX_BATCH_DIMS),
                ("src", ctypes.c_longlong * MAX_BATCH_DIMS),
                ("dst", ctypes.c_longlong * MAX_BATCH_DIMS)]


_THREADS = 256
_MAX_GRID_Y = 65535
# swap_rows holds a column and its pivots in the dynamic shared memory a kernel may take
# without opting in
_SWAP_SHARED = 48 * 1024
# copies whose two sides run along different axes go through tiles of _TILE x _TILE elements
# (blocks of _TILE_THREADS threads) where both matrix sides are at least _TILE_FROM
_TILE, _TILE_THREADS, _TILE_FROM = 32, 256, 16
# the kernels' module on a device, and the most blocks worth launching there
_module = SourceModules(SOURCE, "accelmath_linalg.cu")


def _check_dtype(dtype, allowed=DTYPES, name="dtype"):
    if dtype not in allowed:
        raise UnsupportedDTypeError(
            f"{name}={dtype!r} is not supported by the linear-algebra kernels: expected one of "
            f"{', '.join(repr(d) for d in allowed)}")


def _blocks(count, most):
    return max(1, min(-(-count // _THREADS), most))


def prepare(*dtypes, device=0, wait=False):
    """Compile the linear-algebra device path's auxiliary kernels (copies, determinants,
    diagonals) and its small-product kernel (float32 and float64) for ``dtypes`` on
    ``device``, or load them from the on-disk store, so that the first solve of a process
    does not wait for their compiler (about a second per dtype when the store is empty), and
    its first small products run on the kernel (a product planned while the kernel compiles
    runs on cuBLASLt). The kernels of small matrices (``method="small"``, and the
    orders ``method="auto"`` gives them: ``_context.small_fits``) are compiled per order
    when first used, not here.

    Parameters
    ----------
    *dtypes : str or numpy dtype
        Among float32, float64, complex64 and complex128.
    device : int, optional
        The GPU's ordinal (default 0).
    wait : bool, optional
        Wait for the compiles and load the kernels (default False: they run on threads of
        their own, NVRTC without the interpreter lock, and the first solve of each dtype
        waits only for what is left of its compile).

    Examples
    --------
    >>> from accelmath import linalg, gpu_available
    >>> linalg.prepare("float64") if gpu_available() else None
    """
    names = []
    for dtype in dtypes:
        try:  # (numpy.dtype(None) is float64: None is refused, not read as a default)
            name = repr(dtype) if dtype is None else numpy.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
        _check_dtype(name)
        names.append(name)
    for name in names:
        if wait:
            _module(device, name)
        else:
            _module.compile_soon(device, name)
        small.prepare(device, name, wait)


def _launch_flat(name, count, args, stream, device_id, dtype=None):
    """Launch kernel ``name`` (of ``dtype``'s module; None: a kernel of no dtype) over
    ``count`` elements (grid-stride, one dimension)."""
    module, most = _module(device_id, dtype)
    launch(module.function(name), config(_blocks(count, most), _THREADS), args, stream)


def _launch_rows(name, per_matrix, batch, args, stream, device_id, dtype, blocks=None):
    """Launch kernel ``name`` of ``dtype``'s module over ``batch`` matrices of ``per_matrix``
    elements: matrices in y (at most 65535, the rest by a loop), their elements in x
    (``blocks`` blocks, default as many as the device runs at once, fewer for small
    matrices)."""
    module, most = _module(device_id, dtype)
    blocks = _blocks(per_matrix, most) if blocks is None else blocks
    launch(module.function(name), config((blocks, min(batch, _MAX_GRID_Y)), _THREADS), args,
           stream)


def copy_matrices(src_ptr, dst_ptr, batch_shape, src_batch_strides, dst_batch_strides, m, n,
                  src_strides, dst_strides, dtype, stream, device_id, triangle=None,
                  conj=False, transpose=False, flags_ptr=0):
    """Enqueue a copy of a strided batch of m x n matrices into another strided layout.

    Parameters
    ----------
    src_ptr, dst_ptr : int
        Device addresses of the first elements; the two must not overlap.
    batch_shape : tuple of int
        The batch extents (any number: past :data:`MAX_BATCH_DIMS` after merging contiguous
        ones, a launch for each index of the leading ones).
    src_batch_strides, dst_batch_strides : tuple of int
        Batch strides in elements; a source stride may be 0 (a broadcast batch dimension).
    m, n : int
        Rows and columns of each source matrix.
    src_strides : (int, int)
        The source's (row, column) strides in elements.
    dst_strides : (int, int)
        The destination's (row, column) strides in elements; the destination matrix is
        n x m where ``transpose``.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    triangle : {None, "L", "U"}
        Copy only the source's lower (``i >= j``) or upper (``i <= j``) triangle, diagonal
        included, and write zeros for the rest.
    conj : bool
        Conjugate the values (complex dtypes).
    transpose : bool
        Write source element ``(i, j)`` at destination ``(j, i)``.
    flags_ptr : int, optional
        Device address of an int32 per matrix of the batch (C order over ``batch_shape``):
        set to 1 for each matrix holding a NaN or an infinity (every element read, both
        triangles), the others left as they are; 0: no check.
    """
    launches = _copy_launch(tuple(batch_shape), tuple(src_batch_strides),
                            tuple(dst_batch_strides), m, n, tuple(src_strides),
                            tuple(dst_strides), dtype, device_id, triangle, bool(conj),
                            bool(transpose))
    for src_offset, dst_offset, flag_offset, function, launch_config, args in launches:
        launch(function, launch_config,
               (ctypes.c_void_p(src_ptr + src_offset), ctypes.c_void_p(dst_ptr + dst_offset))
               + args + (ctypes.c_void_p(flags_ptr + flag_offset if flags_ptr else 0),),
               stream)


@functools.lru_cache(maxsize=512)
def _copy_launch(batch_shape, src_batch_strides, dst_batch_strides, m, n, src_strides,
                 dst_strides, dtype, device_id, triangle, conj, transpose):
    """What :func:`copy_matrices` launches for its arguments but the addresses and the
    stream, checked and made once: per launch, ``(source, destination and flags offsets in
    bytes, kernel, launch configuration, the arguments between the two addresses and the
    flags)``; none for an empty copy, one but for a batch of more than
    :data:`MAX_BATCH_DIMS` dimensions after merging (a launch for each index of the
    leading ones). (The ctypes values are only read.)"""
    _check_dtype(dtype)
    if triangle not in _TRIANGLES:
        raise InvalidArgumentError(f"triangle={triangle!r} is not one of None, 'L' or 'U'")
    if not len(batch_shape) == len(src_batch_strides) == len(dst_batch_strides):
        raise InvalidArgumentError(
            f"batch_shape={tuple(batch_shape)!r}, src_batch_strides="
            f"{tuple(src_batch_strides)!r} and dst_batch_strides={tuple(dst_batch_strides)!r} "
            f"differ in length")
    dims = merge_dims([(e, s, d) for e, s, d in zip(batch_shape, src_batch_strides,
                                                     dst_batch_strides) if e != 1])
    if len(dims) > MAX_BATCH_DIMS:
        lead, rest = dims[:-MAX_BATCH_DIMS], dims[-MAX_BATCH_DIMS:]
        one = _copy_launch(tuple(e for e, _, _ in rest), tuple(s for _, s, _ in rest),
                           tuple(d for _, _, d in rest), m, n, src_strides, dst_strides,
                           dtype, device_id, triangle, conj, transpose)
        per, size = 4 * math.prod(e for e, _, _ in rest), ITEMSIZE[dtype]
        return tuple(
            (size * sum(i * s for i, (_, s, _) in zip(index, lead)),
             size * sum(i * d for i, (_, _, d) in zip(index, lead)), per * k) + part[3:]
            for k, index in enumerate(itertools.product(*(range(e) for e, _, _ in lead)))
            for part in one)
    count = m * n
    for extent, _, _ in dims:
        count *= extent
    if count == 0:
        return ()
    batch = _Batch()
    for k, (extent, s, d) in enumerate(dims):
        batch.shape[k], batch.src[k], batch.dst[k] = extent, s, d
    s_i, s_j = src_strides
    d_i, d_j = dst_strides[::-1] if transpose else dst_strides
    triangle = _TRIANGLES[triangle]
    # the kernels' threads run along i: make i the axis the destination runs along (the
    # swap turns a lower triangle into an upper one)
    if abs(d_j) < abs(d_i):
        m, n, s_i, s_j, d_i, d_j = n, m, s_j, s_i, d_j, d_i
        triangle = (0, 2, 1)[triangle]
    mode = triangle | (4 if conj else 0)
    strides = (ctypes.c_longlong(s_i), ctypes.c_longlong(s_j), ctypes.c_longlong(d_i),
               ctypes.c_longlong(d_j), ctypes.c_int(mode))
    module, most = _module(device_id, dtype)
    if abs(s_j) < abs(s_i) and min(m, n) >= _TILE_FROM:
        # the source runs along j: through shared-memory tiles
        tiles_j = -(-n // _TILE)
        per_matrix = -(-m // _TILE) * tiles_j
        tiles = per_matrix * (count // (m * n))
        name = ("tiles32_" if count < 2**32 else "tiles_") + dtype
        args = (ctypes.c_longlong(tiles), ctypes.c_longlong(tiles_j),
                ctypes.c_longlong(per_matrix), ctypes.c_longlong(m), ctypes.c_longlong(n),
                ctypes.c_int(len(dims)), batch) + strides
        return ((0, 0, 0, module.function(name),
                 config(min(tiles, most * _THREADS // _TILE_THREADS),
                        (_TILE, _TILE_THREADS // _TILE)), args),)
    # 32-bit index arithmetic where it suffices: its divisions cost a fraction of 64-bit ones
    name = ("copy32_" if count < 2**32 else "copy_") + dtype
    args = (ctypes.c_longlong(count), ctypes.c_longlong(m), ctypes.c_longlong(n),
            ctypes.c_int(len(dims)), batch) + strides
    return ((0, 0, 0, module.function(name), config(_blocks(count, most), _THREADS), args),)


def _lu_det(lu_ptr, ipiv_ptr, n, batch, dtype, pivot_dtype, sign_ptr, logabs_ptr, det_ptr,
            stream, device_id):
    _check_dtype(dtype)
    _check_dtype(pivot_dtype, PIVOT_DTYPES, "pivot_dtype")
    if batch == 0:
        return
    module, most = _module(device_id, dtype)
    func = module.function(f"lu_det_{dtype}_{pivot_dtype}")
    # one block per matrix: a warp where the diagonal is short, 256 threads where it is long
    threads = 32 if n <= 256 else _THREADS
    args = (ctypes.c_void_p(lu_ptr), ctypes.c_void_p(ipiv_ptr), ctypes.c_longlong(n),
            ctypes.c_longlong(batch), ctypes.c_void_p(sign_ptr), ctypes.c_void_p(logabs_ptr),
            ctypes.c_void_p(det_ptr))
    launch(func, config(min(batch, 2**31 - 1), threads), args, stream)


def log_det(lu_ptr, ipiv_ptr, n, batch, dtype, sign_ptr, logabs_ptr, stream, device_id,
            pivot_dtype="int64"):
    """Enqueue ``slogdet`` from a batch of LU factorizations (as ``getrf`` leaves them).

    Parameters
    ----------
    lu_ptr : int
        Device address of ``batch`` dense column-major n x n LU factors.
    ipiv_ptr : int
        Device address of ``batch`` x n pivots, 1-based (LAPACK's and cuSOLVER's).
    n, batch : int
        The order and the number of matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    sign_ptr : int
        Device address of ``batch`` signs, of ``dtype`` (for complex, the unit-modulus
        phase); 0 where a diagonal entry is zero.
    logabs_ptr : int
        Device address of ``batch`` values of ``log|det|``, of the real dtype (``-inf``
        where a diagonal entry is zero).
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    pivot_dtype : str
        "int64" (``cusolverDnXgetrf``) or "int32" (the batched and legacy APIs).
    """
    _lu_det(lu_ptr, ipiv_ptr, n, batch, dtype, pivot_dtype, sign_ptr, logabs_ptr, 0, stream,
            device_id)


def det(lu_ptr, ipiv_ptr, n, batch, dtype, det_ptr, stream, device_id, pivot_dtype="int64"):
    """Enqueue ``det`` from a batch of LU factorizations: ``sign * exp(log|det|)``, which is
    how NumPy computes it (so it neither overflows nor underflows where NumPy does not;
    ``numpy.linalg.det(diag([1e200, 1e200, 1e-300]))`` is 1e100, not inf).

    Parameters are :func:`log_det`'s, with ``det_ptr`` the device address of ``batch``
    values of ``dtype``.
    """
    _lu_det(lu_ptr, ipiv_ptr, n, batch, dtype, pivot_dtype, 0, 0, det_ptr, stream, device_id)


def fail_to_nan(info_ptr, data_ptr, count_per_matrix, batch, dtype, stream, device_id):
    """Enqueue: where ``info[b] != 0`` (int32), fill matrix ``b``'s ``count_per_matrix``
    contiguous elements with NaN (the ``check=False`` contract of a failed factorization).

    Parameters
    ----------
    info_ptr : int
        Device address of ``batch`` int32.
    data_ptr : int
        Device address of ``batch`` runs of ``count_per_matrix`` elements.
    count_per_matrix, batch : int
        Elements per matrix and matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    """
    _check_dtype(dtype)
    if batch == 0 or count_per_matrix == 0:
        return
    args = (ctypes.c_void_p(info_ptr), ctypes.c_void_p(data_ptr),
            ctypes.c_longlong(count_per_matrix), ctypes.c_longlong(batch))
    _launch_rows("fail_to_nan_" + dtype, count_per_matrix, batch, args, stream, device_id,
                 dtype)


def nonfinite_blocks(count_per_matrix):
    """The flags :func:`flag_nonfinite` writes per matrix of ``count_per_matrix`` elements:
    its blocks per matrix (enough threads to read at the memory's pace, each block looping
    over a part of the matrix).

    Examples
    --------
    >>> from accelmath.linalg._kernels.auxiliary import nonfinite_blocks
    >>> nonfinite_blocks(64), nonfinite_blocks(2162 * 2162)
    (1, 1024)
    """
    return _blocks(count_per_matrix, 1024)


def flag_nonfinite(data_ptr, count_per_matrix, batch, dtype, flags_ptr, stream, device_id):
    """Enqueue: flag each matrix that holds a NaN or an infinity (either part of a complex
    value), for SciPy's ``check_finite`` without a read back of its own.

    Parameters
    ----------
    data_ptr : int
        Device address of ``batch`` runs of ``count_per_matrix`` contiguous elements.
    count_per_matrix, batch : int
        Elements per matrix and matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    flags_ptr : int
        Device address of ``batch * nonfinite_blocks(count_per_matrix)`` int32, all written:
        matrix ``b``'s are ``flags[b * blocks:(b + 1) * blocks]``, any of them 1 where it
        holds one, else all 0.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    """
    _check_dtype(dtype)
    if batch == 0 or count_per_matrix == 0:
        return
    args = (ctypes.c_void_p(data_ptr), ctypes.c_longlong(count_per_matrix),
            ctypes.c_longlong(batch), ctypes.c_void_p(flags_ptr))
    _launch_rows("flag_nonfinite_" + dtype, count_per_matrix, batch, args, stream, device_id,
                 dtype, blocks=nonfinite_blocks(count_per_matrix))


def zero_diagonal(data_ptr, n, batch, dtype, info_ptr, stream, device_id):
    """Enqueue, for each dense n x n matrix, the info code of a triangular solve: 1 + the
    index of the first zero on its diagonal (LAPACK's ``trtrs``), else 0.

    Parameters
    ----------
    data_ptr : int
        Device address of ``batch`` dense n x n matrices, one after another (C or
        column-major order: the diagonal is the same).
    n, batch : int
        The order and the number of matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    info_ptr : int
        Device address of ``batch`` int32, all written.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    """
    _check_dtype(dtype)
    if batch == 0:
        return
    args = (ctypes.c_void_p(data_ptr), ctypes.c_int(n), ctypes.c_longlong(batch),
            ctypes.c_void_p(info_ptr))
    _launch_rows("zero_diagonal_" + dtype, n, batch, args, stream, device_id, dtype, blocks=1)


def pivots_to_scipy(ipiv_ptr, out_ptr, count, stream, device_id, pivot_dtype="int64"):
    """Enqueue ``out = ipiv - 1`` as int32: cuSOLVER's 1-based pivots as SciPy's
    ``lu_factor`` returns them (0-based).

    Parameters
    ----------
    ipiv_ptr : int
        Device address of ``count`` pivots of ``pivot_dtype``.
    out_ptr : int
        Device address of ``count`` int32; it may be ``ipiv_ptr`` where ``pivot_dtype`` is
        "int32".
    count : int
        The number of pivots.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    pivot_dtype : str
        "int64" or "int32".
    """
    _check_dtype(pivot_dtype, PIVOT_DTYPES, "pivot_dtype")
    if count == 0:
        return
    args = (ctypes.c_void_p(ipiv_ptr), ctypes.c_void_p(out_ptr), ctypes.c_longlong(count))
    _launch_flat("pivots_" + pivot_dtype, count, args, stream, device_id)


def pivots_from_scipy(piv_ptr, ipiv_ptr, n, batch, rhs_ptr, per_matrix, dtype, stream,
                      device_id, pivot_dtype="int32", flag_ptr=0):
    """Enqueue ``ipiv = piv + 1`` as int64: SciPy's 0-based pivots (``lu_factor``'s) as
    cuSOLVER's ``cusolverDnXgetrs`` and :func:`swap_rows` take them, checked on the way. A
    matrix with a pivot out of ``0..n-1`` (which no factorization makes) gets NaN right-hand
    sides (so its solution is NaN, not a wrong one), its pivot is made its own row (no
    interchange: nothing read or written out of the matrix), and the host flag at
    ``flag_ptr`` is raised: lu_solve's check of its pivots rides on this conversion, which
    every solve makes anyway.

    Parameters
    ----------
    piv_ptr : int
        Device address of ``batch * n`` pivots of ``pivot_dtype``, n per matrix.
    ipiv_ptr : int
        Device address of ``batch * n`` int64.
    n, batch : int
        The rows of each matrix (and its pivots) and the number of matrices.
    rhs_ptr : int
        Device address of ``batch`` runs of ``per_matrix`` elements of ``dtype``: the
        right-hand sides the solve works on (written only for a matrix with a bad pivot).
    per_matrix : int
        Elements of the right-hand sides of each matrix.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    pivot_dtype : str, optional
        "int32" (default) or "int64".
    flag_ptr : int, optional
        The host address of an int32 (:func:`~accelmath._core.gpu.memory.host_flag`'s) set to 1
        where a pivot is out of range (0: none).
    """
    found = _pivots_launch(device_id, dtype, pivot_dtype, n, batch)
    if found is None:
        return
    args = (ctypes.c_void_p(piv_ptr), ctypes.c_void_p(ipiv_ptr), ctypes.c_int(n),
            ctypes.c_longlong(batch), ctypes.c_void_p(rhs_ptr), ctypes.c_longlong(per_matrix),
            ctypes.c_void_p(flag_ptr))
    launch(*found, args, stream)


@functools.lru_cache(maxsize=256)
def _pivots_launch(device_id, dtype, pivot_dtype, n, batch):
    """``(kernel, launch configuration)`` of :func:`pivots_from_scipy` for ``batch``
    matrices of ``n`` pivots, found once per arguments (their dtypes checked), or None where
    there is nothing to convert."""
    _check_dtype(dtype)
    _check_dtype(pivot_dtype, PIVOT_DTYPES, "pivot_dtype")
    if batch == 0 or n == 0:
        return None
    module, most = _module(device_id, dtype)
    # a row of threads per matrix, at least a warp, as wide as its pivots up to a block;
    # a short matrix leaves its row's other threads idle, but every matrix is one pass
    width = min(_THREADS, max(32, 1 << (n - 1).bit_length()))
    rows = _THREADS // width
    grid = (min(-(-n // width), most), min(-(-batch // rows), _MAX_GRID_Y))
    return (module.function(f"pivots_from_scipy_{dtype}_{pivot_dtype}"),
            config(grid, (width, rows)))


def swap_rows_fit(n, dtype):
    """Whether :func:`swap_rows` takes columns of ``n`` rows of ``dtype``."""
    return n * (ITEMSIZE[dtype] + 4) <= _SWAP_SHARED


def swap_rows(x_ptr, ipiv_ptr, n, k, batch, dtype, reverse, stream, device_id):
    """Enqueue the row interchanges of LU factorizations on their right-hand sides: for each
    of ``batch`` dense column-major n x k blocks at ``x_ptr`` and its n pivots at ``ipiv_ptr``
    (``getrf``'s: 1-based int64, row i swapped with row ``ipiv[i] - 1``), the swaps in order
    (``P^T x``, before the triangular solves of ``a x = b``) or, where ``reverse``, in reverse
    order (``P x``, after those of ``a^T x = b``). cuSOLVER's ``getrs`` makes these swaps one
    kernel per pivot block; here each column is swapped in shared memory by one thread.

    Parameters
    ----------
    x_ptr, ipiv_ptr : int
        Device addresses of ``batch * n * k`` elements and ``batch * n`` int64 pivots.
    n, k, batch : int
        Rows (see :func:`swap_rows_fit`), columns and blocks.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    reverse : bool
        Swap from the last pivot to the first.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    """
    _check_dtype(dtype)
    if not swap_rows_fit(n, dtype):
        raise InvalidArgumentError(f"swap_rows takes columns of at most "
                                   f"{_SWAP_SHARED // (ITEMSIZE[dtype] + 4)} rows of {dtype}; "
                                   f"got n={n}")
    if batch == 0 or n == 0 or k == 0:
        return
    module, most = _module(device_id, dtype)
    args = (ctypes.c_void_p(x_ptr), ctypes.c_void_p(ipiv_ptr), ctypes.c_int(n),
            ctypes.c_longlong(k), ctypes.c_longlong(batch), ctypes.c_int(1 if reverse else 0))
    launch(module.function("swap_rows_" + dtype),
           config((min(k, most), min(batch, _MAX_GRID_Y)), _THREADS,
                  n * (ITEMSIZE[dtype] + 4)), args, stream)


def identity(dst_ptr, n, batch, dtype, stream, device_id):
    """Enqueue a batch of dense n x n identity matrices at ``dst_ptr``.

    Parameters
    ----------
    dst_ptr : int
        Device address of ``batch`` x n x n elements.
    n : int
        The order, at most 65535 (the kernel indexes a matrix in 32 bits).
    batch : int
        The number of matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    """
    _check_dtype(dtype)
    if not 0 <= n < 2**16:
        raise InvalidArgumentError(f"n={n!r} is out of range for identity: expected 0 <= n "
                                   f"< 65536")
    if batch == 0 or n == 0:
        return
    args = (ctypes.c_void_p(dst_ptr), ctypes.c_uint(n), ctypes.c_longlong(batch))
    _launch_rows("identity_" + dtype, n * n, batch, args, stream, device_id, dtype)


def pointer_array(base_ptr, stride, count, out_ptr, stream, device_id):
    """Enqueue ``out[i] = base_ptr + i * stride`` for ``i < count``: the device array of
    matrix addresses that the batched cuSOLVER and cuBLAS routines take.

    Parameters
    ----------
    base_ptr : int
        Device address of the first matrix.
    stride : int
        Bytes from one matrix to the next.
    count : int
        The number of matrices.
    out_ptr : int
        Device address of ``count`` 64-bit addresses.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    """
    if count == 0:
        return
    args = (ctypes.c_ulonglong(base_ptr), ctypes.c_longlong(stride), ctypes.c_longlong(count),
            ctypes.c_void_p(out_ptr))
    _launch_flat("pointer_array", count, args, stream, device_id)

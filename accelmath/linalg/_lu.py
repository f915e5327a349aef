"""LU on the device: ``solve``, ``inv``, ``det``, ``slogdet``, ``lu_factor`` and ``lu_solve``
(cuSOLVER's ``cusolverDnXgetrf``/``Xgetrs``, or accelmath's own kernels for batches of tiny
matrices)."""

import ctypes

from accelmath._core.layout import contiguous_strides
from accelmath.bindings import cublas, cusolver
from accelmath.errors import InvalidArgumentError
from accelmath.linalg import _kernels, _small
from accelmath.linalg._context import (ITEMSIZE, Context, batch_of, count_of, dense_c, gather,
                                       plan, scatter_f, small_fits, small_info)
from accelmath.linalg._cusolver import DATA_TYPE, REAL, Solver, check_info

__all__ = ["solve", "inv", "det", "slogdet", "lu_factor", "lu_solve", "finish_info", "getrf",
           "getrs", "lu_solver", "SINGULAR"]

SINGULAR = "Singular matrix"

_T = cublas.OPERATION["T"]
_N = cublas.OPERATION["N"]
_C = cublas.OPERATION["C"]


def lu_solver(device_id, package, dtype, n, count, extra, scratch=True):
    """A solver for the LU factorization of ``count`` n x n matrices: their info codes, where
    ``scratch`` a scratch copy of the matrices and their pivots, and the parts of
    ``extra``."""
    isz = ITEMSIZE[dtype]

    def query(handles):
        dev, host = ctypes.c_size_t(), ctypes.c_size_t()
        cusolver.lib.xgetrf_buffer_size(handles[0], handles[1], n, n, DATA_TYPE[dtype], None,
                                        max(n, 1), DATA_TYPE[dtype], dev, host)
        return dev.value, host.value

    parts = {"info": count * 4, "info2": 4, **extra}
    if scratch:
        parts.update(lu=count * n * n * isz, ipiv=count * n * 8)
    return Solver(device_id, package, parts, query)


def _lu_plan(ctx, n, k, count):
    """The cached solver of an LU factorization of ``count`` n x n matrices (and, for k > 1
    right-hand sides, their column-major scratch)."""
    rhs = count * n * k * ITEMSIZE[ctx.dtype] if k > 1 else 0
    return plan(ctx, ("getrf", n, k, count), lambda: lu_solver(
        ctx.device_id, ctx.adapter.package, ctx.dtype, n, count, {"b": rhs}))


def getrf(solver, handles, ws, lu, ipiv, n, count, dtype):
    """Enqueue the in-place LU factorization of ``count`` column-major n x n matrices at
    ``lu`` (pivots at ``ipiv``, info codes in the solver's ``"info"`` part)."""
    isz, dt = ITEMSIZE[dtype], DATA_TYPE[dtype]
    work, wbytes, host, hbytes = solver.work(ws)
    info = ws + solver.offsets["info"]
    for i in range(count):
        cusolver.lib.xgetrf(handles[0], handles[1], n, n, dt, lu + i * n * n * isz, max(n, 1),
                            ipiv + i * n * 8, dt, work, wbytes, host, hbytes, info + 4 * i)


def getrs(solver, handles, ws, op, lu, ipiv, rhs, n, k, count, dtype):
    """Enqueue the solves ``op(a) x = b`` of ``count`` column-major n x k right-hand sides at
    ``rhs``, in place, by the LU factors at ``lu`` and ``ipiv``."""
    isz, dt = ITEMSIZE[dtype], DATA_TYPE[dtype]
    for i in range(count):
        cusolver.lib.xgetrs(handles[0], handles[1], op, n, k, dt, lu + i * n * n * isz, n,
                            ipiv + i * n * 8, dt, rhs + i * n * k * isz, n,
                            ws + solver.offsets["info2"])


def solve(a, b, *, vector, check, method, stream):
    """``a x = b`` (see :func:`accelmath.linalg.solve`); ``b`` is (..., n, k)."""
    ctx = Context(a, stream)
    b.wait_ready(ctx.stream)
    batch = batch_of(a, b)
    n, k = b.shape[-2], b.shape[-1]
    count = count_of(batch)
    shape = batch + ((n,) if vector else (n, k))
    x, x_ptr = ctx.empty(shape)
    if count == 0 or n == 0 or k == 0:
        return ctx.finish(x)
    if small_fits(method, n, count):
        a_ptr, keep_a = dense_c(ctx, a, batch)
        b_ptr, keep_b = dense_c(ctx, b, batch)
        info, info_ptr = small_info(ctx, count)
        _small.solve(a_ptr, b_ptr, x_ptr, info_ptr, n, k, count, ctx.dtype, ctx.stream,
                     ctx.device_id)
        if check:
            check_info(info_ptr, batch, ctx.stream, SINGULAR)
        return ctx.finish(x)
    solver = _lu_plan(ctx, n, k, count)
    handles, ws = solver.state(ctx.stream)
    gather(ctx, a, batch, ws + solver.offsets["lu"], "C")  # A^T, column-major
    rhs = x_ptr if k == 1 else ws + solver.offsets["b"]
    gather(ctx, b, batch, rhs, "F")
    lu, ipiv = ws + solver.offsets["lu"], ws + solver.offsets["ipiv"]
    getrf(solver, handles, ws, lu, ipiv, n, count, ctx.dtype)
    getrs(solver, handles, ws, _T, lu, ipiv, rhs, n, k, count, ctx.dtype)
    if k > 1:
        scatter_f(ctx, rhs, x_ptr, batch, n, k)
    finish_info(solver, ctx, ws, batch, check, SINGULAR, x_ptr, n * k)
    return ctx.finish(x)


def finish_info(solver, ctx, ws, batch, check, message, data_ptr, per_matrix):
    """Raise for failed matrices (``check``), else fill their results with NaN."""
    info = ws + solver.offsets["info"]
    if check:
        check_info(info, batch, ctx.stream, message)
    else:
        _kernels.fail_to_nan(info, data_ptr, per_matrix, count_of(batch), ctx.dtype, ctx.stream,
                             ctx.device_id)


def inv(a, *, check, method, stream):
    """The inverse of each matrix of ``a``."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    x, x_ptr = ctx.empty(batch + (n, n))
    if count == 0 or n == 0:
        return ctx.finish(x)
    if small_fits(method, n, count):
        a_ptr, keep = dense_c(ctx, a, batch)
        info, info_ptr = small_info(ctx, count)
        _small.inv(a_ptr, x_ptr, info_ptr, n, count, ctx.dtype, ctx.stream, ctx.device_id)
        if check:
            check_info(info_ptr, batch, ctx.stream, SINGULAR)
        return ctx.finish(x)
    solver = _lu_plan(ctx, n, 1, count)
    handles, ws = solver.state(ctx.stream)
    gather(ctx, a, batch, ws + solver.offsets["lu"], "C")  # A^T
    _kernels.identity(x_ptr, n, count, ctx.dtype, ctx.stream, ctx.device_id)
    lu, ipiv = ws + solver.offsets["lu"], ws + solver.offsets["ipiv"]
    getrf(solver, handles, ws, lu, ipiv, n, count, ctx.dtype)
    # A^T X = I gives X = inv(A)^T column-major: inv(A) in C order
    getrs(solver, handles, ws, _N, lu, ipiv, x_ptr, n, n, count, ctx.dtype)
    finish_info(solver, ctx, ws, batch, check, SINGULAR, x_ptr, n * n)
    return ctx.finish(x)


def _determinant(a, stream, logarithm):
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    real = REAL[ctx.dtype]
    sign, sign_ptr = ctx.empty(batch, ctx.dtype)
    logabs, log_ptr = ctx.empty(batch, real) if logarithm else (None, 0)
    if count == 0:
        return (ctx.finish(sign), ctx.finish(logabs)) if logarithm else ctx.finish(sign)
    solver = _lu_plan(ctx, n, 1, count)
    handles, ws = solver.state(ctx.stream)
    lu, ipiv = ws + solver.offsets["lu"], ws + solver.offsets["ipiv"]
    if n:
        gather(ctx, a, batch, lu, "C")  # det(A^T) = det(A)
        getrf(solver, handles, ws, lu, ipiv, n, count, ctx.dtype)
    if logarithm:
        _kernels.log_det(lu, ipiv, n, count, ctx.dtype, sign_ptr, log_ptr, ctx.stream,
                         ctx.device_id)
        return ctx.finish(sign), ctx.finish(logabs)
    _kernels.det(lu, ipiv, n, count, ctx.dtype, sign_ptr, ctx.stream, ctx.device_id)
    return ctx.finish(sign)


def det(a, *, stream):
    """The determinant of each matrix of ``a``."""
    return _determinant(a, stream, False)


def slogdet(a, *, stream):
    """``(sign, logabsdet)`` of each matrix of ``a``."""
    return _determinant(a, stream, True)


def lu_factor(a, *, check, stream):
    """SciPy's ``lu_factor``: ``(lu, piv)``, L and U of ``P a = L U`` in one matrix and the
    0-based row interchanges (int32)."""
    if a.shape[-2] != a.shape[-1]:
        raise InvalidArgumentError(
            f"lu_factor on the GPU takes square matrices; a has shape {tuple(a.shape)}")
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    lu, lu_ptr = ctx.empty(batch + (n, n))
    piv, piv_ptr = ctx.empty(batch + (n,), "int32")
    if count == 0 or n == 0:
        return ctx.finish(lu), ctx.finish(piv)
    solver = _lu_plan(ctx, n, 1, count)
    handles, ws = solver.state(ctx.stream)
    scratch = ws + solver.offsets["lu"]
    gather(ctx, a, batch, scratch, "F")
    getrf(solver, handles, ws, scratch, ws + solver.offsets["ipiv"], n, count, ctx.dtype)
    scatter_f(ctx, scratch, lu_ptr, batch, n, n)
    _kernels.pivots_to_scipy(ws + solver.offsets["ipiv"], piv_ptr, count * n, ctx.stream,
                             ctx.device_id)
    finish_info(solver, ctx, ws, batch, check, SINGULAR, lu_ptr, n * n)
    return ctx.finish(lu), ctx.finish(piv)


def lu_solve(lu, piv, b, *, trans, vector, stream):
    """SciPy's ``lu_solve``: solve ``op(a) x = b`` from ``lu_factor``'s ``(lu, piv)``."""
    ctx = Context(lu, stream)
    for op in (piv, b):
        op.wait_ready(ctx.stream)
    batch = batch_of(lu, b)
    n, k = b.shape[-2], b.shape[-1]
    count = count_of(batch)
    x, x_ptr = ctx.empty(batch + ((n,) if vector else (n, k)))
    if count == 0 or n == 0 or k == 0:
        return ctx.finish(x)
    isz = ITEMSIZE[ctx.dtype]
    solver = plan(ctx, ("getrs", n, k, count), lambda: Solver(
        ctx.device_id, ctx.adapter.package,
        {"lu": count * n * n * isz, "ipiv": count * n * 8, "b": count * n * k * isz,
         "info2": 4}))
    handles, ws = solver.state(ctx.stream)
    scratch, ipiv = ws + solver.offsets["lu"], ws + solver.offsets["ipiv"]
    gather(ctx, lu, batch, scratch, "F")
    _kernels.pivots_from_scipy(_pivots(piv, batch, n), ipiv, count * n, ctx.stream,
                               ctx.device_id)
    rhs = x_ptr if k == 1 else ws + solver.offsets["b"]
    gather(ctx, b, batch, rhs, "F")
    getrs(solver, handles, ws, (_N, _T, _C)[trans], scratch, ipiv, rhs, n, k, count,
          ctx.dtype)
    if k > 1:
        scatter_f(ctx, rhs, x_ptr, batch, n, k)
    return ctx.finish(x)


def _pivots(piv, batch, n):
    """The address of ``lu_factor``'s pivots for a batch ``batch`` of n x n factors."""
    shape = batch + (n,)
    if (piv.dtype != "int32" or tuple(piv.shape) != shape
            or tuple(piv.strides) != contiguous_strides(shape)):
        raise InvalidArgumentError(
            f"piv must be lu_factor's pivots: a dense int32 array of shape {shape}, got "
            f"{piv!r} (on the GPU, lu and piv take the batch shape of b)")
    return piv.ptr

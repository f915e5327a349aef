"""cuSOLVER's and cuBLAS's batched routes, for batches of matrices past the reach of
accelmath's own kernels (``_context.small_fits``) yet small enough that one call per
matrix would cost more in launches than in arithmetic: ``potrfBatched``/``potrsBatched``
for Cholesky, and
cuBLAS's ``getrfBatched``/``getrsBatched`` for LU solves and inverses.

They take device arrays of matrix addresses, which :func:`accelmath.linalg._kernels.auxiliary.pointer_array`
writes on the caller's stream into the solver's ``"a_ptrs"`` and ``"b_ptrs"`` parts; cuBLAS's
LU keeps int32 pivots in the ``"piv32"`` part. Info codes land in the ``"info"`` part, one per
matrix, as the one-matrix-at-a-time routes leave them.
"""

import ctypes

from accelmath.bindings import cublas, cusolver
from accelmath.linalg._device.context import ITEMSIZE
from accelmath.linalg._device.cusolver import typed
from accelmath.linalg._kernels import auxiliary as _kernels

__all__ = ["MAX_N", "fits", "parts", "getrf", "getrs", "potrf", "potrs"]

#: method="auto" takes the batched routes for batches of matrices up to this order.
MAX_N = 128


def fits(method, n, count):
    """Whether ``count`` n x n matrices go through the batched routes for ``method`` (after
    accelmath's own kernels declined them)."""
    return method == "batched" or (method == "auto" and count > 1 and n <= MAX_N)


def parts(count, n, pivots=False):
    """The workspace parts the batched routes need besides the matrices: two address arrays,
    and cuBLAS's int32 pivots for LU."""
    needed = {"a_ptrs": count * 8, "b_ptrs": count * 8}
    if pivots:
        needed["piv32"] = count * n * 4
    return needed


def _addresses(ctx, solver, ws, part, base, stride, count):
    """Write the addresses of ``count`` matrices, ``stride`` bytes apart from ``base``, into
    the workspace part ``part``; returns that part's address."""
    out = ws + solver.offsets[part]
    _kernels.pointer_array(base, stride, count, out, ctx.stream, ctx.device_id)
    return out


def getrf(ctx, solver, handles, ws, lu, n, count):
    """Enqueue cuBLAS's in-place LU of ``count`` column-major n x n matrices at ``lu``."""
    a_ptrs = _addresses(ctx, solver, ws, "a_ptrs", lu, n * n * ITEMSIZE[ctx.dtype], count)
    typed(cublas.lib, ctx.dtype, "getrf_batched")(
        handles[2], n, a_ptrs, n, ws + solver.offsets["piv32"], ws + solver.offsets["info"],
        count)


def getrs(ctx, solver, handles, ws, op, n, k, rhs, count):
    """Enqueue ``op(a) x = b`` for ``count`` column-major n x k right-hand sides at ``rhs``,
    in place, by the factors :func:`getrf` left (its address array is reused)."""
    b_ptrs = _addresses(ctx, solver, ws, "b_ptrs", rhs, n * k * ITEMSIZE[ctx.dtype], count)
    info = ctypes.c_int()  # argument checks only: any is raised by the binding
    typed(cublas.lib, ctx.dtype, "getrs_batched")(
        handles[2], op, n, k, ws + solver.offsets["a_ptrs"], n, ws + solver.offsets["piv32"],
        b_ptrs, n, ctypes.byref(info), count)


def potrf(ctx, solver, handles, ws, ptr, n, count, fill):
    """Enqueue cuSOLVER's in-place Cholesky of ``count`` column-major n x n matrices at
    ``ptr`` (triangle ``fill``)."""
    a_ptrs = _addresses(ctx, solver, ws, "a_ptrs", ptr, n * n * ITEMSIZE[ctx.dtype], count)
    typed(cusolver.lib, ctx.dtype, "potrf_batched")(
        handles[0], fill, n, a_ptrs, n, ws + solver.offsets["info"], count)


def potrs(ctx, solver, handles, ws, factor, rhs, n, k, count, fill):
    """Enqueue the solves of ``count`` column-major n x k right-hand sides at ``rhs`` by the
    Cholesky factors at ``factor`` (triangle ``fill``), in place: a column at a time, as
    ``potrsBatched`` takes one."""
    isz = ITEMSIZE[ctx.dtype]
    a_ptrs = _addresses(ctx, solver, ws, "a_ptrs", factor, n * n * isz, count)
    solve = typed(cusolver.lib, ctx.dtype, "potrs_batched")
    for column in range(k):
        b_ptrs = _addresses(ctx, solver, ws, "b_ptrs", rhs + column * n * isz, n * k * isz,
                            count)
        solve(handles[0], fill, n, 1, a_ptrs, n, b_ptrs, n, ws + solver.offsets["info2"],
              count)

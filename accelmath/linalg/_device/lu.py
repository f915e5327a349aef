"""LU on the device: ``solve``, ``inv``, ``det``, ``slogdet``, ``lu_factor`` and ``lu_solve``
(cuSOLVER's ``cusolverDnXgetrf``/``Xgetrs``, or accelmath's own kernels for tiny matrices,
alone or in batches). A stateless ``lu_solve`` on operands read where they lie is remembered
as ``cho_solve`` is (:class:`~accelmath.linalg._device.context.CusolverCall`)."""

import ctypes
from typing import NamedTuple, Optional

from accelmath._core.gpu.memory import host_flag, read_back
from accelmath._core.layout import contiguous_strides
from accelmath.bindings import cublas, cusolver
from accelmath.linalg._checks import SINGULAR, bad_pivot, real_dtype
from accelmath.linalg._device import batched as _batched
from accelmath.linalg._device import finite as _finite
from accelmath.linalg._device.cholesky import trsm
from accelmath.linalg._device.context import (ITEMSIZE, Context, CusolverCall, batch_of,
                                              batch_strides, c_strides, clear_flags, columns_in,
                                              columns_out, copy, count_of, f_strides, finish_info,
                                              flagged, gather, info_bytes, info_later, layout_of,
                                              operands_at, plan, rhs_bytes, run_small, scatter_f,
                                              small_fits, solution_of, systems)
from accelmath.linalg._device.cusolver import DATA_TYPE, LOWER, UPPER, Solver, own_index
from accelmath.linalg._kernels import auxiliary as _kernels
from accelmath.linalg._kernels import small as _small

__all__ = ["solve", "inv", "det", "slogdet", "lu_factor", "lu_solve", "getrf", "getrs",
           "lu_solver"]

_T = cublas.OPERATION["T"]
_UNIT, _NON_UNIT = cublas.DIAG["UNIT"], cublas.DIAG["NON_UNIT"]
_N = cublas.OPERATION["N"]
_C = cublas.OPERATION["C"]


def lu_solver(device_id, package, dtype, n, count, extra, scratch=True, batched=False,
              blas=True, m=None):
    """A solver for the LU factorization of ``count`` m x n matrices (m: n by default):
    their info codes, where ``scratch`` a scratch copy of the matrices and their pivots, and
    the parts of ``extra``; where ``batched``, for cuBLAS's batched routes (square matrices,
    :mod:`._batched`); with ``blas``, a cuBLAS handle for :func:`getrs`'s triangular
    solves."""
    isz = ITEMSIZE[dtype]
    m = n if m is None else m
    if batched:
        return Solver(device_id, package, {"info": info_bytes(count), "lu": count * n * n * isz,
                                           **_batched.parts(count, n, pivots=True), **extra},
                      blas=True)

    def query(handles):
        dev, host = ctypes.c_size_t(), ctypes.c_size_t()
        cusolver.lib.xgetrf_buffer_size(handles[0], handles[1], m, n, DATA_TYPE[dtype], None,
                                        max(m, 1), DATA_TYPE[dtype], dev, host)
        return dev.value, host.value

    parts = {"info": info_bytes(count), "info2": 4, **extra}
    if scratch:
        parts.update(lu=count * m * n * isz, ipiv=count * min(m, n) * 8)
    return Solver(device_id, package, parts, query, blas=blas)


def _lu_plan(ctx, n, k, count, batched=False):
    """The cached solver of an LU factorization of ``count`` n x n matrices (and, for k > 1
    right-hand sides, their column-major scratch), for the batched routes where
    ``batched``."""
    rhs = rhs_bytes(count, n, k, ctx.dtype)
    return plan(ctx, ("getrf", n, k, count, batched), lambda: lu_solver(
        ctx.device_id, ctx.adapter.package, ctx.dtype, n, count, {"b": rhs}, batched=batched))


def _factor_and_solve(ctx, solver, handles, ws, op, n, k, rhs, count, batched, check,
                      checked):
    """Enqueue the LU of the matrices in the solver's ``"lu"`` part, then ``op(a) x = b``
    for the right-hand sides at ``rhs``, in place; with ``check`` (or operands ``checked``
    for NaN and Inf), the read back of the info codes (and flags) in between: returns
    :func:`info_later`'s."""
    lu = ws + solver.offsets["lu"]
    if batched:
        _batched.getrf(ctx, solver, handles, ws, lu, n, count)
        later = info_later(solver, ctx, ws, count, check, checked)
        _batched.getrs(ctx, solver, handles, ws, op, n, k, rhs, count)
        return later
    ipiv = ws + solver.offsets["ipiv"]
    getrf(solver, handles, ws, lu, ipiv, n, count, ctx.dtype)
    later = info_later(solver, ctx, ws, count, check, checked)
    getrs(ctx, solver, handles, ws, op, lu, ipiv, rhs, n, k, count)
    return later


def getrf(solver, handles, ws, lu, ipiv, n, count, dtype, m=None):
    """Enqueue the in-place LU factorization of ``count`` column-major m x n matrices (m: n
    by default) at ``lu`` (min(m, n) pivots each at ``ipiv``, info codes in the solver's
    ``"info"`` part)."""
    m = n if m is None else m
    isz, dt, k = ITEMSIZE[dtype], DATA_TYPE[dtype], min(m, n)
    work, wbytes, host, hbytes = solver.work(ws)
    info = ws + solver.offsets["info"]
    for i in range(count):
        cusolver.lib.xgetrf(handles[0], handles[1], m, n, dt, lu + i * m * n * isz, max(m, 1),
                            ipiv + i * k * 8, dt, work, wbytes, host, hbytes, info + 4 * i)


def getrs(ctx, solver, handles, ws, op, lu, ipiv, rhs, n, k, count):
    """Enqueue the solves ``op(a) x = b`` of ``count`` column-major n x k right-hand sides at
    ``rhs``, in place, by the LU factors at ``lu`` and ``ipiv``: their row interchanges by
    accelmath's kernel and two cuBLAS triangular solves (``handles`` with a cuBLAS handle)
    where the kernel takes n rows, else ``cusolverDnXgetrs`` (whose interchanges after a
    transposed solve cost about 0.3 ms at n = 2162, one kernel per pivot block)."""
    dtype, stream, device_id = ctx.dtype, ctx.stream, ctx.device_id
    isz = ITEMSIZE[dtype]
    if not _kernels.swap_rows_fit(n, dtype):
        dt = DATA_TYPE[dtype]
        for i in range(count):
            cusolver.lib.xgetrs(handles[0], handles[1], op, n, k, dt, lu + i * n * n * isz, n,
                                ipiv + i * n * 8, dt, rhs + i * n * k * isz, n,
                                ws + solver.offsets["info2"])
        return
    # a = P L U: a x = b is L U x = P^T b; a^T x = b (and a^H) is U^T L^T (P^T x) = b
    if op == _N:
        _kernels.swap_rows(rhs, ipiv, n, k, count, dtype, False, stream, device_id)
    triangles = ((LOWER, _UNIT), (UPPER, _NON_UNIT))
    for i in range(count):
        for fill, diag in (triangles if op == _N else triangles[::-1]):
            trsm(handles[2], dtype, fill, op, diag, n, k, lu + i * n * n * isz, n,
                 rhs + i * n * k * isz, n)
    if op != _N:
        _kernels.swap_rows(rhs, ipiv, n, k, count, dtype, True, stream, device_id)


def solve(a, b, *, vector, check, method, stream, call=None, finite=None):
    """``a x = b`` (see :func:`accelmath.linalg.solve`); ``b`` is (..., n, k). ``call``: the
    call key to remember (:func:`~accelmath.linalg._device.context.run_small`); ``finite``: the
    names of a and b where NaN and Inf raise (found by the small kernels, else by the
    copies of a and b: :func:`~accelmath.linalg._device.context.clear_flags`)."""
    ctx, batch, n, k, count, x, x_ptr = systems(a, b, stream, vector)
    if count == 0 or n == 0 or k == 0:
        return ctx.finish(x)
    if small_fits(ctx, method, "solve", n, count):
        run_small(ctx, _small.solve, (a, b), (x, x_ptr), batch, check, SINGULAR, n, k, count,
                  names=("a", "b"), call=call)
        return ctx.finish(x)
    batched = _batched.fits(method, n, count)
    solver = _lu_plan(ctx, n, k, count, batched)
    handles, ws = solver.state(ctx.stream)
    checked = flagged((a, b), finite)
    flags = clear_flags(ctx, solver, ws, count, checked) or (0, 0)
    # A^T, column-major: trans="T"
    gather(ctx, a, batch, ws + solver.offsets["lu"], "C", flags=flags[0])
    rhs = columns_in(ctx, b, batch, x_ptr, ws + solver.offsets["b"], flags=flags[1])
    later = _factor_and_solve(ctx, solver, handles, ws, _T, n, k, rhs, count, batched, check,
                              checked)
    columns_out(ctx, rhs, x_ptr, batch, n, k)
    finish_info(solver, ctx, ws, batch, check, SINGULAR, [(x_ptr, n * k, ctx.dtype)],
                later=later, checked=checked)
    return ctx.finish(x)


def inv(a, *, check, method, stream, call=None, finite=None):
    """The inverse of each matrix of ``a`` (``call`` and ``finite``: as :func:`solve`'s)."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    x, x_ptr = ctx.empty(batch + (n, n))
    if count == 0 or n == 0:
        return ctx.finish(x)
    if small_fits(ctx, method, "inv", n, count):
        run_small(ctx, _small.inv, (a,), (x, x_ptr), batch, check, SINGULAR, n, count,
                  names=("a",), call=call)
        return ctx.finish(x)
    batched = _batched.fits(method, n, count)
    solver = _lu_plan(ctx, n, 1, count, batched)
    handles, ws = solver.state(ctx.stream)
    checked = flagged((a,), finite)
    flags = clear_flags(ctx, solver, ws, count, checked) or (0,)
    gather(ctx, a, batch, ws + solver.offsets["lu"], "C", flags=flags[0])  # A^T
    _kernels.identity(x_ptr, n, count, ctx.dtype, ctx.stream, ctx.device_id)
    # A^T X = I gives X = inv(A)^T column-major: inv(A) in C order
    later = _factor_and_solve(ctx, solver, handles, ws, _N, n, n, x_ptr, count, batched, check,
                              checked)
    finish_info(solver, ctx, ws, batch, check, SINGULAR, [(x_ptr, n * n, ctx.dtype)],
                later=later, checked=checked)
    return ctx.finish(x)


def _determinant(a, stream, logarithm):
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    real = real_dtype(ctx.dtype)
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


def lu_factor(a, *, check, stream, finite=None):
    """SciPy's ``lu_factor``: ``(lu, piv)``, L and U of ``P a = L U`` in one matrix and the
    min(m, n) 0-based row interchanges (int32) of each m x n matrix; ``finite``: a's name
    where NaN and Inf raise (found by its copy). ``lu`` has
    SciPy's layout, each matrix column-major (C order for JAX), where cuSOLVER factors it and
    :func:`lu_solve` reads it."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    count = count_of(batch)
    # (JAX arrays are C-ordered: theirs is factored in scratch space and copied out)
    scratch = ctx.adapter.immutable
    lu, lu_ptr = ctx.empty(batch + (m, n), strides=(c_strides if scratch else f_strides)(
        batch, m, n))
    piv, piv_ptr = ctx.empty(batch + (k,), "int32")
    if count == 0 or k == 0:
        return ctx.finish(lu), ctx.finish(piv)
    solver = plan(ctx, ("lu_factor", m, n, count, scratch), lambda: lu_solver(
        ctx.device_id, ctx.adapter.package, ctx.dtype, n, count,
        {"ipiv": count * k * 8, "lu": count * m * n * ITEMSIZE[ctx.dtype] if scratch else 0},
        scratch=False, blas=False, m=m))
    handles, ws = solver.state(ctx.stream)
    ipiv = ws + solver.offsets["ipiv"]
    factors = ws + solver.offsets["lu"] if scratch else lu_ptr
    checked = flagged((a,), finite)
    flags = clear_flags(ctx, solver, ws, count, checked) or (0,)
    gather(ctx, a, batch, factors, "F", flags=flags[0])
    getrf(solver, handles, ws, factors, ipiv, n, count, ctx.dtype, m=m)
    later = info_later(solver, ctx, ws, count, check, checked)
    if scratch:
        scatter_f(ctx, factors, lu_ptr, batch, m, n)
    _kernels.pivots_to_scipy(ipiv, piv_ptr, count * k, ctx.stream, ctx.device_id)
    finish_info(solver, ctx, ws, batch, check, SINGULAR, [(lu_ptr, m * n, ctx.dtype)],
                later=later, checked=checked)
    return ctx.finish(lu), ctx.finish(piv)


def lu_solve(lu, piv, b, *, trans, vector, stream, finite=None, call=None):
    """SciPy's ``lu_solve``: solve ``op(a) x = b`` from ``lu_factor``'s ``(lu, piv)`` (piv
    int32 or int64: :func:`~accelmath.linalg._checks.lu_pivots`); ``finite``: the names of
    lu, piv and b where NaN and Inf raise (None for one not checked; see
    :func:`accelmath.linalg._device.finite.enqueue`), and where given (SciPy's check_finite), a
    pivot out of range raises too (see :meth:`_LuSolveLayout.solve`); ``call``: the call
    key to remember (a :class:`~accelmath.linalg._device.context.CusolverCall`, where the operands
    were read where they lie)."""
    ctx, batch, n, k, count, x, x_ptr = systems(lu, b, stream, vector, piv)
    operands = (lu, piv, b)
    if count == 0 or n == 0 or k == 0:  # (nothing solved: no pivot is used)
        _finite.check(_finite.enqueue(ctx, operands, finite))
        return ctx.finish(x)
    isz = ITEMSIZE[ctx.dtype]
    # lu_factor's layout (dense, each matrix column-major, not broadcast) is read where it
    # lies, and its pivots (dense, as device_call gives them); others are copied so
    in_place = (tuple(lu.shape) == batch + (n, n)
                and tuple(lu.strides) == f_strides(batch, n, n))
    pivots_in_place = (tuple(piv.shape) == batch + (n,)
                       and tuple(piv.strides) == contiguous_strides(batch + (n,)))
    key = ("getrs", n, k, count, in_place, pivots_in_place, piv.dtype)
    solver = plan(ctx, key, lambda: Solver(
        ctx.device_id, ctx.adapter.package,
        {"lu": 0 if in_place else count * n * n * isz, "ipiv": count * n * 8,
         "piv": 0 if pivots_in_place else count * n * ITEMSIZE[piv.dtype],
         "b": rhs_bytes(count, n, k, ctx.dtype), "info2": 4}, blas=True))
    layout = _LuSolveLayout(*map(layout_of, operands), batch, n, k, count, in_place,
                            pivots_in_place, trans, _finite.prepare(operands, finite),
                            finite is not None)
    layout.solve(ctx, solver, operands, x_ptr)
    CusolverCall.remember(call, operands, finite, ctx, key, layout, solution_of(ctx, x))
    return ctx.finish(x)


class _LuSolveLayout(NamedTuple):
    """LU solves by cuSOLVER of operands of one layout: factors ``lu``, pivots ``piv`` and
    right-hand sides ``b`` (as :func:`~accelmath.linalg._device.context.layout_of` gives them),
    their ``batch`` of n x k systems, and the route."""

    lu: tuple
    piv: tuple
    b: tuple
    batch: tuple
    n: int
    k: int
    count: int  # systems in the batch
    in_place: bool  # getrs reads lu where it lies (else a column-major copy)
    pivots_in_place: bool  # piv read where it lies (else a dense copy over the batch)
    trans: int  # 0: a x = b, 1: a^T x = b, 2: a^H x = b
    checks: Optional[_finite.Plan]  # the finiteness check of the operands named to be
    check_pivots: bool  # raise for a pivot out of range (SciPy's check_finite)

    def solve(self, ctx, solver, operands, x_ptr):
        """Enqueue the solves with the ``(lu, piv, b)`` of ``operands`` (of the layout) into
        the solution at ``x_ptr``, and raise for NaN and Inf where they are checked, then
        for a pivot out of range where pivots are: the kernel that converts the pivots
        finds it, raises the thread's host flag and makes that system's solution NaN
        (:func:`~accelmath.linalg._kernels.auxiliary.pivots_from_scipy`). The flag is read once the
        finiteness check has waited for the work (enqueued after the conversion, so that it
        waits for the conversion too; without it, a wait of its own), and only where it was
        raised are the pivots read back, to name the first bad one."""
        lu, piv, b = operands
        batch, n, k, count = self.batch, self.n, self.k, self.count
        handles, ws = solver.state(ctx.stream)
        ipiv = ws + solver.offsets["ipiv"]
        piv_ptr, pivot_dtype = piv.ptr, piv.dtype
        if not self.pivots_in_place:
            # (int64 pivots copied as pairs of int32 words: the copy kernel takes int32)
            piv_ptr, words = ws + solver.offsets["piv"], ITEMSIZE[pivot_dtype] // 4
            shape = batch + (n, words)
            copy(ctx, piv.ptr, piv_ptr, shape, tuple(
                s * words for s in batch_strides(piv, batch, core=1)) + (1,),
                contiguous_strides(shape), dtype="int32")
        rhs = columns_in(ctx, b, batch, x_ptr, ws + solver.offsets["b"])
        flag = host_flag() if self.check_pivots else None
        _kernels.pivots_from_scipy(piv_ptr, ipiv, n, count, rhs, n * k, ctx.dtype, ctx.stream,
                                   ctx.device_id, pivot_dtype, flag.ptr if flag else 0)
        finite = _finite.enqueue_at(ctx, self.checks, tuple(op.ptr for op in operands))
        if self.in_place:
            factors = lu.ptr
        else:
            factors = ws + solver.offsets["lu"]
            gather(ctx, lu, batch, factors, "F")
        getrs(ctx, solver, handles, ws, (_N, _T, _C)[self.trans], factors, ipiv, rhs, n, k,
              count)
        columns_out(ctx, rhs, x_ptr, batch, n, k)
        _finite.check(finite)
        if self.check_pivots and (flag is None or (
                flag.raised() if finite is not None else flag.raised_after(ctx.stream))):
            pivots = read_back(piv_ptr, count * n, pivot_dtype, ctx.stream)
            found = bad_pivot(pivots.reshape(batch + (n,)), n)
            if found is not None:
                raise found.error(own_index(found.index, self.piv[0][:-1]))

    def recall(self, ctx, solver, addresses, results):
        """The solves again, with the operands at ``addresses``, into the ``results``
        allocated for them (``[(x, address)]``): x."""
        (x, x_ptr), = results
        self.solve(ctx, solver, operands_at(addresses, (self.lu, self.piv, self.b)), x_ptr)
        return x


"""Cholesky and triangular solves on the device: ``cholesky``, ``cho_factor``, ``cho_solve``
(cuSOLVER's ``cusolverDnXpotrf``/``Xpotrs``; for batches of small matrices its
``potrfBatched``/``potrsBatched``, or accelmath's own kernels for tiny ones) and
``solve_triangular`` (cuBLAS's ``trsm``).

cuSOLVER factors the lower triangle of a column-major matrix fastest. A lower factor: the
caller's lower triangle is copied column-major into the result, factored there (JAX's result,
C-ordered, is factored in scratch space and copied out). An upper one: the caller's upper
triangle is copied into the result as it lies, whose buffer read column-major is the lower
triangle of its transpose (conjugate, for complex values), factored there in place: read in
C order, that is U. A stateless ``cholesky``, ``cho_factor``, ``cho_solve`` or
``solve_triangular`` that ran on operands read where they lie is remembered
(:class:`~accelmath.linalg._device.context.CusolverCall`): an identical one allocates and enqueues
the work again, and reads and checks nothing else.
"""

import ctypes
from typing import NamedTuple, Optional

from accelmath._core.layout import contiguous_strides
from accelmath.bindings import cublas, cusolver
from accelmath.linalg._checks import NOT_POSITIVE_DEFINITE, SINGULAR
from accelmath.linalg._device import batched as _batched
from accelmath.linalg._device import finite as _finite
from accelmath.linalg._device.context import (ITEMSIZE, Context, CusolverCall, batch_of,
                                              batch_strides, c_strides, clear_flags, columns_in,
                                              columns_out, count_of, f_strides, finish_info,
                                              flagged, gather, info_bytes, info_later,
                                              item_strides, layout_of, operands_at, plan,
                                              rhs_bytes, run_small, small_fits, solution_of,
                                              systems)
from accelmath.linalg._device.cusolver import DATA_TYPE, LOWER, UPPER, Solver, check_codes, typed
from accelmath.linalg._kernels import auxiliary as _kernels
from accelmath.linalg._kernels import small as _small

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "potrf", "potrs",
           "cholesky_solver", "trsm"]

_ONE = {"float32": ctypes.c_float(1), "float64": ctypes.c_double(1),
        "complex64": (ctypes.c_float * 2)(1, 0), "complex128": (ctypes.c_double * 2)(1, 0)}


def cholesky_solver(device_id, package, dtype, n, count, extra):
    """A solver for the Cholesky factorization of ``count`` n x n matrices (their info
    codes, and the parts of ``extra``)."""

    def query(handles):
        dev, host = ctypes.c_size_t(), ctypes.c_size_t()
        cusolver.lib.xpotrf_buffer_size(handles[0], handles[1], LOWER, n, DATA_TYPE[dtype], None,
                                        max(n, 1), DATA_TYPE[dtype], dev, host)
        return dev.value, host.value

    return Solver(device_id, package, {"info": info_bytes(count), "info2": 4, **extra}, query)


def potrf(solver, handles, ws, ptr, n, count, fill, dtype):
    """Enqueue the in-place factorization of ``count`` column-major n x n matrices at
    ``ptr`` (triangle ``fill``), their info codes in the solver's ``"info"`` part."""
    isz, dt = ITEMSIZE[dtype], DATA_TYPE[dtype]
    work, wbytes, host, hbytes = solver.work(ws)
    info = ws + solver.offsets["info"]
    for i in range(count):
        cusolver.lib.xpotrf(handles[0], handles[1], fill, n, dt, ptr + i * n * n * isz,
                            max(n, 1), dt, work, wbytes, host, hbytes, info + 4 * i)


def potrs(solver, handles, ws, factor, rhs, n, k, count, fill, dtype):
    """Enqueue the solves of ``count`` column-major n x k right-hand sides at ``rhs`` by the
    factors at ``factor`` (triangle ``fill``), in place."""
    isz, dt = ITEMSIZE[dtype], DATA_TYPE[dtype]
    for i in range(count):
        cusolver.lib.xpotrs(handles[0], handles[1], fill, n, k, dt, factor + i * n * n * isz,
                            max(n, 1), dt, rhs + i * n * k * isz, max(n, 1),
                            ws + solver.offsets["info2"])


def trsm(handle, dtype, fill, op, diag, n, k, a, lda, b, ldb):
    """Enqueue cuBLAS's ``op(a) x = b`` for one triangular n x n matrix ``a`` (column-major,
    triangle ``fill``) and n x k right-hand sides ``b``, solved in place."""
    typed(cublas.lib, dtype, "trsm")(handle, cublas.SIDE["LEFT"], fill, op, diag, n, k,
                                     ctypes.addressof(_ONE[dtype]), a, lda, b, ldb)


def cholesky(a, *, upper, check, method, stream, call=None, finite=None):
    """The Cholesky factor of each matrix of ``a``: lower (``L L^H = a``, from ``a``'s lower
    triangle), or upper (``U^H U = a``, from its upper triangle). ``call``: the call key to
    remember (a :class:`~accelmath.linalg._device.context.SmallCall` or a :class:`CusolverCall`,
    where ``a`` was read where it lies); ``finite``: a's name where NaN and Inf raise (found
    by the small kernels, else by a's copy: :func:`~accelmath.linalg._device.context.clear_flags`)."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    # (nothing to factor: returned whatever the method, as solve and inv return theirs)
    small = bool(count and n) and small_fits(ctx, method, "cholesky", n, count)
    # cuSOLVER factors the lower triangle of column-major matrices fast, in the result
    # itself: a lower factor is made column-major (torch's layout; JAX's, C-ordered, is made
    # in scratch space and copied out); an upper one from a's upper triangle copied as it
    # lies, read column-major as the lower triangle of its transpose (conjugate, for complex
    # values), factored there as L: the result read in C order is then U = L^H (A = U^H U)
    in_place = upper or not ctx.adapter.immutable
    shape = batch + (n, n)
    strides = (f_strides if in_place and not upper and not small else c_strides)(batch, n, n)
    out, out_ptr = ctx.empty(shape, strides=strides)
    if count == 0 or n == 0:
        return ctx.finish(out)
    if small:
        def kernel(a_ptr, l_ptr, info_ptr, n, count, dtype, stream, device_id, flag_ptr=0):
            _small.cholesky(a_ptr, l_ptr, info_ptr, n, count, dtype, upper, stream, device_id,
                            flag_ptr, check_finite=finite is not None)

        run_small(ctx, kernel, (a,), (out, out_ptr), batch, check, NOT_POSITIVE_DEFINITE, n,
                  count, names=("a",), call=call)
        return ctx.finish(out)
    isz = ITEMSIZE[ctx.dtype]
    batched = _batched.fits(method, n, count)
    extra = {} if in_place else {"a": count * n * n * isz}
    if batched:
        extra.update(_batched.parts(count, n))
    key = ("potrf", n, count, batched, in_place)
    solver = plan(ctx, key, lambda: cholesky_solver(
        ctx.device_id, ctx.adapter.package, ctx.dtype, n, count, extra))
    layout = _Layout(batch, n, batch_strides(a, batch), upper, in_place, batched, count,
                     item_strides(batch, n * n), check, flagged((a,), finite))
    layout.factor(ctx, solver, a.ptr, out_ptr)
    CusolverCall.remember(call, (a,), None, ctx, key, layout, (shape, strides, ctx.dtype))
    return ctx.finish(out)


class _Layout(NamedTuple):
    """A Cholesky factorization by cuSOLVER of operands of one layout: their ``batch`` of
    n x n matrices at element strides ``src`` (batch, then matrix), and the route."""

    batch: tuple
    n: int
    src: tuple
    upper: bool
    in_place: bool  # factored in the result itself (else in scratch space, copied out)
    batched: bool  # potrfBatched (else one potrf a matrix)
    count: int  # matrices in the batch
    dense: tuple  # element strides of the batch laid out densely
    check: bool  # raise for the matrices that failed (else NaN in their factors)
    checked: tuple  # a's name and batch shape, where NaN and Inf raise (its copy finds them)

    def factor(self, ctx, solver, a_ptr, out_ptr):
        """Enqueue the factorization of the matrices at ``a_ptr`` into the result at
        ``out_ptr`` on the call's stream, and raise for those that failed where it checks
        (see :func:`~accelmath.linalg._device.context.finish_info`)."""
        batch, n, count, dense, check = self.batch, self.n, self.count, self.dense, self.check
        handles, ws = solver.state(ctx.stream)
        scratch = out_ptr if self.in_place else ws + solver.offsets["a"]
        flags = clear_flags(ctx, solver, ws, count, self.checked) or (0,)
        _kernels.copy_matrices(a_ptr, scratch, batch, self.src[:-2], dense, n, n,
                               self.src[-2:], (n, 1) if self.upper else (1, n), ctx.dtype,
                               ctx.stream, ctx.device_id, triangle="U" if self.upper else "L",
                               flags_ptr=flags[0])
        if self.batched:
            _batched.potrf(ctx, solver, handles, ws, scratch, n, count, LOWER)
        else:
            potrf(solver, handles, ws, scratch, n, count, LOWER, ctx.dtype)
        later = info_later(solver, ctx, ws, count, check, self.checked)
        if not self.in_place:
            _kernels.copy_matrices(scratch, out_ptr, batch, dense, dense, n, n, (1, n), (n, 1),
                                   ctx.dtype, ctx.stream, ctx.device_id)
        finish_info(solver, ctx, ws, batch, check, NOT_POSITIVE_DEFINITE,
                    [(out_ptr, n * n, ctx.dtype)], later=later, checked=self.checked)

    def recall(self, ctx, solver, addresses, results):
        """The factorization again, of the matrices at ``addresses[0]``, into the
        ``results`` allocated for it (``[(factor, address)]``): the factor."""
        (out, out_ptr), = results
        self.factor(ctx, solver, addresses[0], out_ptr)
        return out


def cho_factor(a, *, lower, check, stream, finite=None, call=None):
    """SciPy's ``cho_factor``: the factor in the ``lower`` (else upper) triangle, zeros in
    the other."""
    return cholesky(a, upper=not lower, check=check, method="auto", stream=stream,
                    call=call, finite=finite)


def cho_solve(c, b, *, lower, vector, stream, finite=None, call=None):
    """Solve ``a x = b`` given the Cholesky factor ``c`` of ``a`` (lower or upper);
    ``finite``: the names of c and b where NaN and Inf raise (see
    :func:`accelmath.linalg._device.finite.enqueue`); ``call``: the call key to remember (a
    :class:`CusolverCall`, where c and b were read where they lie)."""
    ctx, batch, n, k, count, x, x_ptr = systems(c, b, stream, vector)
    if count == 0 or n == 0 or k == 0:
        _finite.check(_finite.enqueue(ctx, (c, b), finite))
        return ctx.finish(x)
    isz = ITEMSIZE[ctx.dtype]
    batched = _batched.fits("auto", n, count)
    # a dense factor (not broadcast) is read where it lies by potrs: column-major (as
    # cholesky makes L), as it is; a real one in C order too, since C-ordered L read
    # column-major is L^T, an upper factor, and U read so is U^T, a lower one. Others, and
    # every factor of the batched route (potrsBatched writes into the other triangle), are
    # copied as the lower factor, column-major: L itself, or U^H (U's buffer read
    # column-major is U^T, conjugated U^H)
    dense = not batched and tuple(c.shape) == batch + (n, n)
    column_major = dense and tuple(c.strides) == f_strides(batch, n, n)
    in_place = column_major or (dense and not ctx.dtype.startswith("complex")
                                and tuple(c.strides) == contiguous_strides(c.shape))
    fill = ((LOWER if lower else UPPER) if column_major else (UPPER if lower else LOWER)
            ) if in_place else LOWER
    key = ("potrs", n, k, count, batched, in_place)
    solver = plan(ctx, key, lambda: Solver(
        ctx.device_id, ctx.adapter.package,
        {"c": 0 if in_place else count * n * n * isz, "b": rhs_bytes(count, n, k, ctx.dtype),
         "info2": 4, **(_batched.parts(count, n) if batched else {})}))
    layout = _SolveLayout(layout_of(c), layout_of(b), batch, n, k, count, lower, in_place,
                          fill, batched, _finite.prepare((c, b), finite))
    layout.solve(ctx, solver, c, b, x_ptr)
    CusolverCall.remember(call, (c, b), finite, ctx, key, layout, solution_of(ctx, x))
    return ctx.finish(x)


class _SolveLayout(NamedTuple):
    """Cholesky solves by cuSOLVER of operands of one layout: factors ``c`` and right-hand
    sides ``b`` (as :func:`~accelmath.linalg._device.context.layout_of` gives them), their
    ``batch`` of n x k systems, and the route."""

    c: tuple
    b: tuple
    batch: tuple
    n: int
    k: int
    count: int  # systems in the batch
    lower: bool  # c holds lower factors (else upper)
    in_place: bool  # potrs reads c where it lies (else a copy as the lower factor)
    fill: int  # the triangle potrs reads
    batched: bool  # potrsBatched (else one potrs a system)
    checks: Optional[_finite.Plan]  # the finiteness check of c and b, where NaN and Inf raise

    def solve(self, ctx, solver, c, b, x_ptr):
        """Enqueue the solves with factors ``c`` and right-hand sides ``b`` (operands of the
        layout) into the solution at ``x_ptr``, and raise for NaN and Inf in them where
        they are checked."""
        batch, n, k, count = self.batch, self.n, self.k, self.count
        finite = _finite.enqueue_at(ctx, self.checks, (c.ptr, b.ptr))
        handles, ws = solver.state(ctx.stream)
        factor = c.ptr
        if not self.in_place:
            factor = ws + solver.offsets["c"]
            gather(ctx, c, batch, factor, "F" if self.lower else "C", conj=not self.lower)
        rhs = columns_in(ctx, b, batch, x_ptr, ws + solver.offsets["b"])
        if self.batched:
            _batched.potrs(ctx, solver, handles, ws, factor, rhs, n, k, count, self.fill)
        else:
            potrs(solver, handles, ws, factor, rhs, n, k, count, self.fill, ctx.dtype)
        columns_out(ctx, rhs, x_ptr, batch, n, k)
        _finite.check(finite)

    def recall(self, ctx, solver, addresses, results):
        """The solves again, with the factors and right-hand sides at ``addresses``, into
        the ``results`` allocated for them (``[(x, address)]``): x."""
        (x, x_ptr), = results
        self.solve(ctx, solver, *operands_at(addresses, (self.c, self.b)), x_ptr)
        return x


def solve_triangular(a, b, *, trans, lower, unit_diagonal, vector, stream, finite=None,
                     call=None):
    """Solve ``op(a) x = b`` for triangular ``a`` (``op`` by ``trans``: 0 itself, 1 its
    transpose, 2 its conjugate transpose); ``finite`` and ``call`` as :func:`cho_solve`'s."""
    ctx, batch, n, k, count, x, x_ptr = systems(a, b, stream, vector)
    if count == 0 or n == 0 or k == 0:
        _finite.check(_finite.enqueue(ctx, (a, b), finite))
        return ctx.finish(x)
    key = ("trsm", n, k, count)
    solver = plan(ctx, key, lambda: Solver(
        ctx.device_id, ctx.adapter.package,
        {"a": count * n * n * ITEMSIZE[ctx.dtype], "b": rhs_bytes(count, n, k, ctx.dtype),
         "info": count * 4}, blas=True))
    layout = _TriangularLayout(layout_of(a), layout_of(b), batch, n, k, count, trans, lower,
                               unit_diagonal, _finite.prepare((a, b), finite))
    layout.solve(ctx, solver, a, b, x_ptr)
    CusolverCall.remember(call, (a, b), finite, ctx, key, layout, solution_of(ctx, x))
    return ctx.finish(x)


class _TriangularLayout(NamedTuple):
    """Triangular solves by cuBLAS of operands of one layout: matrices ``a`` and right-hand
    sides ``b`` (as :func:`~accelmath.linalg._device.context.layout_of` gives them), their
    ``batch`` of n x k systems, and the options."""

    a: tuple
    b: tuple
    batch: tuple
    n: int
    k: int
    count: int  # systems in the batch
    trans: int  # 0: a x = b, 1: a^T x = b, 2: a^H x = b
    lower: bool  # a's lower triangle is read (else its upper one)
    unit_diagonal: bool  # a's diagonal taken as ones (not read, not checked)
    checks: Optional[_finite.Plan]  # the finiteness check of a and b, where NaN and Inf raise

    def solve(self, ctx, solver, a, b, x_ptr):
        """Enqueue the solves of matrices ``a`` and right-hand sides ``b`` (operands of the
        layout) into the solution at ``x_ptr``; raise for NaN and Inf in them where they are
        checked, then for a zero on a diagonal (unless ``unit_diagonal``)."""
        batch, n, k, count, trans = self.batch, self.n, self.k, self.count, self.trans
        finite = _finite.enqueue_at(ctx, self.checks, (a.ptr, b.ptr))
        isz = ITEMSIZE[ctx.dtype]
        handles, ws = solver.state(ctx.stream)
        matrix = ws + solver.offsets["a"]
        # read column-major, the copy is a^T (conjugated for trans=2: a^H), whose triangle
        # is the other one; op(a) is then that matrix transposed (trans=0) or itself
        gather(ctx, a, batch, matrix, "C", conj=trans == 2)
        # a zero on the diagonal raises, as SciPy's does: the copy's first zero found and
        # read back while the solves run
        if not self.unit_diagonal:
            _kernels.zero_diagonal(matrix, n, count, ctx.dtype, ws + solver.offsets["info"],
                                   ctx.stream, ctx.device_id)
        later = info_later(solver, ctx, ws, count, not self.unit_diagonal)
        rhs = columns_in(ctx, b, batch, x_ptr, ws + solver.offsets["b"])
        op = cublas.OPERATION["T"] if trans == 0 else cublas.OPERATION["N"]
        fill = UPPER if self.lower else LOWER
        diag = cublas.DIAG["UNIT" if self.unit_diagonal else "NON_UNIT"]
        for i in range(count):
            trsm(handles[2], ctx.dtype, fill, op, diag, n, k, matrix + i * n * n * isz, n,
                 rhs + i * n * k * isz, n)
        columns_out(ctx, rhs, x_ptr, batch, n, k)
        _finite.check(finite)
        if later is not None:
            check_codes(later.result(), batch, SINGULAR)

    def recall(self, ctx, solver, addresses, results):
        """The solves again, with the matrices and right-hand sides at ``addresses``, into
        the ``results`` allocated for them (``[(x, address)]``): x."""
        (x, x_ptr), = results
        self.solve(ctx, solver, *operands_at(addresses, (self.a, self.b)), x_ptr)
        return x

"""Factor-once objects: :class:`Cholesky`, :class:`LU` and :class:`QR` factor a matrix (or a
batch) once, then solve any number of right-hand sides; ``refactor`` takes a new matrix of the
same layout without planning again.

On the device a factorization keeps its factors in its own buffers (column-major, as cuSOLVER
leaves them) and plans its solver once; host matrices are factored by SciPy's LAPACK. A matrix
that ``refactor`` refuses (``check``) leaves the factorization it held: on the device it is
factored into new buffers, taken once it passed.
"""

import ctypes

import numpy

from accelmath._core.gpu.memory import read_back
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import check_same_device, device_name
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath._core.plan import Plan, mismatch, template_operand
from accelmath.bindings import cublas, cusolver
from accelmath.errors import InvalidArgumentError, LinAlgError, StateError, UnsupportedDTypeError
from accelmath.linalg import _checks as checks
from accelmath.linalg import _cpu
from accelmath.linalg._checks import NOT_POSITIVE_DEFINITE, RANK_DEFICIENT, SINGULAR
from accelmath.linalg._device import finite as _finite
from accelmath.linalg._device.cholesky import cholesky_solver, potrf, potrs, trsm
from accelmath.linalg._device.context import (ITEMSIZE, Context, batch_strides, columns_in,
                                              columns_out, copy, count_of, gather, item_strides,
                                              scatter_f, solution)
from accelmath.linalg._device.cusolver import DATA_TYPE, LOWER, UPPER, Solver, check_info, typed
from accelmath.linalg._device.lu import getrf, getrs, lu_solver
from accelmath.linalg._device.spectral import geqrf
from accelmath.linalg._kernels.auxiliary import copy_matrices
from accelmath.linalg._operands import column, host_array, on_device, read, to_caller

__all__ = ["Cholesky", "LU", "QR"]


class _Factorization(Plan):
    """What the three share: the matrix's layout, the lifetime, right-hand sides."""

    what = "factorization"

    def __init__(self, a, shape, dtype, package, device, check):
        layout_only = a is None
        if layout_only:
            a = template_operand(shape, dtype, None, package, device)
        elif (shape, dtype, package, device) != (None,) * 4:
            raise InvalidArgumentError("give either a matrix or shape, dtype, package and device")
        op = read(a, "a")
        self._check_shape(op.shape)
        self.dtype = checks.result_dtype(("a", op.dtype))
        self.shape = tuple(op.shape)
        self.batch = self.shape[:-2]
        self.count = count_of(self.batch)
        self.check = checks.check_flag(check, "check")
        self.device_id = op.device_id
        self._type = type(op.obj)
        self._package = op.adapter.package
        self._freed = False
        self._factored = False
        if op.on_device:
            op = on_device(op, self.dtype)
            self._prepare_device(op)
        self._operand = op
        self._unbind()  # (the layout stays; the caller's array is not kept)
        if not layout_only:
            self.refactor(a)

    def _check_shape(self, shape):
        """Raise for a shape ``a`` cannot have (a stack of square matrices)."""
        checks.check_stacked_square(shape, "a")

    # --- the public methods -------------------------------------------------------------

    def refactor(self, a, *, stream=None):
        """Factor a new matrix (or batch) of the layout this object was made for.

        Parameters
        ----------
        a : array
            Of the shape, dtype, package and device the object was made for.
        stream : int or stream object, optional
            The CUDA stream (default: the package's current stream).
        """
        self._check_live()
        op = read(a, "a")
        if tuple(op.shape) != self.shape or op.device_id != self.device_id or (
                type(op.obj) is not self._type):
            raise mismatch("a", self.what,
                           {"type": self._type.__name__, "shape": self.shape,
                            "device": device_name(self.device_id)},
                           {"type": type(op.obj).__name__, "shape": tuple(op.shape),
                            "device": device_name(op.device_id)})
        self._check_dtype(op, "a")
        if op.on_device:  # (NaN and Inf raise under check, on either path)
            op = on_device(op, self.dtype)
            ctx = Context(op, stream)
            finite = _finite.enqueue(ctx, (op,), ("a",) if self.check else None)
            # a matrix the check may refuse goes into new buffers, so that a refusal leaves
            # the factorization held (the first one, and unchecked ones, in place)
            factors, ptrs = (self._allocate(ctx) if self.check and self._factored
                             else (self._factors, self._ptrs))
            self._factor_device(ctx, op, finite, ptrs)
            self._factors, self._ptrs = factors, ptrs
        else:  # (each _factor_host sets its factors once its checks passed)
            self._factor_host(host_array(op, self.dtype))
        self._factored = True

    def solve(self, b, *, stream=None, like=None):
        """Solve for the right-hand sides ``b`` (as ``scipy.linalg.cho_solve`` etc.).

        Parameters
        ----------
        b : (n,) or (..., n, k) array
            Right-hand sides, any count of columns, the batch shape of the factored matrix.
        stream : int or stream object, optional
            The CUDA stream (default: the package's current stream).
        like : str, module or array, optional
            The kind of the results (default: b's): a package's name or module
            (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

        Returns
        -------
        x : array
            Of b's shape and package.
        """
        if like is not None:
            like = target_of(like)
            return returned_as(self.solve(b, stream=stream), like)
        self._check_live()
        if not self._factored:
            raise StateError(f"this {self.what} holds no factorization yet: call refactor(a)")
        op = read(b, "b")
        rows = self.shape[-2]
        vector = len(op.shape) == 1
        expected = (rows,) if vector else self.batch + (rows,)
        if tuple(op.shape[:len(expected)]) != expected or (
                not vector and len(op.shape) != len(self.batch) + 2):
            raise InvalidArgumentError(
                f"b has shape {tuple(op.shape)}; this {self.what} solves b of shape ({rows},) "
                f"or {self.batch + (rows, 'k')}")
        if vector and self.batch:
            raise InvalidArgumentError(
                f"b must have the batch shape {self.batch}: shape {self.batch + (rows, 'k')}")
        if op.on_device != (self.device_id is not None):
            raise InvalidArgumentError("b must live where the factored matrix lives")
        self._check_dtype(op, "b")
        if not op.on_device:
            x = self._solve_host(host_array(op, self.dtype), vector)
            return to_caller(x, op)
        check_same_device(self._operand, op, names=("the factored matrix", "b"))
        op = on_device(op, self.dtype)
        ctx = Context(op, stream)
        return self._solve_device(ctx, column(op) if vector else op, vector)

    def __repr__(self):
        if not hasattr(self, "_factored"):
            return f"{type(self).__name__}(not made)"
        where = "cpu" if self.device_id is None else f"cuda:{self.device_id}"
        state = "freed" if self._freed else "factored" if self._factored else "not factored"
        return (f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, {where}, "
                f"{state})")

    def _check_dtype(self, op, name):
        """Raise unless operand ``op`` (``name``) goes into this object's dtype without a
        loss, as NumPy promotes (an integer or float32 into float64, a real into complex)."""
        promoted = checks.result_dtype((name, op.dtype), ("a", self.dtype))
        if promoted != self.dtype:
            lost = "imaginary part" if promoted.startswith("complex") else "precision"
            raise UnsupportedDTypeError(
                f"{name} has dtype {op.dtype}, which NumPy solves in {promoted}; this "
                f"{self.what} is of {self.dtype}, in which {name} would lose its {lost}: "
                f"factor the matrix as {promoted} (a.astype('{promoted}'))")

    def _solve_device(self, ctx, op, vector):
        """Solve device right-hand sides ``op`` (..., n, k) in column-major order, in the
        solution itself for one column, else in a scratch copy."""
        n, k = op.shape[-2:]
        x, x_ptr = solution(ctx, self.batch, n, k, vector)
        scratch, scratch_ptr = (None, 0) if k == 1 else ctx.empty(self.batch + (k, n))
        rhs = columns_in(ctx, op, self.batch, x_ptr, scratch_ptr)
        handles, ws = self._solver.state(ctx.stream)
        self._solve_columns(ctx, handles, ws, rhs, n, k)
        columns_out(ctx, rhs, x_ptr, self.batch, n, k)
        return ctx.finish(x)

    def _release(self):
        solver = getattr(self, "_solver", None)
        if solver is not None:
            solver.free()
        self._factors = ()


class Cholesky(_Factorization):
    """The Cholesky factorization of a Hermitian positive-definite matrix (or a batch), made
    once, to solve many right-hand sides: ``scipy.linalg.cho_factor`` and ``cho_solve`` as
    one object.

    Parameters
    ----------
    a : (..., n, n) array, optional
        The matrix (its lower triangle is read). Leave it out to plan for a layout: give
        ``shape``, ``dtype``, ``package`` and ``device``, then :meth:`refactor`.
    lower : bool, optional
        Which factor :attr:`factor` shows: L (default) or U = L^H.
    check : bool, optional
        Raise LinAlgError (naming the batch index) for a matrix that is not positive
        definite, or that holds a NaN or an infinity (a read back from the GPU); False: no
        check, NaN in its solutions.
    shape, dtype, package, device : optional
        The layout, for an object made without a matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import Cholesky
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> with Cholesky(a) as factor:
    ...     x = factor.solve(np.array([2.0, 1.0]))
    >>> bool(np.allclose(a @ x, [2.0, 1.0]))
    True
    """

    what = "Cholesky factorization"

    def __init__(self, a=None, *, lower=True, check=True, shape=None, dtype=None, package=None,
                 device=None):
        self.lower = checks.check_flag(lower, "lower")
        super().__init__(a, shape, dtype, package, device, check)

    @property
    def factor(self):
        """The factor, L (``lower``) or U, as a new array of the matrix's package (writing
        into it changes no later solve)."""
        self._check_live()
        if self.device_id is None:
            made = self._factors[0].copy() if self.lower else numpy.conj(
                numpy.swapaxes(self._factors[0], -1, -2))
            return to_caller(made, self._operand)
        ctx = Context(self._operand, None)
        n = self.shape[-1]
        out, ptr = ctx.empty(self.shape)
        # the buffer holds L column-major: read in C order and conjugated, it is U
        copy(ctx, self._ptrs[0], ptr, self.shape, item_strides(self.batch, n * n) + (
            (1, n) if self.lower else (n, 1)), item_strides(self.batch, n * n) + (n, 1),
            conj=not self.lower)
        return ctx.finish(out)

    def _prepare_device(self, op):
        n = self.shape[-1]
        self._solver = cholesky_solver(self.device_id, self._package, self.dtype, n,
                                       self.count, {})
        self._factors, self._ptrs = self._allocate(Context(op, None))

    def _allocate(self, ctx):
        buffer, ptr = ctx.empty(self.shape, self.dtype)
        return (buffer,), (ptr,)

    def _factor_device(self, ctx, op, finite, ptrs):
        n = self.shape[-1]
        (buffer_ptr,) = ptrs
        handles, ws = self._solver.state(ctx.stream)
        src = batch_strides(op, self.batch)
        # the lower triangle, column-major, factored in place (L L^H = a)
        copy_matrices(op.ptr, buffer_ptr, self.batch, src[:-2],
                      item_strides(self.batch, n * n), n, n, src[-2:], (1, n), self.dtype,
                      ctx.stream, ctx.device_id, triangle="L")
        potrf(self._solver, handles, ws, buffer_ptr, n, self.count, LOWER, self.dtype)
        if self.check:
            _finite.check(finite)
            check_info(ws + self._solver.offsets["info"], self.batch, ctx.stream,
                       NOT_POSITIVE_DEFINITE)

    def _solve_columns(self, ctx, handles, ws, rhs, n, k):
        potrs(self._solver, handles, ws, self._ptrs[0], rhs, n, k, self.count, LOWER,
              self.dtype)

    def _factor_host(self, a):
        self._factors = (_cpu.column_major(_cpu.cholesky(a, upper=False, check=self.check)),)

    def _solve_host(self, b, vector):
        return _cpu.cho_solve(self._factors[0], b, lower=True, check_finite=False)


class LU(_Factorization):
    """The LU factorization with partial pivoting of a square matrix (or a batch), made
    once, to solve many right-hand sides: ``scipy.linalg.lu_factor`` and ``lu_solve`` as one
    object.

    Parameters
    ----------
    a : (..., n, n) array, optional
        The matrix. Leave it out to plan for a layout: give ``shape``, ``dtype``,
        ``package`` and ``device``, then :meth:`refactor`.
    check : bool, optional
        Raise LinAlgError (naming the batch index) for a singular matrix, or one that holds
        a NaN or an infinity (a read back from the GPU); False: no check, NaN or Inf in its
        solutions.
    shape, dtype, package, device : optional
        The layout, for an object made without a matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import LU
    >>> a = np.array([[0.0, 2.0], [1.0, 1.0]])
    >>> with LU(a) as lu:
    ...     x = lu.solve(np.array([2.0, 2.0]))
    >>> x
    array([1., 1.])
    """

    what = "LU factorization"

    def __init__(self, a=None, *, check=True, shape=None, dtype=None, package=None,
                 device=None):
        super().__init__(a, shape, dtype, package, device, check)

    def _prepare_device(self, op):
        n = self.shape[-1]
        self._solver = lu_solver(self.device_id, self._package, self.dtype, n, self.count, {},
                                 scratch=False)
        self._factors, self._ptrs = self._allocate(Context(op, None))

    def _allocate(self, ctx):
        lu, lu_ptr = ctx.empty(self.shape, self.dtype)
        ipiv, ipiv_ptr = ctx.empty(self.batch + (self.shape[-1],), "int64")
        return (lu, ipiv), (lu_ptr, ipiv_ptr)

    def _factor_device(self, ctx, op, finite, ptrs):
        n = self.shape[-1]
        lu_ptr, ipiv_ptr = ptrs
        handles, ws = self._solver.state(ctx.stream)
        gather(ctx, op, self.batch, lu_ptr, "F")
        getrf(self._solver, handles, ws, lu_ptr, ipiv_ptr, n, self.count, self.dtype)
        if self.check:
            _finite.check(finite)
            check_info(ws + self._solver.offsets["info"], self.batch, ctx.stream, SINGULAR)

    def _solve_columns(self, ctx, handles, ws, rhs, n, k):
        lu_ptr, ipiv_ptr = self._ptrs
        getrs(ctx, self._solver, handles, ws, cublas.OPERATION["N"], lu_ptr, ipiv_ptr, rhs, n,
              k, self.count)

    def _factor_host(self, a):
        self._factors = _cpu.lu_factor(a, check_finite=self.check, check=self.check)

    def _solve_host(self, b, vector):
        lu, piv = self._factors
        return _cpu.lu_solve(lu, piv, b, trans=0, check_finite=False)


class QR(_Factorization):
    """The QR factorization of a tall (or square) matrix of full column rank (or a batch),
    made once, to solve many least-squares problems ``min ||a x - b||``.

    Parameters
    ----------
    a : (..., m, n) array, optional
        The matrix, m >= n. Leave it out to plan for a layout: give ``shape``, ``dtype``,
        ``package`` and ``device``, then :meth:`refactor`.
    check : bool, optional
        True (default): raise :class:`~accelmath.errors.LinAlgError`, naming the batch
        index, for a matrix without full column rank, numerically: a diagonal element of R
        at most ``max(m, n) * eps`` times the largest (a read back from the GPU; for those,
        use ``lstsq``), and for a matrix holding a NaN or an infinity. False: no check
        (their solutions are not meaningful).
    shape, dtype, package, device : optional
        The layout, for an object made without a matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import QR
    >>> a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> with QR(a) as qr:
    ...     x = qr.solve(np.array([1.0, 2.0, 3.0]))
    >>> bool(np.allclose(x, [1.0, 1.0]))
    True
    """

    what = "QR factorization"

    def __init__(self, a=None, *, check=True, shape=None, dtype=None, package=None,
                 device=None):
        super().__init__(a, shape, dtype, package, device, check)

    def _check_shape(self, shape):
        checks.check_stacked_2d(shape, "a")
        if shape[-2] < shape[-1]:
            raise InvalidArgumentError(
                f"QR solves least squares for matrices with at least as many rows as columns; "
                f"a has shape {tuple(shape)}")

    def _prepare_device(self, op):
        m, n = self.shape[-2:]
        ctx = Context(op, None)
        dt, isz = DATA_TYPE[self.dtype], ITEMSIZE[self.dtype]

        def query(handles):
            dev, host = ctypes.c_size_t(), ctypes.c_size_t()
            cusolver.lib.xgeqrf_buffer_size(handles[0], handles[1], m, n, dt, None, max(m, 1),
                                            dt, None, dt, dev, host)
            return dev.value, host.value

        self._solver = Solver(self.device_id, self._package, {"info": self.count * 4}, query,
                              blas=True)
        self._factors, self._ptrs = self._allocate(ctx)
        self._isz = isz
        self._ormqr_work = {}  # right-hand-side columns -> ormqr's work, in elements

    def _allocate(self, ctx):
        m, n = self.shape[-2:]
        qr, qr_ptr = ctx.empty(self.batch + (n, m), self.dtype)
        tau, tau_ptr = ctx.empty(self.batch + (max(n, 1),), self.dtype)
        return (qr, tau), (qr_ptr, tau_ptr)

    def _factor_device(self, ctx, op, finite, ptrs):
        m, n = self.shape[-2:]
        qr_ptr, tau_ptr = ptrs
        handles, ws = self._solver.state(ctx.stream)
        gather(ctx, op, self.batch, qr_ptr, "F")
        geqrf(self._solver, handles, ws, qr_ptr, tau_ptr, m, n, self.count, self.dtype, m * n)
        if self.check:  # R's diagonal: element j (j, j) of each column-major m x n matrix
            diagonal, diagonal_ptr = ctx.empty(self.batch + (n,), self.dtype)
            copy(ctx, qr_ptr, diagonal_ptr, self.batch + (n,),
                     item_strides(self.batch, m * n) + (m + 1,), contiguous_strides(
                         self.batch + (n,)))
            _finite.check(finite)
            self._check_rank(read_back(diagonal_ptr, self.count * n, self.dtype, ctx.stream))

    def _solve_device(self, ctx, op, vector):
        m, n = self.shape[-2:]
        k = op.shape[-1]
        isz = self._isz
        x, x_ptr = solution(ctx, self.batch, n, k, vector)
        scratch, rhs = ctx.empty(self.batch + (k, m))
        gather(ctx, op, self.batch, rhs, "F")
        handles, ws = self._solver.state(ctx.stream)
        side, trans = cublas.SIDE["LEFT"], cublas.OPERATION[
            "C" if self.dtype.startswith("complex") else "T"]
        qr_ptr, tau_ptr = self._ptrs
        lwork = self._ormqr_work.get(k)
        if lwork is None:
            size = ctypes.c_int()
            typed(cusolver.lib, self.dtype, "ormqr_buffer_size", "unmqr_buffer_size")(
                handles[0], side, trans, m, k, n, qr_ptr, m, tau_ptr, rhs, m,
                ctypes.byref(size))
            lwork = self._ormqr_work[k] = max(size.value, 1)
        work, work_ptr = ctx.empty((lwork,), self.dtype)
        info = ws + self._solver.offsets["info"]
        apply = typed(cusolver.lib, self.dtype, "ormqr", "unmqr")
        for i in range(self.count):
            qr, b = qr_ptr + i * m * n * isz, rhs + i * m * k * isz
            # b = Q^H b, then R x = its first n rows
            apply(handles[0], side, trans, m, k, n, qr, m, tau_ptr + i * n * isz, b, m,
                  work_ptr, lwork, info)
            trsm(handles[2], self.dtype, UPPER, cublas.OPERATION["N"], cublas.DIAG["NON_UNIT"],
                 n, k, qr, m, b, m)
        scatter_f(ctx, rhs, x_ptr, self.batch, n, k, ld=m)
        return ctx.finish(x)

    def _factor_host(self, a):
        if self.check:
            checks.check_finite(a, 2, "a")
        q, r = numpy.linalg.qr(a, mode="reduced")
        r = _cpu.column_major(r)
        if self.check:  # (before the factors are taken: a refused matrix leaves those held)
            self._check_rank(numpy.diagonal(r, axis1=-2, axis2=-1))
        self._factors = q, r

    def _check_rank(self, diagonal):
        """Raise for the first matrix whose R has a diagonal element (of ``diagonal``, n a
        matrix) at most ``max(m, n) * eps`` times its largest (numerically rank deficient),
        or a NaN."""
        size = numpy.abs(numpy.reshape(diagonal, (self.count, self.shape[-1])))
        eps = numpy.finfo(numpy.dtype(self.dtype)).eps
        bound = max(self.shape[-2:]) * eps * size.max(axis=-1, initial=0.0, keepdims=True)
        deficient = numpy.flatnonzero((~(size > bound)).any(axis=-1))  # (NaN too)
        if deficient.size:
            index = numpy.unravel_index(int(deficient[0]), self.batch) if self.batch else ()
            raise LinAlgError(RANK_DEFICIENT, tuple(int(i) for i in index))

    def _solve_host(self, b, vector):
        q, r = self._factors
        with numpy.errstate(invalid="ignore", over="ignore"):  # (an infinity in b: NaN out,
            # as the solve's own LAPACK gives it, without a warning from the product)
            qhb = numpy.conj(numpy.swapaxes(q, -1, -2)) @ (b[..., None] if vector else b)
        try:
            x = _cpu.solve_triangular(r, qhb, trans=0, lower=False, unit_diagonal=False,
                                      check_finite=False)
        except LinAlgError:  # (a zero on R's diagonal, which only check=False lets through
            # (_check_rank): inf and NaN there, as the LU's and Cholesky's solves give)
            x = _cpu.solve_triangular(r, qhb, trans=0, lower=False, unit_diagonal=False,
                                      check_finite=False, singular=False)
        return x[..., 0] if vector else x

"""Orthogonal factorizations on the device: ``eigh`` (cuSOLVER's ``cusolverDnXsyevd``, or
``syevjBatched`` for batches), ``svd`` (``gesvdj``, its Jacobi method, a matrix at a time,
``cusolverDnXgesvd`` where that does not converge or by ``method="cusolver"``, and
``gesvdjBatched`` for batches of matrices up to 32 x 32) and ``qr`` (``Xgeqrf`` with
``orgqr``/``ungqr``)."""

import ctypes
from typing import NamedTuple

from accelmath._core.layout import contiguous_strides
from accelmath.bindings import cusolver
from accelmath.errors import InvalidArgumentError, LinAlgError
from accelmath.linalg._checks import EIGENVALUES_DID_NOT_CONVERGE, SVD_DID_NOT_CONVERGE, real_dtype
from accelmath.linalg._device import finite as _finite
from accelmath.linalg._device.context import (ITEMSIZE, Context, copy, CusolverCall, batch_of,
                                              batch_strides, c_strides, clear_flags, count_of,
                                              f_strides, finish_info, flagged, gather, info_bytes,
                                              item_strides, layout_of, operands_at, plan,
                                              scatter_f)
from accelmath.linalg._device.cusolver import DATA_TYPE, LOWER, UPPER, Solver, read_info, typed
from accelmath.linalg._kernels import auxiliary as _kernels

__all__ = ["eigh", "svd", "qr", "geqrf"]

# batches of matrices up to this size go through the batched Jacobi method (method="auto")
_JACOBI_MAX_N = 128
# batches of matrices up to this size go through gesvdjBatched (its limit)
_SVD_JACOBI_MAX = 32
_JACOBI = {}  # cuSOLVER's Jacobi parameters (eigh's, svd's), each made on first use


def _sizes():
    return ctypes.c_size_t(), ctypes.c_size_t()


def eigh(a, *, uplo, vectors, check, method, stream, call=None, finite=None):
    """Eigenvalues (ascending) and, where ``vectors``, eigenvectors (columns) of each
    Hermitian matrix of ``a``, from its ``uplo`` triangle: by cuSOLVER's divide and conquer
    (``Xsyevd``) a matrix at a time, or for a batch of small matrices by its batched Jacobi
    method (``syevjBatched``). The eigenvectors are made in the result itself, each matrix
    column-major (torch's layout), but for JAX (C order). ``call``: the call key to remember
    (a :class:`~accelmath.linalg._device.context.CusolverCall`, where ``a`` was read where it
    lies); ``finite``: a's name where NaN and Inf raise (found by its copy:
    :func:`~accelmath.linalg._device.context.clear_flags`)."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    real = real_dtype(ctx.dtype)
    in_place = vectors and not ctx.adapter.immutable
    shapes = [(batch + (n,), contiguous_strides(batch + (n,)), real)]
    if vectors:
        shapes.append((batch + (n, n), (f_strides if in_place else c_strides)(batch, n, n),
                       ctx.dtype))
    results = [ctx.empty(shape, dtype, strides) for shape, strides, dtype in shapes]
    if count == 0 or n == 0:
        return _finished(ctx, [r for r, _ in results])
    isz, dt, dt_real = ITEMSIZE[ctx.dtype], DATA_TYPE[ctx.dtype], DATA_TYPE[real]
    # read column-major, the conjugated copy is the matrix itself, its uplo triangle now the
    # other one
    layout = _EighLayout(layout_of(a), batch, n, count, UPPER if uplo == "L" else LOWER,
                         cusolver.EIG_MODE["VECTOR" if vectors else "NOVECTOR"],
                         method == "batched" or (method == "auto" and count > 1
                                                 and n <= _JACOBI_MAX_N),
                         in_place, check, flagged((a,), finite))

    def query(handles):
        if layout.jacobi:
            lwork = ctypes.c_int()
            typed(cusolver.lib, ctx.dtype, "syevj_batched_buffer_size",
                  "heevj_batched_buffer_size")(
                handles[0], layout.jobz, layout.fill, n, None, n, None, ctypes.byref(lwork),
                _jacobi_params("syevj"), count)
            return lwork.value * isz, 0
        dev, host = _sizes()
        cusolver.lib.xsyevd_buffer_size(handles[0], handles[1], layout.jobz, layout.fill, n,
                                        dt, None, n, dt_real, None, dt, dev, host)
        return dev.value, host.value

    key = ("syevj" if layout.jacobi else "syevd", n, count, layout.jobz, layout.fill, in_place)
    solver = plan(ctx, key, lambda: Solver(
        ctx.device_id, ctx.adapter.package,
        {"a": 0 if in_place else count * n * n * isz, "info": info_bytes(count)}, query))
    out = layout.recall(ctx, solver, (a.ptr,), results)
    CusolverCall.remember(call, (a,), None, ctx, key, layout, *shapes)
    return out


class _EighLayout(NamedTuple):
    """An eigendecomposition by cuSOLVER of operands of one layout: ``a`` (as
    :func:`~accelmath.linalg._device.context.layout_of` gives it), its batch of n x n matrices,
    and the route."""

    a: tuple
    batch: tuple
    n: int
    count: int  # matrices in the batch
    fill: int  # the triangle cuSOLVER reads of the copy (column-major: a's other one)
    jobz: int  # eigenvalues alone, or with the eigenvectors
    jacobi: bool  # syevjBatched (else one Xsyevd a matrix)
    in_place: bool  # the eigenvectors made in the result (else in scratch, copied out)
    check: bool  # raise for the matrices that did not converge (else NaN in their results)
    checked: tuple  # a's name and batch shape, where NaN and Inf raise (its copy finds them)

    def recall(self, ctx, solver, addresses, results):
        """Enqueue the decomposition of the matrices at ``addresses[0]`` into ``results``
        (``[(w, address)]``, and ``(v, address)`` with the eigenvectors), and raise for
        those that did not converge where it checks (for NaN and Inf in them first, where
        they are checked): ``w``, or ``(w, v)``."""
        batch, n, count = self.batch, self.n, self.count
        real = real_dtype(ctx.dtype)
        isz, dt, dt_real = ITEMSIZE[ctx.dtype], DATA_TYPE[ctx.dtype], DATA_TYPE[real]
        w_ptr = results[0][1]
        handles, ws = solver.state(ctx.stream)
        scratch = results[1][1] if self.in_place else ws + solver.offsets["a"]
        info = ws + solver.offsets["info"]
        flags = clear_flags(ctx, solver, ws, count, self.checked) or (0,)
        gather(ctx, *operands_at(addresses, (self.a,)), batch, scratch, "C", conj=True,
               flags=flags[0])
        work, wbytes, host, hbytes = solver.work(ws)
        if self.jacobi:
            typed(cusolver.lib, ctx.dtype, "syevj_batched", "heevj_batched")(
                handles[0], self.jobz, self.fill, n, scratch, n, w_ptr, work, wbytes // isz,
                info, _jacobi_params("syevj"), count)
        else:
            rsz = ITEMSIZE[real]
            for i in range(count):
                cusolver.lib.xsyevd(handles[0], handles[1], self.jobz, self.fill, n, dt,
                                    scratch + i * n * n * isz, n, dt_real, w_ptr + i * n * rsz,
                                    dt, work, wbytes, host, hbytes, info + 4 * i)
        failed = [(w_ptr, n, real)]
        if len(results) > 1:
            if not self.in_place:
                scatter_f(ctx, scratch, results[1][1], batch, n, n)
            failed.append((results[1][1], n * n, ctx.dtype))
        finish_info(solver, ctx, ws, batch, self.check, EIGENVALUES_DID_NOT_CONVERGE, failed,
                    checked=self.checked)
        return _finished(ctx, [r for r, _ in results])


def _finished(ctx, results):
    """What the caller gets of ``results`` (a sequence): one result, or a tuple of them."""
    results = tuple(ctx.finish(r) for r in results)
    return results[0] if len(results) == 1 else results


def _jacobi_params(kind):
    """cuSOLVER's Jacobi parameters of ``kind`` ("syevj" or "gesvdj"; default tolerance and
    sweeps; gesvdj's sort the singular values descending), made once."""
    if kind not in _JACOBI:
        params = ctypes.c_void_p()
        getattr(cusolver.lib, f"create_{kind}_info")(ctypes.byref(params))
        _JACOBI[kind] = params.value
    return _JACOBI[kind]


def svd(a, *, full_matrices, compute_uv, check, method, stream, finite=None):
    """``(u, s, vh)`` (or ``s``) of each matrix of ``a``, singular values descending;
    ``finite``: a's name where NaN and Inf raise (see
    :func:`accelmath.linalg._device.finite.prepare`), before a failure to converge would."""
    ctx = Context(a, stream)
    pending = _finite.enqueue(ctx, (a,), finite)
    try:
        results = _svd(ctx, a, full_matrices, compute_uv, check, method)
    except LinAlgError:
        _finite.check(pending)  # (a NaN or an infinity is what failed: said so)
        raise
    _finite.check(pending)
    return results


def _svd(ctx, a, full_matrices, compute_uv, check, method):
    """:func:`svd` on the call's context."""
    batch = batch_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    count = count_of(batch)
    real = real_dtype(ctx.dtype)
    s, s_ptr = ctx.empty(batch + (k,), real)
    ucols, vrows = (m, n) if full_matrices else (k, k)
    if compute_uv:
        u, u_ptr = ctx.empty(batch + (m, ucols))
        vh, vh_ptr = ctx.empty(batch + (vrows, n))
    results = (u, s, vh) if compute_uv else (s,)
    if count == 0 or k == 0:
        if compute_uv and count and full_matrices:  # (NumPy: identities)
            _kernels.identity(u_ptr, m, count, ctx.dtype, ctx.stream, ctx.device_id)
            _kernels.identity(vh_ptr, n, count, ctx.dtype, ctx.stream, ctx.device_id)
        return _finished(ctx, results)
    if method == "batched" or (method == "auto" and count > 1):
        if max(m, n) <= _SVD_JACOBI_MAX:
            _svd_jacobi(ctx, a, batch, compute_uv, full_matrices, check, s_ptr,
                        u_ptr if compute_uv else 0, vh_ptr if compute_uv else 0)
            return _finished(ctx, results)
        if method == "batched":
            raise InvalidArgumentError(
                f'method="batched" takes matrices of at most {_SVD_JACOBI_MAX} rows and '
                f'columns for svd, got {m} x {n}')
    if method == "auto" and _svd_gesvdj(ctx, a, batch, compute_uv, full_matrices, check,
                                        s_ptr, u_ptr if compute_uv else 0,
                                        vh_ptr if compute_uv else 0):
        return _finished(ctx, results)
    # cuSOLVER's gesvd takes tall matrices: a wide one goes in as its conjugate transpose
    tall = m >= n
    rows, cols = (m, n) if tall else (n, m)
    job = ord("N") if not compute_uv else ord("A") if full_matrices else ord("S")
    left = rows if full_matrices else cols  # columns of the tall matrix's U
    isz, dt, dt_real = ITEMSIZE[ctx.dtype], DATA_TYPE[ctx.dtype], DATA_TYPE[real]

    def query(handles):
        dev, host = _sizes()
        cusolver.lib.xgesvd_buffer_size(handles[0], handles[1], job, job, rows, cols, dt, None,
                                        rows, dt_real, None, dt, None, rows, dt, None, cols, dt,
                                        dev, host)
        return dev.value, host.value

    parts = {"a": count * rows * cols * isz, "info": count * 4}
    if compute_uv:
        parts.update(u=count * rows * left * isz, vt=count * cols * cols * isz)
    solver = plan(ctx, ("gesvd", m, n, count, job), lambda: Solver(
        ctx.device_id, ctx.adapter.package, parts, query))
    handles, ws = solver.state(ctx.stream)
    scratch, info = ws + solver.offsets["a"], ws + solver.offsets["info"]
    gather(ctx, a, batch, scratch, "F" if tall else "C", conj=not tall)
    uw = ws + solver.offsets.get("u", 0) if compute_uv else None
    vw = ws + solver.offsets.get("vt", 0) if compute_uv else None
    work, wbytes, host, hbytes = solver.work(ws)
    rsz = ITEMSIZE[real]
    for i in range(count):
        cusolver.lib.xgesvd(
            handles[0], handles[1], job, job, rows, cols, dt, scratch + i * rows * cols * isz,
            rows, dt_real, s_ptr + i * k * rsz, dt,
            uw + i * rows * left * isz if compute_uv else None, rows, dt,
            vw + i * cols * cols * isz if compute_uv else None, cols, dt, work, wbytes, host,
            hbytes, info + 4 * i)
    if compute_uv:
        if tall:  # a = U S VT: both column-major
            scatter_f(ctx, uw, u_ptr, batch, m, ucols)
            scatter_f(ctx, vw, vh_ptr, batch, vrows, n, ld=cols)
        else:  # a^H = U' S VT': u = VT'^H, vh = U'^H, each a conjugated copy in C order
            copy(ctx, vw, u_ptr, batch + (m, m), c_strides(batch, m, m), c_strides(batch, m, m),
                     conj=True)
            copy(ctx, uw, vh_ptr, batch + (vrows, n), c_strides(batch, vrows, n),
                     c_strides(batch, vrows, n), conj=True)
    failed = [(s_ptr, k, real)]
    if compute_uv:
        failed += [(u_ptr, m * ucols, ctx.dtype), (vh_ptr, vrows * n, ctx.dtype)]
    finish_info(solver, ctx, ws, batch, check, SVD_DID_NOT_CONVERGE, failed)
    return _finished(ctx, results)


def _svd_jacobi(ctx, a, batch, compute_uv, full_matrices, check, s_ptr, u_ptr, vh_ptr):
    """Enqueue the svd of a batch of matrices up to 32 x 32 by cuSOLVER's batched Jacobi
    method, which gives the full U (m x m) and V (n x n), column-major."""
    m, n = a.shape[-2:]
    k, count = min(m, n), count_of(batch)
    isz = ITEMSIZE[ctx.dtype]
    jobz = cusolver.EIG_MODE["VECTOR" if compute_uv else "NOVECTOR"]
    query_size = typed(cusolver.lib, ctx.dtype, "gesvdj_batched_buffer_size")

    def query(handles):
        lwork = ctypes.c_int()
        query_size(handles[0], jobz, m, n, None, m, None, None, m, None, n,
                   ctypes.byref(lwork), _jacobi_params("gesvdj"), count)
        return lwork.value * isz, 0

    parts = {"a": count * m * n * isz, "u": count * m * m * isz, "v": count * n * n * isz,
             "info": count * 4}
    solver = plan(ctx, ("gesvdj", m, n, count, jobz), lambda: Solver(
        ctx.device_id, ctx.adapter.package, parts, query))
    handles, ws = solver.state(ctx.stream)
    scratch, uw, vw = (ws + solver.offsets[part] for part in ("a", "u", "v"))
    gather(ctx, a, batch, scratch, "F")
    work, wbytes, _, _ = solver.work(ws)
    typed(cusolver.lib, ctx.dtype, "gesvdj_batched")(
        handles[0], jobz, m, n, scratch, m, s_ptr, uw, m, vw, n, work, wbytes // isz,
        ws + solver.offsets["info"], _jacobi_params("gesvdj"), count)
    ucols, vrows = (m, n) if full_matrices else (k, k)
    failed = _svd_vectors(ctx, batch, (m, n), (ucols, vrows), (m * m, n * n), compute_uv,
                          (s_ptr, u_ptr, vh_ptr), (uw, vw))
    finish_info(solver, ctx, ws, batch, check, SVD_DID_NOT_CONVERGE, failed)


def _svd_vectors(ctx, batch, shape, kept, steps, compute_uv, results, work):
    """Copy the Jacobi methods' U and V (column-major, ``steps`` elements a matrix apart in
    ``work``) to the results ``u`` (U's first ``kept[0]`` columns) and ``vh`` (V^H's first
    ``kept[1]`` rows: V read in C order is V^T, conjugated V^H) where ``compute_uv``; the
    results' ``(pointer, elements a matrix, dtype)``, to fill with NaN where one failed."""
    (m, n), (ucols, vrows), (s_ptr, u_ptr, vh_ptr), (uw, vw) = shape, kept, results, work
    failed = [(s_ptr, min(m, n), real_dtype(ctx.dtype))]
    if compute_uv:
        copy(ctx, uw, u_ptr, batch + (m, ucols), item_strides(batch, steps[0]) + (1, m),
                 c_strides(batch, m, ucols))
        copy(ctx, vw, vh_ptr, batch + (vrows, n), item_strides(batch, steps[1]) + (n, 1),
                 c_strides(batch, vrows, n), conj=True)
        failed += [(u_ptr, m * ucols, ctx.dtype), (vh_ptr, vrows * n, ctx.dtype)]
    return failed


def _svd_gesvdj(ctx, a, batch, compute_uv, full_matrices, check, s_ptr, u_ptr, vh_ptr):
    """Enqueue the svd of each matrix by cuSOLVER's one-matrix Jacobi method (``gesvdj``,
    torch's default driver; faster than ``gesvd`` up to a few thousand rows). With ``check``,
    False where a matrix did not converge (the caller then runs ``gesvd``, as torch does);
    without, NaN there. True where the results are written."""
    m, n = a.shape[-2:]
    k, count = min(m, n), count_of(batch)
    isz = ITEMSIZE[ctx.dtype]
    jobz = cusolver.EIG_MODE["VECTOR" if compute_uv else "NOVECTOR"]
    econ = 0 if full_matrices and compute_uv else 1
    ucols, vrows = (k, k) if econ else (m, n)  # U is m x ucols, V n x vrows
    params = _jacobi_params("gesvdj")

    def query(handles):
        lwork = ctypes.c_int()
        typed(cusolver.lib, ctx.dtype, "gesvdj_buffer_size")(
            handles[0], jobz, econ, m, n, None, m, None, None, m, None, n,
            ctypes.byref(lwork), params)
        return lwork.value * isz, 0

    # (U and V get buffers even where no vectors are asked for: gesvdj fails without them)
    parts = {"a": count * m * n * isz, "info": count * 4, "u": count * m * ucols * isz,
             "v": count * n * vrows * isz}
    solver = plan(ctx, ("gesvdj1", m, n, count, jobz, econ), lambda: Solver(
        ctx.device_id, ctx.adapter.package, parts, query))
    handles, ws = solver.state(ctx.stream)
    scratch, info, uw, vw = (ws + solver.offsets[part] for part in ("a", "info", "u", "v"))
    gather(ctx, a, batch, scratch, "F")
    work, wbytes, _, _ = solver.work(ws)
    run = typed(cusolver.lib, ctx.dtype, "gesvdj")
    rsz = ITEMSIZE[real_dtype(ctx.dtype)]
    for i in range(count):
        run(handles[0], jobz, econ, m, n, scratch + i * m * n * isz, m, s_ptr + i * k * rsz,
            uw + i * m * ucols * isz, m, vw + i * n * vrows * isz, n, work, wbytes // isz,
            info + 4 * i, params)
    if check and read_info(info, count, ctx.stream).any():
        return False
    failed = _svd_vectors(ctx, batch, (m, n), (ucols, vrows), (m * ucols, n * vrows),
                          compute_uv, (s_ptr, u_ptr, vh_ptr), (uw, vw))
    if not check:
        finish_info(solver, ctx, ws, batch, False, SVD_DID_NOT_CONVERGE, failed)
    return True


def geqrf(solver, handles, ws, a, tau, m, n, count, dtype, stride):
    """Enqueue the in-place QR factorization of ``count`` column-major m x n matrices at
    ``a``, ``stride`` elements apart (leading dimension m), their min(m, n) Householder
    factors each at ``tau``, their info codes in the solver's ``"info"`` part."""
    isz, dt = ITEMSIZE[dtype], DATA_TYPE[dtype]
    k = min(m, n)
    work, wbytes, host, hbytes = solver.work(ws)
    info = ws + solver.offsets["info"]
    for i in range(count):
        cusolver.lib.xgeqrf(handles[0], handles[1], m, n, dt, a + i * stride * isz, m, dt,
                            tau + i * k * isz, dt, work, wbytes, host, hbytes, info + 4 * i)


def qr(a, *, mode, stream, call=None):
    """NumPy's ``qr`` of each matrix of ``a``: ``(q, r)`` for "reduced" and "complete", ``r``
    for "r", ``(h, tau)`` for "raw". Where Q holds a's matrices (m >= n), it is made in the
    result itself, each matrix column-major (torch's layout), but for JAX (C order).
    ``call``: the call key to remember (a :class:`~accelmath.linalg._device.context.CusolverCall`,
    where ``a`` was read where it lies)."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    count = count_of(batch)
    layout = _QrLayout(layout_of(a), batch, m, n, count, mode,
                       mode in ("reduced", "complete") and _q_columns(m, n, mode) >= n
                       and not ctx.adapter.immutable)
    shapes = layout.results(ctx.dtype)
    results = [ctx.empty(shape, dtype, strides) for shape, strides, dtype in shapes]
    if count == 0 or m == 0 or n == 0:  # (r is empty: no rows or no columns)
        if layout.generate and count and _q_columns(m, n, mode) == m:  # (NumPy: Q = I)
            _kernels.identity(results[0][1], m, count, ctx.dtype, ctx.stream, ctx.device_id)
        return _finished(ctx, [r for r, _ in results])
    isz, dt = ITEMSIZE[ctx.dtype], DATA_TYPE[ctx.dtype]
    qcols = _q_columns(m, n, mode)
    orgqr_size = typed(cusolver.lib, ctx.dtype, "orgqr_buffer_size", "ungqr_buffer_size")

    def query(handles):
        dev, host = _sizes()
        cusolver.lib.xgeqrf_buffer_size(handles[0], handles[1], m, n, dt, None, m, dt, None, dt,
                                        dev, host)
        lwork = ctypes.c_int()
        if layout.generate:
            orgqr_size(handles[0], m, qcols, k, None, m, None, ctypes.byref(lwork))
        return max(dev.value, lwork.value * isz), host.value

    # one column-major m x max(n, qcols) matrix per item (the first n columns a's; Q itself
    # where it holds them), and tau; in "raw" mode those are the results themselves
    parts = {"info": count * 4}
    if mode != "raw":
        parts.update(a=0 if layout.in_place else count * layout.item * isz,
                     tau=count * k * isz)
    key = ("geqrf", m, n, count, mode, layout.in_place)
    solver = plan(ctx, key, lambda: Solver(ctx.device_id, ctx.adapter.package, parts, query))
    out = layout.recall(ctx, solver, (a.ptr,), results)
    CusolverCall.remember(call, (a,), None, ctx, key, layout, *shapes)
    return out


def _q_columns(m, n, mode):
    """The columns of Q (and rows of R) of NumPy's ``qr`` of m x n matrices in ``mode``."""
    return m if mode == "complete" else min(m, n)


class _QrLayout(NamedTuple):
    """A QR factorization by cuSOLVER of operands of one layout: ``a`` (as
    :func:`~accelmath.linalg._device.context.layout_of` gives it), its batch of m x n matrices,
    NumPy's ``mode`` and the route."""

    a: tuple
    batch: tuple
    m: int
    n: int
    count: int  # matrices in the batch
    mode: str
    in_place: bool  # Q made in the result (else in scratch space, copied out)

    @property
    def generate(self):
        """Whether Q is formed (modes "reduced" and "complete")."""
        return self.mode in ("reduced", "complete")

    @property
    def item(self):
        """Elements of each matrix's column-major buffer: m x max(n, Q's columns)."""
        return self.m * max(self.n, _q_columns(self.m, self.n, self.mode))

    def results(self, dtype):
        """Each result's ``(shape, element strides, dtype)``: ``(h, tau)`` in "raw" mode,
        else ``(q, r)``, or ``r`` alone in mode "r"."""
        batch, m, n, mode = self.batch, self.m, self.n, self.mode
        if mode == "raw":  # NumPy's h: the column-major factorization read in C order
            shapes = [batch + (n, m), batch + (min(m, n),)]
            return [(shape, contiguous_strides(shape), dtype) for shape in shapes]
        rows = _q_columns(m, n, mode)
        r = (batch + (rows, n), c_strides(batch, rows, n), dtype)
        if mode == "r":
            return [r]
        return [(batch + (m, rows), (f_strides if self.in_place else c_strides)(batch, m, rows),
                 dtype), r]

    def recall(self, ctx, solver, addresses, results):
        """Enqueue the factorization of the matrices at ``addresses[0]`` into ``results``
        (``[(array, address)]`` as :meth:`results` lays them out): the results."""
        batch, m, n, count = self.batch, self.m, self.n, self.count
        k, qcols, item = min(m, n), _q_columns(m, n, self.mode), self.item
        handles, ws = solver.state(ctx.stream)
        if self.mode == "raw":
            scratch, taus = results[0][1], results[1][1]
        else:
            scratch = results[0][1] if self.in_place else ws + solver.offsets["a"]
            taus = ws + solver.offsets["tau"]
        src = batch_strides(*operands_at(addresses, (self.a,)), batch)
        _kernels.copy_matrices(addresses[0], scratch, batch, src[:-2], item_strides(batch, item),
                               m, n, src[-2:], (1, m), ctx.dtype, ctx.stream, ctx.device_id)
        geqrf(solver, handles, ws, scratch, taus, m, n, count, ctx.dtype, item)
        if self.mode != "raw":
            _kernels.copy_matrices(scratch, results[-1][1], batch, item_strides(batch, item),
                                   item_strides(batch, qcols * n), qcols, n, (1, m), (n, 1),
                                   ctx.dtype, ctx.stream, ctx.device_id, triangle="U")
        if self.generate:
            isz = ITEMSIZE[ctx.dtype]
            orgqr = typed(cusolver.lib, ctx.dtype, "orgqr", "ungqr")
            work, wbytes = solver.work(ws)[:2]
            info = ws + solver.offsets["info"]
            for i in range(count):
                orgqr(handles[0], m, qcols, k, scratch + i * item * isz, m, taus + i * k * isz,
                      work, wbytes // isz, info + 4 * i)
            if not self.in_place:  # the first qcols columns of each item, into Q in C order
                copy(ctx, scratch, results[0][1], batch + (m, qcols),
                         item_strides(batch, item) + (1, m), c_strides(batch, m, qcols))
        return _finished(ctx, [r for r, _ in results])

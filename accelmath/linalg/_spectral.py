"""Orthogonal factorizations on the device: ``eigh`` (cuSOLVER's ``cusolverDnXsyevd``, or
``syevjBatched`` for batches), ``svd`` (``cusolverDnXgesvd``) and ``qr`` (``Xgeqrf`` with
``orgqr``/``ungqr``)."""

import ctypes

from accelmath.bindings import cusolver
from accelmath.linalg import _kernels
from accelmath.linalg._context import (ITEMSIZE, Context, batch_of, batch_strides, c_strides,
                                       count_of, gather, item_strides, plan, scatter_f)
from accelmath.linalg._cusolver import DATA_TYPE, LOWER, REAL, UPPER, Solver
from accelmath.linalg._lu import finish_info

__all__ = ["eigh", "svd", "qr"]

# batches of matrices up to this size go through the batched Jacobi method (method="auto")
_JACOBI_MAX_N = 128
_JACOBI = None  # cuSOLVER's Jacobi parameters, made on first use
_ORGQR = {"float32": "sorgqr", "float64": "dorgqr", "complex64": "cungqr",
          "complex128": "zungqr"}


def _sizes():
    return ctypes.c_size_t(), ctypes.c_size_t()


def eigh(a, *, uplo, vectors, check, method, stream):
    """Eigenvalues (ascending) and, where ``vectors``, eigenvectors (columns) of each
    Hermitian matrix of ``a``, from its ``uplo`` triangle."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    n = a.shape[-1]
    count = count_of(batch)
    real = REAL[ctx.dtype]
    w, w_ptr = ctx.empty(batch + (n,), real)
    v, v_ptr = ctx.empty(batch + (n, n)) if vectors else (None, 0)
    if count == 0 or n == 0:
        return (ctx.finish(w), ctx.finish(v)) if vectors else ctx.finish(w)
    isz, dt, dt_real = ITEMSIZE[ctx.dtype], DATA_TYPE[ctx.dtype], DATA_TYPE[real]
    # read column-major, the conjugated copy is the matrix itself, its uplo triangle now the
    # other one
    fill = UPPER if uplo == "L" else LOWER
    jobz = cusolver.EIG_MODE["VECTOR" if vectors else "NOVECTOR"]

    def query(handles):
        dev, host = _sizes()
        cusolver.lib.xsyevd_buffer_size(handles[0], handles[1], jobz, fill, n, dt, None, n,
                                        dt_real, None, dt, dev, host)
        return dev.value, host.value

    if method == "batched" or (method == "auto" and count > 1 and n <= _JACOBI_MAX_N):
        return _eigh_jacobi(ctx, a, batch, n, count, jobz, fill, w, w_ptr, v, v_ptr, check)
    solver = plan(ctx, ("syevd", n, count, jobz, fill), lambda: Solver(
        ctx.device_id, ctx.adapter.package, {"a": count * n * n * isz, "info": count * 4},
        query))
    handles, ws = solver.state(ctx.stream)
    scratch, info = ws + solver.offsets["a"], ws + solver.offsets["info"]
    gather(ctx, a, batch, scratch, "C", conj=True)
    work, wbytes, host, hbytes = solver.work(ws)
    rsz = ITEMSIZE[real]
    for i in range(count):
        cusolver.lib.xsyevd(handles[0], handles[1], jobz, fill, n, dt, scratch + i * n * n * isz,
                            n, dt_real, w_ptr + i * n * rsz, dt, work, wbytes, host, hbytes,
                            info + 4 * i)
    if vectors:
        scatter_f(ctx, scratch, v_ptr, batch, n, n)
    _check(solver, ctx, ws, batch, check, "Eigenvalues did not converge",
           [(w_ptr, n, real)] + ([(v_ptr, n * n, ctx.dtype)] if vectors else []))
    return (ctx.finish(w), ctx.finish(v)) if vectors else ctx.finish(w)


def _jacobi_params():
    """cuSOLVER's Jacobi parameters (default tolerance and sweeps), made once."""
    global _JACOBI
    if _JACOBI is None:
        params = ctypes.c_void_p()
        cusolver.lib.create_syevj_info(ctypes.byref(params))
        _JACOBI = params.value
    return _JACOBI


def _eigh_jacobi(ctx, a, batch, n, count, jobz, fill, w, w_ptr, v, v_ptr, check):
    """``eigh`` of a batch by cuSOLVER's batched Jacobi method (``syevjBatched``)."""
    isz = ITEMSIZE[ctx.dtype]
    name = {"float32": "ssyevj", "float64": "dsyevj", "complex64": "cheevj",
            "complex128": "zheevj"}[ctx.dtype] + "_batched"
    params = _jacobi_params()

    def query(handles):
        lwork = ctypes.c_int()
        getattr(cusolver.lib, name + "_buffer_size")(handles[0], jobz, fill, n, None, n, None,
                                                     ctypes.byref(lwork), params, count)
        return lwork.value * isz, 0

    solver = plan(ctx, ("syevj", n, count, jobz, fill), lambda: Solver(
        ctx.device_id, ctx.adapter.package, {"a": count * n * n * isz, "info": count * 4},
        query))
    handles, ws = solver.state(ctx.stream)
    scratch, info = ws + solver.offsets["a"], ws + solver.offsets["info"]
    gather(ctx, a, batch, scratch, "C", conj=True)
    work = ws + solver.offsets["work"]
    getattr(cusolver.lib, name)(handles[0], jobz, fill, n, scratch, n, w_ptr, work,
                                solver.work_bytes // isz, info, params, count)
    if v is not None:
        scatter_f(ctx, scratch, v_ptr, batch, n, n)
    real = REAL[ctx.dtype]
    _check(solver, ctx, ws, batch, check, "Eigenvalues did not converge",
           [(w_ptr, n, real)] + ([(v_ptr, n * n, ctx.dtype)] if v is not None else []))
    return (ctx.finish(w), ctx.finish(v)) if v is not None else ctx.finish(w)


def _check(solver, ctx, ws, batch, check, message, results):
    """Raise for failed matrices (``check``), else fill each of ``results`` (address, elements
    per matrix, dtype) with NaN where its matrix failed."""
    if check:
        finish_info(solver, ctx, ws, batch, True, message, 0, 0)
        return
    info = ws + solver.offsets["info"]
    for ptr, per_matrix, dtype in results:
        _kernels.fail_to_nan(info, ptr, per_matrix, count_of(batch), dtype, ctx.stream,
                             ctx.device_id)


def svd(a, *, full_matrices, compute_uv, check, method, stream):
    """``(u, s, vh)`` (or ``s``) of each matrix of ``a``, singular values descending."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    count = count_of(batch)
    real = REAL[ctx.dtype]
    s, s_ptr = ctx.empty(batch + (k,), real)
    ucols, vrows = (m, n) if full_matrices else (k, k)
    if compute_uv:
        u, u_ptr = ctx.empty(batch + (m, ucols))
        vh, vh_ptr = ctx.empty(batch + (vrows, n))
    if count == 0 or k == 0:
        if compute_uv:
            if count and full_matrices:  # (NumPy: identities where a side is not empty)
                _kernels.identity(u_ptr, m, count, ctx.dtype, ctx.stream, ctx.device_id)
                _kernels.identity(vh_ptr, n, count, ctx.dtype, ctx.stream, ctx.device_id)
            return ctx.finish(u), ctx.finish(s), ctx.finish(vh)
        return ctx.finish(s)
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
            dense = c_strides
            ctx.copy(vw, u_ptr, batch + (m, m), dense(batch, m, m), dense(batch, m, m),
                     conj=True)
            ctx.copy(uw, vh_ptr, batch + (vrows, n), dense(batch, vrows, n),
                     dense(batch, vrows, n), conj=True)
    results = [(s_ptr, k, real)]
    if compute_uv:
        results += [(u_ptr, m * ucols, ctx.dtype), (vh_ptr, vrows * n, ctx.dtype)]
    _check(solver, ctx, ws, batch, check, "SVD did not converge", results)
    return (ctx.finish(u), ctx.finish(s), ctx.finish(vh)) if compute_uv else ctx.finish(s)


def qr(a, *, mode, stream):
    """NumPy's ``qr`` of each matrix of ``a``: ``(q, r)`` for "reduced" and "complete", ``r``
    for "r", ``(h, tau)`` for "raw"."""
    ctx = Context(a, stream)
    batch = batch_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    count = count_of(batch)
    qcols = m if mode == "complete" else k
    rrows = m if mode == "complete" else k
    outputs = {}
    if mode == "raw":
        outputs["h"] = ctx.empty(batch + (n, m))
        outputs["tau"] = ctx.empty(batch + (k,))
    else:
        outputs["r"] = ctx.empty(batch + (rrows, n))
        if mode != "r":
            outputs["q"] = ctx.empty(batch + (m, qcols))
    names = {"raw": ("h", "tau"), "r": ("r",)}.get(mode, ("q", "r"))

    def done():
        results = tuple(ctx.finish(outputs[name][0]) for name in names)
        return results[0] if len(results) == 1 else results

    if count == 0 or m == 0 or n == 0:
        if "q" in outputs and count and qcols == m:  # (NumPy: Q is the identity)
            _kernels.identity(outputs["q"][1], m, count, ctx.dtype, ctx.stream, ctx.device_id)
        return done()  # (r is empty: no rows or no columns)
    isz, dt = ITEMSIZE[ctx.dtype], DATA_TYPE[ctx.dtype]
    orgqr = _ORGQR[ctx.dtype]

    def query(handles):
        dev, host = _sizes()
        cusolver.lib.xgeqrf_buffer_size(handles[0], handles[1], m, n, dt, None, m, dt, None, dt,
                                        dev, host)
        lwork = ctypes.c_int()
        if mode in ("reduced", "complete"):
            getattr(cusolver.lib, orgqr + "_buffer_size")(handles[0], m, qcols, k, None, m,
                                                          None, ctypes.byref(lwork))
        return max(dev.value, lwork.value * isz), host.value

    qsize = m * max(n, qcols)
    solver = plan(ctx, ("geqrf", m, n, count, mode), lambda: Solver(
        ctx.device_id, ctx.adapter.package,
        {"a": count * qsize * isz, "tau": count * k * isz, "info": count * 4}, query))
    handles, ws = solver.state(ctx.stream)
    scratch, tau, info = (ws + solver.offsets[p] for p in ("a", "tau", "info"))
    # one column-major m x max(n, qcols) matrix per item: the first n columns are a's
    src = batch_strides(a, batch)
    _kernels.copy_matrices(a.ptr, scratch, batch, src[:-2], item_strides(batch, qsize), m, n,
                           src[-2:], (1, m), ctx.dtype, ctx.stream, ctx.device_id)
    work, wbytes, host, hbytes = solver.work(ws)
    for i in range(count):
        cusolver.lib.xgeqrf(handles[0], handles[1], m, n, dt, scratch + i * qsize * isz, m, dt,
                            tau + i * k * isz, dt, work, wbytes, host, hbytes, info + 4 * i)
    if mode == "raw":  # NumPy's h: the column-major result read in C order
        h_ptr, tau_ptr = outputs["h"][1], outputs["tau"][1]
        ctx.copy(scratch, h_ptr, batch + (n, m), item_strides(batch, qsize) + (m, 1),
                 c_strides(batch, n, m))
        ctx.copy(tau, tau_ptr, batch + (k,), item_strides(batch, k) + (1,),
                 item_strides(batch, k) + (1,))
        return done()
    r_ptr = outputs["r"][1]
    _kernels.copy_matrices(scratch, r_ptr, batch, item_strides(batch, qsize),
                           item_strides(batch, rrows * n), rrows, n, (1, m), (n, 1), ctx.dtype,
                           ctx.stream, ctx.device_id, triangle="U")
    if mode == "r":
        return done()
    generate = getattr(cusolver.lib, orgqr)
    for i in range(count):
        generate(handles[0], m, qcols, k, scratch + i * qsize * isz, m, tau + i * k * isz, work,
                 solver.work_bytes // isz, info + 4 * i)
    # the first qcols columns of each column-major item, into Q in C order
    ctx.copy(scratch, outputs["q"][1], batch + (m, qcols), item_strides(batch, qsize) + (1, m),
             c_strides(batch, m, qcols))
    return done()



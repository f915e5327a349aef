"""Host execution of the linear-algebra functions: NumPy's and SciPy's LAPACK.

Every function takes NumPy arrays already checked and promoted (by
:mod:`accelmath.linalg._functions`) and returns NumPy results. The NumPy functions are
``numpy.linalg``'s own (so results, dtypes, empty matrices, subclasses and scalars are
NumPy's); a failed factorization, which NumPy reports for the whole stack, is located here:
with ``check=True`` a :class:`~accelmath.errors.LinAlgError` names the batch index of the
first matrix that failed, with ``check=False`` nothing is raised and that matrix's results
hold NaN. The SciPy functions run matrix by matrix over the broadcast batch (SciPy's LAPACK
wrappers take one matrix), zero-size batches included, but for batches of many small
systems, which the solves take row by row over the whole batch (:func:`_substitute`) and
``cho_factor`` through NumPy's batched Cholesky.
"""

import concurrent.futures
import functools
import math
import os

import numpy

from accelmath.errors import LinAlgError
from accelmath.linalg import _checks as checks

# numpy.linalg's functions taken from the module that defines them: whoever replaces
# numpy.linalg's public names by accelmath's (NumPy's own tests run on accelmath) does not
# send these calls back here
_numpy = getattr(numpy.linalg, "_linalg", None) or numpy.linalg.linalg

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "svd", "lstsq",
           "cho_factor", "cho_solve", "lu_factor", "lu_solve", "solve_triangular", "column_major"]


def column_major(a):
    """Matrices ``a`` with each matrix column-major (a copy where one is not): SciPy's
    LAPACK wrappers read them without copying them again, as they would a C-ordered one on
    every call."""
    return numpy.swapaxes(numpy.ascontiguousarray(numpy.swapaxes(a, -1, -2)), -1, -2)


def _rhs_axes(b):
    """The matrix (2) or vector (1) axes of right-hand sides ``b``: a vector only when 1-D."""
    return 1 if b.ndim == 1 else 2


def _batch(arrays, cores):
    """The broadcast batch shape of ``arrays``, each with ``cores`` matrix or vector axes."""
    return numpy.broadcast_shapes(*(x.shape[:x.ndim - c] for x, c in zip(arrays, cores)))


def _over_batch(arrays, cores):
    """The broadcast batch shape of ``arrays`` (each with ``cores`` matrix or vector axes),
    and the arrays broadcast to it."""
    batch = _batch(arrays, cores)
    return batch, [numpy.broadcast_to(x, batch + x.shape[x.ndim - c:])
                   for x, c in zip(arrays, cores)]


def _checked(function, message, check, arrays, cores, names, meanwhile=False, read=None):
    """``function(*arrays)`` as NumPy computes it, a failure located (see the module).

    ``cores`` gives the number of matrix (or vector) axes of each array, ``names`` their
    names; the other leading axes broadcast into the batch. The first array is the matrix a
    failure belongs to. A matrix holding a NaN or an infinity (in any of the arrays) fails
    before LAPACK sees it (whose SVD may never return on one): under ``check`` the first
    such array is named. ``meanwhile``, for a function that returns on any input (a solve):
    large arrays are checked on a second core while it runs, and its result is kept where
    they hold no NaN and no infinity. ``read``: ``"lower"`` or ``"upper"`` where ``function``
    reads that triangle of the first array alone (the other is not checked either).
    """
    finite = False  # (known where the arrays were checked beside the call)
    if meanwhile and _CORES > 1 and sum(x.size for x in arrays) >= _MEANWHILE_SIZE:
        pending = _checker().submit(_finite, *arrays)
        try:
            results = function(*arrays)  # (NumPy's loops release the interpreter lock)
        except numpy.linalg.LinAlgError:
            results = None  # (the path below locates the failure)
        finite = pending.result()
        if finite and results is not None:
            return results
    given = arrays[0]
    bad = [] if finite else _nonfinite(arrays, cores, names, check, read)
    if bad:  # (the others computed with identities in their place)
        arrays = (_identities(_over_batch(arrays, cores)[1][0], bad, given),) + tuple(
            arrays[1:])
    try:
        if finite:  # (finite arrays whose call failed above: not called again, searched)
            raise numpy.linalg.LinAlgError
        results = function(*arrays)
    except numpy.linalg.LinAlgError:  # find which matrices failed
        batch, each = _over_batch(arrays, cores)
        # (vectors as columns: NumPy reads a vector only where it is 1-D, a batch of them
        # as matrices; solve, the one function of vectors here, fails as a's do)
        failed = _failing(function, [x[..., None] if c == 1 else x for x, c in zip(each, cores)],
                          len(batch), first=check)
        if failed and check:
            raise LinAlgError(message, failed[0]) from None
        if not failed:  # (a failure of the stack that no single matrix repeats)
            raise LinAlgError(message)
        results = function(_identities(each[0], failed, given), *arrays[1:])
        bad = bad + failed
    if not bad:
        return results
    for result in results if isinstance(results, tuple) else (results,):
        for index in bad:
            result[index] = numpy.nan
    return results


_CORES = os.cpu_count() or 1
# Arrays of this many entries in all are checked on a second core (below, the thread's
# hand-over costs more than the check: tens of microseconds)
_MEANWHILE_SIZE = 1 << 17


@functools.lru_cache(maxsize=1)
def _checker():
    """The thread that checks large operands while the LAPACK call runs (made on first
    use)."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                 thread_name_prefix="accelmath-check")


# a forked child has none of its parent's threads: it makes its own checker on first use
os.register_at_fork(after_in_child=_checker.cache_clear)


_FEW = 8  # matrices a failing batch search calls one by one


def _failing(function, arrays, axes, first, known=True):
    """The batch indices, in C order, of the matrices on which ``function`` fails
    (``arrays`` broadcast over ``axes`` leading batch axes; only the first where ``first``).
    A failing batch is halved along its first axis and each half called: about twice one
    call's work for a failure among many matrices, where a call per matrix took a Python
    round each (a second for 200,000). ``known``: the call over ``arrays`` is known to fail."""
    if not known:
        try:
            function(*arrays)
            return []
        except numpy.linalg.LinAlgError:
            pass
    if axes == 0:
        return [()]
    shape = arrays[0].shape[:axes]
    if math.prod(shape) <= _FEW:  # (a call each)
        found = []
        for index in numpy.ndindex(shape):
            found += [index + i for i in _failing(function, [x[index] for x in arrays], 0,
                                                     first, known=False)]
            if first and found:
                break
        return found
    n = shape[0]
    if n == 1:
        return [(0,) + i for i in _failing(function, [x[0] for x in arrays], axes - 1, first)]
    found = []
    for lo, hi in ((0, n // 2), (n // 2, n)):
        found += [(lo + i[0],) + i[1:] for i in _failing(
            function, [x[lo:hi] for x in arrays], axes, first, known=False)]
        if first and found:
            break
    return found


def _identities(a, indices, like):
    """A copy of matrices ``a`` with identities at the batch ``indices``, of the type of the
    caller's array ``like`` where it is a subclass of its shape (a ``numpy.matrix``: NumPy's
    functions then wrap their results as they would ``like``'s)."""
    patched = numpy.array(a)
    for index in indices:
        patched[index] = numpy.eye(*patched.shape[-2:], dtype=patched.dtype)
    if type(like) is not numpy.ndarray and patched.shape == like.shape:
        patched = patched.view(type(like))
    return patched


def _nonfinite(arrays, cores, names, check, read=None):
    """The batch indices (over the broadcast batch) of the matrices holding a NaN or an
    infinity in any of ``arrays`` (``cores``, ``names`` and ``read`` as :func:`_checked`
    takes them); with ``check``, LinAlgError naming the first such array and its first such
    matrix (its batch index in that array) instead."""
    for x in arrays:
        if not checks.all_finite(x):
            break
    else:  # (the common case: one quick pass an array)
        return []
    flags = []
    for k, (x, core, name) in enumerate(zip(arrays, cores, names)):
        if not x.size:
            continue
        if k == 0 and read is not None:  # (the triangle the function does not read: zeros)
            x = (numpy.tril if read == "lower" else numpy.triu)(x)
        # (of a numpy.matrix too: an ndarray)
        finite = numpy.isfinite(x, subok=False).all(axis=tuple(range(x.ndim - core, x.ndim)))
        if finite.all():
            continue
        if check:
            first = numpy.unravel_index(int(numpy.argmin(finite)), finite.shape)
            raise checks.not_finite_error(name, tuple(int(i) for i in first))
        flags.append(~finite)
    if not flags:
        return []
    failed = numpy.zeros(_batch(arrays, cores), bool)
    for flag in flags:
        failed |= flag
    return [tuple(int(i) for i in index) for index in numpy.argwhere(failed)]


# One matrix of these dtypes goes to SciPy's LAPACK wrappers directly: numpy.linalg's Python
# layer (its checks, type promotion and floating-point state) costs 2-3 us a call, more than
# LAPACK's own work on a small matrix. A failure (or a NaN or an infinity) takes the general
# path, whose answer (an error naming the operand, or NaN) is the same for one matrix.
_LAPACK_DTYPES = frozenset("fdFD")
_lapack_functions = {}  # (name, dtype char) -> the SciPy wrapper


def _one_matrix(a):
    """Whether ``a`` is one non-empty matrix (a plain ndarray) of a LAPACK dtype."""
    return (a.__class__ is numpy.ndarray and a.ndim == 2 and a.size != 0
            and a.dtype.char in _LAPACK_DTYPES)


def _lapack(name, dtype):
    found = _lapack_functions.get((name, dtype.char))
    if found is None:
        from scipy.linalg.lapack import get_lapack_funcs  # (see _scipy_linalg)
        found = _lapack_functions[name, dtype.char] = get_lapack_funcs(
            (name,), dtype=dtype)[0]
    return found


def _scipy_linalg():
    """scipy.linalg, imported on the first host call that needs it: importing it takes about
    0.2 s, which a process that only solves on the GPU (the subtraction's first call) would
    otherwise pay."""
    import scipy.linalg

    return scipy.linalg


def _identity(n, dtype):
    """An n x n identity of ``dtype``: small ones made once (never written to), the others
    made anew (kept, they would hold their memory for good)."""
    return _small_identity(n, dtype) if n <= 64 else numpy.eye(n, dtype=dtype)


@functools.lru_cache(maxsize=64)
def _small_identity(n, dtype):
    eye = numpy.eye(n, dtype=dtype)
    eye.flags.writeable = False
    return eye


def _finite(*arrays):
    return all(checks.all_finite(x) for x in arrays)


def solve(a, b, *, check):
    """``numpy.linalg.solve(a, b)`` (b a vector only when 1-D)."""
    if (_one_matrix(a) and b.__class__ is numpy.ndarray and b.dtype == a.dtype
            and b.ndim in (1, 2) and b.shape[0] == a.shape[0] and b.size and _finite(a, b)):
        x, info = _lapack("gesv", a.dtype)(a, b)[2:]
        if not info:
            return numpy.ascontiguousarray(x)
    return _checked(_numpy.solve, checks.SINGULAR, check, (a, b), (2, _rhs_axes(b)),
                    ("a", "b"), meanwhile=True)


def inv(a, *, check):
    """``numpy.linalg.inv(a)``."""
    if _one_matrix(a) and a.shape[0] == a.shape[1] and _finite(a):
        # (as NumPy computes it: a solve against the identity, which SciPy's wrapper copies)
        x, info = _lapack("gesv", a.dtype)(a, _identity(a.shape[0], a.dtype))[2:]
        if not info:
            return numpy.ascontiguousarray(x)
    return _checked(_numpy.inv, checks.SINGULAR, check, (a,), (2,), ("a",))


def det(a):
    """``numpy.linalg.det(a)`` (a NumPy scalar for one matrix)."""
    return _numpy.det(a)


def slogdet(a):
    """``numpy.linalg.slogdet(a)`` as a tuple ``(sign, logabsdet)``."""
    return tuple(_numpy.slogdet(a))


def cholesky(a, *, upper, check):
    """``numpy.linalg.cholesky(a, upper=upper)``."""
    if _one_matrix(a) and a.shape[0] == a.shape[1] and _finite(a):
        # LAPACK of a.T, column-major where a is row-major (the wrapper's one copy of it is a
        # plain copy, not a transposition): its other triangle is a's transposed, its factor
        # the transpose of a's, and that transpose of its column-major result is row-major
        # (no copy back)
        factor, info = _lapack("potrf", a.dtype)(a.T, lower=upper, clean=True)
        if not info:
            return factor.T

    def factor(x):
        return _numpy.cholesky(x, upper=upper)

    return _checked(factor, checks.NOT_POSITIVE_DEFINITE, check, (a,), (2,), ("a",),
                    read="upper" if upper else "lower")


def qr(a, *, mode):
    """``numpy.linalg.qr(a, mode)``: ``(q, r)``, ``r`` or ``(h, tau)`` (h transposed, as
    NumPy gives it)."""
    result = _numpy.qr(a, mode)
    return tuple(result) if isinstance(result, tuple) else result


def eigh(a, *, uplo, check, vectors=True):
    """``numpy.linalg.eigh(a, uplo)`` as a tuple ``(w, v)``; without ``vectors``,
    ``numpy.linalg.eigvalsh(a, uplo)``."""
    def decompose(x):
        return tuple(_numpy.eigh(x, uplo)) if vectors else _numpy.eigvalsh(x, uplo)

    return _checked(decompose, checks.EIGENVALUES_DID_NOT_CONVERGE, check, (a,), (2,), ("a",),
                    read="upper" if uplo == "U" else "lower")


def svd(a, *, full_matrices, compute_uv, hermitian, check, name="a"):
    """``numpy.linalg.svd(a, ...)``: ``(u, s, vh)`` or ``s`` (hermitian: through eigh, as
    NumPy computes it; ``numpy.linalg.svdvals`` is the case without ``compute_uv``)."""
    def decompose(x):
        result = _numpy.svd(x, full_matrices, compute_uv, hermitian)
        return tuple(result) if compute_uv else result

    message = (checks.EIGENVALUES_DID_NOT_CONVERGE if hermitian
               else checks.SVD_DID_NOT_CONVERGE)
    return _checked(decompose, message, check, (a,), (2,), (name,),
                    read="lower" if hermitian else None)  # (NumPy's: eigh of the lower)


def lstsq(a, b, *, rcond):
    """``numpy.linalg.lstsq(a, b, rcond)`` as a tuple ``(x, residuals, rank, s)`` (rcond
    None: NumPy's default, machine epsilon times max(m, n)); LinAlgError for a NaN or an
    infinity in ``a`` or ``b`` (whose SVD may never return on one)."""
    _nonfinite((a, b), (2, _rhs_axes(b)), ("a", "b"), True)
    try:
        return tuple(_numpy.lstsq(a, b, rcond=rcond))
    except numpy.linalg.LinAlgError:
        raise LinAlgError(checks.LSTSQ_DID_NOT_CONVERGE, ()) from None


def _empty_factors(shape, dtype):
    """A new array for factors of matrices of ``shape``, each matrix column-major (as
    LAPACK writes one, and SciPy returns it), the matrices in C order over the batch."""
    return numpy.swapaxes(numpy.empty(shape[:-2] + shape[:-3:-1], dtype), -1, -2)


def _factor_one(routine, a, message, check, index=(), **options):
    """LAPACK's ``routine`` (potrf, getrf) on matrix ``a``: its outputs but the last (info),
    its own arrays (a column-major copy of ``a`` factored, as SciPy returns it). A failure
    (info > 0) raises LinAlgError ``message`` naming batch index ``index`` with ``check``;
    else the first output is NaN."""
    *outputs, info = _lapack(routine, a.dtype)(a, **options)
    if info > 0:
        if check:
            raise LinAlgError(message, index)
        outputs[0][...] = numpy.nan
    return outputs


def _factor_each(routine, a, message, check, results, **options):
    """:func:`_factor_one` on each matrix of ``a``, its outputs written into ``results`` at
    the matrix's batch index."""
    if not a.size:
        return
    for index in numpy.ndindex(a.shape[:-2]):
        outputs = _factor_one(routine, a[index], message, check, index, **options)
        for result, output in zip(results, outputs):
            result[index] = output


def _solve_each(solve_one, arrays, cores):
    """``solve_one(*matrices)`` for each matrix of the broadcast batch of ``arrays`` (each
    with ``cores`` matrix or vector axes; the last the right-hand sides), into one array of
    the first's dtype (for one system, SciPy's result itself, in SciPy's layout: no copy).
    Of SciPy's solvers only solve_triangular fails (a LinAlgError), for a zero on the
    diagonal: LinAlgError naming the batch index."""
    if _one_system(arrays, cores) and arrays[-1].size:
        try:
            return solve_one(*arrays)
        except numpy.linalg.LinAlgError:
            raise LinAlgError(checks.SINGULAR, ()) from None
    batch, arrays = _over_batch(arrays, cores)
    x = numpy.empty(arrays[-1].shape, arrays[0].dtype)
    if x.size:
        for index in numpy.ndindex(batch):
            try:
                x[index] = solve_one(*(array[index] for array in arrays))
            except numpy.linalg.LinAlgError:
                raise LinAlgError(checks.SINGULAR, index) from None
    return x


#: Batches of at least this many systems per row of each are solved by :func:`_substitute`
#: (row by row, each row over the whole batch at once) rather than a LAPACK call a matrix:
#: measured on 2 cores, 10000 8 x 8 systems take 3.2 ms so against 74 ms (cho_solve), 1000
#: 32 x 32 ones 3.7 against 8.8, and 100 64 x 64 ones 2.1 against 1.4.
SUBSTITUTE_PER_ROW = 4


def _one_system(arrays, cores):
    """Whether ``arrays`` (``cores`` as :func:`_solve_each` takes them) have no batch axes."""
    return all(x.ndim == core for x, core in zip(arrays, cores))


def _batched(arrays, cores):
    """Whether a SciPy solve of ``arrays`` (``cores`` as :func:`_solve_each` takes them)
    goes through :func:`_substitute`: at least :data:`SUBSTITUTE_PER_ROW` systems per
    row of each."""
    return not _one_system(arrays, cores) and math.prod(
        _batch(arrays, cores)) >= SUBSTITUTE_PER_ROW * max(arrays[0].shape[-1], 1)


def _substitute(t, b, lower, trans=0, unit=False, singular=False):
    """``op(t) x = b`` for a batch of triangular matrices ``t`` (..., n, n) (the ``lower``
    triangle read, else the upper; ``op`` by ``trans``: 0 itself, 1 its transpose, 2 its
    conjugate transpose; ones on the diagonal where ``unit``) and right-hand sides ``b``
    (..., n, k), broadcast together: substitution a row at a time, each row over the whole
    batch (in the dtype of t and b together). Where ``singular``, a zero on the diagonal
    raises LinAlgError naming the first such matrix, as SciPy's ``solve_triangular`` does
    for one; else it gives inf and NaN, as LAPACK's ``potrs`` and ``getrs`` do."""
    if trans:
        t = numpy.swapaxes(t, -1, -2)
        t, lower = (numpy.conj(t) if trans == 2 else t), not lower
    batch = numpy.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    n = t.shape[-1]
    if singular and not unit and b.shape[-1]:  # (no columns: nothing solved, as in SciPy)
        diagonal = numpy.broadcast_to(numpy.diagonal(t, axis1=-2, axis2=-1), batch + (n,))
        zero = numpy.flatnonzero((diagonal == 0).any(axis=-1))
        if zero.size:
            index = numpy.unravel_index(int(zero[0]), batch) if batch else ()
            raise LinAlgError(checks.SINGULAR, tuple(int(i) for i in index))
    x = numpy.array(numpy.broadcast_to(b, batch + b.shape[-2:]),
                    dtype=numpy.result_type(t, b))
    with numpy.errstate(divide="ignore", invalid="ignore"):  # (a zero pivot's inf and NaN)
        for i in (range(n) if lower else range(n - 1, -1, -1)):
            done = slice(0, i) if lower else slice(i + 1, n)
            row = x[..., i, :] - (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = row if unit else row / t[..., i, i, None]
    return x


def _interchange(x, piv, reverse):
    """Apply LAPACK's row interchanges ``piv`` (..., n) (0-based: row i with row piv[i], in
    order, or in reverse order where ``reverse``) to each matrix of the batch ``x``, in
    place."""
    piv = numpy.broadcast_to(piv, x.shape[:-2] + piv.shape[-1:])
    for i in (reversed(range(piv.shape[-1])) if reverse else range(piv.shape[-1])):
        j = piv[..., i, None, None]
        row = x[..., i, :].copy()
        x[..., i, :] = numpy.take_along_axis(x, j, axis=-2)[..., 0, :]
        numpy.put_along_axis(x, j, row[..., None, :], axis=-2)


def _as_columns(b, vector):
    """Right-hand sides as (..., n, k): a vector's one column."""
    return b[..., None] if vector else b


def cho_factor(a, *, lower, check_finite, check):
    """``scipy.linalg.cho_factor(a, lower)``'s ``c``, matrix by matrix (the triangle not
    factored holds a's entries, as SciPy leaves it)."""
    if check_finite:
        checks.check_finite(a, 2, "a")
    if a.ndim == 2 and a.size:  # one matrix: LAPACK's factor itself, as SciPy returns it
        return _factor_one("potrf", a, checks.NOT_POSITIVE_DEFINITE, check, lower=lower,
                           clean=False)[0]
    c = _empty_factors(a.shape, a.dtype)  # (SciPy's layout: LAPACK reads it so)
    if math.prod(a.shape[:-2]) > 1:  # NumPy's batched factorization, where none fails
        try:
            factor = numpy.linalg.cholesky(a, upper=not lower)
        except numpy.linalg.LinAlgError:
            factor = None  # (found matrix by matrix below)
        if factor is not None:
            keep = numpy.tri(a.shape[-1], dtype=bool)
            c[...] = numpy.where(keep if lower else keep.T, factor, a)
            return c
    _factor_each("potrf", a, checks.NOT_POSITIVE_DEFINITE, check, (c,), lower=lower,
                 clean=False)
    return c


def cho_solve(c, b, *, lower, check_finite):
    """``scipy.linalg.cho_solve((c, lower), b)``, over the broadcast batch."""
    if check_finite:
        checks.check_finite(c, 2, "c")
        checks.check_finite(b, _rhs_axes(b), "b")

    if _batched((c, b), (2, _rhs_axes(b))):  # c = L L^H or U^H U
        vector = b.ndim == 1
        y = _substitute(c, _as_columns(b, vector), lower, trans=0 if lower else 2)
        x = _substitute(c, y, lower, trans=2 if lower else 0)
        return x[..., 0] if vector else x

    def solve_one(c, b):
        return _scipy_linalg().cho_solve((c, lower), b, check_finite=False)

    return _solve_each(solve_one, (c, b), (2, _rhs_axes(b)))


def lu_factor(a, *, check_finite, check):
    """``scipy.linalg.lu_factor(a)``: ``(lu, piv)``, piv 0-based int32, matrix by matrix,
    ``lu`` in SciPy's layout (each matrix column-major). An exactly singular matrix (a zero
    pivot), which SciPy only warns of, fails."""
    if check_finite:
        checks.check_finite(a, 2, "a")
    if a.ndim == 2 and a.size:  # one matrix: LAPACK's factors themselves
        return tuple(_factor_one("getrf", a, checks.SINGULAR, check))
    lu = _empty_factors(a.shape, a.dtype)
    piv = numpy.empty(a.shape[:-2] + (min(a.shape[-2:]),), numpy.int32)
    _factor_each("getrf", a, checks.SINGULAR, check, (lu, piv))
    return lu, piv


def lu_solve(lu, piv, b, *, trans, check_finite):
    """``scipy.linalg.lu_solve((lu, piv), b, trans)``, over the broadcast batch (b checked
    for NaN and Inf, as SciPy checks it). A pivot out of [0, n) raises InvalidArgumentError
    naming its batch index in ``piv`` (int32 or int64: :func:`~._checks.lu_pivots`), before
    anything is computed: LAPACK's getrs would read and write rows outside the matrix."""
    if check_finite:
        checks.check_finite(b, _rhs_axes(b), "b")
    checks.check_pivots(piv, lu.shape[-1])

    cores = (2, 1, _rhs_axes(b))
    if _batched((lu, piv, b), cores):  # P a = L U (L unit lower)
        vector, batch = b.ndim == 1, _batch((lu, piv, b), cores)
        x = numpy.array(numpy.broadcast_to(_as_columns(b, vector), batch + (
            lu.shape[-1], 1 if vector else b.shape[-1])), dtype=numpy.result_type(lu, b))
        if trans == 0:  # L U x = P b
            _interchange(x, piv, reverse=False)
            x = _substitute(lu, _substitute(lu, x, True, unit=True), False)
        else:  # U^T L^T P x = b: x = P^T (L^T \\ (U^T \\ b)), conjugated for trans 2
            x = _substitute(lu, _substitute(lu, x, False, trans), True, trans, unit=True)
            _interchange(x, piv, reverse=True)
        return x[..., 0] if vector else x

    def solve_one(lu, piv, b):
        return _scipy_linalg().lu_solve((lu, piv), b, trans=trans, check_finite=False)

    return _solve_each(solve_one, (lu, piv, b), cores)


def solve_triangular(a, b, *, trans, lower, unit_diagonal, check_finite, singular=True):
    """``scipy.linalg.solve_triangular(a, b, ...)``, over the broadcast batch; a zero on
    the diagonal raises LinAlgError naming the batch index (``singular=False``: gives inf
    and NaN there, as LAPACK's ``getrs`` and ``potrs`` do)."""
    if check_finite:
        checks.check_finite(a, 2, "a")
        checks.check_finite(b, _rhs_axes(b), "b")

    if not singular or _batched((a, b), (2, _rhs_axes(b))):
        vector = b.ndim == 1
        x = _substitute(a, _as_columns(b, vector), lower, trans, unit_diagonal,
                        singular=singular)
        return x[..., 0] if vector else x

    def solve_one(a, b):
        return _scipy_linalg().solve_triangular(a, b, trans=trans, lower=lower,
                                             unit_diagonal=unit_diagonal, check_finite=False)

    return _solve_each(solve_one, (a, b), (2, _rhs_axes(b)))

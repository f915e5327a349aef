"""NumPy's orthogonal factorizations (``numpy.linalg``): ``qr``, ``eigh``, ``eigvalsh``,
``svd`` and ``svdvals``, on any array, batched, as :mod:`accelmath.linalg._functions` runs
the others: checked and promoted as NumPy does, host operands on NumPy's LAPACK
(:mod:`accelmath.linalg._cpu`), device ones on ``accelmath.linalg._device.calls``, a call
like one that ran before remembered (:func:`~accelmath.linalg._memo.host_call`,
:func:`~accelmath.linalg._memo.call_key`).
"""

from typing import Any, NamedTuple

import numpy

from accelmath._core.arguments import check_execution
from accelmath._core.operand import adapter_for, array_namespace
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.linalg import _checks as checks
from accelmath.linalg import _cpu
from accelmath.linalg._memo import call_key, host_call, recalled
from accelmath.linalg._operands import (device_call, hermitian_svd, read_stack, run_host,
                                        runs_on_host)

__all__ = ["qr", "eigh", "eigvalsh", "svd", "svdvals", "QRResult", "EighResult", "SVDResult"]


class QRResult(NamedTuple):
    """What :func:`qr` returns in modes "reduced" and "complete"."""

    Q: Any
    R: Any


class EighResult(NamedTuple):
    """What :func:`eigh` returns: eigenvalues in ascending order, eigenvectors in columns."""

    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    """What :func:`svd` returns with ``compute_uv=True``: ``a = U @ diag(S) @ Vh``."""

    U: Any
    S: Any
    Vh: Any


def _eigh(a, UPLO, vectors, check, method, stream, execution):
    """eigh's body, and eigvalsh's without ``vectors``: ``(w, v)`` or ``w``."""
    key, host = host_call("eigh", (a,), (UPLO, vectors, check, method, execution), stream)
    if host is not None:
        return host.run(a)
    call = call_key("eigh", (a,), UPLO, vectors, check, method, execution)
    w_v = recalled(call, stream)
    if w_v is not None:
        return w_v
    check, method, execution = checks.check_options(check, method, execution)
    uplo = checks.check_uplo(UPLO)
    a, dtype = read_stack(a, "a")
    if runs_on_host((a,), execution, stream):
        return run_host(key, _cpu.eigh, (a,), (dtype,), uplo=uplo, vectors=vectors, check=check)
    return device_call("eigh", [a], (dtype,), ("a",), execution, uplo=uplo, vectors=vectors,
                       check=check, method=method, stream=stream, call=call,
                       finite=checks.finite_names(check, "a"))


def _svd(x, name, full_matrices, compute_uv, hermitian, check, method, stream, execution,
         key):
    """svd's body once its options are checked, and svdvals' (argument ``name``):
    ``(u, s, vh)`` or ``s``; a host call remembered under ``key`` (see :func:`run_host`)."""
    x, dtype = read_stack(x, name, square=hermitian)
    if runs_on_host((x,), execution, stream):
        return run_host(key, _cpu.svd, (x,), (dtype,), full_matrices=full_matrices,
                        compute_uv=compute_uv, hermitian=hermitian, check=check, name=name)
    if hermitian:  # through eigh, as NumPy computes it
        w_v = device_call("eigh", [x], (dtype,), (name,), execution, uplo="L",
                          vectors=compute_uv, check=check, method=method, stream=stream,
                          finite=checks.finite_names(check, name))
        return hermitian_svd(*(w_v if compute_uv else (w_v, None)), compute_uv)
    return device_call("svd", [x], (dtype,), (name,), execution, full_matrices=full_matrices,
                       compute_uv=compute_uv, check=check, method=method, stream=stream,
                       finite=checks.finite_names(check, name))


def qr(a, mode="reduced", *, stream=None, execution="auto", like=None):
    """The QR factorization of each matrix, as ``numpy.linalg.qr``.

    Parameters
    ----------
    a : (..., m, n) array
        The matrices: an array of any package, or an array-like.
    mode : {"reduced", "complete", "r", "raw"}, optional
        "reduced": Q (..., m, k) and R (..., k, n), k = min(m, n); "complete": Q (..., m, m)
        and R (..., m, n); "r": R alone; "raw": LAPACK's Householder reflectors h
        (..., n, m), transposed as NumPy gives them, and their factors tau (..., k). NumPy's
        deprecated modes work as there, with its DeprecationWarning: "full" (or "f") is
        "reduced", "economic" (or "e") gives the reflectors alone, (..., m, n).
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operand's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    QRResult, array or tuple
        ``QRResult(Q, R)``; R for mode "r"; ``(h, tau)`` for mode "raw". On the GPU, Q is
        column-major, each matrix, where it holds a's (m >= n), as cuSOLVER makes it (but
        for JAX arrays).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import qr
    >>> a = np.random.default_rng(0).standard_normal((4, 3))
    >>> q, r = qr(a)
    >>> q.shape, r.shape, bool(np.allclose(q @ r, a))
    ((4, 3), (3, 3), True)
    """
    if like is not None:
        like = target_of(like)
        return returned_as(qr(a, mode, stream=stream, execution=execution), like)
    economic = False
    if isinstance(mode, str) and mode in checks.QR_DEPRECATED:
        mode = checks.deprecated_qr_mode(mode)
        economic = mode == "economic"
        if economic:  # (the reflectors of "raw", untransposed)
            mode = "raw"
    key, host = host_call("qr", (a,), (mode, execution), stream)
    if host is not None:
        result = host.run(a)
    else:
        call = call_key("qr", (a,), mode, execution)
        result = recalled(call, stream)
    if result is None:
        execution = check_execution(execution)
        mode = checks.check_mode(mode)
        a, dtype = read_stack(a, "a", square=False)
        if runs_on_host((a,), execution, stream):
            result = run_host(key, _cpu.qr, (a,), (dtype,), mode=mode)
        else:
            result = device_call("qr", [a], (dtype,), ("a",), execution, mode=mode,
                                 stream=stream, call=call)
    if economic:
        h = result[0]
        if isinstance(h, numpy.ndarray):
            return numpy.swapaxes(h, -1, -2)
        adapter = adapter_for(h)
        h = adapter.computable(h)
        return adapter.handed_back(array_namespace(h).swapaxes(h, -1, -2))
    return result if mode in ("r", "raw") else QRResult(*result)


def eigh(a, UPLO="L", *, check=True, method="auto", stream=None, execution="auto", like=None):
    """Eigenvalues and eigenvectors of each Hermitian (real symmetric) matrix, as
    ``numpy.linalg.eigh``.

    Parameters
    ----------
    a : (..., n, n) array
        The matrices (only the triangle ``UPLO`` names is read).
    UPLO : {"L", "U"}, optional
        Read the lower (default) or upper triangle; either case.
    check : bool, optional
        Raise LinAlgError, naming the batch index, where the eigensolver does not converge,
        or for a matrix holding a NaN or an infinity (default); False: no check, NaN in
        that matrix's results.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy (default: chosen by size); any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operand's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    EighResult
        ``eigenvalues`` (..., n), real, ascending; ``eigenvectors`` (..., n, n), in columns
        (on the GPU each matrix column-major, where cuSOLVER makes them, but for JAX arrays).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import eigh
    >>> w, v = eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    array([1., 3.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(eigh(a, UPLO, check=check, method=method, stream=stream,
                                execution=execution), like)
    return EighResult(*_eigh(a, UPLO, True, check, method, stream, execution))


def eigvalsh(a, UPLO="L", *, check=True, method="auto", stream=None, execution="auto", like=None):
    """Eigenvalues of each Hermitian (real symmetric) matrix, as ``numpy.linalg.eigvalsh``.

    Parameters
    ----------
    a : (..., n, n) array
        The matrices (only the triangle ``UPLO`` names is read).
    UPLO : {"L", "U"}, optional
        Read the lower (default) or upper triangle; either case.
    check : bool, optional
        Raise LinAlgError, naming the batch index, where the eigensolver does not converge,
        or for a matrix holding a NaN or an infinity (default); False: no check, NaN in
        that matrix's eigenvalues.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy (default: chosen by size); any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operand's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    (..., n) array
        Real, ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import eigvalsh
    >>> eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([1., 3.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(eigvalsh(a, UPLO, check=check, method=method, stream=stream,
                                    execution=execution), like)
    return _eigh(a, UPLO, False, check, method, stream, execution)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, *, check=True,
        method="auto", stream=None, execution="auto", like=None):
    """Singular value decomposition of each matrix, as ``numpy.linalg.svd``:
    ``a = U @ diag(S) @ Vh``.

    Parameters
    ----------
    a : (..., m, n) array
        The matrices: an array of any package, or an array-like.
    full_matrices : bool, optional
        U (..., m, m) and Vh (..., n, n) (default); else (..., m, k) and (..., k, n),
        k = min(m, n).
    compute_uv : bool, optional
        Compute U and Vh (default); else return S alone.
    hermitian : bool, optional
        a is Hermitian: computed through :func:`eigh`, as NumPy does.
    check : bool, optional
        Raise LinAlgError, naming the batch index, where the solver does not converge,
        or for a matrix holding a NaN or an infinity (default); False: no check, NaN in
        that matrix's results.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy: "auto" (default) takes batches of matrices up to 32 x 32
        through cuSOLVER's batched Jacobi method (``gesvdjBatched``) and other matrices one
        at a time through its Jacobi method (``gesvdj``, torch's default; where it does not
        converge under ``check``, through ``gesvd``); "batched" takes ``gesvdjBatched``
        (matrices of at most 32 rows and columns); "cusolver" and "small" take ``gesvd``,
        its QR iteration, a matrix at a time. Any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operand's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    SVDResult or array
        ``SVDResult(U, S, Vh)``, S real and descending; S alone if not ``compute_uv``.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import svd
    >>> u, s, vh = svd(np.array([[3.0, 0.0], [0.0, -4.0]]))
    >>> s
    array([4., 3.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(svd(a, full_matrices, compute_uv, hermitian, check=check, method=method,
                               stream=stream, execution=execution), like)
    key, host = host_call("svd", (a,), (full_matrices, compute_uv, hermitian, check, method,
                                        execution), stream)
    if host is not None:  # (compute_uv passed check_flag then: a bool, or 0 or 1)
        result = host.run(a)
        return SVDResult(*result) if compute_uv else result
    check, method, execution = checks.check_options(check, method, execution)
    full_matrices = checks.check_flag(full_matrices, "full_matrices")
    compute_uv = checks.check_flag(compute_uv, "compute_uv")
    hermitian = checks.check_flag(hermitian, "hermitian")
    result = _svd(a, "a", full_matrices, compute_uv, hermitian, check, method, stream,
                  execution, key)
    return SVDResult(*result) if compute_uv else result


def svdvals(x, /, *, check=True, method="auto", stream=None, execution="auto", like=None):
    """The singular values of each matrix, descending, as ``numpy.linalg.svdvals``.

    Parameters
    ----------
    x : (..., m, n) array
        The matrices: an array of any package, or an array-like.
    check : bool, optional
        Raise LinAlgError, naming the batch index, where the solver does not converge,
        or for a matrix holding a NaN or an infinity (default); False: no check, NaN in
        that matrix's values.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy (default: chosen by size); any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``x`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operand's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    (..., min(m, n)) array
        Real.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import svdvals
    >>> svdvals(np.array([[3.0, 0.0], [0.0, -4.0]]))
    array([4., 3.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(svdvals(x, check=check, method=method, stream=stream,
                                   execution=execution), like)
    key, host = host_call("svdvals", (x,), (check, method, execution), stream)
    if host is not None:
        return host.run(x)
    check, method, execution = checks.check_options(check, method, execution)
    return _svd(x, "x", False, False, False, check, method, stream, execution, key)

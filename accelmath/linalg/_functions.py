"""NumPy's linear-algebra functions (``numpy.linalg``), on any array, batched.

Each takes ``numpy.linalg``'s arguments plus keyword-only ``stream``, ``execution`` and, where
it may fail or has device strategies, ``check`` and ``method``; it returns arrays of the
input's package. A call validates everything (:mod:`accelmath.linalg._checks`), reads its
operands (:func:`read`), promotes them as NumPy does, and runs host operands through NumPy's
LAPACK (:mod:`accelmath.linalg._cpu`) and device operands through
``accelmath.linalg._device.calls`` (:func:`device_call`; host data too with ``execution="cuda"``).
A call like one that ran before skips the checks its key stands for: on NumPy arrays
(:func:`~accelmath.linalg._memo.host_call`), and on CuPy and torch arrays on the GPU
(:func:`~accelmath.linalg._memo.call_key`).

``check=True``: a matrix whose factorization fails raises
:class:`~accelmath.errors.LinAlgError` naming its batch index; ``check=False``: nothing is
raised (nor read back from a GPU), and that matrix's results hold NaN. ``check=True`` also
raises for NaN and Inf in the operands, naming the operand and matrix, on either path: on
the CPU before LAPACK sees them (its SVD may never return on them; ``check=False`` gives
that matrix NaN results); on the GPU, accelmath's kernels of small systems find them as they
load the matrices, cuSOLVER's routes of solve, inv, cholesky and eigh in the copies they make
of the operands (:func:`~accelmath.linalg._device.context.clear_flags`), and svd's by a check of its
own beside the call's work (:mod:`accelmath.linalg._device.finite`).
"""

from typing import Any, NamedTuple

import numpy

from accelmath._core.arguments import check_execution
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.linalg import _checks as checks
from accelmath.linalg import _cpu
from accelmath.linalg._memo import call_key, host_call, recalled
from accelmath.linalg._operands import (device_call, host_array, read, read_stack, run_host,
                                        runs_on_host, to_caller)

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "lstsq", "SlogdetResult"]


class SlogdetResult(NamedTuple):
    """What :func:`slogdet` returns: the sign (or phase) and the log of the absolute value
    of the determinant."""

    sign: Any
    logabsdet: Any


# ---- the functions ----

def solve(a, b, *, check=True, method="auto", stream=None, execution="auto", like=None):
    """Solve ``a @ x = b`` for ``x``, as ``numpy.linalg.solve``.

    Parameters
    ----------
    a : (..., n, n) array
        Coefficient matrices: an array of any package, or an array-like.
    b : (n,) or (..., n, k) array
        Right-hand sides: a vector only when 1-D (NumPy 2's rule); batch dimensions
        broadcast with a's.
    check : bool, optional
        Raise LinAlgError, naming the batch index, for a singular matrix, and naming the
        operand too, for a NaN or an infinity (default); False: no check (no read back from
        a GPU), NaN in that matrix's solution.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy (default: chosen by size); any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operands' package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where the operands live; "cuda" moves host data to the GPU and back;
        "cpu" refuses device operands.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    x : (..., n) or (..., n, k) array
        Of the package of b.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import solve
    >>> a = np.array([[3.0, 1.0], [1.0, 2.0]])
    >>> solve(a, np.array([9.0, 8.0]))
    array([2., 3.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(solve(a, b, check=check, method=method, stream=stream,
                                 execution=execution), like)
    key, host = host_call("solve", (a, b), (check, method, execution), stream)
    if host is not None:
        return host.run(a, b)
    call = call_key("solve", (a, b), check, method, execution)
    x = recalled(call, stream)
    if x is not None:
        return x
    check, method, execution = checks.check_options(check, method, execution)
    a, b = read(a, "a"), read(b, "b")
    dtype = checks.result_dtype(("a", a.dtype), ("b", b.dtype))
    checks.check_stacked_square(a.shape, "a")
    vector, _ = checks.solve_rhs(a.shape, b.shape)
    if runs_on_host((a, b), execution, stream):
        return run_host(key, _cpu.solve, (a, b), (dtype, dtype), check=check)
    return device_call("solve", [a, b], (dtype, dtype), ("a", "b"), execution, vector=vector,
                       check=check, method=method, stream=stream, call=call,
                       finite=checks.finite_names(check, "a", "b"))


def inv(a, *, check=True, method="auto", stream=None, execution="auto", like=None):
    """The inverse of each matrix, as ``numpy.linalg.inv``.

    Parameters
    ----------
    a : (..., n, n) array
        The matrices: an array of any package, or an array-like.
    check : bool, optional
        Raise LinAlgError, naming the batch index, for a singular matrix, or one holding a
        NaN or an infinity (default); False: no check, NaN in that matrix's inverse.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy (default: chosen by size); any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    (..., n, n) array

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import inv
    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(inv(a, check=check, method=method, stream=stream,
                               execution=execution), like)
    key, host = host_call("inv", (a,), (check, method, execution), stream)
    if host is not None:
        return host.run(a)
    call = call_key("inv", (a,), check, method, execution)
    x = recalled(call, stream)
    if x is not None:
        return x
    check, method, execution = checks.check_options(check, method, execution)
    a, dtype = read_stack(a, "a")
    if runs_on_host((a,), execution, stream):
        return run_host(key, _cpu.inv, (a,), (dtype,), check=check)
    return device_call("inv", [a], (dtype,), ("a",), execution, check=check, method=method,
                       stream=stream, call=call, finite=checks.finite_names(check, "a"))


def det(a, *, stream=None, execution="auto", like=None):
    """The determinant of each matrix, as ``numpy.linalg.det``.

    Parameters
    ----------
    a : (..., n, n) array
        The matrices: an array of any package, or an array-like.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    (...) array
        A NumPy scalar for one NumPy matrix, as NumPy gives it.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import det
    >>> round(float(det(np.array([[1.0, 2.0], [3.0, 4.0]]))), 12)
    -2.0
    """
    if like is not None:
        like = target_of(like)
        return returned_as(det(a, stream=stream, execution=execution), like)
    key, host = host_call("det", (a,), (execution,), stream)
    if host is not None:
        return host.run(a)
    execution = check_execution(execution)
    a, dtype = read_stack(a, "a")
    if runs_on_host((a,), execution, stream):
        return run_host(key, _cpu.det, (a,), (dtype,))
    return device_call("det", [a], (dtype,), ("a",), execution, stream=stream)


def slogdet(a, *, stream=None, execution="auto", like=None):
    """Sign and natural log of the absolute value of each matrix's determinant, as
    ``numpy.linalg.slogdet``.

    Parameters
    ----------
    a : (..., n, n) array
        The matrices: an array of any package, or an array-like.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    SlogdetResult
        ``sign`` (of a's dtype; a unit complex number for complex matrices; 0 for a
        singular one) and ``logabsdet`` (real; -inf for a singular matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import slogdet
    >>> sign, logabsdet = slogdet(np.diag([-2.0, 3.0]))
    >>> float(sign), bool(np.isclose(logabsdet, np.log(6.0)))
    (-1.0, True)
    """
    if like is not None:
        like = target_of(like)
        return returned_as(slogdet(a, stream=stream, execution=execution), like)
    key, host = host_call("slogdet", (a,), (execution,), stream)
    if host is not None:
        return SlogdetResult(*host.run(a))
    execution = check_execution(execution)
    a, dtype = read_stack(a, "a")
    if runs_on_host((a,), execution, stream):
        return SlogdetResult(*run_host(key, _cpu.slogdet, (a,), (dtype,)))
    return SlogdetResult(*device_call("slogdet", [a], (dtype,), ("a",), execution,
                                      stream=stream))


def cholesky(a, /, *, upper=False, check=True, method="auto", stream=None, execution="auto",
             like=None):
    """The Cholesky factor of each Hermitian positive-definite matrix, as
    ``numpy.linalg.cholesky``: ``a = L @ L^H`` (or ``U^H @ U`` with ``upper=True``).

    Parameters
    ----------
    a : (..., n, n) array
        The matrices (only the lower triangle is read, or the upper with ``upper=True``).
    upper : bool, optional
        Return the upper factor U rather than L.
    check : bool, optional
        Raise LinAlgError, naming the batch index, for a matrix that is not positive
        definite, or holds a NaN or an infinity (default); False: no check, NaN in that
        matrix's factor.
    method : {"auto", "cusolver", "batched", "small"}, optional
        The device strategy (default: chosen by size); any is accepted on the CPU.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    (..., n, n) array
        Triangular, zero elsewhere. A lower factor made by cuSOLVER (on the GPU, past
        what accelmath's own kernels take, see
        :func:`~accelmath.linalg._device.context.small_fits`, or with ``method`` "cusolver" or
        "batched") is column-major, each matrix (torch's layout: cuSOLVER factors it
        there), but for JAX arrays; others are C order.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import cholesky
    >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]))
    array([[2., 0.],
           [1., 2.]])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(cholesky(a, upper=upper, check=check, method=method, stream=stream,
                                    execution=execution), like)
    key, host = host_call("cholesky", (a,), (upper, check, method, execution), stream)
    if host is not None:
        return host.run(a)
    call = call_key("cholesky", (a,), upper, check, method, execution)
    factor = recalled(call, stream)
    if factor is not None:
        return factor
    check, method, execution = checks.check_options(check, method, execution)
    upper = checks.check_flag(upper, "upper")
    a, dtype = read_stack(a, "a")
    if runs_on_host((a,), execution, stream):
        return run_host(key, _cpu.cholesky, (a,), (dtype,), upper=upper, check=check)
    return device_call("cholesky", [a], (dtype,), ("a",), execution, upper=upper, check=check,
                       method=method, stream=stream, call=call, finite=checks.finite_names(check, "a"))


def lstsq(a, b, rcond=None, *, stream=None, execution="auto", like=None):
    """The least-squares solution of ``a @ x = b``, as ``numpy.linalg.lstsq``.

    Parameters
    ----------
    a : (m, n) array
        The coefficient matrix: an array of any package, or an array-like.
    b : (m,) or (m, k) array
        The right-hand sides.
    rcond : float, optional
        Singular values at most ``rcond`` times the largest count as zero (default: the
        machine epsilon of the computation times max(m, n): on the CPU, NumPy's, in float64;
        on the GPU, which computes in the operands' precision, that precision's).
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operands' package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where the operands live; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    x : (n,) or (n, k) array
        The solution, of the package of b.
    residuals : (k,) or (1,) or (0,) array
        Squared residual norms, when a has full column rank and m > n; else empty.
    rank : int
        The rank of a.
    s : (min(m, n),) array
        The singular values of a.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import lstsq
    >>> a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> x, residuals, rank, s = lstsq(a, np.array([1.0, 2.0, 3.0]))
    >>> bool(np.allclose(x, [1.0, 1.0])), int(rank)
    (True, 2)
    """
    if like is not None:
        like = target_of(like)
        return returned_as(lstsq(a, b, rcond, stream=stream, execution=execution), like)
    key, host = host_call("lstsq", (a, b), (rcond, execution), stream)
    if host is not None:
        return host.run(a, b)
    execution = check_execution(execution)
    rcond = checks.check_rcond(rcond)
    a, b = read(a, "a"), read(b, "b")
    dtype = checks.result_dtype(("a", a.dtype), ("b", b.dtype))
    vector = checks.lstsq_shapes(a.shape, b.shape)
    if runs_on_host((a, b), execution, stream):
        if b.adapter.package == "numpy":  # (NumPy's results, as _cpu.lstsq gives them)
            return run_host(key, _cpu.lstsq, (a, b), (dtype, dtype), rcond=rcond)
        x, residuals, rank, s = _cpu.lstsq(host_array(a, dtype), host_array(b, dtype),
                                           rcond=rcond)
        return to_caller(x, b), to_caller(residuals, b), int(rank), to_caller(s, b)
    if rcond is None:  # NumPy's default: the precision of the computation's dtype
        rcond = float(numpy.finfo(dtype).eps * max(a.shape))
    return device_call("lstsq", [a, b], (dtype, dtype), ("a", "b"), execution, vector=vector,
                       rcond=rcond, stream=stream)

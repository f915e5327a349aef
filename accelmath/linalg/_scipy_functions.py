"""SciPy's factor-and-solve functions (``scipy.linalg``), on any array, batched.

``cho_factor``/``cho_solve``, ``lu_factor``/``lu_solve`` and ``solve_triangular`` take
SciPy's arguments (``overwrite_*`` accepted; results never alias inputs) plus keyword-only
``stream``, ``execution`` and, for the factorizations, ``check``. Leading dimensions are
batch dimensions, broadcast as SciPy broadcasts them; a right-hand side ``b`` is one vector
(n,) when it is 1-D, else a stack (..., n, k).

``check_finite=True`` (SciPy's default) raises :class:`~accelmath.errors.LinAlgError` (a
``ValueError``, as SciPy raises) for NaN or Inf input, naming the argument and the batch
index; a factorization called with ``check=False`` checks nothing (it reads nothing back
from a GPU) and leaves NaN where it failed.
"""

from accelmath._core.arguments import check_execution
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.linalg import _checks as checks
from accelmath.linalg import _cpu
from accelmath.linalg._memo import call_key, host_call, recalled
from accelmath.linalg._operands import device_call, read, read_stack, run_host, runs_on_host

__all__ = ["cho_factor", "cho_solve", "lu_factor", "lu_solve", "solve_triangular"]


def _triangular_system(a, b, names):
    """Arguments ``a`` (square triangular matrices) and ``b`` (their right-hand sides),
    named ``names``, read and checked by SciPy's rules: ``(a, b, dtype of the results,
    vector)``."""
    a, b = read(a, names[0], scipy=True), read(b, names[1], scipy=True)
    dtype = checks.scipy_result_dtype((names[0], a.dtype), (names[1], b.dtype))
    checks.check_stacked_square(a.shape, names[0])
    vector, _ = checks.scipy_rhs(a.shape, b.shape, names)
    return a, b, dtype, vector


def _check_finite(check_finite, when=True):
    """SciPy's ``check_finite``, checked: whether it applies (it and ``when``). The CPU path
    is given it; the device path checks the names given as ``finite=`` (see
    :mod:`accelmath.linalg._device.finite`)."""
    return checks.check_flag(check_finite, "check_finite") and when


def _solve(name, operands, dtypes, names, execution, finite, vector, stream, key, call=None,
           **options):
    """Solver ``name`` (cho_solve, lu_solve, solve_triangular) with ``options``, on the CPU
    or the device, on ``operands`` (b last) converted to ``dtypes``: x in b's package.
    ``finite``: the names of the operands to check for NaN and Inf (None where an operand
    is not checked), or None; ``key``: the host call's memo key (see
    :func:`~accelmath.linalg._operands.run_host`); ``call``: the call key the device
    function remembers, if it takes one."""
    if runs_on_host(operands, execution, stream):
        return run_host(key, getattr(_cpu, name), operands, dtypes,
                        check_finite=finite is not None, **options)
    if call is not None:
        options["call"] = call
    return device_call(name, operands, dtypes, names, execution, vector=vector,
                       stream=stream, finite=finite, **options)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True, *, check=True,
               stream=None, execution="auto", like=None):
    """The Cholesky factorization of each Hermitian positive-definite matrix, for
    :func:`cho_solve`, as ``scipy.linalg.cho_factor``.

    Parameters
    ----------
    a : (..., n, n) array
        The matrices: an array of any package, or an array-like.
    lower : bool, optional
        Factor ``a = L @ L^H`` from the lower triangle; default ``a = U^H @ U`` from the
        upper one.
    overwrite_a : bool, optional
        Accepted for SciPy's signature (a is never overwritten).
    check_finite : bool, optional
        Raise LinAlgError for NaN or Inf in a (default, when ``check``).
    check : bool, optional
        Raise LinAlgError, naming the batch index, for a matrix that is not positive
        definite (default); False: no check, NaN in that matrix's factor.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    c : (..., n, n) array
        The factor in the triangle ``lower`` names; the other triangle holds a's entries
        on the CPU, as SciPy leaves them, and zeros on the GPU.
    lower : bool

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._scipy_functions import cho_factor
    >>> c, lower = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> np.triu(c), lower
    (array([[2., 1.],
           [0., 2.]]), False)
    """
    if like is not None:
        like = target_of(like)
        return returned_as(cho_factor(a, lower, overwrite_a, check_finite, check=check,
                                      stream=stream, execution=execution), like)
    # (remembered as cholesky is: see cho_solve; a remembered lower passed check_flag)
    key, host = host_call("cho_factor", (a,), (lower, overwrite_a, check_finite, check,
                                               execution), stream)
    if host is not None:
        return host.run(a), bool(lower)
    call = call_key("cho_factor", (a,), lower, check_finite, check, execution)
    c = recalled(call, stream)
    if c is not None:
        return c, bool(lower)
    check, execution = checks.check_flag(check, "check"), check_execution(execution)
    lower = checks.check_flag(lower, "lower")
    checks.check_flag(overwrite_a, "overwrite_a")  # (accepted, as SciPy's; never done)
    a, dtype = read_stack(a, "a", scipy=True)
    check_finite = _check_finite(check_finite, when=check)
    if runs_on_host((a,), execution, stream):
        return run_host(key, _cpu.cho_factor, (a,), (dtype,), lower=lower,
                        check_finite=check_finite, check=check), lower
    return device_call("cho_factor", [a], (dtype,), ("a",), execution, lower=lower,
                       check=check, stream=stream, call=call,
                       finite=("a",) if check_finite else None), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True, *, stream=None,
              execution="auto", like=None):
    """Solve ``a @ x = b`` given :func:`cho_factor`'s factorization of a, as
    ``scipy.linalg.cho_solve``.

    Parameters
    ----------
    c_and_lower : tuple
        ``(c, lower)`` as :func:`cho_factor` gives them.
    b : (n,) or (..., n, k) array
        The right-hand sides; batch dimensions broadcast with c's.
    overwrite_b : bool, optional
        Accepted for SciPy's signature (b is never overwritten).
    check_finite : bool, optional
        Raise LinAlgError for NaN or Inf in c or b (default).
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operands' package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where the operands live; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    x : array
        Of b's shape broadcast with c's batch, of the package of b.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._scipy_functions import cho_factor, cho_solve
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> cho_solve(cho_factor(a), np.array([8.0, 12.0]))
    array([1., 2.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(cho_solve(c_and_lower, b, overwrite_b, check_finite, stream=stream,
                                     execution=execution), like)
    c, lower = checks.factor_pair(c_and_lower, "c_and_lower", "(c, lower)", "cho_factor")
    key, host = host_call("cho_solve", (c, b), (lower, overwrite_b, check_finite, execution),
                          stream)
    if host is not None:
        return host.run(c, b)
    # (an identical call on CuPy or torch arrays read where they lie: remembered, run again
    # on the new addresses without reading and checking the arguments, which it repeats)
    call = call_key("cho_solve", (c, b), lower, check_finite, execution)
    x = recalled(call, stream)
    if x is not None:
        return x
    execution = check_execution(execution)
    lower = checks.check_flag(lower, "lower")
    checks.check_flag(overwrite_b, "overwrite_b")
    check_finite = _check_finite(check_finite)
    c, b, dtype, vector = _triangular_system(c, b, ("c", "b"))
    return _solve("cho_solve", (c, b), (dtype, dtype), ("c", "b"), execution,
                  ("c", "b") if check_finite else None, vector, stream, key, call=call,
                  lower=lower)


def lu_factor(a, overwrite_a=False, check_finite=True, *, check=True, stream=None,
              execution="auto", like=None):
    """The pivoted LU factorization ``a = P @ L @ U`` of each matrix, for :func:`lu_solve`,
    as ``scipy.linalg.lu_factor``.

    Parameters
    ----------
    a : (..., m, n) array
        The matrices: an array of any package, or an array-like.
    overwrite_a : bool, optional
        Accepted for SciPy's signature (a is never overwritten).
    check_finite : bool, optional
        Raise LinAlgError for NaN or Inf in a (default, when ``check``).
    check : bool, optional
        Raise LinAlgError, naming the batch index, for an exactly singular matrix (a zero
        pivot, which SciPy only warns of; default); False: no check, NaN in that matrix's
        lu.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operand's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    lu : (..., m, n) array
        U in the upper triangle, L below it (its unit diagonal not stored). Each matrix
        column-major, as SciPy returns it (C order for JAX arrays).
    piv : (..., min(m, n)) array of int32
        0-based pivots: row i was interchanged with row ``piv[i]``.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._scipy_functions import lu_factor
    >>> lu, piv = lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv
    array([1, 1], dtype=int32)
    """
    if like is not None:
        like = target_of(like)
        return returned_as(lu_factor(a, overwrite_a, check_finite, check=check, stream=stream,
                                     execution=execution), like)
    key, host = host_call("lu_factor", (a,), (overwrite_a, check_finite, check, execution),
                          stream)
    if host is not None:
        return host.run(a)
    check, execution = checks.check_flag(check, "check"), check_execution(execution)
    checks.check_flag(overwrite_a, "overwrite_a")
    a, dtype = read_stack(a, "a", square=False, scipy=True)
    check_finite = _check_finite(check_finite, when=check)
    if runs_on_host((a,), execution, stream):
        return run_host(key, _cpu.lu_factor, (a,), (dtype,), check_finite=check_finite,
                        check=check)
    return device_call("lu_factor", [a], (dtype,), ("a",), execution, check=check,
                       stream=stream, finite=("a",) if check_finite else None)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True, *, stream=None,
             execution="auto", like=None):
    """Solve ``a @ x = b`` (or with a's transpose or conjugate transpose) given
    :func:`lu_factor`'s factorization of a, as ``scipy.linalg.lu_solve``.

    Parameters
    ----------
    lu_and_piv : tuple
        ``(lu, piv)`` as :func:`lu_factor` gives them (lu square).
    b : (n,) or (..., n, k) array
        The right-hand sides; batch dimensions broadcast with lu's.
    trans : {0, 1, 2, "N", "T", "C"}, optional
        Solve ``a x = b`` (0), ``a^T x = b`` (1) or ``a^H x = b`` (2).
    overwrite_b : bool, optional
        Accepted for SciPy's signature (b is never overwritten).
    check_finite : bool, optional
        Raise LinAlgError for NaN or Inf in b (default; lu is not checked, as in SciPy).
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operands' package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where the operands live; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    x : array
        Of b's shape broadcast with lu's and piv's batch, of the package of b.

    Raises
    ------
    InvalidArgumentError
        For ``lu_and_piv`` that is not a pair, ``piv`` that is not integers of shape
        (..., n), and a pivot out of [0, n) (SciPy's pivots are 0-based), naming the batch
        index of piv's first matrix holding one: on the CPU before anything is computed;
        on the GPU, where ``check_finite``, once the call's work is done (the kernel that
        converts the pivots for cuSOLVER finds it; no input is written). Without
        ``check_finite`` the GPU reads nothing back: a system with a pivot out of range
        gets NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._scipy_functions import lu_factor, lu_solve
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> lu_solve(lu_factor(a), np.array([5.0, 11.0]))
    array([1., 2.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(lu_solve(lu_and_piv, b, trans, overwrite_b, check_finite, stream=stream,
                                    execution=execution), like)
    lu, piv = checks.factor_pair(lu_and_piv, "lu_and_piv", "(lu, piv)", "lu_factor")
    # (remembered as cho_solve is; on NumPy arrays, the pivots checked each call)
    key, host = host_call("lu_solve", (lu, piv, b), (trans, overwrite_b, check_finite,
                                                     execution), stream)
    if host is not None:
        return host.run(lu, piv, b)
    call = call_key("lu_solve", (lu, piv, b), trans, check_finite, execution)
    x = recalled(call, stream)
    if x is not None:
        return x
    execution = check_execution(execution)
    trans = checks.check_trans(trans)
    lu, piv, b = read(lu, "lu", scipy=True), read(piv, "piv"), read(b, "b", scipy=True)
    dtype = checks.scipy_result_dtype(("lu", lu.dtype), ("b", b.dtype))
    piv_dtype = checks.lu_pivots(lu.shape, piv.shape, piv.dtype)
    vector, batch = checks.scipy_rhs(lu.shape, b.shape, ("lu", "b"))
    checks.broadcast_batch(piv.shape[:-1], batch, ("piv", "lu and b"))
    checks.check_flag(overwrite_b, "overwrite_b")
    check_finite = _check_finite(check_finite)
    return _solve("lu_solve", (lu, piv, b), (dtype, piv_dtype, dtype), ("lu", "piv", "b"),
                  execution, (None, None, "b") if check_finite else None, vector, stream, key,
                  call=call, trans=trans)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True, *, stream=None, execution="auto", like=None):
    """Solve ``a @ x = b`` for triangular a, as ``scipy.linalg.solve_triangular``.

    Parameters
    ----------
    a : (..., n, n) array
        Triangular matrices (only the triangle ``lower`` names is read).
    b : (n,) or (..., n, k) array
        The right-hand sides; batch dimensions broadcast with a's.
    trans : {0, 1, 2, "N", "T", "C"}, optional
        Solve ``a x = b`` (0), ``a^T x = b`` (1) or ``a^H x = b`` (2).
    lower : bool, optional
        Read a's lower triangle; default the upper one.
    unit_diagonal : bool, optional
        Take a's diagonal as ones (it is not read).
    overwrite_b : bool, optional
        Accepted for SciPy's signature (b is never overwritten).
    check_finite : bool, optional
        Raise LinAlgError for NaN or Inf in a or b (default).
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operands' package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where the operands live; "cuda" moves host data to the GPU and back.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    x : array
        Of b's shape broadcast with a's batch, of the package of b.

    Raises
    ------
    LinAlgError
        For a zero on the diagonal of a (unless ``unit_diagonal``), naming the batch index.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._scipy_functions import solve_triangular
    >>> a = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> solve_triangular(a, np.array([4.0, 5.0]), lower=True)
    array([2., 3.])
    """
    if like is not None:
        like = target_of(like)
        return returned_as(solve_triangular(a, b, trans, lower, unit_diagonal, overwrite_b,
                                            check_finite, stream=stream, execution=execution), like)
    # (remembered as cho_solve is)
    key, host = host_call("solve_triangular", (a, b), (trans, lower, unit_diagonal,
                                                       overwrite_b, check_finite, execution),
                          stream)
    if host is not None:
        return host.run(a, b)
    call = call_key("solve_triangular", (a, b), trans, lower, unit_diagonal, check_finite,
                    execution)
    x = recalled(call, stream)
    if x is not None:
        return x
    execution = check_execution(execution)
    trans = checks.check_trans(trans)
    lower = checks.check_flag(lower, "lower")
    unit_diagonal = checks.check_flag(unit_diagonal, "unit_diagonal")
    checks.check_flag(overwrite_b, "overwrite_b")
    check_finite = _check_finite(check_finite)
    a, b, dtype, vector = _triangular_system(a, b, ("a", "b"))
    return _solve("solve_triangular", (a, b), (dtype, dtype), ("a", "b"), execution,
                  ("a", "b") if check_finite else None, vector, stream, key, call=call,
                  trans=trans, lower=lower, unit_diagonal=unit_diagonal)

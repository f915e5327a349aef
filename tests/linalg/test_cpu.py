"""The host execution of accelmath.linalg._cpu: NumPy's results where nothing fails, the
failing matrix located, check=False results (NaN only where a matrix failed), SciPy's
functions over broadcast and zero-size batches."""

import numpy as np
import pytest
import scipy.linalg

from accelmath.errors import LinAlgError
from accelmath.linalg import _cpu


def _batch(rng, shape):
    return rng.standard_normal(shape) + 4 * np.eye(shape[-1])


def test_results_are_numpys_exactly():
    rng = np.random.default_rng()
    a = _batch(rng, (3, 4, 4))
    b = rng.standard_normal((3, 4, 2))
    np.testing.assert_array_equal(_cpu.solve(a, b, check=True), np.linalg.solve(a, b))
    np.testing.assert_array_equal(_cpu.inv(a, check=True), np.linalg.inv(a))
    h = a + np.swapaxes(a, -1, -2)
    for ours, numpys in zip(_cpu.eigh(h, uplo="U", check=True), np.linalg.eigh(h, "U")):
        np.testing.assert_array_equal(ours, numpys)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
def test_one_cholesky_reads_only_its_triangle_and_is_row_major(dtype, upper, order):
    rng = np.random.default_rng()
    x = rng.standard_normal((7, 7)) + (1j * rng.standard_normal((7, 7)) if dtype[0] == "c"
                                       else 0)
    a = (x @ x.conj().T + 7 * np.eye(7)).astype(dtype)
    read = np.triu(a) if upper else np.tril(a)
    garbage = 100 * rng.standard_normal((7, 7))
    given = np.asarray(read + (np.tril(garbage, -1) if upper else np.triu(garbage, 1)),
                       dtype=dtype, order=order)
    got = _cpu.cholesky(given, upper=upper, check=True)
    expected = np.linalg.cholesky(read.astype(np.complex128 if dtype[0] == "c" else float),
                                  upper=upper)
    assert got.dtype == dtype and got.flags.c_contiguous and got.flags.writeable
    tolerance = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * 10)
    assert not np.any(np.triu(got, 1) if not upper else np.tril(got, -1))


@pytest.mark.parametrize("function, failure, message", [
    (lambda a, check: _cpu.inv(a, check=check), np.zeros((3, 3)), "Singular matrix"),
    (lambda a, check: _cpu.solve(a, np.ones(3), check=check), np.ones((3, 3)),
     "Singular matrix"),
    (lambda a, check: _cpu.cholesky(a, upper=True, check=check), -np.eye(3),
     "Matrix is not positive definite"),
    (lambda a, check: _cpu.cho_factor(a, lower=False, check_finite=True, check=check),
     -np.eye(3), "Matrix is not positive definite"),
    (lambda a, check: _cpu.lu_factor(a, check_finite=True, check=check)[0], np.zeros((3, 3)),
     "Singular matrix")])
def test_a_failed_matrix_is_located(function, failure, message):
    rng = np.random.default_rng()
    a = _batch(rng, (2, 3, 3, 3))
    a = a @ np.swapaxes(a, -1, -2)  # positive definite
    a[1, 1] = failure
    a[1, 2] = failure
    with pytest.raises(LinAlgError, match=message) as e:
        function(a, True)
    assert e.value.index == (1, 1)
    result = function(a, False)
    assert np.isnan(result[1, 1]).all() and np.isnan(result[1, 2]).all()
    good = np.ones(result.shape[:2], bool)
    good[1, 1:] = False
    assert np.isfinite(result[good]).all()
    expected = function(a[good], True)
    np.testing.assert_allclose(result[good], expected, rtol=1e-12)


def test_check_false_eigh_keeps_both_results():
    a = np.eye(3)[None].repeat(2, axis=0)
    w, v = _cpu.eigh(a, uplo="L", check=False)
    assert w.shape == (2, 3) and v.shape == (2, 3, 3)


def test_lu_factor_pivots_are_scipys():
    rng = np.random.default_rng()
    a = rng.standard_normal((2, 5, 5)).astype(np.complex64)
    lu, piv = _cpu.lu_factor(a, check_finite=True, check=True)
    assert lu.dtype == np.complex64 and piv.dtype == np.int32
    for i in range(2):
        elu, epiv = scipy.linalg.lu_factor(a[i])
        np.testing.assert_array_equal(piv[i], epiv)
        np.testing.assert_array_equal(lu[i], elu)


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (2, 3, 4, 4)])
def test_lu_factor_has_scipys_layout(shape):
    a = np.random.default_rng().standard_normal(shape)
    lu, _ = _cpu.lu_factor(a, check_finite=True, check=True)
    for index in np.ndindex(shape[:-2]):  # each matrix as SciPy factors it alone
        expected = scipy.linalg.lu_factor(a[index])[0]
        assert lu[index].strides == expected.strides and expected.flags.f_contiguous
        np.testing.assert_array_equal(lu[index], expected)
    # the matrices one after another, in C order over the batch
    assert lu.strides[:-2] == tuple(s * shape[-2] * shape[-1]
                                    for s in np.empty(shape[:-2], lu.dtype).strides)


def test_scipy_functions_broadcast_and_zero_size_batches():
    rng = np.random.default_rng()
    a = _batch(rng, (3, 1, 4, 4))
    b = rng.standard_normal((5, 4, 2))
    x = _cpu.solve_triangular(a, b, trans=0, lower=True, unit_diagonal=False,
                              check_finite=True)
    assert x.shape == (3, 5, 4, 2)
    np.testing.assert_allclose(np.tril(a) @ x, np.broadcast_to(b, x.shape), atol=1e-12)
    assert _cpu.lu_solve(np.zeros((0, 4, 4)), np.zeros((0, 4), np.int32), np.ones(4), trans=0,
                         check_finite=True).shape == (0, 4)
    assert _cpu.cho_solve(np.zeros((0, 4, 4)), np.ones((4, 1)), lower=True,
                          check_finite=True).shape == (0, 4, 1)


def test_lstsq_failure_is_an_accelmath_error(monkeypatch):
    # (NaN and Inf are refused before LAPACK: a failure of its SVD, made here)
    def fail(*args, **options):
        raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")

    monkeypatch.setattr(_cpu._numpy, "lstsq", fail)
    with pytest.raises(LinAlgError, match="SVD did not converge in Linear Least Squares"):
        _cpu.lstsq(np.ones((3, 2)), np.ones(3), rcond=None)


def _triangular_systems(rng, dtype, count, n):
    """``count`` well-conditioned n x n matrices (random off the diagonal, n + 1 on it)."""
    a = rng.standard_normal((count, n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((count, n, n))
    return (a / n + (n + 1) * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("n, k", [(1, 1), (5, None), (8, 3)])
def test_batched_solves_are_scipys_matrix_by_matrix(dtype, n, k):
    # past SUBSTITUTE_PER_ROW systems a row: substitution over the batch, as SciPy's solvers
    # give it a matrix at a time, every triangle, trans, diagonal, and broadcast b
    rng = np.random.default_rng()
    count = _cpu.SUBSTITUTE_PER_ROW * n + 3
    a = _triangular_systems(rng, dtype, count, n)
    b = (rng.standard_normal(n) if k is None else rng.standard_normal((count, n, k)))
    b = b.astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-12

    def each(function, *arrays):
        batch = np.broadcast_to(b, (count,) + b.shape[-2:]) if b.ndim > 1 else [b] * count
        return np.stack([function(*(x[i] for x in arrays), batch[i]) for i in range(count)])

    assert _cpu._batched((a, b), (2, 1 if k is None else 2))
    for lower in (True, False):
        c = _cpu.cho_factor(a @ np.conj(np.swapaxes(a, -1, -2)), lower=lower,
                            check_finite=False, check=True)
        expected = each(lambda c, b: scipy.linalg.cho_solve((c, lower), b), c)
        np.testing.assert_allclose(_cpu.cho_solve(c, b, lower=lower, check_finite=False),
                                   expected, rtol=tol, atol=tol)
        for trans in (0, 1, 2):
            for unit in (False, True):
                expected = each(lambda t, b: scipy.linalg.solve_triangular(
                    t, b, trans=trans, lower=lower, unit_diagonal=unit), a)
                got = _cpu.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit,
                                            check_finite=False)
                np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    lu, piv = _cpu.lu_factor(a, check_finite=False, check=True)
    for trans in (0, 1, 2):
        expected = each(lambda lu, piv, b: scipy.linalg.lu_solve((lu, piv), b, trans=trans),
                        lu, piv)
        np.testing.assert_allclose(_cpu.lu_solve(lu, piv, b, trans=trans, check_finite=False),
                                   expected, rtol=tol, atol=tol)


def test_batched_cho_factor_is_scipys_and_locates_a_failure():
    rng = np.random.default_rng()
    a = _triangular_systems(rng, "float64", 6, 4)
    spd = a @ np.swapaxes(a, -1, -2)
    for lower in (True, False):
        c = _cpu.cho_factor(spd, lower=lower, check_finite=False, check=True)
        for i in range(6):  # (the other triangle: a's entries, as SciPy leaves them)
            np.testing.assert_allclose(c[i], scipy.linalg.cho_factor(spd[i], lower=lower)[0],
                                       rtol=1e-13, atol=1e-13)
    spd[4] = -np.eye(4)
    with pytest.raises(LinAlgError, match=r"\(batch index \(4,\)\)"):
        _cpu.cho_factor(spd, lower=True, check_finite=False, check=True)
    c = _cpu.cho_factor(spd, lower=True, check_finite=False, check=False)
    assert np.isnan(c[4]).all() and np.isfinite(c[[0, 5]]).all()


def test_a_zero_on_a_batched_triangles_diagonal_names_its_matrix():
    count, n = 4 * _cpu.SUBSTITUTE_PER_ROW, 4
    a = np.broadcast_to(np.eye(n), (count, n, n)).copy()
    a[9, 2, 2] = 0
    with pytest.raises(LinAlgError, match=r"^Singular matrix \(batch index \(9,\)\)"):
        _cpu.solve_triangular(a, np.ones(n), trans=0, lower=True, unit_diagonal=False,
                              check_finite=False)
    x = _cpu.solve_triangular(a, np.ones(n), trans=0, lower=True, unit_diagonal=True,
                              check_finite=False)
    np.testing.assert_array_equal(x, np.ones((count, n)))
    # no right-hand side: nothing solved and nothing raised, in a batch as for one matrix
    # (SciPy's solve_triangular; found by the fuzz)
    x = _cpu.solve_triangular(a, np.ones((n, 0)), trans=0, lower=True, unit_diagonal=False,
                              check_finite=False)
    assert x.shape == (count, n, 0)


def test_batched_cho_solve_and_lu_solve_take_a_zero_pivot_as_lapack_does():
    # only solve_triangular raises for a zero on the diagonal (SciPy's trtrs); potrs and
    # getrs divide by it, in a batch as a matrix at a time
    n = 3
    count = _cpu.SUBSTITUTE_PER_ROW * n
    lu = np.broadcast_to(np.eye(n) * 2, (count, n, n)).copy()
    lu[:, 2, 2] = 0
    piv = np.broadcast_to(np.array([2, 1, 2], np.int32), (count, n))
    b = np.ones((count, n, 1))
    for solve, args in ((_cpu.lu_solve, dict(trans=0)), (_cpu.cho_solve, dict(lower=True))):
        operands = (lu, piv, b) if solve is _cpu.lu_solve else (lu, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            one = solve(*(x[:2] for x in operands), check_finite=False, **args)
            many = solve(*operands, check_finite=False, **args)
        np.testing.assert_array_equal(np.isnan(many[:2]), np.isnan(one))
        np.testing.assert_array_equal(np.isinf(many[:2]), np.isinf(one))
        assert not np.isfinite(many).all()


@pytest.mark.parametrize("where, value", [("a", np.nan), ("a", np.inf), ("b", -np.inf)])
def test_a_large_batched_solve_checked_meanwhile_still_names_a_bad_matrix(where, value):
    # (over 2^17 entries: checked on a second core while LAPACK runs; an infinity on a
    # diagonal, whose solve is finite, must fail as well)
    rng = np.random.default_rng()
    a = rng.standard_normal((2100, 8, 8)) + 8 * np.eye(8)
    b = rng.standard_normal((2100, 8, 1))
    np.testing.assert_allclose(_cpu.solve(a, b, check=True), np.linalg.solve(a, b))
    (a if where == "a" else b)[1234, 2, 0 if where == "b" else 2] = value
    with pytest.raises(LinAlgError, match=rf"{where}: array must not contain infs or NaNs "
                                          r"\(batch index \(1234,\)\)"):
        _cpu.solve(a, b, check=True)
    x = _cpu.solve(a, b, check=False)
    assert np.isnan(x[1234]).all() and np.isfinite(np.delete(x, 1234, axis=0)).all()


_FORKED_SOLVE = """
import multiprocessing, numpy as np
from accelmath.linalg import _cpu
a = np.random.default_rng().standard_normal((2100, 8, 8)) + 8 * np.eye(8)
b = np.ones((2100, 8, 1))
expected = _cpu.solve(a, b, check=True)  # (the parent's checker thread now exists)
with multiprocessing.get_context("fork").Pool(1) as pool:
    got = pool.apply_async(_cpu.solve, (a, b), {"check": True}).get(timeout=60)
print(np.allclose(got, expected))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_checks_large_solves_with_a_thread_of_its_own():
    # (in a process of its own: this one runs other packages' threads, which a fork must not
    # copy mid-work)
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FORKED_SOLVE], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


def test_a_large_batched_solve_checked_meanwhile_locates_a_singular_matrix():
    rng = np.random.default_rng()
    a = rng.standard_normal((2100, 8, 8)) + 8 * np.eye(8)
    b = rng.standard_normal((2100, 8, 1))
    a[777] = 0.0
    with pytest.raises(LinAlgError, match=r"\(batch index \(777,\)\)"):
        _cpu.solve(a, b, check=True)
    x = _cpu.solve(a, b, check=False)
    assert np.isnan(x[777]).all() and np.isfinite(np.delete(x, 777, axis=0)).all()


@pytest.mark.parametrize("failing", [[(0, 0)], [(1, 17), (2, 39)], [(2, 0), (2, 1), (2, 2)],
                                     [(i, j) for i in range(3) for j in range(40)]])
def test_failing_matrices_of_a_batch_are_all_found_in_order(failing):
    # (the search halves a failing batch: every failure found, the first in C order named;
    # b a 1-D vector broadcast over the batch, which NumPy reads as a vector only alone)
    rng = np.random.default_rng()
    a = rng.standard_normal((3, 40, 4, 4)) + 4 * np.eye(4)
    for index in failing:
        a[index] = 0.0
    b = rng.standard_normal(4)
    with pytest.raises(LinAlgError, match=rf"\(batch index \({failing[0][0]}, {failing[0][1]}\)\)"):
        _cpu.solve(a, b, check=True)
    x = _cpu.inv(a, check=False)
    assert [tuple(i) for i in np.argwhere(np.isnan(x).all(axis=(2, 3)))] == failing
    assert np.isfinite(x).all(axis=(2, 3)).sum() == 120 - len(failing)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (numpy.matrix's own)
@pytest.mark.parametrize("check", [True, False])
def test_numpy_matrices_are_read(check):
    """``numpy.matrix`` operands (a subclass whose products are matrices): every function
    reads them as NumPy's and SciPy's do, the finite check included."""
    from accelmath import linalg

    m = np.matrix([[4.0, 2.0], [2.0, 3.0]])
    b = np.matrix([[1.0], [2.0]])
    a = np.asarray(m)
    pairs = [(linalg.inv(m, check=check), np.linalg.inv(a)),
             (linalg.solve(m, b, check=check), np.linalg.solve(a, np.asarray(b))),
             (linalg.cholesky(m, check=check), np.linalg.cholesky(a)),
             (linalg.eigvalsh(m, check=check), np.linalg.eigvalsh(a)),
             (linalg.svdvals(m, check=check), np.linalg.svd(a, compute_uv=False)),
             (linalg.lstsq(m, b)[0], np.linalg.lstsq(a, np.asarray(b))[0]),
             (linalg.cho_solve(linalg.cho_factor(m), b), scipy.linalg.cho_solve(
                 scipy.linalg.cho_factor(a), np.asarray(b))),
             (linalg.lu_solve(linalg.lu_factor(m), b), scipy.linalg.lu_solve(
                 scipy.linalg.lu_factor(a), np.asarray(b))),
             (linalg.solve_triangular(m, b, lower=True), scipy.linalg.solve_triangular(
                 a, np.asarray(b), lower=True))]
    for ours, theirs in pairs:
        np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-12, atol=1e-12)
    for factored in (linalg.Cholesky(m), linalg.LU(m), linalg.QR(m)):
        np.testing.assert_allclose(np.asarray(factored.solve(b)),
                                   np.linalg.solve(a, np.asarray(b)), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (numpy.matrix's own)
def test_a_numpy_matrix_holding_a_nan_is_named_or_gives_nan():
    """The finite checks read a ``numpy.matrix`` as one matrix (batch index ()), and a
    function that does not check gives NaN where it did not run, of the type NumPy's gives
    (a matrix where NumPy wraps its result as one, as for a finite matrix)."""
    from accelmath import linalg

    m = np.matrix(4 * np.eye(3))
    m[1, 1] = np.nan
    for call in (lambda: linalg.lu_factor(m), lambda: linalg.cholesky(m)):
        with pytest.raises(LinAlgError, match=r"batch index \(\)"):
            call()
    for name in ("cholesky", "eigvalsh", "eigh"):
        got = getattr(linalg, name)(m, check=False)
        kinds = getattr(np.linalg, name)(np.matrix(4 * np.eye(3)))  # (NumPy's types)
        got, kinds = (got, kinds) if isinstance(got, tuple) else ((got,), (kinds,))
        for value, kind in zip(got, kinds):
            assert np.isnan(np.asarray(value)).all() and type(value) is type(kind), name


def test_a_cholesky_factor_is_a_new_array_of_the_matrixs_package():
    """Writing into ``Cholesky.factor`` changes no later solve, and a torch matrix's factor
    is a torch tensor."""
    torch = pytest.importorskip("torch")
    from accelmath import linalg

    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    for lower in (True, False):
        factored = linalg.Cholesky(a, lower=lower)
        x = factored.solve([2.0, 1.0])
        factor = factored.factor
        np.testing.assert_allclose(factor, np.linalg.cholesky(a) if lower
                                   else np.linalg.cholesky(a).T, rtol=1e-15)
        factor[...] = 1.0
        np.testing.assert_allclose(factored.solve([2.0, 1.0]), x, rtol=1e-15)
    tensor_factor = linalg.Cholesky(torch.from_numpy(a)).factor
    assert isinstance(tensor_factor, torch.Tensor)
    np.testing.assert_allclose(tensor_factor.numpy(), np.linalg.cholesky(a), rtol=1e-15)


@pytest.mark.parametrize("check", [True, False])
def test_a_nan_in_the_triangle_not_read_is_not_seen(check):
    """cholesky, eigh, eigvalsh and a Hermitian svd read one triangle, as NumPy's do: a NaN
    in the other is junk they never read (np.empty's, say), neither refused nor spread;
    one in the triangle read still is, matrix by matrix."""
    from accelmath import linalg

    good = np.array([[4.0, 2.0], [2.0, 3.0]])
    lower, upper = good.copy(), good.copy()
    lower[0, 1] = np.nan  # (the lower triangle is whole)
    upper[1, 0] = np.nan
    cases = [(lambda a: linalg.cholesky(a, check=check), lower, np.linalg.cholesky(good)),
             (lambda a: linalg.cholesky(a, upper=True, check=check), upper,
              np.linalg.cholesky(good, upper=True)),
             (lambda a: linalg.eigvalsh(a, check=check), lower, np.linalg.eigvalsh(good)),
             (lambda a: linalg.eigh(a, UPLO="U", check=check)[0], upper,
              np.linalg.eigvalsh(good)),
             (lambda a: linalg.svd(a, hermitian=True, compute_uv=False, check=check), lower,
              np.linalg.svd(good, compute_uv=False))]
    for call, a, expected in cases:
        np.testing.assert_allclose(call(a), expected, rtol=1e-12)
        batch = np.stack([a, a.T])  # (the second: its NaN in the triangle read)
        if check:
            with pytest.raises(LinAlgError, match=r"batch index \(1,\)"):
                call(batch)
        else:
            got = call(batch)
            np.testing.assert_allclose(got[0], expected, rtol=1e-12)
            assert np.isnan(got[1]).all()


def test_a_qr_made_without_its_check_solves_to_nan_where_r_has_a_zero():
    """``QR(check=False)`` of a matrix whose R has an exact zero on its diagonal: its solve
    gives inf or NaN there, as LU's and Cholesky's do, not an error."""
    from accelmath import linalg

    z = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    x = linalg.QR(z, check=False).solve(np.array([1.0, 2.0, 3.0]))
    assert not np.isfinite(x).all()
    with pytest.raises(LinAlgError):
        linalg.QR(z)  # (checked: refused when made)

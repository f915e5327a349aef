"""The factor-once objects (Cholesky, LU, QR) on host arrays: solutions against a float64
oracle, refactor, the shapes they refuse, and their lifetime."""

import numpy as np
import pytest

from accelmath.errors import InvalidArgumentError, StateError, UnsupportedDTypeError
from accelmath.linalg import LU, QR, Cholesky


def _spd(rng, shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("cls, make", [
    (Cholesky, _spd),
    (LU, lambda rng, shape: rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1]))])
def test_square_solves_match_numpy(cls, make):
    rng = np.random.default_rng()
    a = make(rng, (2, 5, 5))
    b = rng.standard_normal((2, 5, 3))
    with cls(a) as factor:
        np.testing.assert_allclose(factor.solve(b), np.linalg.solve(a, b), rtol=1e-10,
                                   atol=1e-12)
        a2 = make(rng, (2, 5, 5))
        factor.refactor(a2)
        np.testing.assert_allclose(factor.solve(b), np.linalg.solve(a2, b), rtol=1e-10,
                                   atol=1e-12)


def test_cholesky_factor_is_the_lower_or_upper_one():
    rng = np.random.default_rng()
    a = _spd(rng, (4, 4))
    low = np.linalg.cholesky(a)
    np.testing.assert_allclose(Cholesky(a).factor, low, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Cholesky(a, lower=False).factor, low.T, rtol=1e-12,
                               atol=1e-12)


def test_qr_solves_least_squares():
    rng = np.random.default_rng()
    a = rng.standard_normal((7, 4))
    b = rng.standard_normal(7)
    with QR(a) as qr:
        x = qr.solve(b)
    np.testing.assert_allclose(x, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-10,
                               atol=1e-12)


def test_refused_shapes():
    with pytest.raises(InvalidArgumentError, match="at least as many rows as columns"):
        QR(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        LU(np.ones((2, 3)))


@pytest.mark.parametrize("cls", [Cholesky, LU, QR])
def test_operands_that_would_lose_their_imaginary_part_or_precision_are_refused(cls):
    # what promotes into the object's dtype is taken (integers, float32 into float64, real
    # into complex); complex into real, or float64 into float32, is refused, naming the
    # operand and how to factor instead
    a = _spd(np.random.default_rng(), (4, 4))
    real = cls(a)
    np.testing.assert_allclose(real.solve(np.arange(4)), real.solve(np.arange(4.0)))
    with pytest.raises(UnsupportedDTypeError, match=r"^b has dtype complex128, .* would lose "
                                                    r"its imaginary part.*astype\('complex128'\)"):
        real.solve(np.ones(4) + 1j)
    with pytest.raises(UnsupportedDTypeError, match="^a has dtype complex128"):
        real.refactor(a + 0j)
    with pytest.raises(UnsupportedDTypeError, match="^b has dtype float64, .* precision"):
        cls(a.astype(np.float32)).solve(np.ones(4))
    np.testing.assert_allclose(cls(a + 0j).solve(np.ones(4)), real.solve(np.ones(4)),
                               rtol=1e-12, atol=1e-14)


def test_qr_refuses_a_rank_deficient_matrix():
    # R's diagonal read: a matrix without full column rank (numerically) raises, naming its
    # batch index; check=False takes it (its solutions meaningless)
    rng = np.random.default_rng()
    a = rng.standard_normal((3, 6, 3))
    a[2, 2:] = 0  # (its columns lie in a plane; Householder keeps R[2, 2] exactly 0, where a
    # combination of columns leaves rounding that can, rarely, pass the bound)
    with pytest.raises(np.linalg.LinAlgError, match="does not have full column rank") as e:
        QR(a)
    assert e.value.index == (2,)
    QR(a, check=False)
    huge = np.full((1, 6, 3), 1.5e308)  # (R's diagonal overflows: counted as deficient)
    huge[0, :, 1], huge[0, :, 2] = np.arange(6), np.arange(6) ** 2
    with pytest.raises(np.linalg.LinAlgError, match="does not have full column rank"):
        QR(huge)
    good = QR(a[:2])
    with pytest.raises(np.linalg.LinAlgError, match=r"\(batch index \(1,\)\)"):
        good.refactor(np.stack([a[0], a[2]]))


def test_layout_only_object_needs_refactor_and_free_ends_it():
    rng = np.random.default_rng()
    a = _spd(rng, (3, 3))
    lu = LU(shape=(3, 3), dtype="float64", package="numpy", device=None)
    with pytest.raises(StateError, match="no factorization yet"):
        lu.solve(np.ones(3))
    lu.refactor(a)
    b = rng.standard_normal(3)
    np.testing.assert_allclose(lu.solve(b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    lu.free()
    with pytest.raises(StateError):
        lu.solve(b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_device_objects_match_numpy(cp, dtype):
    rng = np.random.default_rng()
    a = _spd(rng, (3, 6, 6)).astype(dtype)
    b = rng.standard_normal((3, 6, 2)).astype(dtype)
    tall = rng.standard_normal((3, 9, 6)).astype(dtype)
    tall_b = rng.standard_normal((3, 9, 2)).astype(dtype)
    with Cholesky(cp.asarray(a)) as chol, LU(cp.asarray(a)) as lu, QR(cp.asarray(tall)) as qr:
        for factor in (chol, lu):
            np.testing.assert_allclose(cp.asnumpy(factor.solve(cp.asarray(b))),
                                       np.linalg.solve(a, b), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(cp.asnumpy(chol.factor), np.linalg.cholesky(a),
                                   rtol=1e-10, atol=1e-12)
        expected = np.stack([np.linalg.lstsq(t, c, rcond=None)[0]
                             for t, c in zip(tall, tall_b)])
        np.testing.assert_allclose(cp.asnumpy(qr.solve(cp.asarray(tall_b))), expected,
                                   rtol=1e-9, atol=1e-11)
        a2 = _spd(rng, (3, 6, 6)).astype(dtype)
        lu.refactor(cp.asarray(a2))
        np.testing.assert_allclose(cp.asnumpy(lu.solve(cp.asarray(b))),
                                   np.linalg.solve(a2, b), rtol=1e-9, atol=1e-11)


@pytest.mark.gpu
def test_device_qr_refuses_a_rank_deficient_matrix(cp):
    rng = np.random.default_rng()
    a = rng.standard_normal((3, 40, 7))
    a[1, :, 3] = 0.5 * a[1, :, 6]
    with pytest.raises(np.linalg.LinAlgError, match="does not have full column rank") as e:
        QR(cp.asarray(a))
    assert e.value.index == (1,)
    b = rng.standard_normal((3, 40, 1))
    expected = np.stack([np.linalg.lstsq(t, c, rcond=None)[0]
                         for t, c in zip(a[[0, 2]], b[[0, 2]])])
    with QR(cp.asarray(a[[0, 2]])) as qr:
        np.testing.assert_allclose(cp.asnumpy(qr.solve(cp.asarray(b[[0, 2]]))), expected,
                                   rtol=1e-9, atol=1e-11)


def _spoiled(rng, shape, bad):
    """SPD matrices (tall ones for QR: random), the one at batch index 1 holding ``bad``."""
    a = _spd(rng, shape) if shape[-2] == shape[-1] else rng.standard_normal(shape)
    a[1, -1, 0] = bad
    return a


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("cls, shape", [(Cholesky, (3, 5, 5)), (LU, (3, 5, 5)),
                                        (QR, (3, 7, 5))])
def test_nan_and_inf_raise_under_check(cls, shape, bad):
    # check=True names the operand and matrix (at factoring and refactoring); check=False
    # takes it
    rng = np.random.default_rng()
    a = _spoiled(rng, shape, bad)
    with pytest.raises(np.linalg.LinAlgError,
                       match=r"^a: array must not contain infs or NaNs \(batch index \(1,\)\)"):
        cls(a)
    factor = cls(a[[0, 0, 2]])
    with pytest.raises(np.linalg.LinAlgError, match=r"\(batch index \(1,\)\)"):
        factor.refactor(a)
    cls(a, check=False)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [6, 110])
@pytest.mark.parametrize("cls", [Cholesky, LU, QR])
def test_device_objects_raise_for_nan_and_inf_under_check(cp, cls, n):
    rng = np.random.default_rng()
    shape = (3, n + 2, n) if cls is QR else (3, n, n)
    for bad in (np.nan, np.inf):
        a = _spoiled(rng, shape, bad)
        with pytest.raises(np.linalg.LinAlgError, match=r"^a: array must not contain infs "
                                                        r"or NaNs \(batch index \(1,\)\)"):
            cls(cp.asarray(a))
        factor = cls(cp.asarray(a[[0, 0, 2]]))
        with pytest.raises(np.linalg.LinAlgError, match=r"^a: .*\(batch index \(1,\)\)"):
            factor.refactor(cp.asarray(a))
        cls(cp.asarray(a), check=False)


def _refused(cls, rng, shape):
    """``(a good matrix batch of shape, one refactor refuses)``: for QR a rank-deficient one,
    for LU a singular one, for Cholesky one not positive definite, each at batch index 1."""
    good = _spd(rng, shape) if cls is not QR else rng.standard_normal(shape)
    bad = good.copy()
    if cls is QR:  # (zeros stay exactly zero through the factorization: no rounding luck)
        bad[1, :, -1] = 0
    elif cls is LU:
        bad[1, -1] = 0
    else:
        bad[1] = -bad[1]
    return good, bad


def _solution(cls, a, b):
    if cls is QR:
        return np.stack([np.linalg.lstsq(m, c, rcond=None)[0] for m, c in zip(a, b)])
    return np.linalg.solve(a, b)


@pytest.mark.parametrize("cls, shape", [(Cholesky, (3, 5, 5)), (LU, (3, 5, 5)),
                                        (QR, (3, 8, 5))])
@pytest.mark.parametrize("bad", ["refused", "nan"])
def test_a_refused_refactor_keeps_the_factorization(cls, shape, bad):
    """A matrix refactor refuses (issue 38, point 6) leaves the factorization held: solves
    go on with the previous matrix."""
    rng = np.random.default_rng()
    a, refused = _refused(cls, rng, shape)
    if bad == "nan":
        refused = a.copy()
        refused[1, 0, 0] = np.nan
    b = rng.standard_normal(shape[:-1] + (2,))
    with cls(a) as factor:
        before = factor.solve(b)
        with pytest.raises(np.linalg.LinAlgError, match=r"\(batch index \(1,\)\)"):
            factor.refactor(refused)
        np.testing.assert_array_equal(factor.solve(b), before)
        np.testing.assert_allclose(before, _solution(cls, a, b), rtol=1e-9, atol=1e-11)


@pytest.mark.gpu
@pytest.mark.parametrize("cls, shape", [(Cholesky, (3, 5, 5)), (LU, (3, 5, 5)),
                                        (QR, (3, 8, 5))])
@pytest.mark.parametrize("bad", ["refused", "nan"])
def test_a_refused_refactor_keeps_the_factorization_on_the_device(cp, cls, shape, bad):
    """On the device too: a matrix that may be refused is factored into new buffers."""
    rng = np.random.default_rng()
    a, refused = _refused(cls, rng, shape)
    if bad == "nan":
        refused = a.copy()
        refused[1, 0, 0] = np.nan
    b = cp.asarray(rng.standard_normal(shape[:-1] + (2,)))
    with cls(cp.asarray(a)) as factor:
        before = cp.asnumpy(factor.solve(b))
        with pytest.raises(np.linalg.LinAlgError, match=r"\(batch index \(1,\)\)"):
            factor.refactor(cp.asarray(refused))
        np.testing.assert_array_equal(cp.asnumpy(factor.solve(b)), before)
        np.testing.assert_allclose(before, _solution(cls, a, cp.asnumpy(b)), rtol=1e-9,
                                   atol=1e-11)
        a2 = _refused(cls, rng, shape)[0]  # (a matrix that passes is taken, as before)
        factor.refactor(cp.asarray(a2))
        np.testing.assert_allclose(cp.asnumpy(factor.solve(b)),
                                   _solution(cls, a2, cp.asnumpy(b)), rtol=1e-9, atol=1e-11)
        if cls is Cholesky:
            np.testing.assert_allclose(cp.asnumpy(factor.factor), np.linalg.cholesky(a2),
                                       rtol=1e-10, atol=1e-12)

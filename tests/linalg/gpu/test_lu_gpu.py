"""accelmath.linalg's LU family on CuPy arrays, against NumPy/SciPy in float64 on fresh random
data: solve, inv, det, slogdet, lu_factor and lu_solve, solve_triangular (residuals, SciPy's
factors, batched and broadcast, the triangle not read), and lu_solve's pivots out of range:
refused under check_finite, NaN without it."""

import numpy as np
import pytest
import scipy.linalg
from closeness import DTYPE_TOL, assert_close_dtype, assert_close_elementwise

import accelmath.linalg as la
from accelmath.errors import InvalidArgumentError, LinAlgError

from .gpu_cases import DTYPES, REAL, c, eye_like, mT, random, residual, well, wide

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [
    ((6, 6), (6,)), ((6, 6), (6, 3)), ((4, 5, 5), (5,)), ((4, 5, 5), (4, 5, 2)),
    ((5, 5), (3, 5, 2)), ((3, 1, 5, 5), (4, 5, 2)), ((40, 40), (40, 3)), ((3, 40, 40), (40,)),
    ((2, 1, 40, 40), (3, 40, 2)), ((90, 90), (90, 3)), ((110, 110), (110, 3)),
    ((3, 110, 110), (110,))])
def test_solve(cupy, dtype, a_shape, b_shape):
    a, b = well(a_shape, dtype), random(b_shape, dtype)
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b)))
    expected = np.linalg.solve(a.astype(wide(dtype)), b.astype(wide(dtype)))
    assert x.shape == expected.shape and x.dtype == np.dtype(dtype)
    assert_close_dtype(x, expected, dtype, 10)
    residual(a, x, b, len(b_shape) == 1, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (2, 3, 1, 1), (40, 40), (2, 40, 40),
                                   (70, 70), (2, 70, 70)])
def test_inv_det_slogdet(cupy, dtype, shape):
    a = well(shape, dtype)
    inverse = cupy.get(la.inv(cupy.put(a)))
    assert inverse.shape == shape and inverse.dtype == np.dtype(dtype)
    assert_close_dtype(inverse, np.linalg.inv(a.astype(wide(dtype))), dtype, 10)
    assert_close_dtype(c(a) @ c(inverse), eye_like(a), dtype, 10)
    d = cupy.get(la.det(cupy.put(a)))
    assert d.shape == shape[:-2] and d.dtype == np.dtype(dtype)
    assert_close_dtype(d, np.linalg.det(a.astype(wide(dtype))), dtype, 10)
    sign, logabsdet = la.slogdet(cupy.put(a))
    sign, logabsdet = cupy.get(sign), cupy.get(logabsdet)
    expected = np.linalg.slogdet(a.astype(wide(dtype)))
    assert sign.dtype == np.dtype(dtype) and logabsdet.dtype == np.dtype(REAL[dtype])
    assert sign.shape == logabsdet.shape == shape[:-2]
    assert_close_dtype(sign, expected.sign, dtype, 10)
    # (a log's error is absolute, the relative error of |det|: well()'s logabsdet may lie
    # near 0, where a relative measure of it is not the error)
    assert_close_elementwise(logabsdet, expected.logabsdet, DTYPE_TOL[dtype] * 10,
                             floor=1.0, same_shape=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((5, 5), (5,)), ((5, 5), (5, 3)),
                                              ((2, 4, 4), (4,)), ((2, 4, 4), (2, 4, 2)),
                                              ((40, 40), (40, 2)), ((3, 40, 40), (3, 40, 1))])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_lu_solve(cupy, dtype, a_shape, b_shape, trans):
    a, b = well(a_shape, dtype), random(b_shape, dtype)
    lu, piv = la.lu_factor(cupy.put(a))
    x = cupy.get(la.lu_solve((lu, piv), cupy.put(b), trans=trans))
    lu, piv = cupy.get(lu), cupy.get(piv)
    assert lu.shape == a_shape and lu.dtype == np.dtype(dtype)
    assert piv.shape == a_shape[:-1] and piv.dtype == np.int32
    for index in np.ndindex(a_shape[:-2]):
        elu, epiv = scipy.linalg.lu_factor(a[index].astype(wide(dtype)))
        np.testing.assert_array_equal(piv[index], epiv)
        assert_close_dtype(lu[index], elu, dtype, 10)
    op = {0: a, 1: np.swapaxes(a, -1, -2), 2: mT(a)}[trans]
    vector = len(b_shape) == 1
    batch = np.broadcast_shapes(a_shape[:-2], () if vector else b_shape[:-2])
    assert x.shape == batch + (b_shape if vector else b_shape[-2:])
    assert x.dtype == np.dtype(dtype)
    residual(op, x, b, vector, dtype)


@pytest.mark.parametrize("a_shape, b_shape", [((2, 4, 4), (3, 1, 4, 2)), ((4, 4), (3, 4, 2)),
                                              ((40, 40), (2, 40, 1))])
def test_lu_solve_broadcasts_batches(cupy, a_shape, b_shape):
    """b's batch dimensions broadcast with lu's (and piv's), as on the CPU."""
    a, b = well(a_shape, "float64"), random(b_shape, "float64")
    factors = la.lu_factor(cupy.put(a))
    x = cupy.get(la.lu_solve(factors, cupy.put(b)))
    assert x.shape == np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + b_shape[-2:]
    residual(a, x, b, False, "float64")


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 6, 4)])
def test_lu_factor_rectangular(cupy, dtype, shape):
    a = random(shape, dtype)
    lu, piv = la.lu_factor(cupy.put(a))
    lu, piv = cupy.get(lu), cupy.get(piv)
    assert lu.shape == shape and piv.shape == shape[:-2] + (min(shape[-2:]),)
    for index in np.ndindex(shape[:-2]):
        elu, epiv = scipy.linalg.lu_factor(a[index].astype(wide(dtype)))
        np.testing.assert_array_equal(piv[index], epiv)
        assert_close_dtype(lu[index], elu, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((5, 5), (5,)), ((3, 4, 4), (4, 2)),
                                              ((3, 4, 4), (2, 1, 4, 1)), ((40, 40), (40, 3))])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular(cupy, dtype, a_shape, b_shape, lower, trans, unit_diagonal):
    """The other triangle of a is full (not read); so is the diagonal with unit_diagonal."""
    a, b = well(a_shape, dtype, permute=False), random(b_shape, dtype)
    x = cupy.get(la.solve_triangular(cupy.put(a), cupy.put(b), trans=trans, lower=lower,
                                     unit_diagonal=unit_diagonal))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(a_shape[-1]) + np.eye(a_shape[-1])
    op = {0: t, 1: np.swapaxes(t, -1, -2), 2: mT(t)}[trans]
    assert x.dtype == np.dtype(dtype)
    vector = len(b_shape) == 1
    expected = np.linalg.solve(c(op), c(b)[..., None] if vector else c(b))
    expected = expected[..., 0] if vector else expected
    assert x.shape == expected.shape
    assert_close_dtype(x, expected, dtype, 10)
    residual(op, x, b, vector, dtype)


def test_solve_triangular_zero_diagonal_raises(cupy):
    """A zero on the diagonal raises LinAlgError naming the batch index, as on the CPU."""
    a = well((3, 4, 4), "float64", permute=False)
    a[1, 2, 2] = 0
    b = random((4, 2), "float64")
    with pytest.raises(LinAlgError) as info:
        la.solve_triangular(cupy.put(a), cupy.put(b), lower=True)
    assert info.value.index == (1,)
    x = la.solve_triangular(cupy.put(a), cupy.put(b), lower=True, unit_diagonal=True)
    assert np.all(np.isfinite(cupy.get(x)))


# ---- lu_solve's pivots out of range: refused under check_finite, NaN without it ----

def _refused_pivot(bad, position, index):
    """The message of lu_solve's refusal of pivot ``bad`` at ``position`` of the matrix at
    batch ``index`` of piv, as a pattern."""
    import re

    return (rf"^piv: pivot {bad} at position {position} is out of range for lu of order "
            rf"\d+: .*\(batch index {re.escape(str(index))}\)$")


# 8 x 8, alone and batched: swap_rows and cuBLAS's triangular solves (the conversion of the
# pivots checks them: no launch more); 40: the same beside two batch dimensions; 4200 rows
# of float64: cusolverDnXgetrs (swap_rows takes at most 4096), whose pivots the same
# conversion makes
@pytest.mark.parametrize("n, batch", [(8, ()), (8, (3, 100)), (40, (2,)), (4200, ())])
@pytest.mark.parametrize("trans", [0, 2])
def test_lu_solve_refuses_a_pivot_out_of_range(cupy, n, batch, trans):
    a, b = well(batch + (n, n), "float64"), random(batch + (n, 2), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    index = tuple(s - 1 for s in batch)
    bad_system = np.zeros(batch, bool)
    bad_system[index] = True
    op = a if trans == 0 else mT(a)
    for bad in (n, -1, 2**31 - 1):
        spoiled = piv.copy()
        spoiled[index + (n // 2,)] = bad
        kept = [cupy.get(x) for x in (lu, spoiled)]
        with pytest.raises(InvalidArgumentError, match=_refused_pivot(bad, n // 2, index)):
            la.lu_solve((lu, spoiled), cupy.put(b), trans=trans)
        for before, after in zip(kept, (lu, spoiled)):
            np.testing.assert_array_equal(before, cupy.get(after))
        # without check_finite nothing is read back: that system's solution is NaN
        x = cupy.get(la.lu_solve((lu, spoiled), cupy.put(b), trans=trans, check_finite=False))
        assert np.isnan(x[bad_system]).all()
        residual(op[~bad_system], x[~bad_system], b[~bad_system], False, "float64")


def test_lu_solve_checks_the_pivots_of_a_remembered_call(cupy):
    a = well((5, 8, 8), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    b = cupy.put(random((5, 8, 1), "float64"))
    for _ in range(3):  # (remembered after the first: run again on the same addresses)
        residual(a, cupy.get(la.lu_solve((lu, piv), b)), cupy.get(b), False, "float64")
    piv[3, 4] = -7
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(-7, 4, (3,))):
        la.lu_solve((lu, piv), b)
    assert np.isnan(cupy.get(la.lu_solve((lu, piv), b, check_finite=False))[3]).all()


def test_lu_solve_checks_pivots_of_other_types_and_layouts(cupy):
    cp = cupy.cp
    a, b = well((4, 8, 8), "float64"), random((4, 8, 1), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    expected = cupy.get(la.lu_solve((lu, piv), cupy.put(b)))
    wide = piv.astype(cp.int64)
    spaced = cp.zeros((4, 16), cp.int64)  # (copied as pairs of int32 words)
    spaced[:, ::2] = piv
    for given in (wide, spaced[:, ::2], piv.astype(cp.uint8)):
        np.testing.assert_array_equal(cupy.get(la.lu_solve((lu, given), cupy.put(b))),
                                      expected)
    wide[2, 1] = 2**32 + 1  # (as int32, a pivot 1 in range)
    spaced[1, 10] = -2**40
    for given, bad, position, index in ((wide, 2**32 + 1, 1, (2,)),
                                        (spaced[:, ::2], -2**40, 5, (1,))):
        with pytest.raises(InvalidArgumentError, match=_refused_pivot(bad, position, index)):
            la.lu_solve((lu, given), cupy.put(b))
    # piv broadcast over lu's batch: its own batch index is named
    lu2, piv2 = la.lu_factor(cupy.put(well((2, 4, 8, 8), "float64")))
    one = piv2[0].copy()
    one[3, 0] = 8
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(8, 0, (3,))):
        la.lu_solve((lu2, one), cupy.put(random((2, 4, 8, 1), "float64")))


def test_lu_solve_refuses_bad_pivots_beside_a_large_check_and_with_a_strided_b(cupy):
    # b of 8.96 MB: its finiteness check runs beside the solve, and the pivots' flag is read
    # once it is done; a strided b is checked through CuPy, and the flag read after a wait
    cp, count = cupy.cp, 140000
    lu = cp.ascontiguousarray(cp.broadcast_to(cp.eye(8), (count, 8, 8)))  # (a = I)
    piv = cp.tile(cp.arange(8, dtype=cp.int32), (count, 1))
    b = cupy.put(random((count, 8, 1), "float64"))
    np.testing.assert_array_equal(cupy.get(la.lu_solve((lu, piv), b)), cupy.get(b))
    piv[count - 2, 7] = 9
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(9, 7, (count - 2,))):
        la.lu_solve((lu, piv), b)
    strided = cupy.put(random((5, 8, 2), "float64"))[..., :1]
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(9, 7, (3,))):
        la.lu_solve((lu[-5:], piv[-5:]), strided)


def test_lu_solve_refuses_bad_pivots_with_execution_cuda():
    lu, piv = scipy.linalg.lu_factor(well((8, 8), "float64"))
    piv[5] = 8
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(8, 5, ())):
        la.lu_solve((lu, piv), np.ones(8), execution="cuda")
    x = la.lu_solve((lu, piv), np.ones(8), execution="cuda", check_finite=False)
    assert isinstance(x, np.ndarray) and np.isnan(x).all()


def test_lu_solve_refuses_bad_pivots_of_torch_and_jax(package):
    a, b = well((3, 8, 8), "float64"), random((3, 8, 1), "float64")
    lu, piv = la.lu_factor(a)  # (on the CPU: int32 pivots; torch's own are int64)
    piv = piv.astype(np.int64)
    piv[1, 2] = -1
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(-1, 2, (1,))):
        la.lu_solve((package.put(lu), package.put(piv)), package.put(b))
    x = package.get(la.lu_solve((package.put(lu), package.put(piv)), package.put(b),
                                check_finite=False))
    assert np.isnan(x[1]).all()
    residual(a[::2], x[::2], b[::2], False, "float64")


@pytest.mark.parametrize("dtype", ["int16", "float16", "uint8", "int64"])
def test_scipy_functions_compute_in_scipys_dtypes(cp, dtype):
    host = (2 * np.eye(4) + np.tri(4)).astype(dtype)
    b = np.arange(1, 5).astype(dtype)
    a_dev, b_dev = cp.asarray(host), cp.asarray(b)
    # (cho_factor's other triangle is SciPy's junk: its own triangle compared)
    pairs = [(la.lu_factor(a_dev)[0], scipy.linalg.lu_factor(host)[0]),
             (cp.triu(la.cho_factor(a_dev)[0]), np.triu(scipy.linalg.cho_factor(host)[0])),
             (la.solve_triangular(a_dev, b_dev, lower=True),
              scipy.linalg.solve_triangular(host, b, lower=True)),
             (la.lu_solve(la.lu_factor(a_dev), b_dev),
              scipy.linalg.lu_solve(scipy.linalg.lu_factor(host), b))]
    for ours, theirs in pairs:
        assert isinstance(ours, cp.ndarray) and ours.dtype == theirs.dtype
        np.testing.assert_allclose(cp.asnumpy(ours), theirs, rtol=1e-5, atol=1e-6)

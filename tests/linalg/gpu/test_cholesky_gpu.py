"""accelmath.linalg's Cholesky family on CuPy arrays, against NumPy/SciPy in float64 on fresh
random data: cholesky, cho_factor and cho_solve (one triangle read, SciPy's own factors)."""

import numpy as np
import pytest
import scipy.linalg
from closeness import assert_close_dtype

import accelmath.linalg as la

from .gpu_cases import DTYPES, c, garble, mT, random, residual, spd, wide

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 7), (3, 5, 5), (40, 40), (2, 40, 40), (70, 70),
                                   (2, 70, 70)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(cupy, dtype, shape, upper):
    """Hermitian (complex) matrices; only the triangle named is read."""
    a = spd(shape, dtype)
    factor = cupy.get(la.cholesky(cupy.put(garble(a, "U" if upper else "L")), upper=upper))
    assert factor.shape == shape and factor.dtype == np.dtype(dtype)
    lower = np.linalg.cholesky(a.astype(wide(dtype)))
    assert_close_dtype(factor, mT(lower) if upper else lower, dtype, 10)
    assert np.all((np.tril(factor, -1) if upper else np.triu(factor, 1)) == 0)
    assert_close_dtype(mT(c(factor)) @ c(factor) if upper else c(factor) @ mT(c(factor)), a,
                       dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_shape, b_shape", [((5, 5), (5,)), ((5, 5), (5, 2)),
                                              ((3, 4, 4), (4,)), ((3, 4, 4), (2, 1, 4, 3)),
                                              ((40, 40), (40, 3)), ((2, 40, 40), (40,))])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_cho_solve(cupy, dtype, c_shape, b_shape, lower):
    a, b = spd(c_shape, dtype), random(b_shape, dtype)
    dev_factor, low = la.cho_factor(cupy.put(a), lower=lower)
    assert low is lower
    factor = cupy.get(dev_factor)
    x = cupy.get(la.cho_solve((dev_factor, low), cupy.put(b)))
    np.testing.assert_array_equal(cupy.get(dev_factor), factor)  # (read, never written)
    assert factor.shape == c_shape and factor.dtype == np.dtype(dtype)
    reference = np.linalg.cholesky(a.astype(wide(dtype)))
    assert_close_dtype(np.tril(factor) if lower else np.triu(factor),
                       reference if lower else mT(reference), dtype, 10)
    np.testing.assert_array_equal(np.triu(factor, 1) if lower else np.tril(factor, -1), 0)
    assert x.dtype == np.dtype(dtype)
    residual(a, x, b, len(b_shape) == 1, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_reads_one_triangle(cupy, dtype, lower):
    """SciPy's own factor (a's entries in the other triangle) solved on the GPU."""
    a, b = spd((6, 6), dtype), random((6, 2), dtype)
    factor = scipy.linalg.cho_factor(a, lower=lower)[0]
    x = cupy.get(la.cho_solve((cupy.put(factor), lower), cupy.put(b)))
    residual(a, x, b, False, dtype)

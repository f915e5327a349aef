"""accelmath.linalg.lstsq on CuPy arrays, against NumPy in float64 on fresh random data:
tall, wide and square systems, and the minimum-norm solution of rank-deficient ones."""

import numpy as np
import pytest
from closeness import assert_close_dtype

import accelmath.linalg as la

from .gpu_cases import DTYPES, REAL, matrix, random, wide

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, k", [((8, 3), None), ((8, 3), 2), ((3, 8), 2), ((5, 5), None),
                                      ((60, 20), 3), ((20, 60), None)])
def test_lstsq(cupy, dtype, shape, k):
    a = matrix(shape, dtype)
    b = random((shape[0],) if k is None else (shape[0], k), dtype)
    x, residuals, rank, s = la.lstsq(cupy.put(a), cupy.put(b))
    x, residuals, s = cupy.get(x), cupy.get(residuals), cupy.get(s)
    ex, eres, erank, es = np.linalg.lstsq(a.astype(wide(dtype)), b.astype(wide(dtype)))
    assert x.shape == ex.shape and residuals.shape == eres.shape and s.shape == es.shape
    assert x.dtype == np.dtype(dtype)
    assert residuals.dtype == s.dtype == np.dtype(REAL[dtype])
    assert int(rank) == erank == min(shape)
    assert_close_dtype(x, ex, dtype, 10)
    assert_close_dtype(s, es, dtype, 10)
    if eres.size:
        assert_close_dtype(residuals, eres, dtype, 10)


def rank_two(dtype):
    """A 6 x 3 matrix of small integers (exact in every dtype) of rank 2."""
    a = np.random.default_rng().integers(-4, 5, (6, 3)).astype(dtype)
    if str(dtype).startswith("complex"):
        a = a + 1j * np.random.default_rng().integers(-4, 5, (6, 3))
    a[:, 2] = a[:, 0] + a[:, 1]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("vector", [True, False])
def test_lstsq_rank_deficient(cupy, dtype, vector):
    a = rank_two(dtype)
    b = random((6,) if vector else (6, 2), dtype)
    x, residuals, rank, s = la.lstsq(cupy.put(a), cupy.put(b))
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    assert erank == 2 and int(rank) == 2 and cupy.get(residuals).shape == (0,)
    assert cupy.get(x).shape == ex.shape
    assert_close_dtype(cupy.get(x), ex, dtype, 10)  # the minimum-norm solution
    assert_close_dtype(cupy.get(s), es, dtype, 10)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_lstsq_rank_deficient_single_precision(cupy, dtype):
    """NumPy computes single precision in double: an exactly rank-2 matrix has rank 2 with
    the default rcond (float64's epsilon times max(m, n)), and x is the minimum-norm
    solution."""
    a = rank_two(dtype)
    b = random((6,), dtype)
    x, residuals, rank, s = la.lstsq(cupy.put(a), cupy.put(b))
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    assert erank == 2
    assert int(rank) == 2
    assert_close_dtype(cupy.get(x), ex, dtype, 10)

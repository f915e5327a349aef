"""Failures of accelmath.linalg on the GPU: singular and not positive-definite matrices raise
LinAlgError naming their batch index (NaN in that matrix's results with check=False), on every
route; no info codes read back where none failed; factor objects refuse a lossy dtype."""

import numpy as np
import pytest
from closeness import assert_close_dtype

import accelmath.linalg as la
from accelmath.errors import LinAlgError, UnsupportedDTypeError

from .gpu_cases import DTYPES, method_call, method_data, mT, random, residual, spd, well, wide

pytestmark = pytest.mark.gpu


FAILING = [("small", 4), ("cusolver", 4), ("auto", 4), ("batched", 4), ("small", 40),
           ("cusolver", 40), ("auto", 40), ("batched", 130)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("function", ["solve", "inv"])
@pytest.mark.parametrize("method, n", FAILING)
@pytest.mark.parametrize("batch, bad", [((5,), (3,)), ((2, 3), (1, 2))])
def test_singular_matrix_raises_with_its_index(cupy, function, method, n, batch, bad, dtype):
    a = well(batch + (n, n), dtype)
    a[bad] = 0
    b = cupy.put(random(batch + (n, 2), dtype))
    with pytest.raises(LinAlgError) as info:
        method_call(function, cupy.put(a), b, method)
    assert info.value.index == bad
    assert isinstance(info.value, np.linalg.LinAlgError)
    assert f"(batch index {bad})" in str(info.value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("function", ["solve", "inv"])
@pytest.mark.parametrize("method, n", FAILING)
def test_singular_matrix_with_check_false(cupy, function, method, n, dtype):
    a, b, expected = method_data(function, (5, n, n), dtype)
    a[3] = 0
    result = cupy.get(method_call(function, cupy.put(a), None if b is None else cupy.put(b),
                                   method, check=False))
    assert np.all(np.isnan(result[3]))
    others = [0, 1, 2, 4]
    assert_close_dtype(result[others], expected[others], dtype, 10)


@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
@pytest.mark.parametrize("n", [4, 40])
def test_small_kernels_read_no_info_back_where_none_failed(cupy, monkeypatch, function, n):
    # the kernels raise the thread's page-locked flag where a system fails: a checked call
    # that finds it lowered reads no info codes back, the call remembered as well
    from accelmath.linalg._device import context as _context

    a, b, expected = method_data(function, (5, n, n), "float64")
    a_dev, b_dev = cupy.put(a), None if b is None else cupy.put(b)
    monkeypatch.setattr(_context, "check_info",
                        lambda *args: pytest.fail("info codes were read back"))
    for _ in range(2):
        assert_close_dtype(cupy.get(method_call(function, a_dev, b_dev, "small")), expected,
                           "float64", 10)
    monkeypatch.undo()
    a[3] = -np.eye(n) if function == "cholesky" else 0
    a_bad = cupy.put(a)
    for _ in range(2):
        with pytest.raises(LinAlgError) as info:
            method_call(function, a_bad, b_dev, "small")
        assert info.value.index == (3,)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method, n", FAILING)
@pytest.mark.parametrize("upper", [False, True])
def test_not_positive_definite(cupy, method, n, upper, dtype):
    a, _, expected = method_data("cholesky", (2, 3, n, n), dtype)
    a[1, 2] = -np.eye(n)
    with pytest.raises(LinAlgError) as info:
        la.cholesky(cupy.put(a), upper=upper, method=method)
    assert info.value.index == (1, 2)
    assert "(batch index (1, 2))" in str(info.value)
    result = cupy.get(la.cholesky(cupy.put(a), upper=upper, method=method, check=False))
    assert np.all(np.isnan(result[1, 2]))
    result[1, 2] = 0
    expected[1, 2] = 0
    assert_close_dtype(result, mT(expected) if upper else expected, dtype, 10)


@pytest.mark.parametrize("n", [4, 40, 70])
def test_factorizations_of_scipy_raise_with_the_index(cupy, n):
    a = spd((5, n, n), "float64")
    a[3] = -np.eye(n)
    with pytest.raises(LinAlgError) as info:
        la.cho_factor(cupy.put(a))
    assert info.value.index == (3,)
    a = well((5, n, n), "float64")
    a[3] = 0
    with pytest.raises(LinAlgError) as info:
        la.lu_factor(cupy.put(a))
    assert info.value.index == (3,)
    lu, piv = la.lu_factor(cupy.put(a), check=False)
    lu = cupy.get(lu)
    assert np.all(np.isnan(lu[3])) and np.all(np.isfinite(lu[[0, 1, 2, 4]]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_of_singular_matrices(cupy, dtype):
    a = well((5, 4, 4), dtype)
    a[3] = 0
    d = cupy.get(la.det(cupy.put(a)))
    assert d[3] == 0
    assert_close_dtype(d, np.linalg.det(a.astype(wide(dtype))), dtype, 10)
    sign, logabsdet = (cupy.get(r) for r in la.slogdet(cupy.put(a)))
    assert sign[3] == 0 and logabsdet[3] == -np.inf
    assert np.all(np.isfinite(logabsdet[[0, 1, 2, 4]]))


@pytest.mark.parametrize("cls", ["Cholesky", "LU", "QR"])
def test_factor_objects_refuse_a_lossy_dtype_on_the_gpu(cupy, cls):
    a = cupy.put(spd((4, 4), "float64"))
    factor = getattr(la, cls)(a)
    with pytest.raises(UnsupportedDTypeError, match="^b has dtype complex128, .* imaginary"):
        factor.solve(cupy.put(np.ones(4) + 1j))
    with pytest.raises(UnsupportedDTypeError, match="^a has dtype complex128"):
        factor.refactor(a + 0j)
    residual(cupy.get(a), cupy.get(factor.solve(cupy.put(np.arange(4)))), np.arange(4.0),
             True, "float64")

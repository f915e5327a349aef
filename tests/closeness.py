"""How the tests compare a result with its oracle's, in two measures.

- In norm (:func:`assert_close`): ``||got - expected|| <= rtol ||expected||``, the Frobenius
  norms over all elements; for transforms and factorizations, whose every element carries
  the rounding of the whole (a small element's own relative error means nothing).
  :func:`assert_close_dtype` takes ``rtol`` from :data:`DTYPE_TOL`, by the result's dtype.
- Element by element (:func:`assert_close_elementwise`): each ``|got - expected|`` within
  ``tol`` of the largest ``|expected|`` (and optionally ``rtol`` of its own); for results of
  a few arithmetic steps (products, subtractions), whose error is bounded per element.
  :func:`assert_close_products` takes ``tol`` from :data:`PRODUCT_EPS`, by the dtype and the
  number of products summed.

Differences are taken in at least double precision (a long double stays long double).
"""

import numpy as np

__all__ = ["DTYPE_TOL", "PRODUCT_EPS", "relative_error", "assert_close", "assert_close_dtype",
           "assert_close_elementwise", "assert_close_products"]

# the relative error in norm of a factorization's or solve's result, per dtype: single
# precision's rounding grown through O(n) steps; double's
DTYPE_TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}
# the relative error of a sum of k products, per unit of sqrt(k) (times 8: the tolerance)
PRODUCT_EPS = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-14,
               "complex64": 2e-6, "complex128": 1e-14}


def _wide(x):
    """``x`` as a NumPy array of at least double precision, complex where ``x`` is."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.result_type(x.dtype, np.complex128))
    if x.dtype.kind == "f":
        return x.astype(np.result_type(x.dtype, np.float64))
    return x.astype(np.float64)  # (integers, bool, ml_dtypes' bfloat16)


def relative_error(got, expected):
    """``||got - expected|| / ||expected||``: Frobenius norms over all elements (``got``
    broadcast against ``expected``), an all-zero ``expected`` taken as of norm 1e-300."""
    got, expected = _wide(got), _wide(expected)
    return np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-300)


def assert_close(got, expected, rtol=1e-10, what="", *, same_type=False):
    """Assert ``||got - expected|| <= rtol ||expected||`` (:func:`relative_error`; NaN or an
    infinity fails it). With ``same_type``, ``got`` must also have the shape and dtype of
    ``expected`` (NumPy arrays both). ``what`` starts the messages."""
    where = f"{what}: " if what else ""
    if same_type:
        assert got.shape == expected.shape, f"{where}shape {got.shape} != {expected.shape}"
        assert got.dtype == expected.dtype, f"{where}dtype {got.dtype} != {expected.dtype}"
    error = relative_error(got, expected)
    assert error <= rtol, f"{where}relative error {error:.3g}, more than {rtol:.3g}"


def assert_close_dtype(got, expected, dtype, factor=1.0):
    """:func:`assert_close` to the tolerance of results of ``dtype`` (:data:`DTYPE_TOL`)
    times ``factor``."""
    assert_close(got, expected, DTYPE_TOL[str(dtype)] * factor)


def assert_close_elementwise(got, expected, tol, *, rtol=0.0, floor=0.0, if_zero=0.0,
                             same_shape=False, err_msg=""):
    """Assert, element by element, ``|got - expected| <= tol * scale + rtol * |expected|``
    (``np.testing.assert_allclose``: NaN where ``expected`` has NaN), ``scale`` the largest
    ``|expected|``, at least ``floor``; ``if_zero`` (at least ``floor``) where ``expected``
    is all zeros or empty. With ``same_shape``, ``got`` must have the shape of ``expected``
    (else a scalar would be compared with every element)."""
    got, expected = _wide(got), _wide(expected)
    if same_shape:
        assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    largest = float(np.abs(expected).max(initial=0.0))
    scale = max(largest, floor) if largest else max(if_zero, floor)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=tol * scale, err_msg=err_msg)


def assert_close_products(got, expected, dtype, k):
    """:func:`assert_close_elementwise` for sums of ``k`` products (a matmul's elements) of
    ``dtype``: to ``8 PRODUCT_EPS[dtype] sqrt(k)`` of the largest ``|expected|``, at least 1;
    the same shape."""
    assert_close_elementwise(got, expected, 8 * PRODUCT_EPS[dtype] * np.sqrt(max(k, 1)),
                             floor=1.0, same_shape=True)

"""The pure checks of accelmath.linalg._checks: NumPy's promotion and shape rules, SciPy's
right-hand-side rule, option validation, finiteness."""

import itertools

import numpy as np
import pytest

from accelmath import linalg
from accelmath.errors import InvalidArgumentError, LinAlgError, UnsupportedDTypeError
from accelmath.linalg import _checks as checks

ACCEPTED = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
            "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("first, second", list(itertools.product(ACCEPTED, repeat=2)))
def test_result_dtype_is_numpys(first, second):
    a = np.eye(2, dtype=first) * 2
    b = np.ones(2, dtype=second)
    expected = np.linalg.solve(a, b).dtype.name
    assert checks.result_dtype(("a", first), ("b", second)) == expected


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex32", "float128"])
def test_result_dtype_refuses_as_numpy(dtype):
    with pytest.raises(UnsupportedDTypeError, match=f"^b: array type {dtype} is unsupported"):
        checks.result_dtype(("a", "float64"), ("b", dtype))


def test_real_dtype():
    assert [checks.real_dtype(d) for d in ("float32", "complex64", "float64", "complex128")] \
        == ["float32", "float32", "float64", "float64"]


def test_shape_checks_raise_numpys_errors():
    checks.check_stacked_square((0, 3, 3))
    checks.check_stacked_2d((2, 3))
    for check, shape, message in [
            (checks.check_stacked_square, (3,), "1-dimensional array given"),
            (checks.check_stacked_square, (4, 2, 3), "Last 2 dimensions of the array must be "
                                                     "square; got shape \\(4, 2, 3\\)"),
            (checks.check_stacked_2d, (), "0-dimensional array given"),
            (lambda s: checks.check_2d(s, "a"), (1, 2, 2), "3-dimensional")]:
        with pytest.raises(LinAlgError, match=message) as e:
            check(shape)
        assert e.value.index is None


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (3,)), ((4, 3, 3), (3,)), ((3, 3), (3, 2)), ((4, 3, 3), (4, 3, 2)),
    ((4, 1, 3, 3), (5, 3, 0)), ((0, 3, 3), (3, 1)), ((2, 0, 0), (1, 0, 3)), ((2, 0, 0), (0,))])
def test_solve_rhs_agrees_with_numpy(a_shape, b_shape):
    expected = np.linalg.solve(np.broadcast_to(np.eye(a_shape[-1]), a_shape),
                               np.ones(b_shape)).shape
    vector, batch = checks.solve_rhs(a_shape, b_shape)
    assert vector == (len(b_shape) == 1)
    assert batch + ((a_shape[-1],) if vector else (a_shape[-1], b_shape[-1])) == expected


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (2,)), ((2, 2, 2), (1, 2)), ((2, 2, 2), (1, 3, 2)), ((0, 2, 2), (0, 3, 2)),
    ((2, 2, 2), (3, 2, 1)), ((3, 3), ())])
def test_solve_rhs_refuses_what_numpy_refuses(a_shape, b_shape):
    with pytest.raises(ValueError):
        np.linalg.solve(np.broadcast_to(np.eye(a_shape[-1]), a_shape), np.ones(b_shape))
    with pytest.raises(InvalidArgumentError, match="b"):
        checks.solve_rhs(a_shape, b_shape)


def test_scipy_rhs():
    assert checks.scipy_rhs((3, 3), (3,)) == (True, ())
    assert checks.scipy_rhs((5, 3, 3), (3,)) == (True, (5,))
    assert checks.scipy_rhs((5, 3, 3), (2, 1, 3, 4)) == (False, (2, 5))
    with pytest.raises(InvalidArgumentError, match="c of shape"):
        checks.scipy_rhs((3, 3), (3, 2, 2), ("lu", "c"))
    with pytest.raises(InvalidArgumentError, match="do not broadcast"):
        checks.scipy_rhs((2, 3, 3), (4, 3, 1))


def test_broadcast_batch():
    assert checks.broadcast_batch((), (2, 3)) == (2, 3)
    assert checks.broadcast_batch((5, 1), (1, 4)) == (5, 4)
    with pytest.raises(InvalidArgumentError, match=r"a \(2,\) and b \(3,\)"):
        checks.broadcast_batch((2,), (3,))


def test_lstsq_shapes():
    assert checks.lstsq_shapes((4, 2), (4,)) is True
    assert checks.lstsq_shapes((4, 2), (4, 3)) is False
    with pytest.raises(LinAlgError, match="Incompatible dimensions"):
        checks.lstsq_shapes((4, 2), (3,))


def test_lu_pivots():
    checks.lu_pivots((2, 3, 3), (3,), "int32")
    checks.lu_pivots((2, 3, 3), (2, 3), "int64")
    for shape, dtype, message in [((4,), "int32", "piv of shape"),
                                  ((3,), "float64", "integers"),
                                  ((4, 3), "int32", "do not broadcast")]:
        with pytest.raises(InvalidArgumentError, match=message):
            checks.lu_pivots((2, 3, 3), shape, dtype)


@pytest.mark.parametrize("check, good, normalized, bad, message", [
    (checks.check_mode, "raw", "raw", "full", "Invalid mode 'full', should be \"reduced\""),
    (checks.check_uplo, "l", "L", "lower", "Invalid UPLO 'lower', should be 'L' or 'U'"),
    (checks.check_trans, "T", 1, 3, "Invalid trans 3, should be 0, 1, 2, 'N', 'T' or 'C'"),
    (checks.check_trans, 2, 2, [0], "Invalid trans \\[0\\]"),
    (checks.check_method, "small", "small", "fast", "Invalid method 'fast', should be"),
    (lambda v: checks.check_flag(v, "upper"), np.True_, True, "yes",
     "upper must be True or False, got 'yes'"),
    (checks.check_rcond, -1, -1.0, "x", "rcond must be None or a real number, got 'x'")])
def test_option_checks_quote_the_value(check, good, normalized, bad, message):
    assert check(good) == normalized
    with pytest.raises(InvalidArgumentError, match=message):
        check(bad)


def test_trans_refuses_bools():
    with pytest.raises(InvalidArgumentError):
        checks.check_trans(True)


def test_check_finite_names_the_first_bad_matrix():
    a = np.ones((2, 3, 2, 2))
    assert checks.first_nonfinite(a, 2) is None
    checks.check_finite(a, 2, "a")
    a[1, 0, 1, 1] = np.inf
    a[1, 2, 0, 0] = np.nan
    assert checks.first_nonfinite(a, 2) == (1, 0)
    with pytest.raises(LinAlgError, match=r"^c: array must not contain infs or NaNs "
                                          r"\(batch index \(1, 0\)\)$") as e:
        checks.check_finite(a, 2, "c")
    assert e.value.index == (1, 0)
    assert checks.first_nonfinite(np.array([1.0, np.nan]), 1) == ()


@pytest.mark.parametrize("call", [
    lambda: linalg.cho_factor(np.eye(2), overwrite_a="yes"),
    lambda: linalg.lu_factor(np.eye(2), overwrite_a="yes"),
    lambda: linalg.cho_solve((np.eye(2), False), np.ones(2), overwrite_b="yes"),
    lambda: linalg.lu_solve(linalg.lu_factor(np.eye(2)), np.ones(2), overwrite_b="yes"),
    lambda: linalg.solve_triangular(np.eye(2), np.ones(2), overwrite_b="yes")])
def test_overwrite_flags_are_checked(call):
    # (accepted and never acted on, but not whatever is given: SciPy refuses "yes"; found by
    # the fuzz)
    with pytest.raises(InvalidArgumentError,
                       match=r"^overwrite_[ab] must be True or False, got 'yes'"):
        call()

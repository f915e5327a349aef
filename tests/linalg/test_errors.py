"""Bad input to accelmath.linalg's functions (the issue's "Bad input"): each raises a clear
accelmath error naming the argument; failed factorizations name the batch index; check=False
leaves NaN; empty matrices behave as in NumPy."""

import numpy as np
import pytest

from accelmath import linalg
from accelmath import linalg as la
from accelmath.errors import (AccelmathError, GradientError, InvalidArgumentError, LinAlgError,
                              UnsupportedDTypeError, UnsupportedOperandError)
from accelmath.linalg import _scipy_functions as sla

SQUARE = [la.inv, la.det, la.slogdet, la.cholesky, la.eigh, la.eigvalsh,
          lambda a: sla.cho_factor(a), lambda a: la.solve(a, np.ones(a.shape[-1]))]


@pytest.mark.parametrize("function", SQUARE)
def test_non_square(function):
    with pytest.raises(LinAlgError, match="a: Last 2 dimensions of the array must be square"):
        function(np.ones((2, 3)))


@pytest.mark.parametrize("function", SQUARE + [la.qr, la.svd, la.svdvals, sla.lu_factor])
def test_one_dimensional(function):
    with pytest.raises(LinAlgError, match="1-dimensional array given"):
        function(np.ones(3))
    assert issubclass(LinAlgError, np.linalg.LinAlgError) and issubclass(LinAlgError, ValueError)


@pytest.mark.parametrize("a_shape, b_shape", [((3, 3), (4,)), ((3, 3), (4, 1)),
                                              ((2, 3, 3), (1, 3)), ((2, 3, 3), (3, 3, 1))])
def test_solve_mismatched_rhs(a_shape, b_shape):
    with pytest.raises(InvalidArgumentError, match="b"):
        la.solve(np.eye(3) * np.ones(a_shape), np.ones(b_shape))


@pytest.mark.parametrize("function", [
    lambda b: sla.cho_solve((np.eye(3), False), b),
    lambda b: sla.lu_solve((np.eye(3), np.arange(3, dtype=np.int32)), b),
    lambda b: sla.solve_triangular(np.eye(3), b)])
@pytest.mark.parametrize("b_shape", [(4,), (4, 2), (2, 2, 2)])
def test_scipy_mismatched_rhs(function, b_shape):
    with pytest.raises(InvalidArgumentError, match="b of shape"):
        function(np.ones(b_shape))


def test_lstsq_incompatible():
    with pytest.raises(LinAlgError, match="Incompatible dimensions"):
        la.lstsq(np.ones((4, 2)), np.ones(5))
    with pytest.raises(LinAlgError, match="two-dimensional"):
        la.lstsq(np.ones((2, 4, 2)), np.ones(4))


@pytest.mark.parametrize("bad", ["abc", {"a": 1}, object(), None])
def test_not_arrays(bad):
    with pytest.raises(UnsupportedOperandError, match="^a: "):
        la.inv(bad)
    with pytest.raises(UnsupportedOperandError, match="^b: "):
        la.solve(np.eye(2), bad)


@pytest.mark.parametrize("array", [np.array([["a", "b"], ["c", "d"]]),
                                   np.array([[1, 2], [3, 4]], dtype=object),
                                   [["a", "b"], ["c", "d"]]])
def test_strings_and_objects(array):
    with pytest.raises(UnsupportedDTypeError, match="^a: unsupported dtype"):
        la.inv(array)


@pytest.mark.parametrize("dtype", ["float16", "longdouble", "clongdouble"])
def test_dtypes_numpy_refuses(dtype):
    with pytest.raises(TypeError) as numpy_error:
        np.linalg.inv(np.eye(2, dtype=dtype))
    with pytest.raises(UnsupportedDTypeError, match="is unsupported in linalg") as ours:
        la.inv(np.eye(2, dtype=dtype))
    assert str(numpy_error.value) in str(ours.value)


def test_torch_half_and_grad():
    torch = pytest.importorskip("torch")
    with pytest.raises(UnsupportedDTypeError, match="float16 is unsupported in linalg"):
        la.inv(torch.eye(2, dtype=torch.float16))
    with pytest.raises(GradientError, match="^a: "):
        la.inv(torch.eye(2, requires_grad=True))
    with torch.no_grad():
        assert la.inv(torch.eye(2, requires_grad=True)).shape == (2, 2)


@pytest.mark.parametrize("mode", ["Full", "econ", "R", 1, None, ["full"]])
def test_bad_qr_mode(mode):
    with pytest.raises(InvalidArgumentError, match="Invalid mode"):
        la.qr(np.eye(2), mode)


@pytest.mark.parametrize("uplo", ["lrong", "lower", "upper", None, 0])
def test_bad_uplo(uplo):
    with pytest.raises(InvalidArgumentError, match="Invalid UPLO"):
        la.eigh(np.eye(2), uplo)
    with pytest.raises(ValueError):
        la.eigvalsh(np.eye(2), UPLO=uplo)


@pytest.mark.parametrize("call", [
    lambda: la.solve(np.eye(2), np.ones(2), method="fast"),
    lambda: la.inv(np.eye(2), execution="gpu"),
    lambda: la.svd(np.eye(2), full_matrices="yes"),
    lambda: la.cholesky(np.eye(2), check=2),
    lambda: la.lstsq(np.eye(2), np.ones(2), rcond="x"),
    lambda: sla.lu_solve((np.eye(2), np.zeros(2, np.int32)), np.ones(2), trans=3),
    lambda: sla.solve_triangular(np.eye(2), np.ones(2), trans="X"),
    lambda: sla.cho_factor(np.eye(2), check_finite="no"),
    lambda: sla.lu_solve((np.eye(2), np.zeros(2)), np.ones(2)),
    lambda: sla.lu_solve((np.eye(2), np.zeros(3, np.int32)), np.ones(2))])
def test_bad_options(call):
    with pytest.raises(InvalidArgumentError):
        call()


def test_lu_solve_pivots_whose_batch_does_not_broadcast_with_b():
    lu, piv = np.broadcast_to(np.eye(2), (3, 2, 2)), np.zeros((3, 2), np.int32)
    with pytest.raises(InvalidArgumentError, match="piv"):
        sla.lu_solve((np.eye(2), piv), np.ones((4, 2, 1)))
    assert sla.lu_solve((lu, piv), np.ones((4, 1, 2, 1))).shape == (4, 3, 2, 1)


@pytest.mark.parametrize("call, name", [
    (lambda x: sla.cho_factor(x), "a"),
    (lambda x: sla.lu_factor(x), "a"),
    (lambda x: sla.solve_triangular(x, np.ones((3, 3, 1))), "a"),
    (lambda x: sla.solve_triangular(np.eye(3), x), "b"),
    (lambda x: sla.cho_solve((np.eye(3), True), x), "b"),
    (lambda x: sla.cho_solve((x, True), np.ones((3, 3, 1))), "c"),
    (lambda x: sla.lu_solve((np.eye(3), np.arange(3)), x), "b")])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_with_check_finite(call, name, bad):
    x = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
    x[2, 1, 0] = bad
    with pytest.raises(LinAlgError, match=f"^{name}: array must not contain infs or NaNs") as e:
        call(x)
    assert e.value.index == (2,)
    call(np.eye(3) if name == "a" or name == "c" else np.ones((3, 3)))  # (finite: fine)


NUMPY_CHECKED = [
    (lambda x, **k: la.solve(x, np.ones((3, 3, 1)), **k), "a"),
    (lambda x, **k: la.solve(np.broadcast_to(np.eye(3), (3, 3, 3)), x, **k), "b"),
    (la.inv, "a"), (la.cholesky, "a"), (lambda x, **k: la.eigh(x, **k)[0], "a"),
    (la.eigvalsh, "a"), (lambda x, **k: la.svd(x, **k)[1], "a"), (la.svdvals, "x")]


@pytest.mark.parametrize("call, name", NUMPY_CHECKED)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_under_check(call, name, bad):
    # check=True (the default) names the operand and matrix holding a NaN or an infinity,
    # before LAPACK sees it (an SVD may never return on one); check=False leaves NaN in
    # that matrix's results alone
    x = np.broadcast_to(np.eye(3) * 2, (3, 3, 3)).copy()
    x[1, 2, 0] = bad
    with pytest.raises(LinAlgError, match=f"^{name}: array must not contain infs or NaNs") as e:
        call(x)
    assert e.value.index == (1,)
    result = np.asarray(call(x, check=False))
    assert np.isnan(result[1]).all() and np.isfinite(result[[0, 2]]).all()


def test_lstsq_refuses_nan_and_inf():
    # (no check=: LAPACK's SVD may never return on them)
    a = np.eye(4)
    a[0, 0] = np.inf
    with pytest.raises(LinAlgError, match="^a: array must not contain infs or NaNs"):
        la.lstsq(a, np.ones(4))
    with pytest.raises(LinAlgError, match="^b: array must not contain infs or NaNs"):
        la.lstsq(np.eye(4), np.array([1.0, np.nan, 0.0, 0.0]))


def test_check_finite_false_lets_nan_through():
    a = np.eye(3)
    b = np.array([1.0, np.nan, 0.0])
    assert np.isnan(sla.solve_triangular(a, b, check_finite=False)).any()
    c, lower = sla.cho_factor(np.diag([1.0, np.nan, 1.0]), check=False)
    assert np.isnan(c).any()


def _stack(*matrices):
    return np.array(matrices, dtype=float)


SINGULAR = _stack(np.eye(2), np.eye(2), [[1, 2], [2, 4]], [[0, 0], [0, 0]])
INDEFINITE = _stack(np.eye(2), [[1, 2], [2, 1]], np.eye(2), -np.eye(2))


@pytest.mark.parametrize("function, stack, message", [
    (la.inv, SINGULAR, "Singular matrix"),
    (lambda a, **k: la.solve(a, np.ones(2), **k), SINGULAR, "Singular matrix"),
    (lambda a, **k: la.solve(a, np.ones((4, 2, 3)), **k), SINGULAR, "Singular matrix"),
    (la.cholesky, INDEFINITE, "Matrix is not positive definite"),
    (lambda a, **k: sla.cho_factor(a, **k)[0], INDEFINITE, "Matrix is not positive definite"),
    (lambda a, **k: sla.lu_factor(a, **k)[0], SINGULAR, "Singular matrix")])
def test_failure_names_batch_index_and_check_false_leaves_nan(function, stack, message):
    first = 2 if stack is SINGULAR else 1
    with pytest.raises(LinAlgError, match=f"{message} \\(batch index \\({first},\\)\\)") as e:
        function(stack)
    assert e.value.index == (first,)
    assert isinstance(e.value, np.linalg.LinAlgError)
    result = function(stack, check=False)
    failed = [i for i in range(4) if np.isnan(result[i]).all()]
    assert failed == ([2, 3] if stack is SINGULAR else [1, 3])
    assert not np.isnan(result[0]).any()


def test_failure_index_in_two_batch_dimensions():
    stack = np.broadcast_to(np.eye(3), (2, 3, 3, 3)).copy()
    stack[1, 2] = 0
    with pytest.raises(LinAlgError, match=r"Singular matrix \(batch index \(1, 2\)\)") as e:
        la.inv(stack)
    assert e.value.index == (1, 2)
    with pytest.raises(LinAlgError) as e:
        la.inv(np.zeros((2, 2)))
    assert e.value.index == ()


def test_singular_triangular():
    a = np.broadcast_to(np.eye(2), (3, 2, 2)).copy()
    a[1, 1, 1] = 0
    with pytest.raises(LinAlgError, match=r"Singular matrix \(batch index \(1,\)\)"):
        sla.solve_triangular(a, np.ones(2))
    assert np.isfinite(sla.solve_triangular(a, np.ones(2), unit_diagonal=True)).all()


def test_errors_are_accelmath_errors():
    for call in (lambda: la.inv(np.ones((2, 3))), lambda: la.qr(np.eye(2), "x"),
                 lambda: la.inv("x"), lambda: la.inv(np.zeros((2, 2)))):
        with pytest.raises(AccelmathError):
            call()


def test_empty_matrices_as_numpy():
    assert la.det(np.zeros((0, 0))) == 1.0
    sign, logabsdet = la.slogdet(np.zeros((0, 0), np.complex64))
    assert sign == 1 and logabsdet == 0 and sign.dtype == np.complex64
    assert la.inv(np.zeros((0, 1, 1), int)).dtype == np.float64
    with pytest.raises(LinAlgError):
        la.solve(np.zeros((2, 0, 1)), np.zeros((2, 0, 3)))
    with pytest.raises(ValueError):
        la.solve(np.zeros((2, 2, 2)), np.zeros((1, 0, 3)))


def test_execution_cuda_without_a_gpu():
    from accelmath._core.gpu.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is usable here")
    from accelmath.errors import NoDeviceError

    with pytest.raises(NoDeviceError):
        la.inv(np.eye(2), execution="cuda")


@pytest.mark.parametrize("call", [
    lambda s: la.solve(np.eye(3), np.ones(3), stream=s), lambda s: la.inv(np.eye(3), stream=s),
    lambda s: la.det(np.eye(3), stream=s), lambda s: la.qr(np.eye(3), stream=s),
    lambda s: la.cholesky(np.eye(3), stream=s),
    lambda s: la.lstsq(np.eye(3), np.ones(3), stream=s),
    lambda s: sla.cho_solve((np.eye(3), True), np.ones(3), stream=s),
    lambda s: linalg.matmul(np.eye(3), np.eye(3), stream=s),
    lambda s: linalg.Matmul(np.eye(3), np.eye(3), stream=s),
    lambda s: linalg.Matmul(np.eye(3), np.eye(3)).execute(stream=s)])
def test_a_bad_stream_is_refused_on_host_arrays_too(call):
    # (the CPU has no streams, but what is given is checked as on the GPU)
    with pytest.raises(UnsupportedOperandError, match="stream must be an int handle"):
        call("x")
    call(0)


# ---- lu_solve's factors: the pair, and pivots in range ----

def _lu_system(batch, n=3):
    """lu_factor's factors of well-conditioned n x n matrices (rows interchanged), and
    right-hand sides (..., n, 1)."""
    rng = np.random.default_rng()
    a = rng.standard_normal(batch + (n, n)) + 2 * n * np.eye(n)[::-1]
    lu, piv = sla.lu_factor(a)
    return lu, piv, rng.standard_normal(batch + (n, 1))


def _refuse_to_solve(*args, **kwargs):
    pytest.fail("a solve ran with a pivot out of range")


@pytest.fixture
def no_solve(monkeypatch):
    """Fail a test whose lu_solve gets as far as solving (SciPy's LAPACK given a pivot out
    of range reads and writes outside the matrix: the test process could crash)."""
    import scipy.linalg

    from accelmath.linalg import _cpu

    def refuse():
        monkeypatch.setattr(scipy.linalg, "lu_solve", _refuse_to_solve)
        monkeypatch.setattr(_cpu, "_substitute", _refuse_to_solve)

    return refuse


# one matrix (SciPy's lu_solve, which crashed), a few (SciPy's, each), many (row by row over
# the batch, which raised IndexError, or gave a wrong answer for a negative pivot)
@pytest.mark.parametrize("batch, index", [((), ()), ((2,), (1,)), ((40,), (17,))])
@pytest.mark.parametrize("bad", [3, -1, -3, 700000, 2**31 - 1, -2**31])
def test_lu_solve_refuses_a_pivot_out_of_range_before_solving(no_solve, batch, index, bad):
    import re

    lu, piv, b = _lu_system(batch)
    piv[index + (1,)] = bad
    if batch:
        piv[batch[0] - 1, 2] = -5  # (another, at or after it: the first is named)
    kept = [x.copy() for x in (lu, piv, b)]
    no_solve()
    message = (rf"^piv: pivot {bad} at position 1 is out of range for lu of order 3: "
               rf"lu_factor's pivots are 0-based, in \[0, 3\) \(batch index "
               rf"{re.escape(str(index))}\)$")
    for trans in (0, 2):
        with pytest.raises(InvalidArgumentError, match=message):
            sla.lu_solve((lu, piv), b, trans=trans)
    with pytest.raises(InvalidArgumentError, match=message):  # (checked without check_finite)
        sla.lu_solve((lu, piv), b, check_finite=False)
    for before, after in zip(kept, (lu, piv, b)):
        np.testing.assert_array_equal(before, after)


def test_lu_solve_with_a_wild_pivot_does_not_crash_the_interpreter():
    import subprocess
    import sys

    code = ("import numpy as np\n"
            "from accelmath.errors import InvalidArgumentError\n"
            "from accelmath.linalg import lu_solve\n"
            "try:\n"
            "    lu_solve((np.eye(3), np.array([0, 1, 700000], np.int32)), np.ones(3))\n"
            "except InvalidArgumentError as e:\n"
            "    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: piv: pivot 700000 at position 2" in done.stdout


def test_lu_solve_names_a_broadcast_pivots_own_index_and_one_based_pivots(no_solve):
    lu, _, b = _lu_system((4, 5), n=3)
    no_solve()
    piv = np.array([[0, 1, 2], [2, 2, 3]], np.int32)[:, None]  # (2, 1, 3) with lu's (4, 5)
    with pytest.raises(InvalidArgumentError, match=r"look 1-based .* pass piv - 1 \(batch "
                                                   r"index \(1, 0\)\)$"):
        sla.lu_solve((lu[:2, :1], piv), b[:2])
    piv[1, 0] = [2, 1, 3]  # (row 1 with row 0: not getrf's, whatever its base)
    with pytest.raises(InvalidArgumentError) as e:
        sla.lu_solve((lu[:2, :1], piv), b[:2])
    assert "1-based" not in str(e.value)


@pytest.mark.parametrize("dtype, value", [("int64", 2**32 + 1), ("int64", -2**63),
                                          ("uint64", 2**64 - 1), ("uint32", 2**32 - 1),
                                          ("int8", -1), ("uint8", 255), ("int16", 3)])
def test_lu_solve_pivots_of_other_integer_types_are_checked_before_they_narrow(no_solve, dtype,
                                                                              value):
    # (as int32, 2**32 + 1 would be a pivot 1 in range, and 2**32 - 1 a -1)
    lu, piv, b = _lu_system((), n=3)
    wide = piv.astype(dtype)
    np.testing.assert_allclose(sla.lu_solve((lu, wide), b), sla.lu_solve((lu, piv), b))
    wide[0] = value
    no_solve()
    with pytest.raises(InvalidArgumentError, match=r"^piv: pivot -?\d+ at position 0 .*"
                                                   r"\(batch index \(\)\)$"):
        sla.lu_solve((lu, wide), b)


@pytest.mark.parametrize("piv, message", [
    (np.zeros(3), "piv must hold integers .* got dtype float64"),
    (np.zeros(3, bool), "piv must hold integers .* got dtype bool"),
    (np.zeros(3, complex), "piv must hold integers .* got dtype complex128"),
    (np.int32(0), r"piv of shape \(\) does not match lu of shape \(3, 3\)"),
    (np.zeros(4, np.int32), r"piv of shape \(4,\) does not match lu of shape \(3, 3\): "
                            r"\(\.\.\., 3\) needed"),
    (np.zeros((3, 1), np.int32), r"piv of shape \(3, 1\) does not match")])
def test_lu_solve_refuses_pivots_of_a_wrong_dtype_or_shape(piv, message):
    with pytest.raises(InvalidArgumentError, match=f"^{message}"):
        sla.lu_solve((np.eye(3), piv), np.ones(3))


@pytest.mark.parametrize("pair, given", [
    ((np.eye(2), np.zeros(2, np.int32), 0), "a tuple of 3 items"),
    ((np.eye(2),), "a tuple of 1 items"),
    (np.eye(2), "an object of type ndarray"),
    (None, "an object of type NoneType")])
def test_lu_solve_and_cho_solve_say_what_pair_they_take(pair, given):
    with pytest.raises(InvalidArgumentError, match=rf"^lu_and_piv must be the pair \(lu, piv\) "
                                                   rf"that lu_factor returns, got {given}$"):
        sla.lu_solve(pair, np.ones(2))
    with pytest.raises(InvalidArgumentError, match=r"^c_and_lower must be the pair \(c, "
                                                   r"lower\) that cho_factor returns"):
        sla.cho_solve(pair, np.ones(2))
    assert sla.lu_solve([np.eye(2), np.zeros(2, np.int32)], np.ones(2)).shape == (2,)
    assert sla.cho_solve([np.eye(2), True], np.ones(2)).shape == (2,)


def test_prepare_without_a_gpu():
    """linalg.prepare(wait=True) without a GPU says so (it raised an IndexError)."""
    from accelmath._core.gpu.device import gpu_available
    from accelmath.errors import NoDeviceError

    if gpu_available():
        pytest.skip("a GPU is usable here")
    for wait in (True, False):
        with pytest.raises(NoDeviceError, match="^device 0 was asked for, but no CUDA GPU is "
                                                "usable: "):
            linalg.prepare("float64", wait=wait)


class _FakeDeviceArray:
    __cuda_array_interface__ = {"shape": (2, 2), "typestr": "<f8",
                                "data": (0x7F0000001000, False), "version": 3}


@pytest.mark.parametrize("call, name", [
    (lambda: la.solve(_FakeDeviceArray(), np.ones(2)), "a"),
    (lambda: la.solve(np.eye(2), _FakeDeviceArray()), "b"),
    (lambda: linalg.LU(_FakeDeviceArray()), "a"),
    (lambda: linalg.matmul(np.eye(2), _FakeDeviceArray()), "b")])
def test_a_device_array_without_a_gpu_names_the_argument(monkeypatch, call, name):
    """(It said "unsupported dtype 'object'".)"""
    from accelmath._core.gpu import device
    from accelmath._core.operand import protocols
    from accelmath.errors import NoDeviceError

    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "no NVIDIA driver (a test)")
    monkeypatch.setattr(protocols, "pointer_device", lambda ptr: None)
    with pytest.raises(NoDeviceError, match=f"^{name}: an operand of type .*_FakeDeviceArray "
                                            f"has __cuda_array_interface__ .* no CUDA GPU is "
                                            f"usable: no NVIDIA driver \\(a test\\)"):
        call()

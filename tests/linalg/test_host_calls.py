"""The call memo of host calls on NumPy arrays (accelmath.linalg._memo.host_call and
run_host, and matmul's plain product): a repeated call skips reading and checking its
arguments yet gives what the first call gave; calls of another dtype, shape, strides or
option type do not hit; and what depends on the values (NaN and Inf, failed factorizations,
lu_solve's pivots), the stream and ``out=`` is checked on every call."""

import numpy as np
import pytest
import scipy.linalg

from accelmath import linalg as la
from accelmath.errors import (InvalidArgumentError, LinAlgError, UnsupportedDTypeError,
                              UnsupportedOperandError)
from accelmath.linalg import _functions, _matmul, _memo, _scipy_functions


@pytest.fixture(autouse=True)
def _fresh_memo():
    _memo.clear_cache()
    yield
    _memo.clear_cache()


def _spd(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    n = shape[-1]
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dtype)


def _system(rng, shape, dtype=np.float64):
    return (rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _calls(rng):
    """{name: (function, args, kwargs)} of every function with a host memo, on fresh data."""
    a, spd = _system(rng, (3, 5, 5)), _spd(rng, (5, 5))
    b, v = rng.standard_normal((3, 5, 2)), rng.standard_normal(5)
    lu = la.lu_factor(a)
    return {
        "solve": (la.solve, (a, b), {}),
        "solve vector": (la.solve, (a[0], v), {}),
        "inv": (la.inv, (a,), {}),
        "det": (la.det, (a[0],), {}),
        "slogdet": (la.slogdet, (a,), {}),
        "cholesky": (la.cholesky, (spd,), {"upper": True}),
        "qr": (la.qr, (a,), {}),
        "qr raw": (la.qr, (a[0],), {"mode": "raw"}),
        "eigh": (la.eigh, (spd,), {"UPLO": "U"}),
        "eigvalsh": (la.eigvalsh, (spd,), {}),
        "svd": (la.svd, (a,), {"full_matrices": False}),
        "svd values": (la.svd, (a,), {"compute_uv": 0}),
        "svdvals": (la.svdvals, (a,), {}),
        "lstsq": (la.lstsq, (np.ascontiguousarray(a[0][:, :3]), v), {}),
        "cho_factor": (la.cho_factor, (spd,), {"lower": True}),
        "cho_solve": (la.cho_solve, (la.cho_factor(spd), b[0]), {}),
        "lu_factor": (la.lu_factor, (a,), {}),
        "lu_solve": (la.lu_solve, (lu, b), {"trans": 1}),
        "solve_triangular": (la.solve_triangular, (a[0], v), {"lower": True}),
        "matmul": (la.matmul, (a, b), {}),
    }


def _flat(result):
    """A result's arrays and scalars, in order (named tuples and pairs flattened)."""
    if isinstance(result, tuple):
        return [x for part in result for x in _flat(part)]
    return [result]


def _assert_same(first, second):
    assert type(first) is type(second)
    first, second = _flat(first), _flat(second)
    assert len(first) == len(second)
    for x, y in zip(first, second):
        assert type(x) is type(y)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and x.strides == y.strides
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", sorted(_calls(np.random.default_rng(0))))
def test_a_repeated_call_skips_the_checks_and_gives_what_the_first_gave(name, monkeypatch):
    rng = np.random.default_rng()
    function, args, kwargs = _calls(rng)[name]
    first = function(*args, **kwargs)
    # the checked path no more: reading an argument fails
    for module in (_functions, _scipy_functions):
        for reader in ("read", "read_stack"):
            monkeypatch.setattr(module, reader, _refuse)
    monkeypatch.setattr(_matmul.problem, "prepare", _refuse)
    _assert_same(first, function(*args, **kwargs))
    # on new data of the same layouts: what the checked path gives it
    copies = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args]
    for i, x in enumerate(copies):
        if isinstance(x, np.ndarray) and x.dtype.kind == "f" and name not in (
                "cholesky", "eigh", "eigvalsh", "cho_factor", "cho_solve"):
            copies[i] = x * 0.5
    hit = function(*copies, **kwargs)
    monkeypatch.undo()
    _memo.clear_cache()
    _assert_same(function(*copies, **kwargs), hit)


def _refuse(*args, **kwargs):
    raise AssertionError("the checked path ran")


def test_results_are_numpys_and_scipys():
    rng = np.random.default_rng()
    a, b = _system(rng, (4, 4)), rng.standard_normal((4, 3))
    spd = _spd(rng, (4, 4))
    for _ in range(2):  # the first call, and the remembered one
        np.testing.assert_array_equal(la.solve(a, b), np.linalg.solve(a, b))
        np.testing.assert_array_equal(la.inv(a), np.linalg.inv(a))
        np.testing.assert_array_equal(la.matmul(a, b), a @ b)
        c, lower = la.cho_factor(spd)
        expected = scipy.linalg.cho_factor(spd)
        np.testing.assert_array_equal(c, expected[0])
        assert lower is expected[1] and c.flags.f_contiguous
        x = la.cho_solve((c, lower), b)
        np.testing.assert_array_equal(x, scipy.linalg.cho_solve(expected, b))
        lu, piv = la.lu_factor(a)
        np.testing.assert_array_equal(lu, scipy.linalg.lu_factor(a)[0])
        assert piv.dtype == np.int32


def test_calls_of_other_layouts_and_option_types_do_not_hit():
    rng = np.random.default_rng()
    a, b = _system(rng, (4, 4)), rng.standard_normal((4, 2))
    la.solve(a, b)
    key = _memo.host_call("solve", (a, b), (True, "auto", "auto"), None)[0]
    assert _memo.dispatcher.recall(key) is not None
    others = [
        (a.astype(np.float32), b.astype(np.float32)),     # dtype
        (a[:3, :3], b[:3]),                               # shape
        (np.asfortranarray(a), b),                        # strides
        (a.view(np.matrix), b),                           # a subclass: no key
    ]
    keys = [_memo.host_call("solve", args, (True, "auto", "auto"), None)[0]
            for args in others]
    assert keys[-1] is None and key not in keys[:-1]
    assert la.solve(*others[0]).dtype == np.float32
    np.testing.assert_allclose(la.solve(*others[1]), np.linalg.solve(a[:3, :3], b[:3]))
    # options equal as dict keys but of other types, each checked as the first time
    assert key != _memo.host_call("solve", (a, b), (1, "auto", "auto"), None)[0]
    with pytest.raises(InvalidArgumentError, match="check must be True or False, got 1.0"):
        la.solve(a, b, check=1.0)
    x = la.lu_factor(a)
    la.lu_solve(x, b, trans=1)
    with pytest.raises(InvalidArgumentError, match="Invalid trans True"):
        la.lu_solve(x, b, trans=True)
    la.matmul(a, b)
    with pytest.raises(InvalidArgumentError, match="alpha must be a number, got True"):
        la.matmul(a, b, alpha=True)
    with pytest.raises(InvalidArgumentError, match="allow_tf32 must be True or False, got 0"):
        la.matmul(a, b, allow_tf32=0)
    with pytest.raises(InvalidArgumentError, match="Invalid method"):
        la.inv(a, method=["auto"])  # (unhashable: no key)


def test_bad_arguments_still_raise_after_a_good_call():
    rng = np.random.default_rng()
    a, b = _system(rng, (2, 4, 4)), rng.standard_normal((2, 4, 1))
    la.solve(a, b)
    la.inv(a)
    la.matmul(a, b)
    with pytest.raises(LinAlgError, match="must be square"):
        la.solve(a[..., :3], b)
    with pytest.raises(InvalidArgumentError, match="does not match"):
        la.solve(a, b[:, :3])
    with pytest.raises(InvalidArgumentError, match="matmul"):
        la.matmul(a, b[:, :3])
    with pytest.raises(UnsupportedDTypeError):
        la.matmul(a, b.astype(np.float32))
    with pytest.raises(UnsupportedDTypeError, match="float16"):
        la.inv(a.astype(np.float16))
    with pytest.raises(InvalidArgumentError, match="Invalid execution"):
        la.inv(a, execution="gpu")
    # the same layouts: what the values decide is decided each call
    singular = a.copy()
    singular[1] = 0
    with pytest.raises(LinAlgError, match=r"Singular matrix \(batch index \(1,\)\)"):
        la.solve(singular, b)
    x = la.solve(singular, b, check=False)
    assert np.isnan(x[1]).all() and np.isfinite(x[0]).all()
    nan = a.copy()
    nan[1, 2, 3] = np.nan
    with pytest.raises(LinAlgError, match=r"a: .*\(batch index \(1,\)\)"):
        la.inv(nan)
    inf = b.copy()
    inf[0, 1, 0] = np.inf
    with pytest.raises(LinAlgError, match=r"b: .*\(batch index \(0,\)\)"):
        la.solve(a, inf)
    # a stream that is not one, on a remembered call
    with pytest.raises(UnsupportedOperandError, match="stream must be an int handle"):
        la.solve(a, b, stream="s")
    with pytest.raises(UnsupportedOperandError, match="stream must be an int handle"):
        la.matmul(a, b, stream="s")


def test_value_checks_of_the_scipy_functions_run_each_call():
    rng = np.random.default_rng()
    a, b = _spd(rng, (4, 4)), rng.standard_normal(4)
    factor = la.cho_factor(a)
    la.cho_solve(factor, b)
    bad = b.copy()
    bad[2] = np.nan
    with pytest.raises(LinAlgError, match="b: array must not contain infs or NaNs"):
        la.cho_solve(factor, bad)
    np.testing.assert_array_equal(la.cho_solve(factor, bad, check_finite=False),
                                  scipy.linalg.cho_solve(factor, bad, check_finite=False))
    with pytest.raises(LinAlgError, match="not positive definite"):
        la.cho_factor(-a)
    lu, piv = la.lu_factor(a)
    la.lu_solve((lu, piv), b)
    with pytest.raises(InvalidArgumentError, match="pivot 4 at position 1 is out of range"):
        la.lu_solve((lu, np.array([0, 4, 2, 3], np.int32)), b)
    triangular = np.triu(a)
    la.solve_triangular(triangular, b)
    triangular[2, 2] = 0
    with pytest.raises(LinAlgError, match="Singular matrix"):
        la.solve_triangular(triangular, b)


def test_integer_operands_are_converted_each_call():
    a = np.array([[4, 2], [2, 3]])
    b = np.array([2, 1])
    first = la.solve(a, b)
    assert first.dtype == np.float64
    np.testing.assert_array_equal(la.solve(a * 2, b), np.linalg.solve(a * 2, b))
    assert la.cholesky(a).dtype == np.float64 and la.cholesky(a).dtype == np.float64


def test_read_only_and_scalar_results():
    rng = np.random.default_rng()
    a = _system(rng, (3, 3))
    a.flags.writeable = False
    for _ in range(2):
        d = la.det(a)
        assert isinstance(d, np.float64) and d == np.linalg.det(a)
        assert la.inv(a).flags.writeable
    v = rng.standard_normal(3)
    for _ in range(2):  # (a product of vectors is not remembered: a NumPy scalar each time)
        assert isinstance(la.matmul(v, v), np.float64)


def test_matmul_remembers_plain_products_only():
    rng = np.random.default_rng()
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    np.testing.assert_array_equal(la.matmul(a, b), a @ b)  # (NumPy's own, no memo needed)
    strided = a[:, ::2]
    la.matmul(strided, b[:2], execution="auto")  # (an option given: the checked path)
    key = _memo.host_call("matmul", (strided, b[:2]), (1, 0, None, "auto", False), None)[0]
    assert _memo.dispatcher.recall(key).run(strided, b[:2]).shape == (3, 2)
    np.testing.assert_array_equal(la.matmul(a, b, alpha=2), 2 * (a @ b))
    np.testing.assert_array_equal(la.matmul(a, b, alpha=2), 2 * (a @ b))
    assert _memo.dispatcher.recall(
        _memo.host_call("matmul", (a, b), (2, 0, None, "auto", False), None)[0]) is None
    c = rng.standard_normal((3, 2))
    np.testing.assert_allclose(la.matmul(a, b, c, beta=1.0), a @ b + c)
    out = np.empty((3, 2))
    assert la.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, a @ b)
    out.flags.writeable = False
    with pytest.raises(Exception, match="read-only|writeable|writable"):
        la.matmul(a, b, out=out)
    half = la.matmul(a.astype(np.float16), b.astype(np.float16))
    assert half.dtype == np.float16
    assert la.matmul(a.astype(np.float16), b.astype(np.float16)).dtype == np.float16


def test_strides_that_are_not_whole_elements_are_refused_after_a_remembered_call():
    rng = np.random.default_rng()
    a = _system(rng, (3, 3))
    la.inv(a)
    la.matmul(a, a)
    packed = np.zeros((3, 3), dtype="f8,i1")["f0"]  # (strides of 9 bytes)
    packed[...] = a
    with pytest.raises(UnsupportedOperandError, match="whole-element strides"):
        la.inv(packed)
    with pytest.raises(UnsupportedOperandError, match="whole-element strides"):
        la.matmul(packed, a, alpha=2.0)
    # a plain product of NumPy arrays is NumPy's own, for any strides NumPy takes
    np.testing.assert_array_equal(la.matmul(packed, a), packed @ a)


def test_clear_cache_forgets_host_calls():
    a = np.eye(3) * 2
    la.inv(a)
    key = _memo.host_call("inv", (a,), (True, "auto", "auto"), None)[0]
    assert _memo.dispatcher.recall(key) is not None
    la.clear_cache()
    assert _memo.dispatcher.recall(key) is None


def test_one_system_of_the_scipy_solvers_is_scipys_result():
    rng = np.random.default_rng()
    a, b = _spd(rng, (5, 5)), rng.standard_normal((5, 3))
    factor, lu = la.cho_factor(a), la.lu_factor(a)
    cases = [(la.cho_solve(factor, b), scipy.linalg.cho_solve(factor, b)),
             (la.lu_solve(lu, b, trans=2), scipy.linalg.lu_solve(lu, b, trans=2)),
             (la.solve_triangular(a, b, lower=True),
              scipy.linalg.solve_triangular(a, b, lower=True))]
    for x, expected in cases:  # (the values, dtype and layout SciPy gives)
        np.testing.assert_array_equal(x, expected)
        assert x.dtype == expected.dtype and x.strides == expected.strides
    # a batch: one C-ordered array
    x = la.cho_solve((np.stack([factor[0]] * 2), False), b)
    assert x.shape == (2, 5, 3) and x.flags.c_contiguous


@pytest.mark.filterwarnings("error::RuntimeWarning")  # (an overflow is no one's to see)
@pytest.mark.parametrize("layout", ["C", "F", "strided", "large"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_the_quick_finiteness_pass_misses_nothing(layout, dtype):
    # (the pass every check=True and check_finite call makes first: _checks.all_finite)
    from accelmath.linalg._checks import all_finite, first_nonfinite

    shape = (80, 80) if layout == "large" else (6, 6)
    base = np.ones((shape[0], 2 * shape[1]) if layout == "strided" else shape, dtype)
    x = {"C": base, "F": np.asfortranarray(base), "strided": base[:, ::2],
         "large": base}[layout]
    assert all_finite(x) and first_nonfinite(x, 2) is None
    values = [np.nan, np.inf, -np.inf]
    if x.dtype.kind == "c":
        values += [complex(0, np.nan), complex(1, -np.inf)]
    for value in values:
        y = x.copy(order="K") if layout != "strided" else base.copy()[:, ::2]
        y[3, 4] = value
        assert not all_finite(y) and first_nonfinite(y, 2) == ()
    big = x * np.finfo(dtype).max  # (finite, but its sums overflow: settled exactly)
    assert first_nonfinite(big, 2) is None

"""The call memo of the stateless solvers (accelmath.linalg._memo): which calls get a key
(CPU), and, on a GPU, that a remembered call of solve, inv or cholesky on CuPy and torch
arrays skips the checks yet computes right on fresh data, raises for failures with the
batch index, follows an explicit stream, and that other layouts take the slow path; the same
for cho_factor, cho_solve, lu_solve and solve_triangular, whose remembered calls run the
device function on the new addresses."""

import numpy as np
import pytest
from closeness import assert_close_elementwise

from accelmath import linalg as la
from accelmath.errors import InvalidArgumentError, LinAlgError, UnsupportedOperandError
from accelmath.linalg import _checks, _memo, _scipy_functions


def test_call_key_takes_cupy_and_torch_arrays_and_plain_options_only():
    torch = pytest.importorskip("torch")
    a, b = torch.eye(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    key, addresses = _memo.call_key("solve", (a, b), True, "auto", "auto")
    assert addresses == (a.data_ptr(), b.data_ptr())
    assert key == _memo.call_key("solve", (a.clone(), b.clone()), True, "auto", "auto")[0]
    assert key != _memo.call_key("solve", (a, b), False, "auto", "auto")[0]
    assert key != _memo.call_key("solve", (a.mT, b), True, "auto", "auto")[0]
    assert key != _memo.call_key("solve", (a.float(), b), True, "auto", "auto")[0]
    # an int option is keyed with its type (1 == True in a dict; "1" is another option)
    ones = [_memo.call_key("lu_solve", (a, b), option)[0] for option in (1, True, "1")]
    assert ones[0] not in ones[1:] and ones[1] != ones[2]
    assert ones[0] == _memo.call_key("lu_solve", (a.clone(), b.clone()), 1)[0]
    # an option of another type, a NumPy array, an array-like, a tensor that records
    # gradients: no key
    assert _memo.call_key("solve", (a, b), 1.0, "auto", "auto") is None
    assert _memo.call_key("solve", (a.numpy(), b), True, "auto", "auto") is None
    assert _memo.call_key("solve", ([[1.0]], b), True, "auto", "auto") is None
    assert _memo.call_key("solve", (a.requires_grad_(), b), True, "auto", "auto") is None


def test_host_calls_are_not_remembered():
    torch = pytest.importorskip("torch")
    a, b = torch.eye(3, dtype=torch.float64) * 2, torch.ones(3, dtype=torch.float64)
    _memo.dispatcher.clear_cache()
    np.testing.assert_allclose(la.solve(a, b).numpy(), np.full(3, 0.5))
    key, _ = _memo.call_key("solve", (a, b), True, "auto", "auto")
    assert _memo.dispatcher.recall(key) is None


def test_a_library_call_is_remembered_only_on_operands_read_where_they_lie():
    # CusolverCall.remember's rule, with stand-ins for the call's context and operands
    from types import SimpleNamespace

    from accelmath._core.operand import Operand
    from accelmath.linalg._device.context import CusolverCall

    def adapter(immutable=False):
        return SimpleNamespace(immutable=immutable, allocator=lambda *layout: layout,
                               stream_getter=lambda device_id: (lambda: 0))

    def operand(ptr, strides=(4, 1)):
        return Operand(None, ptr, (4, 4), strides, "float64", 0, None)

    a, strided = operand(0x1000), operand(0x1000, strides=(8, 1))  # (strided: no kernel read)
    results = ((4, 4), (4, 1), "float64")
    key = _memo.CallKey
    cases = [(None, (a,), None, False, False),  # no key: nothing to remember
             (key(("k",), (0x2000,)), (a,), None, False, False),  # a copy was read
             (key(("k",), (0x1000,)), (a,), None, True, False),  # JAX: results handed over
             (key(("k",), (0x1000,)), (strided,), ("a",), False, False),  # its package checks
             (key(("k",), (0x1000,)), (strided,), None, False, True),
             (key(("k",), (0x1000,)), (a,), ("a",), False, True)]
    for call, operands, finite, immutable, remembered in cases:
        _memo.dispatcher.clear_cache()
        ctx = SimpleNamespace(adapter=adapter(immutable), device_id=0, dtype="float64")
        CusolverCall.remember(call, operands, finite, ctx, ("potrf", 4), "layout", results)
        entry = _memo.dispatcher.recall(("k",))
        assert (entry is not None) == remembered, (call, finite, immutable)
        if remembered:
            assert entry.key == ("potrf", 4, "float64")
            assert entry.allocators == (results + (0,),)  # (allocator(*layout, device))
    _memo.dispatcher.clear_cache()


# ---- on a GPU ----

def _normal(rng, shape, dtype):
    """Standard normal values, float64, or complex128 for a complex ``dtype``."""
    return rng.standard_normal(shape) + (1j * rng.standard_normal(shape)
                                         if dtype.startswith("complex") else 0)


def _spd(rng, shape, dtype):
    g, n = _normal(rng, shape, dtype), shape[-1]
    return (g @ np.conj(np.swapaxes(g, -1, -2)) / n + 2 * np.eye(n)).astype(dtype)


def _well(rng, shape, dtype):
    return (np.eye(shape[-1]) * 4 + _normal(rng, shape, dtype) / shape[-1]).astype(dtype)


def _random(rng, shape, dtype):
    return _normal(rng, shape, dtype).astype(dtype)


TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-11, "complex128": 1e-11}

# name -> (make operands (rng, dtype), call, NumPy's result)
CASES = {
    "solve": (lambda r, d: (_well(r, (5, 8, 8), d), _random(r, (5, 8, 3), d)),
              lambda a, b, **k: la.solve(a, b, **k), np.linalg.solve),
    "solve, vector": (lambda r, d: (_well(r, (8, 8), d), _random(r, (8,), d)),
                      lambda a, b, **k: la.solve(a, b, **k), np.linalg.solve),
    "inv": (lambda r, d: (_well(r, (2, 3, 6, 6), d),),
            lambda a, **k: la.inv(a, **k), np.linalg.inv),
    "cholesky": (lambda r, d: (_spd(r, (4, 7, 7), d),),
                 lambda a, **k: la.cholesky(a, **k), np.linalg.cholesky),
    "cholesky, upper": (lambda r, d: (_spd(r, (4, 7, 7), d),),
                        lambda a, **k: la.cholesky(a, upper=True, **k),
                        lambda a: np.linalg.cholesky(a, upper=True)),
    # past the small kernels: cuSOLVER's potrf, and potrfBatched for a batch
    "cholesky, potrf": (lambda r, d: (_spd(r, (80, 80), d),),
                        lambda a, **k: la.cholesky(a, **k), np.linalg.cholesky),
    "cholesky, potrfBatched, upper": (lambda r, d: (_spd(r, (3, 80, 80), d),),
                                      lambda a, **k: la.cholesky(a, upper=True, **k),
                                      lambda a: np.linalg.cholesky(a, upper=True)),
    "cholesky, potrfBatched": (lambda r, d: (_spd(r, (3, 80, 80), d),),
                               lambda a, **k: la.cholesky(a, **k), np.linalg.cholesky),
}


@pytest.fixture(params=["cupy", "torch"])
def device_package(request):
    """``(put, get)`` for CuPy arrays or torch CUDA tensors."""
    if request.param == "cupy":
        cp = request.getfixturevalue("cp")
        return cp.asarray, cp.asnumpy
    torch = request.getfixturevalue("torch_cuda")
    return (lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(),
            lambda r: r.cpu().numpy())


def _counted(monkeypatch, module, name):
    """A list that grows by one for each call of ``module.name`` from now on."""
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(len(args))  # (not the arguments: arrays must be free to go)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.fixture
def slow_path(monkeypatch):
    """``slow_path(module, name)``: a list that grows by one for each call of
    ``module.name``, a step only a call read and checked (not recalled) takes; the call memo
    is emptied before and after the test."""
    _memo.dispatcher.clear_cache()
    yield lambda module, name: _counted(monkeypatch, module, name)
    _memo.dispatcher.clear_cache()


@pytest.fixture
def slow_calls(slow_path):
    """A list that grows by one for each call that was read and checked (not recalled)."""
    return slow_path(_checks, "check_options")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("name", list(CASES))
def test_repeated_calls_are_recalled_and_right(device_package, slow_calls, name, dtype):
    put, get = device_package
    make, call, expected = CASES[name]
    rng = np.random.default_rng()
    for _ in range(3):  # fresh values, one layout
        host = make(rng, dtype)
        result = get(call(*(put(x) for x in host)))
        assert result.dtype == dtype
        np.testing.assert_allclose(result, expected(*host), rtol=TOL[dtype], atol=TOL[dtype])
    assert len(slow_calls) == 1


@pytest.mark.gpu
def test_a_recalled_call_raises_for_the_failing_matrix(device_package, slow_calls):
    put, _ = device_package
    rng = np.random.default_rng()
    a, b = _well(rng, (3, 4, 4), "float64"), rng.standard_normal((3, 4, 2))
    la.solve(put(a), put(b))
    a[2, 1] = 0.0  # (a zero row: an exactly zero pivot, whatever the rounding)
    with pytest.raises(LinAlgError) as caught:
        la.solve(put(a), put(b))
    assert caught.value.index == (2,)
    spd = _spd(rng, (2, 5, 5), "float64")
    la.cholesky(put(spd))
    spd[1, 3, 3] = -1.0
    with pytest.raises(LinAlgError) as caught:
        la.cholesky(put(spd))
    assert caught.value.index == (1,)
    assert len(slow_calls) == 2


@pytest.mark.gpu
def test_a_recalled_unchecked_call_leaves_nan(device_package, slow_calls):
    put, get = device_package
    rng = np.random.default_rng()
    a, b = _well(rng, (3, 4, 4), "float64"), rng.standard_normal((3, 4, 2))
    la.solve(put(a), put(b), check=False)
    a[0, 2] = 0.0
    a[0, :, 2] = 0.0
    x = get(la.solve(put(a), put(b), check=False))
    assert np.isnan(x[0]).all()
    np.testing.assert_allclose(x[1:], np.linalg.solve(a[1:], b[1:]), rtol=1e-11)
    assert len(slow_calls) == 1


@pytest.mark.gpu
def test_other_layouts_and_conversions_take_the_slow_path(device_package, slow_calls):
    put, get = device_package
    rng = np.random.default_rng()
    a, b = _well(rng, (2, 6, 6), "float64"), rng.standard_normal((2, 6, 2))
    transposed = put(np.ascontiguousarray(a.swapaxes(-1, -2))).swapaxes(-1, -2)
    a32 = a.astype("float32")
    for operands, slow, values in [((put(a), put(b)), 1, a),  # read where they lie
                                   ((transposed, put(b)), 2, a),  # copied: never remembered
                                   ((put(a32), put(b)), 2, a32)]:  # converted: never either
        before = len(slow_calls)
        expected = np.linalg.solve(values.astype("float64"), b)
        for _ in range(2):
            np.testing.assert_allclose(get(la.solve(*operands)), expected, rtol=1e-10)
        assert len(slow_calls) - before == slow


@pytest.mark.gpu
def test_a_recalled_call_follows_an_explicit_stream_and_checks_it(cp, slow_calls):
    rng = np.random.default_rng()
    a, b = _well(rng, (64, 8, 8), "float64"), rng.standard_normal((64, 8, 1))
    da, db = cp.asarray(a), cp.asarray(b)
    la.solve(da, db)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        x = la.solve(da, db, stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(x), np.linalg.solve(a, b), rtol=1e-11)
    assert len(slow_calls) == 1
    with pytest.raises(UnsupportedOperandError):
        la.solve(da, db, stream="nope")
    with pytest.raises(InvalidArgumentError):
        la.solve(da, db, method="nope")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(80, 80), (2, 80, 80)])
def test_a_recalled_cusolver_cholesky_raises_and_checks_and_replans(device_package, slow_calls,
                                                                    shape):
    put, get = device_package
    rng = np.random.default_rng()
    spd = _spd(rng, shape, "float64")
    la.cholesky(put(spd))
    last = tuple(extent - 1 for extent in shape[:-2])  # the last matrix fails
    bad = spd.copy()
    bad[last + (5, 5)] = -1.0
    with pytest.raises(LinAlgError) as caught:
        la.cholesky(put(bad))
    assert caught.value.index == last
    unchecked = get(la.cholesky(put(bad), check=False))
    assert np.isnan(unchecked[last]).all()
    if last:
        np.testing.assert_allclose(unchecked[0], np.linalg.cholesky(spd[0]), rtol=1e-11,
                                   atol=1e-11)
    assert len(slow_calls) == 2  # (check=False: a call of its own)
    _memo.dispatcher.drop_if(lambda solver: True)  # the solver leaves the cache: the next
    # call plans again
    np.testing.assert_allclose(get(la.cholesky(put(spd))), np.linalg.cholesky(spd),
                               rtol=1e-11, atol=1e-11)
    assert len(slow_calls) == 3


@pytest.mark.gpu
def test_a_recalled_cusolver_cholesky_follows_an_explicit_stream(cp, slow_calls):
    rng = np.random.default_rng()
    spd = _spd(rng, (5, 80, 80), "float64")
    da = cp.asarray(spd)
    la.cholesky(da)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        factor = la.cholesky(da, stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(factor), np.linalg.cholesky(spd), rtol=1e-11,
                                   atol=1e-11)
    assert len(slow_calls) == 1


@pytest.fixture
def slow_solves(slow_path):
    """A list that grows by one for each cho_solve that was read and checked (not recalled)."""
    return slow_path(_scipy_functions, "_triangular_system")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("shape, rhs", [((6, 6), (6,)), ((80, 80), (80, 3)),
                                        ((2, 80, 80), (2, 80, 1)), ((4, 7, 7), (4, 7, 2))])
def test_a_recalled_cho_solve_is_right_on_fresh_data(device_package, slow_solves, dtype, lower,
                                                     shape, rhs):
    put, get = device_package
    rng = np.random.default_rng()
    for _ in range(3):  # fresh values, one layout
        a, b = _spd(rng, shape, dtype), _random(rng, rhs, dtype)
        factor = la.cho_factor(put(a), lower=lower)
        x = get(la.cho_solve(factor, put(b)))
        assert x.dtype == dtype and x.shape == b.shape
        expected = _trans_solve(a, b, 0, vector=len(rhs) < len(shape))
        np.testing.assert_allclose(x, expected, rtol=TOL[dtype], atol=TOL[dtype])
    assert len(slow_solves) == 1


@pytest.mark.gpu
def test_a_recalled_cho_solve_checks_finiteness_and_its_stream(cp, slow_solves):
    rng = np.random.default_rng()
    a, b = _spd(rng, (3, 5, 5), "float64"), rng.standard_normal((3, 5, 2))
    factor = la.cho_factor(cp.asarray(a))
    la.cho_solve(factor, cp.asarray(b))
    bad = b.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(LinAlgError) as caught:
        la.cho_solve(factor, cp.asarray(bad))
    assert caught.value.index == (1,) and "b" in str(caught.value)
    # check_finite=False is a call of its own: it reads the NaN into the solution
    x = cp.asnumpy(la.cho_solve(factor, cp.asarray(bad), check_finite=False))
    assert np.isnan(x[1]).any()
    np.testing.assert_allclose(x[0], np.linalg.solve(a[0], b[0]), rtol=1e-11)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        x = la.cho_solve(factor, cp.asarray(b), stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(x), np.linalg.solve(a, b), rtol=1e-11)
    assert len(slow_solves) == 2
    with pytest.raises(UnsupportedOperandError):
        la.cho_solve(factor, cp.asarray(b), stream="nope")
    _memo.dispatcher.drop_if(lambda solver: True)  # the solver leaves the cache: planned again
    np.testing.assert_allclose(cp.asnumpy(la.cho_solve(factor, cp.asarray(b))),
                               np.linalg.solve(a, b), rtol=1e-11)
    assert len(slow_solves) == 3


@pytest.mark.gpu
def test_cho_solve_on_copies_or_conversions_is_not_remembered(device_package, slow_solves):
    put, get = device_package
    rng = np.random.default_rng()
    a, b = _spd(rng, (2, 6, 6), "float64"), rng.standard_normal((2, 6, 2))
    c = np.linalg.cholesky(a)
    strided = put(np.concatenate([c, c], axis=-1))[..., :6]  # (not dense: checked by its package)
    for operands, slow, tol in [((put(c), put(b.astype("float32"))), 2, 1e-5),  # b converted
                                ((strided, put(b)), 2, 1e-11)]:
        before = len(slow_solves)
        for _ in range(2):
            x = get(la.cho_solve((operands[0], True), operands[1]))
            assert_close_elementwise(x, np.linalg.solve(a, b), tol, rtol=tol)
        assert len(slow_solves) - before == slow


@pytest.fixture
def slow_scipy_calls(slow_path):
    """A list that grows by one for each call of a SciPy-named function (cho_factor here)
    that was read and checked (not recalled)."""
    return slow_path(_scipy_functions, "_check_finite")


def _upper_to_lower(c, lower):
    """The lower factor L from cho_factor's ``c`` (L, or U = L^H in its upper triangle)."""
    return np.tril(c) if lower else np.swapaxes(np.triu(c), -1, -2).conj()


@pytest.mark.gpu
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("shape", [(80, 80), (2, 80, 80), (3, 8, 8)])
def test_a_recalled_cho_factor_is_right_and_checks_finiteness_and_definiteness(
        device_package, slow_scipy_calls, lower, shape):
    put, get = device_package
    rng = np.random.default_rng()
    for _ in range(3):  # fresh values, one layout
        a = _spd(rng, shape, "float64")
        c, low = la.cho_factor(put(a), lower=lower)
        assert low is lower
        np.testing.assert_allclose(_upper_to_lower(get(c), lower), np.linalg.cholesky(a),
                                   rtol=1e-11, atol=1e-11)
    # 8 x 8: accelmath's own kernel (cuSOLVER for 80 x 80)
    routes = {type(entry).__name__ for entry in _memo.dispatcher._calls.values()}
    assert routes == {"SmallCall" if shape[-1] == 8 else "CusolverCall"}
    last = tuple(extent - 1 for extent in shape[:-2])  # the last matrix fails
    bad = a.copy()
    bad[last + (3, 4)] = np.inf
    with pytest.raises(LinAlgError) as caught:
        la.cho_factor(put(bad), lower=lower)
    assert caught.value.index == last and "infs or NaNs" in str(caught.value)
    indefinite = a.copy()
    indefinite[last + (5, 5)] = -1.0
    with pytest.raises(LinAlgError) as caught:
        la.cho_factor(put(indefinite), lower=lower)
    assert caught.value.index == last and "infs or NaNs" not in str(caught.value)
    assert len(slow_scipy_calls) == 1
    # check_finite=False is a call of its own, remembered in turn
    for _ in range(2):
        c, _ = la.cho_factor(put(a), lower=lower, check_finite=False)
        np.testing.assert_allclose(_upper_to_lower(get(c), lower), np.linalg.cholesky(a),
                                   rtol=1e-11, atol=1e-11)
    assert len(slow_scipy_calls) == 2


@pytest.mark.gpu
def test_a_recalled_cho_factor_follows_its_stream_and_conversions_are_not_remembered(
        cp, slow_scipy_calls):
    rng = np.random.default_rng()
    a = _spd(rng, (3, 80, 80), "float64")
    da = cp.asarray(a)
    la.cho_factor(da, lower=True)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        c, _ = la.cho_factor(da, lower=True, stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(np.tril(cp.asnumpy(c)), np.linalg.cholesky(a), rtol=1e-11,
                                   atol=1e-11)
    assert len(slow_scipy_calls) == 1
    with pytest.raises(UnsupportedOperandError):
        la.cho_factor(da, lower=True, stream="nope")
    converted = cp.asarray(a.astype("float32"))  # a float32 operand stays float32: remembered
    for _ in range(2):
        c, _ = la.cho_factor(converted, lower=True)
        assert c.dtype == np.float32
        np.testing.assert_allclose(np.tril(cp.asnumpy(c)), np.linalg.cholesky(a), rtol=1e-4,
                                   atol=1e-4)
    assert len(slow_scipy_calls) == 2
    integers = cp.asarray(np.eye(80, dtype="int64") * 4)  # promoted to float64: a copy
    for _ in range(2):
        c, _ = la.cho_factor(integers, lower=True)
        np.testing.assert_allclose(cp.asnumpy(c), np.eye(80) * 2)
    assert len(slow_scipy_calls) == 4


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("trans, lower, unit", [(0, True, False), (1, False, False),
                                                (2, True, True), ("C", False, False)])
@pytest.mark.parametrize("shape, rhs", [((6, 6), (6,)), ((2, 80, 80), (2, 80, 3))])
def test_a_recalled_solve_triangular_is_right_and_checks_its_diagonal(
        device_package, slow_solves, dtype, trans, lower, unit, shape, rhs):
    put, get = device_package
    rng = np.random.default_rng()
    vector = len(rhs) < len(shape)
    for _ in range(3):  # fresh values, one layout
        a, b = _well(rng, shape, dtype), _random(rng, rhs, dtype)
        x = get(la.solve_triangular(put(a), put(b), trans=trans, lower=lower,
                                    unit_diagonal=unit))
        np.testing.assert_allclose(x, _trans_solve(_triangle(a, lower, unit), b, trans, vector),
                                   rtol=TOL[dtype], atol=TOL[dtype])
    assert len(slow_solves) == 1
    last = tuple(extent - 1 for extent in shape[:-2])  # the last matrix has a zero pivot
    singular = a.copy()
    singular[last + (3, 3)] = 0
    if unit:  # (its diagonal is not read)
        x = get(la.solve_triangular(put(singular), put(b), trans=trans, lower=lower,
                                    unit_diagonal=unit))
        np.testing.assert_allclose(
            x, _trans_solve(_triangle(singular, lower, unit), b, trans, vector),
            rtol=TOL[dtype], atol=TOL[dtype])
    else:
        with pytest.raises(LinAlgError) as caught:
            la.solve_triangular(put(singular), put(b), trans=trans, lower=lower)
        assert caught.value.index == last
    assert len(slow_solves) == 1


@pytest.fixture
def slow_lu_solves(slow_path):
    """A list that grows by one for each lu_solve that was read and checked (not recalled)."""
    return slow_path(_checks, "lu_pivots")


def _triangle(a, lower, unit):
    """The triangular matrices solve_triangular reads of ``a``: its lower or upper triangle,
    with ones on the diagonal where ``unit``."""
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        eye = np.eye(a.shape[-1])
        t = t - t * eye + eye
    return t


def _trans_solve(a, b, trans, vector=False):
    """NumPy's solution of ``op(a) x = b`` (op by lu_solve's ``trans``), b (..., n, k), or
    an n-vector where ``vector``."""
    if vector:
        return _trans_solve(a, b[..., None], trans)[..., 0]
    op = {0: a, 1: np.swapaxes(a, -1, -2), 2: np.conj(np.swapaxes(a, -1, -2))}[
        {"N": 0, "T": 1, "C": 2}.get(trans, trans)]
    return np.linalg.solve(op, b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("trans", [0, 1, 2, "C"])
@pytest.mark.parametrize("shape, rhs", [((6, 6), (6,)), ((80, 80), (80, 3)),
                                        ((2, 80, 80), (2, 80, 1)), ((4, 7, 7), (4, 7, 2))])
def test_a_recalled_lu_solve_is_right_on_fresh_data(device_package, slow_lu_solves, dtype,
                                                    trans, shape, rhs):
    put, get = device_package
    rng = np.random.default_rng()
    for _ in range(3):  # fresh values, one layout; rows permuted: pivots of each matrix's own
        a, b = _well(rng, shape, dtype), _random(rng, rhs, dtype)
        rows = rng.permuted(np.broadcast_to(np.arange(shape[-1]), shape[:-1]), axis=-1)
        a = np.take_along_axis(a, rows[..., None], axis=-2)
        x = get(la.lu_solve(la.lu_factor(put(a)), put(b), trans=trans))
        assert x.dtype == dtype and x.shape == b.shape
        expected = _trans_solve(a, b, trans, vector=len(rhs) < len(shape))
        np.testing.assert_allclose(x, expected, rtol=TOL[dtype], atol=TOL[dtype])
    assert len(slow_lu_solves) == 1


@pytest.mark.gpu
def test_a_recalled_lu_solve_checks_its_arguments_finiteness_and_stream(cp, slow_lu_solves):
    rng = np.random.default_rng()
    a, b = _well(rng, (3, 5, 5), "float64"), rng.standard_normal((3, 5, 2))
    factors = la.lu_factor(cp.asarray(a))
    la.lu_solve(factors, cp.asarray(b), trans=1)
    # a trans that is not the remembered one's (nor valid) is checked as new
    for bad_trans in ("1", True, 3):
        with pytest.raises(InvalidArgumentError, match="trans"):
            la.lu_solve(factors, cp.asarray(b), trans=bad_trans)
    bad = b.copy()
    bad[2, 4, 1] = np.inf
    with pytest.raises(LinAlgError) as caught:
        la.lu_solve(factors, cp.asarray(bad), trans=1)
    assert caught.value.index == (2,) and "b" in str(caught.value)
    # check_finite=False is a call of its own: it reads the infinity into the solution
    x = cp.asnumpy(la.lu_solve(factors, cp.asarray(bad), trans=1, check_finite=False))
    assert not np.isfinite(x[2]).all()
    np.testing.assert_allclose(x[0], _trans_solve(a[0], b[0], 1), rtol=1e-11)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        x = la.lu_solve(factors, cp.asarray(b), trans=1, stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(x), _trans_solve(a, b, 1), rtol=1e-11)
    assert len(slow_lu_solves) == 2
    with pytest.raises(UnsupportedOperandError):
        la.lu_solve(factors, cp.asarray(b), trans=1, stream="nope")
    _memo.dispatcher.drop_if(lambda solver: True)  # the solver leaves the cache: planned again
    np.testing.assert_allclose(cp.asnumpy(la.lu_solve(factors, cp.asarray(b), trans=1)),
                               _trans_solve(a, b, 1), rtol=1e-11)
    assert len(slow_lu_solves) == 3


@pytest.mark.gpu
def test_lu_solve_is_remembered_on_copied_factors_not_on_conversions(device_package,
                                                                      slow_lu_solves):
    put, get = device_package
    rng = np.random.default_rng()
    a, b = _well(rng, (2, 6, 6), "float64"), rng.standard_normal((2, 6, 2))
    lu, piv = la.lu_factor(put(a))
    c_ordered = put(np.ascontiguousarray(get(lu)))  # (copied column-major by the call)
    for operands, slow, tol in [(((lu, piv), put(b.astype("float32"))), 2, 1e-5),  # b converted
                                (((c_ordered, piv), put(b)), 1, 1e-11)]:
        before = len(slow_lu_solves)
        for _ in range(2):
            assert_close_elementwise(get(la.lu_solve(*operands)), np.linalg.solve(a, b), tol,
                                     rtol=tol)
        assert len(slow_lu_solves) - before == slow


def _element_strides(x):
    """The element strides of a CuPy array or a torch tensor."""
    return tuple(x.stride()) if hasattr(x, "stride") else tuple(s // x.itemsize
                                                                 for s in x.strides)


def _hermitian(rng, shape, dtype):
    g = _normal(rng, shape, dtype)
    return ((g + np.conj(np.swapaxes(g, -1, -2))) / 2).astype(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(80, 80), (2, 80, 80), (4, 7, 7)])
def test_a_recalled_eigh_is_right_on_fresh_data(device_package, slow_calls, dtype, uplo, shape):
    put, get = device_package
    rng = np.random.default_rng()
    n = shape[-1]
    for _ in range(3):  # fresh values, one layout
        a = _hermitian(rng, shape, dtype)
        # (only the triangle UPLO names is read: the other holds noise)
        given = np.where(np.tri(n, dtype=bool) if uplo == "L" else np.tri(n, dtype=bool).T, a,
                         _random(rng, shape, dtype))
        w, v = la.eigh(put(given), uplo)
        # (the eigenvectors are column-major, as cuSOLVER makes them in the result)
        assert tuple(v.shape) == shape and _element_strides(v)[-2:] == (1, n)
        w_only = get(la.eigvalsh(put(given), uplo))
        w, v = get(w), get(v)
        expected = np.linalg.eigvalsh(a)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(w, expected, atol=TOL[dtype] * scale * 10)
        np.testing.assert_allclose(w_only, expected, atol=TOL[dtype] * scale * 10)
        rebuilt = (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
        np.testing.assert_allclose(rebuilt, a, atol=TOL[dtype] * scale * 10)
    assert len(slow_calls) == 2  # (eigh and eigvalsh, each read and checked once)


@pytest.mark.gpu
def test_a_recalled_eigh_follows_its_options_and_stream(cp, slow_calls):
    rng = np.random.default_rng()
    a = _hermitian(rng, (3, 40, 40), "float64")
    da = cp.asarray(a)
    for _ in range(2):
        la.eigh(da)
        la.eigh(da, check=False)
        la.eigh(da, method="cusolver")
    assert len(slow_calls) == 3
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        w = la.eigh(da, stream=stream).eigenvalues
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(w), np.linalg.eigvalsh(a), atol=1e-10)
    with pytest.raises(UnsupportedOperandError):
        la.eigh(da, stream="nope")
    with pytest.raises(InvalidArgumentError, match="UPLO"):
        la.eigh(da, "X")
    _memo.dispatcher.drop_if(lambda solver: True)  # the solver leaves the cache: planned again
    np.testing.assert_allclose(cp.asnumpy(la.eigh(da).eigenvalues), np.linalg.eigvalsh(a),
                               atol=1e-10)
    assert len(slow_calls) == 5  # (and the bad UPLO, read and refused)


@pytest.fixture
def slow_qrs(slow_path):
    """A list that grows by one for each qr that was read and checked (not recalled)."""
    return slow_path(_checks, "check_mode")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
@pytest.mark.parametrize("shape", [(80, 60), (60, 80), (3, 40, 40)])
def test_a_recalled_qr_is_right_on_fresh_data(device_package, slow_qrs, dtype, mode, shape):
    put, get = device_package
    rng = np.random.default_rng()
    m, n = shape[-2:]
    for _ in range(3):  # fresh values, one layout
        a = _random(rng, shape, dtype)
        result = la.qr(put(a), mode)
        expected = np.linalg.qr(a, mode)
        if mode == "r":
            r = get(result)
            np.testing.assert_allclose(np.abs(r), np.abs(expected), atol=TOL[dtype] * 10)
            continue
        if mode == "raw":  # (R above the reflectors, unique up to row phases)
            r = np.triu(np.swapaxes(get(result[0]), -1, -2))[..., :min(m, n), :]
            np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a, "r")),
                                       atol=TOL[dtype] * 10)
            continue
        q, r = result
        if m >= n:  # (Q made in the result itself, each matrix column-major)
            assert _element_strides(q)[-2:] == (1, m)
        q, r = get(q), get(r)
        assert q.shape == expected.Q.shape and r.shape == expected.R.shape
        np.testing.assert_allclose(q @ r, a, atol=TOL[dtype] * 10)
        np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q,
                                   np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] +
                                                   (q.shape[-1],) * 2), atol=TOL[dtype] * 10)
        np.testing.assert_allclose(np.tril(r, -1), 0, atol=0)
    assert len(slow_qrs) == 1
    with pytest.raises(InvalidArgumentError, match="mode"):
        la.qr(put(_random(rng, shape, dtype)), "Full")


@pytest.mark.gpu
def test_a_recalled_qr_follows_its_stream_and_conversions_are_not_remembered(cp, slow_qrs):
    rng = np.random.default_rng()
    a = rng.standard_normal((2, 30, 20))
    da = cp.asarray(a)
    la.qr(da)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        q, r = la.qr(da, stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(q) @ cp.asnumpy(r), a, atol=1e-12)
    with pytest.raises(UnsupportedOperandError):
        la.qr(da, stream="nope")
    assert len(slow_qrs) == 1
    _memo.dispatcher.drop_if(lambda solver: True)  # the solver leaves the cache: planned again
    q, r = la.qr(da)
    np.testing.assert_allclose(cp.asnumpy(q) @ cp.asnumpy(r), a, atol=1e-12)
    assert len(slow_qrs) == 2
    ints = cp.asarray(rng.integers(-5, 5, (30, 20)))  # (converted to float64: read anew)
    for _ in range(2):
        q, r = la.qr(ints)
        np.testing.assert_allclose(cp.asnumpy(q) @ cp.asnumpy(r), cp.asnumpy(ints), atol=1e-12)
    assert len(slow_qrs) == 4


# -- the public cache functions ---------------------------------------------------------------

def test_cache_functions_match_the_ffts():
    from accelmath import fft

    for name in ("cache_info", "clear_cache", "set_cache_limits"):
        assert name in la.__all__ and getattr(la, name).__doc__
    assert sorted(la.cache_info()) == sorted(fft.cache_info())
    la.set_cache_limits(max_size=7, max_bytes=1 << 20)
    try:
        info = la.cache_info()
        assert (info["max_size"], info["max_bytes"]) == (7, 1 << 20)
        with pytest.raises(InvalidArgumentError, match="max_size"):
            la.set_cache_limits(max_size=-1, max_bytes=5)
        assert la.cache_info()["max_bytes"] == 1 << 20  # (both checked before either changes)
    finally:
        la.set_cache_limits(max_size=64, max_bytes=4 << 30)
    la.clear_cache()
    assert la.cache_info()["size"] == 0 and not _memo.dispatcher._calls
    for module in (la, fft):  # (a device that is no ordinal is refused, not summed over)
        assert module.cache_info(0)["size"] == 0
        for device in (-1, 1.5, "x", True):
            with pytest.raises(InvalidArgumentError, match="device"):
                module.cache_info(device)


def test_a_broadcast_batch_is_checked_over_its_own_entries_once():
    # (the finite check read each repeat of a broadcast view: 10^12 matrices never ended,
    # where NumPy's allocation refuses the result at once)
    import numpy as np

    from accelmath.linalg._checks import all_finite

    assert all_finite(np.broadcast_to(np.eye(2), (10 ** 12, 2, 2)))
    assert not all_finite(np.broadcast_to(np.array([[1.0, np.nan], [0.0, 1.0]]), (10 ** 12, 2, 2)))
    with pytest.raises(MemoryError):
        la.inv(np.broadcast_to(np.eye(2), (10 ** 12, 2, 2)))


@pytest.mark.gpu
def test_products_and_solvers_share_one_cache(cp):
    la.clear_cache()
    a = cp.asarray(_spd(np.random.default_rng(), (300, 300), "float64"))  # (cuSOLVER)
    la.matmul(a, a)
    la.cholesky(a)
    assert la.cache_info()["size"] >= 2
    la.clear_cache()
    assert la.cache_info()["size"] == 0

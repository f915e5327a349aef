"""The stateless functions' front (:meth:`accelmath._core.dispatch.Dispatcher.fronted`): a
repeated call runs its plan's launcher in C without reading its operands' layout in Python; a
call of the same form and shape on anything the plan does not fit (other strides, dtype,
device, a lazily conjugated view, a tensor that records gradients, another stream) goes on
to the memo and gets its own, correct, result; a plan its cache drops is never run by it."""

import numpy as np
import pytest
from closeness import assert_close
from device_arrays import on_device, to_host

import accelmath.fft as afft
from accelmath import linalg
from accelmath.fft import _transform
from accelmath.linalg import _memo

pytestmark = pytest.mark.gpu


@pytest.fixture(params=["cupy", "torch"])
def xp(request):
    if request.param == "cupy":
        return pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


def _complex(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _fresh_fft(xp, rng, shape=(8, 64)):
    host = _complex(rng, shape)
    return host, on_device(xp, host)


def test_a_repeated_fft_runs_through_the_front_and_counts_hits(xp):
    rng = np.random.default_rng()
    afft.clear_cache()
    for call in range(5):
        host, x = _fresh_fft(xp, rng)
        assert_close(to_host(afft.fft(x)), np.fft.fft(host), 1e-12)
        if call >= 2:  # (kept by the third at the latest: the second call, which the memo
            # answered, is keyed where an earlier one made the array type the front's)
            assert len(_transform.dispatcher._front) == 1
    info = afft.cache_info()
    assert (info["misses"], info["hits"]) == (1, 4)
    host, x = _fresh_fft(xp, rng)
    assert_close(to_host(afft.ifft(x)), np.fft.ifft(host), 1e-12)  # another form: its own


def test_the_same_shape_in_another_layout_gets_its_own_result(xp):
    rng = np.random.default_rng()
    afft.clear_cache()
    for _ in range(3):
        host, x = _fresh_fft(xp, rng)
        afft.fft(x)
    others = {}
    wide = _complex(rng, (8, 128))
    others["strided"] = (wide[:, ::2], on_device(xp, wide)[:, ::2])
    tall = _complex(rng, (64, 8))
    others["transposed"] = (tall.T, on_device(xp, tall).T)
    single = _complex(rng, (8, 64), np.complex64)
    others["complex64"] = (single, on_device(xp, single))
    for name, (host, x) in others.items():
        for _ in range(2):
            got = afft.fft(x)
            assert_close(to_host(got), np.fft.fft(host), 1e-5 if host.dtype == np.complex64
                         else 1e-12)
        host, x = _fresh_fft(xp, rng)  # and the first form still right after it
        assert_close(to_host(afft.fft(x)), np.fft.fft(host), 1e-12)
    if xp.__name__ == "torch":  # what the memo's path gives them, the front gives too
        plain = _complex(rng, (8, 64))
        calls = [lambda: afft.fft(on_device(xp, plain).conj()),
                 lambda: afft.fft(xp._neg_view(on_device(xp, plain))),
                 lambda: afft.fft(on_device(xp, plain).requires_grad_()),
                 lambda: afft.fft(xp.from_numpy(plain.copy()))]
        _same_outcomes(calls, lambda: afft.fft(_fresh_fft(xp, rng)[1]), afft.clear_cache)


def test_a_call_on_another_stream_goes_through_the_memo(xp):
    rng = np.random.default_rng()
    afft.clear_cache()
    for _ in range(3):
        host, x = _fresh_fft(xp, rng, (16, 256))
        afft.fft(x)
    host, x = _fresh_fft(xp, rng, (16, 256))
    if xp.__name__ == "torch":
        stream = xp.cuda.Stream()
        stream.wait_stream(xp.cuda.current_stream())
        with xp.cuda.stream(stream):
            y = afft.fft(x)
        stream.synchronize()
    else:
        with xp.cuda.Stream() as stream:
            y = afft.fft(x)
            stream.synchronize()
    assert_close(to_host(y), np.fft.fft(host), 1e-12)


def test_a_plan_the_cache_drops_leaves_the_front():
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    afft.clear_cache()
    limits = afft.cache_info()["max_size"]
    try:
        afft.set_cache_limits(max_size=1)
        for _ in range(3):
            host, x = _fresh_fft(cp, rng)
            afft.fft(x)
        assert _transform.dispatcher._front
        other, y = _fresh_fft(cp, rng, (4, 32))
        assert_close(to_host(afft.fft(y)), np.fft.fft(other), 1e-12)  # evicts the first plan
        assert not _transform.dispatcher._front
        host, x = _fresh_fft(cp, rng)
        assert_close(to_host(afft.fft(x)), np.fft.fft(host), 1e-12)
        afft.fft(x)
        assert _transform.dispatcher._front
        afft.clear_cache()
        assert not _transform.dispatcher._front
    finally:
        afft.set_cache_limits(max_size=limits)


def _pair(xp, rng, m=16, k=24, n=8, dtype=np.float64):
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    return a, b, on_device(xp, a), on_device(xp, b)


def test_a_repeated_product_runs_through_the_front(xp):
    rng = np.random.default_rng()
    linalg.clear_cache()
    for call in range(5):
        a, b, da, db = _pair(xp, rng)
        assert_close(to_host(linalg.matmul(da, db)), a @ b, 1e-12)
        if call >= 2:
            assert len(_memo.dispatcher._front) == 1
    info = linalg.cache_info()
    assert (info["misses"], info["hits"]) == (1, 4)
    # the same shapes in other forms: each its own result
    a, b, da, db = _pair(xp, rng)
    assert_close(to_host(linalg.matmul(da, db, alpha=2.0)), 2 * a @ b, 1e-12)
    tall = rng.standard_normal((8, 24))
    assert_close(to_host(linalg.matmul(da, on_device(xp, tall).T)), a @ tall.T, 1e-12)
    a32, b32, da32, db32 = _pair(xp, rng, dtype=np.float32)
    assert_close(to_host(linalg.matmul(da32, db32)), a32.astype(np.float64) @ b32, 1e-5)
    if xp.__name__ == "torch":
        calls = [lambda: linalg.matmul(on_device(xp, a).requires_grad_(), db),
                 lambda: linalg.matmul(xp.from_numpy(a), xp.from_numpy(b))]
        _same_outcomes(calls, lambda: linalg.matmul(*_pair(xp, rng)[2:]), linalg.clear_cache)
    a, b, da, db = _pair(xp, rng)
    assert_close(to_host(linalg.matmul(da, db)), a @ b, 1e-12)


def test_alternating_dtypes_of_one_shape_each_keep_their_front(xp):
    """The front key holds the dtype: two dtypes of one shape taking turns each run through
    their own front (a key without it would trade one for the other on every call)."""
    rng = np.random.default_rng()
    afft.clear_cache()
    linalg.clear_cache()
    for _ in range(3):
        for dtype, tol in ((np.complex64, 1e-5), (np.complex128, 1e-12)):
            host = _complex(rng, (8, 64), dtype)
            assert_close(to_host(afft.fft(on_device(xp, host))), np.fft.fft(host), tol)
            real = host.real.copy()
            product = linalg.matmul(on_device(xp, real), on_device(xp, real.T.copy()))
            assert_close(to_host(product), real.astype(np.float64) @ real.T, tol)
    assert len(_transform.dispatcher._front) == 2
    assert len(_memo.dispatcher._front) == 2
    fft_hits, product_hits = afft.cache_info()["hits"], linalg.cache_info()["hits"]
    assert (fft_hits, product_hits) == (4, 4)


def _outcome(call):
    try:
        return "result", to_host(call())
    except Exception as exc:  # (whatever the memo's path gives, the front gives too)
        return "error", type(exc), str(exc)


def _same_outcomes(calls, repeated, clear):
    """Each of ``calls`` gives the same outcome (a result, or an error) with the front
    holding ``repeated()``'s plan as with the memo alone."""
    clear()
    expected = [_outcome(call) for call in calls]
    for _ in range(3):
        repeated()
    for call, outcome in zip(calls, expected):
        got = _outcome(call)
        assert got[0] == outcome[0]
        if got[0] == "result":
            assert_close(got[1], outcome[1], 1e-12)
        else:
            assert got[1:] == outcome[1:]


def test_operands_of_another_kind_get_what_the_memo_gives(xp):
    """A front kept for one kind's plans never takes another kind's operand, nor a list."""
    rng = np.random.default_rng()
    a, b, da, db = _pair(xp, rng)
    _same_outcomes([lambda: linalg.matmul(da, b), lambda: linalg.matmul(da, b.tolist()),
                    lambda: linalg.matmul(a, db)],
                   lambda: linalg.matmul(*_pair(xp, rng)[2:]), linalg.clear_cache)
    assert _memo.dispatcher._front


def test_a_plan_for_fewer_aligned_addresses_is_not_the_fronts(xp):
    """A product of operands 16 bytes aligned has a plan of its own (its call key says so);
    it never becomes the front, which would then run it for operands 256 bytes aligned."""
    rng = np.random.default_rng()
    linalg.clear_cache()
    big = rng.standard_normal((40, 24))
    w = rng.standard_normal((24, 8))
    dbig, dw = on_device(xp, big), on_device(xp, w)
    part = dbig[9:25]  # (9 rows of 24 float64 in: 1728 bytes, 16-aligned, not 256)
    for _ in range(3):
        assert_close(to_host(linalg.matmul(part, dw)), big[9:25] @ w, 1e-12)
    assert not _memo.dispatcher._front
    for _ in range(3):
        a, b, da, db = _pair(xp, rng)
        assert_close(to_host(linalg.matmul(da, db)), a @ b, 1e-12)
    assert _memo.dispatcher._front
    assert_close(to_host(linalg.matmul(part, dw)), big[9:25] @ w, 1e-12)

"""Fused calls from the fronts on the GPU: a repeated transform with an epilogue runs from the
front's table (the transform's launcher chained with the kernel in C), with new arrays and
scalars each call, and anything that would change its result (another value read by the
function, another layout of an operand) leads elsewhere."""

import numpy as np
import pytest

import accelmath.fft as F
from accelmath._core import hostcall
from accelmath.fft import _transform

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not hostcall.status().startswith("C call shim"),
                                 reason="the fronts are made by the call shim")]

GAIN = 2.0


def gained(y, k, s):
    return y * k * s + GAIN


def _chains():
    return sum(type(entry[0]).__name__ == "Chain"
               for entry in _transform.dispatcher._front.values())


def _arrays(package, cp, torch):
    if package == "cupy":
        return cp.asarray, lambda a: a.get()
    return ((lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()),
            (lambda a: a.cpu().numpy()))


@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_a_repeated_fused_call_runs_from_the_front_with_new_operands(package, cp, torch_cuda):
    global GAIN
    device, host = _arrays(package, cp, torch_cuda)
    rng = np.random.default_rng()
    F.clear_cache()
    before = _chains()
    try:
        for call in range(6):
            # (call 4: a value the function reads changes: another key, another trace)
            GAIN = 3.0 if call == 4 else 2.0
            x = (rng.standard_normal((4, 64)) + 1j * rng.standard_normal((4, 64))).astype(
                np.complex64)
            k = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64)
            s = float(rng.standard_normal())
            got = F.fft(device(x), norm="ortho", epilogue=gained, epilogue_args=(device(k), s))
            expected = np.fft.fft(x.astype(np.complex128), norm="ortho") * k * s + GAIN
            assert type(got).__module__.split(".")[0] == package
            np.testing.assert_allclose(host(got), expected, rtol=1e-4, atol=1e-4)
            if call == 2:
                assert _chains() == before + 1  # (learnt by the third call)
    finally:
        GAIN = 2.0
    # an operand of another layout (a strided view) misses the chain and is read as it is
    k = (rng.standard_normal(128) + 1j * rng.standard_normal(128)).astype(np.complex64)
    x = (rng.standard_normal((4, 64)) + 1j * rng.standard_normal((4, 64))).astype(np.complex64)
    got = F.fft(device(x), norm="ortho", epilogue=gained, epilogue_args=(device(k)[::2], 1.5))
    np.testing.assert_allclose(
        host(got), np.fft.fft(x.astype(np.complex128), norm="ortho") * k[::2] * 1.5 + GAIN,
        rtol=1e-4, atol=1e-4)
    F.clear_cache()
    assert _chains() == 0


@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_a_fused_call_from_the_front_follows_the_current_stream(package, cp, torch_cuda):
    device, host = _arrays(package, cp, torch_cuda)
    rng = np.random.default_rng()
    x = (rng.standard_normal((8, 256)) + 1j * rng.standard_normal((8, 256))).astype(np.complex64)
    k = (rng.standard_normal(256) + 1j * rng.standard_normal(256)).astype(np.complex64)
    dx, dk = device(x), device(k)
    for _ in range(3):
        F.fft(dx, epilogue=lambda y, k: y * k, epilogue_args=(dk,))
    if package == "cupy":
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            got = F.fft(dx, epilogue=lambda y, k: y * k, epilogue_args=(dk,))
        stream.synchronize()
    else:
        stream = torch_cuda.cuda.Stream()
        stream.wait_stream(torch_cuda.cuda.current_stream())
        with torch_cuda.cuda.stream(stream):
            got = F.fft(dx, epilogue=lambda y, k: y * k, epilogue_args=(dk,))
        stream.synchronize()
    np.testing.assert_allclose(host(got), np.fft.fft(x.astype(np.complex128)) * k, rtol=1e-4,
                               atol=1e-3)


def factor(y, k):
    return y * k * FACTOR


FACTOR = np.float32(1.0)


def test_a_function_whose_key_changes_at_each_call_is_offered_a_few_keys(cp):
    # (a NumPy scalar it reads is keyed by identity: made anew, a new key each call; the
    # calls of each of its three values share a remembered call, offered at most 8 keys)
    global FACTOR
    rng = np.random.default_rng()
    F.clear_cache()
    x = (rng.standard_normal((4, 64)) + 1j * rng.standard_normal((4, 64))).astype(np.complex64)
    k = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64)
    dx, dk = cp.asarray(x), cp.asarray(k)
    try:
        for call in range(40):
            FACTOR = np.float32(call % 3 + 1)  # (float32: the product stays complex64)
            got = F.fft(dx, epilogue=factor, epilogue_args=(dk,))
            np.testing.assert_allclose(got.get(), np.fft.fft(x.astype(np.complex128)) * k
                                       * (call % 3 + 1), rtol=1e-4, atol=1e-3)
    finally:
        FACTOR = np.float32(1.0)
    assert 1 <= _chains() <= 3 * 8

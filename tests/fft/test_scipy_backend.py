"""accelmath.fft.scipy_backend under scipy.fft.set_backend: results equal numpy.fft's, calls
go through accelmath, and what it does not handle falls back to scipy."""

import numpy as np
import pytest

scipy_fft = pytest.importorskip("scipy.fft")

import accelmath.fft  # noqa: E402
from accelmath.fft import _functions, scipy_backend  # noqa: E402

NAMES = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
         "fftn", "ifftn", "rfftn", "irfftn"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn"}


@pytest.fixture
def calls(monkeypatch):
    """Count the transforms that reach accelmath.fft._functions._transform."""
    seen = []
    transform = _functions._transform

    def counting(kind, *args, **kwargs):
        seen.append(kind)
        return transform(kind, *args, **kwargs)

    monkeypatch.setattr(_functions, "_transform", counting)
    return seen


def data(name, shape=(4, 6)):
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal(shape)
    return x if name in REAL_INPUT else x + 1j * rng.standard_normal(shape)


def close(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and (
        np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(b))


def test_domain_and_module():
    assert scipy_backend.__ua_domain__ == "numpy.scipy.fft"
    assert accelmath.fft.scipy_backend is scipy_backend
    assert "scipy_backend" in accelmath.fft.__all__


@pytest.mark.parametrize("name", NAMES)
def test_every_function_goes_through_accelmath(name, calls):
    x = data(name)
    with scipy_fft.set_backend(scipy_backend):
        result = getattr(scipy_fft, name)(x)
    assert calls, f"scipy.fft.{name} did not reach accelmath"
    assert close(result, getattr(np.fft, name)(x))


def test_arguments_are_passed(calls):
    x = data("fftn", (3, 4, 5))
    with scipy_fft.set_backend(scipy_backend):
        a = scipy_fft.fftn(x, (4, 6), (2, 0), "ortho", False, 2)  # positional, scipy's order
        b = scipy_fft.irfft(x, n=7, axis=1, norm="forward", overwrite_x=True, workers=1)
        c = scipy_fft.rfft2(x.real, s=(3, 8), axes=(-1, 0))
    assert len(calls) == 3
    assert close(a, np.fft.fftn(x, (4, 6), (2, 0), "ortho"))
    assert close(b, np.fft.irfft(x, 7, 1, "forward"))
    assert close(c, np.fft.rfft2(x.real, (3, 8), (-1, 0)))


def test_scipy_fft_fft_equals_numpy():
    x = np.random.default_rng(0).standard_normal(64)
    with scipy_fft.set_backend(scipy_backend):
        result = scipy_fft.fft(x)
    assert close(result, np.fft.fft(x))


def test_torch_tensors_stay_torch(calls):
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 8, dtype=torch.float64)
    with scipy_fft.set_backend(scipy_backend):
        result = scipy_fft.rfft(x)
    assert calls and isinstance(result, torch.Tensor)
    assert close(result.numpy(), np.fft.rfft(x.numpy()))


def test_backend_with_only_true(calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend, only=True):
        result = scipy_fft.fft2(x)
    assert calls and close(result, np.fft.fft2(x))


@pytest.mark.parametrize("call", [
    lambda x: scipy_fft.dct(x.real),
    lambda x: scipy_fft.fft(x.tolist()),  # a list: scipy converts it itself
    lambda x: scipy_fft.fft(x.astype(np.clongdouble)),  # a dtype accelmath has no FFT of
])
def test_unhandled_calls_fall_back_to_scipy(call, calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend):
        result = call(x)
    expected = call(x)  # scipy's own
    assert not calls
    np.testing.assert_allclose(result, expected, rtol=1e-12)


def test_ua_function_returns_not_implemented():
    x = data("fft")
    assert scipy_backend.__ua_function__(scipy_fft.dct, (x.real,), {}) is NotImplemented
    assert scipy_backend.__ua_function__(scipy_fft.fft, (x,), {"plan": object()}) \
        is NotImplemented
    assert scipy_backend.__ua_function__(scipy_fft.fft, ([1, 2],), {}) is NotImplemented
    assert close(scipy_backend.__ua_function__(scipy_fft.fft, (x,), {"plan": None}),
                 np.fft.fft(x))


def test_x_as_a_keyword(calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend):
        result = scipy_fft.fft(x=x)
    assert calls and close(result, np.fft.fft(x))


def test_errors_are_accelmath_errors():
    from accelmath.errors import AccelmathError

    with scipy_fft.set_backend(scipy_backend), pytest.raises(AccelmathError, match="norm"):
        scipy_fft.fft(data("fft"), norm="x")


def test_accelmath_functions_inside_the_backend_do_not_recurse(calls):
    # accelmath's CPU path calls scipy.fft itself; under the backend that must not loop
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend):
        result = accelmath.fft.fft(x)
    assert close(result, np.fft.fft(x))


@pytest.mark.parametrize("name", ["hfft2", "ihfft2", "hfftn", "ihfftn"])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_hermitian_transforms_of_several_axes(name, norm, calls):
    """scipy.fft's hfft2/hfftn and their inverses, which numpy.fft lacks, run on accelmath
    too (also as accelmath.fft functions), and equal scipy's own."""
    x = data("fft", (6, 5, 8))
    x = x.real if name.startswith("i") else x
    kwargs = {"axes": (0, 2), "norm": norm}
    with scipy_fft.set_backend(scipy_backend, only=True):
        result = getattr(scipy_fft, name)(x, **kwargs)
    expected = getattr(scipy_fft, name)(x, **kwargs)
    assert calls and close(result, expected)
    assert close(getattr(accelmath.fft, name)(x, **kwargs), expected)

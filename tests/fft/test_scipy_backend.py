"""accelmath.fft.scipy_backend under scipy.fft.set_backend and set_global_backend: results
equal numpy.fft's, calls go through accelmath, and what it does not handle falls back to scipy;
accelmath's own host transforms never dispatch through scipy.fft's backends."""

import warnings

import numpy as np
import pytest
from closeness import assert_close

scipy_fft = pytest.importorskip("scipy.fft")

import accelmath.fft  # noqa: E402
from accelmath.fft import _functions, _functions_nd, _scipy_functions, scipy_backend  # noqa: E402

NAMES = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
         "fftn", "ifftn", "rfftn", "irfftn"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn"}


@pytest.fixture
def calls(monkeypatch):
    """Count the transforms that reach accelmath's functions."""
    seen = []
    transform = _functions.transform

    def counting(kind, *args, **kwargs):
        seen.append(kind)
        return transform(kind, *args, **kwargs)

    monkeypatch.setattr(_functions, "transform", counting)
    monkeypatch.setattr(_functions_nd, "transform", counting)
    monkeypatch.setattr(_scipy_functions, "transform", counting)
    return seen


class Refusing:
    """A scipy.fft backend that fails any call that reaches it."""

    __ua_domain__ = "numpy.scipy.fft"

    @staticmethod
    def __ua_function__(method, args, kwargs):
        raise AssertionError(f"scipy.fft.{method.__name__} was dispatched")


def data(name, shape=(4, 6)):
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal(shape)
    return x if name in REAL_INPUT else x + 1j * rng.standard_normal(shape)


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
    assert_close(result, getattr(np.fft, name)(x), same_type=True)


def test_arguments_are_passed(calls):
    x = data("fftn", (3, 4, 5))
    with scipy_fft.set_backend(scipy_backend):
        a = scipy_fft.fftn(x, (4, 6), (2, 0), "ortho", False, 2)  # positional, scipy's order
        b = scipy_fft.irfft(x, n=7, axis=1, norm="forward", overwrite_x=True, workers=1)
        c = scipy_fft.rfft2(x.real, s=(3, 8), axes=(-1, 0))
    assert len(calls) == 3
    assert_close(a, np.fft.fftn(x, (4, 6), (2, 0), "ortho"), same_type=True)
    assert_close(b, np.fft.irfft(x, 7, 1, "forward"), same_type=True)
    assert_close(c, np.fft.rfft2(x.real, (3, 8), (-1, 0)), same_type=True)


def test_scipy_fft_fft_equals_numpy():
    x = np.random.default_rng(0).standard_normal(64)
    with scipy_fft.set_backend(scipy_backend):
        result = scipy_fft.fft(x)
    assert_close(result, np.fft.fft(x), same_type=True)


def test_torch_tensors_stay_torch(calls):
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 8, dtype=torch.float64)
    with scipy_fft.set_backend(scipy_backend):
        result = scipy_fft.rfft(x)
    assert calls and isinstance(result, torch.Tensor)
    assert_close(result.numpy(), np.fft.rfft(x.numpy()), same_type=True)


def test_backend_with_only_true(calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend, only=True):
        result = scipy_fft.fft2(x)
    assert calls
    assert_close(result, np.fft.fft2(x), same_type=True)


@pytest.mark.parametrize("call", [
    lambda x: scipy_fft.dct(x.real),
    lambda x: scipy_fft.fft(x.real.astype(object)),  # a dtype accelmath has no FFT of
])
def test_unhandled_calls_fall_back_to_scipy(call, calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend):
        result = call(x)
    expected = call(x)  # scipy's own
    assert not calls
    np.testing.assert_allclose(result, expected, rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda x: scipy_fft.fft(x.tolist()),  # an array-like, as NumPy reads it
    lambda x: scipy_fft.fft(x.astype(np.clongdouble)),  # long double, computed in it
    lambda x: scipy_fft.irfft(x.astype(np.clongdouble), 9),
])
def test_array_likes_and_long_double(call, calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend, only=True):
        result = call(x)
    expected = call(x)  # scipy's own
    assert calls and result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-12)


def test_ua_function_returns_not_implemented():
    x = data("fft")
    assert scipy_backend.__ua_function__(scipy_fft.dct, (x.real,), {}) is NotImplemented
    assert scipy_backend.__ua_function__(scipy_fft.fft, (x,), {"plan": object()}) \
        is NotImplemented
    assert scipy_backend.__ua_function__(scipy_fft.fft, ({1: 2},), {}) is NotImplemented
    assert scipy_backend.__ua_function__(scipy_fft.fft, (x.astype(object),), {}) \
        is NotImplemented
    assert_close(scipy_backend.__ua_function__(scipy_fft.fft, (x,), {"plan": None}),
                 np.fft.fft(x), same_type=True)


def test_x_as_a_keyword(calls):
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend):
        result = scipy_fft.fft(x=x)
    assert calls
    assert_close(result, np.fft.fft(x), same_type=True)


def test_errors_are_accelmath_errors():
    from accelmath.errors import AccelmathError

    with scipy_fft.set_backend(scipy_backend), pytest.raises(AccelmathError, match="norm"):
        scipy_fft.fft(data("fft"), norm="x")


@pytest.mark.parametrize("name", ["fftn", "irfftn", "hfftn", "ihfft2"])
def test_what_scipy_refuses_of_several_axes_is_refused(name):
    """A None in s and an axis given twice: NumPy takes them, scipy.fft refuses them."""
    x = np.ones((4, 6, 3), complex if name != "ihfft2" else float)
    for kwargs, message in (({"s": (4, None), "axes": (0, 1)}, "shape must be a scalar"),
                            ({"axes": (0, -3)}, "all axes must be unique")):
        with pytest.raises(ValueError, match=message):
            getattr(scipy_fft, name)(x, **kwargs)
        with scipy_fft.set_backend(scipy_backend, only=True), \
                pytest.raises(ValueError, match=message):
            getattr(scipy_fft, name)(x, **kwargs)


def test_accelmath_functions_inside_the_backend_do_not_recurse(calls):
    # accelmath's CPU path calls scipy.fft itself; under the backend that must not loop
    x = data("fft")
    with scipy_fft.set_backend(scipy_backend):
        result = accelmath.fft.fft(x)
    assert_close(result, np.fft.fft(x), same_type=True)


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
    assert calls
    assert_close(result, expected, same_type=True)
    assert_close(getattr(accelmath.fft, name)(x, **kwargs), expected, same_type=True)


@pytest.fixture
def global_backend():
    """accelmath as scipy.fft's global backend (scipy's own back after the test)."""
    scipy_fft.set_global_backend(scipy_backend)
    try:
        yield
    finally:
        scipy_fft.set_global_backend("scipy")


@pytest.mark.parametrize("name", NAMES + ["hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_global_backend(name, global_backend, calls):
    """With accelmath as the global backend, scipy's own is gone: every transform runs on
    accelmath, whose host path needs no scipy.fft dispatch; accelmath's functions too."""
    x = data(name if name in NAMES else ("rfft" if name.startswith("i") else "fft"))
    result = getattr(scipy_fft, name)(x, workers=2)
    assert calls
    assert_close(result, getattr(accelmath.fft, name)(x), same_type=True)
    peer = np.fft if hasattr(np.fft, name) else None
    if peer is not None:
        assert_close(result, getattr(peer, name)(x), same_type=True)


def test_global_backend_with_arrays_and_long_double(global_backend, calls):
    x = data("fft")
    assert_close(scipy_fft.fft(x.tolist()), np.fft.fft(x), same_type=True)
    assert scipy_fft.ifft2(x.astype(np.clongdouble)).dtype == np.clongdouble
    assert len(calls) == 2


@pytest.mark.parametrize("only", [False, True])
def test_host_transforms_never_dispatch(only):
    """accelmath's CPU path calls SciPy's engine itself: a backend that fails whatever reaches
    it never sees a call, and the results are right."""
    with scipy_fft.set_backend(Refusing, only=only):
        for name in NAMES + ["hfft2", "ihfft2", "hfftn", "ihfftn"]:
            x = data(name if name in NAMES else ("rfft" if name.startswith("i") else "fft"))
            result = getattr(accelmath.fft, name)(x, norm="ortho")
            with scipy_fft.set_backend("scipy", only=True):
                expected = getattr(scipy_fft, name)(x, norm="ortho")
            assert_close(result, expected, what=name, same_type=True)


def test_s_without_axes_as_scipy_takes_it():
    """scipy.fft's s without axes is the last len(s) axes, with no NumPy deprecation."""
    x = data("fftn", (3, 4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with scipy_fft.set_backend(scipy_backend, only=True):
            a = scipy_fft.fftn(x, (4, 6))
            b = scipy_fft.irfft2(x, s=(5, 7), axes=None)
            c = scipy_fft.rfftn(x.real, 6, None)
    assert_close(a, np.fft.fftn(x, (4, 6), axes=(1, 2)), same_type=True)
    assert_close(b, np.fft.irfftn(x, (5, 7), axes=(1, 2)), same_type=True)
    assert_close(c, np.fft.rfftn(x.real, (6,), axes=(2,)), same_type=True)


def test_tensors_that_record_gradients_get_accelmath_s_error():
    torch = pytest.importorskip("torch")
    from accelmath.errors import GradientError

    t = torch.ones(8, dtype=torch.float64, requires_grad=True)
    with scipy_fft.set_backend(accelmath.fft.scipy_backend, only=True):
        with pytest.raises(GradientError, match="torch.no_grad"):
            scipy_fft.fft(t)

"""Bad input to accelmath.fft: each error is an AccelmathError of the natural built-in type
(ValueError, TypeError, RuntimeError) whose message says what was wrong."""

import re
import subprocess
import sys
import textwrap
from contextlib import contextmanager

import numpy as np
import pytest

import accelmath.fft
from accelmath.errors import (AccelmathError, InvalidArgumentError, StateError,
                              UnsupportedDTypeError, UnsupportedOperandError)
from accelmath.fft import FFT

X = np.zeros((4, 6), np.complex128)


@contextmanager
def raises(builtin, match):
    """Expect an AccelmathError that is also a ``builtin`` and whose message has ``match``
    (a literal string)."""
    with pytest.raises(AccelmathError, match=re.escape(match)) as info:
        yield info
    assert isinstance(info.value, builtin), f"{type(info.value)} is not a {builtin}"


def test_error_types():
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(UnsupportedDTypeError, TypeError)
    assert issubclass(UnsupportedOperandError, TypeError)
    assert issubclass(StateError, RuntimeError)


@pytest.mark.parametrize("call, message", [
    (lambda: accelmath.fft.fft(X, axis=2), "axis 2 is out of bounds for an array of dimension 2"),
    (lambda: accelmath.fft.ifft(X, axis=-3), "axis -3 is out of bounds"),
    (lambda: accelmath.fft.fftn(X, axes=(0, -3)), "axis -3 is out of bounds"),
    (lambda: accelmath.fft.rfft2(X.real, axes=(0, 5)), "axis 5 is out of bounds"),
    (lambda: accelmath.fft.fftn(X, axes=(0, 0, 2)), "axis 2 is out of bounds"),
])
def test_bad_axes(call, message):
    with raises(ValueError, message):
        call()


@pytest.mark.parametrize("axes, message", [((0, 0), "axes=(0, 0) repeats axis 0"),
                                           ((1, -1), "axes=(1, -1) repeats axis 1")])
def test_plans_refuse_repeated_axes(axes, message):
    """The functions transform an axis given twice twice, as NumPy; a plan is one transform
    of distinct axes."""
    with raises(ValueError, message):
        FFT(X, axes=axes)


@pytest.mark.parametrize("call, message", [
    (lambda: accelmath.fft.fft(X, n=0), "n must be at least 1, got 0"),
    (lambda: accelmath.fft.rfft(X.real, 0), "n must be at least 1, got 0"),
    (lambda: accelmath.fft.irfft(X, n=0), "n must be at least 1, got 0"),
    (lambda: accelmath.fft.hfft(X, n=-1), "n must be at least 1, got -1"),
    (lambda: accelmath.fft.fftn(X, s=(4, 0), axes=(0, 1)), "s[1] must be at least 1"),
    (lambda: accelmath.fft.irfft2(X, s=(0, 4)), "s[0] must be at least 1"),
    (lambda: accelmath.fft.fftn(X, s=(4, -2), axes=(0, 1)), "s[1] must be at least 1 (or -1"),
])
def test_lengths_below_one(call, message):
    with raises(ValueError, message):
        call()


@pytest.mark.parametrize("name", ["irfft", "hfft", "irfft2", "irfftn"])
def test_default_c2r_length_of_zero(name):
    # a halved axis of length 1 gives 2 * (1 - 1) = 0 output points, as in NumPy
    with raises(ValueError, "Invalid number of FFT data points (0) specified along axis 1"):
        getattr(accelmath.fft, name)(np.zeros((3, 1), np.complex128))


@pytest.mark.parametrize("call", [lambda: accelmath.fft.fft(X, n=True),
                                  lambda: accelmath.fft.fft(X, n=2.0),
                                  lambda: accelmath.fft.fftn(X, s=(4, "8"), axes=(0, 1))])
def test_lengths_that_are_not_integers(call):
    with raises(ValueError, "must be an integer"):
        call()


@pytest.mark.parametrize("name", ["rfftn", "irfftn"])
def test_real_transforms_of_no_axes(name):
    with raises(ValueError, "axes must name at least one axis"):
        getattr(accelmath.fft, name)(X.real if name == "rfftn" else X, axes=())


@pytest.mark.parametrize("call, axis", [
    (lambda: accelmath.fft.fft(np.zeros((0, 4)), axis=0), 0),
    (lambda: accelmath.fft.rfftn(np.zeros((3, 0))), 1),
    (lambda: accelmath.fft.irfftn(np.zeros((0, 4), np.complex128)), 0),
    (lambda: accelmath.fft.ifft([]), 0),
])
def test_zero_size_transform_axes(call, axis):
    with raises(ValueError, f"Invalid number of FFT data points (0) specified along axis {axis}, "
                            f"which has length 0"):
        call()


@pytest.mark.parametrize("name, shape, s, axis", [
    ("fftn", (0, 4), (-1, 4), 0), ("ifftn", (4, 0), (4, -1), 1), ("rfftn", (0, 0), (-1, 4), 0),
    ("rfft2", (4, 0), (-1, -1), 1), ("irfftn", (0, 4), (-1, 4), 0), ("fft2", (0, 0), (4, -1), 1),
])
def test_s_of_minus_one_along_an_axis_of_length_zero(name, shape, s, axis):
    """-1 in s is the input's length: 0 points there, which NumPy refuses too."""
    x = np.zeros(shape, np.complex128 if name.startswith(("i", "f")) else np.float64)
    with pytest.raises(ValueError, match=re.escape("Invalid number of FFT data points (0)")):
        getattr(np.fft, name)(x, s=s, axes=(0, 1))
    with raises(ValueError, f"Invalid number of FFT data points (0) specified by s[{axis}] = -1 "
                            f"(the input's length) along axis {axis}, which has length 0"):
        getattr(accelmath.fft, name)(x, s=s, axes=(0, 1))


@pytest.mark.parametrize("name, shape, kwargs", [
    ("fft", (0,), {"n": 4}), ("irfft", (3, 0), {"n": 4}), ("irfft", (0,), {"n": 1}),
    ("hfft", (0, 3), {"n": 4, "axis": 0}), ("irfftn", (0, 4), {"s": (4, -1), "axes": (0, 1)}),
    ("irfft2", (0, 0), {"s": (2, 2)}), ("rfftn", (0, 3), {"s": (2, 3), "axes": (0, 1)}),
    ("fft", (0, 8), {}), ("rfft", (8, 0), {"axis": 0}), ("irfft", (0, 5), {}),
    ("fftn", (0, 8), {"axes": (1,)}), ("ihfft", (3, 0, 4), {}),
])
@pytest.mark.parametrize("package", ["numpy", "torch"])
def test_lengths_given_pad_axes_of_length_zero(name, shape, kwargs, package):
    """Lengths given zero-pad an axis of length 0, as NumPy does (c2r transforms too), and an
    axis not transformed may have length 0: the transform of zeros (NumPy's c2r leaves such
    results uninitialized: only its shape and dtype are compared). On CPU torch tensors too,
    whose own FFTs fail on some of these."""
    x = np.zeros(shape, np.float64 if name.startswith(("rfft", "ihfft")) else np.complex128)
    expected = getattr(np.fft, name)(x, **kwargs)
    if package == "torch":
        torch = pytest.importorskip("torch")
        x = torch.from_numpy(x)
    got = getattr(accelmath.fft, name)(x, **kwargs)
    assert type(got) is type(x)
    got = np.asarray(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, np.zeros_like(expected))


def test_zero_size_plan_axes():
    with raises(ValueError, "Invalid number of FFT data points (0) specified along axis 0, which "
                            "has length 0"):
        FFT(np.zeros((0, 4), np.complex128))


@pytest.mark.parametrize("x, dtype", [
    (np.array([1, "a"], dtype=object), "object"),
    (np.array(["a", "b"]), "str"),
    (np.array([b"a", b"b"]), "bytes"),
])
def test_unsupported_dtypes(x, dtype):
    for function in (accelmath.fft.fft, accelmath.fft.rfft, accelmath.fft.irfftn):
        with raises(TypeError, f"unsupported dtype '{dtype}"):
            function(x)


def test_bfloat16_is_refused_with_what_to_do():
    torch = pytest.importorskip("torch")
    for function in (accelmath.fft.fft, accelmath.fft.rfft, accelmath.fft.irfftn):
        with raises(TypeError, "unsupported dtype 'bfloat16' for an FFT (neither cuFFT nor "
                               "NumPy transforms it); convert to float32 first"):
            function(torch.ones(4, dtype=torch.bfloat16))


@pytest.mark.parametrize("name", ["rfft", "ihfft", "rfft2", "rfftn"])
def test_complex_input_to_a_real_transform(name):
    # (the argument named: found by the fuzz)
    with raises(TypeError, "a: a real-to-complex transform needs real input, got dtype "
                           "'complex128'"):
        getattr(accelmath.fft, name)(X)
    with raises(TypeError, "operand: a real-to-complex transform needs real input"):
        FFT(X, kind="r2c")


def test_complex_torch_input_to_rfft():
    torch = pytest.importorskip("torch")
    with raises(TypeError, "needs real input, got dtype 'complex64'"):
        accelmath.fft.rfft(torch.zeros(4, dtype=torch.complex64))


@pytest.mark.parametrize("norm", ["x", "none", "ORTHO", 1])
def test_invalid_norm(norm):
    message = f'Invalid norm value {norm!r}, should be "backward", "ortho" or "forward"'
    with raises(ValueError, message):
        accelmath.fft.fft(X, norm=norm)
    with raises(ValueError, message):
        FFT(X, norm=norm)


def test_invalid_norm_message_exactly():
    with pytest.raises(InvalidArgumentError) as info:
        accelmath.fft.rfftn(X.real, norm="x")
    assert str(info.value) == ('Invalid norm value \'x\', should be "backward", "ortho" or '
                               '"forward"')


def test_invalid_execution():
    with raises(ValueError, 'Invalid execution \'gpu\', should be "auto", "cuda" or "cpu"'):
        accelmath.fft.fft(X, execution="gpu")
    with raises(ValueError, "Invalid execution 'gpu'"):
        FFT(X, execution="gpu")


def test_execution_cuda_for_a_host_plan():
    with raises(ValueError, 'execution="cuda" needs a device operand'):
        FFT(X, execution="cuda")


@pytest.mark.parametrize("other, what", [
    (np.zeros((4, 7), np.complex128), "shape (4, 7), expected (4, 6)"),
    (np.zeros((4, 6), np.complex64), "dtype complex64, expected complex128"),
    (np.zeros((6, 4), np.complex128).T, "strides (1, 4), expected (6, 1)"),
])
def test_operand_of_another_layout(other, what):
    plan = FFT(X)
    with raises(ValueError, "does not match the FFT plan") as info:
        plan.forward(other)
    assert what in str(info.value) and str(info.value).startswith("x does not match")


def test_operand_of_another_package():
    torch = pytest.importorskip("torch")
    with raises(ValueError, "type ndarray"):
        FFT(X).forward(torch.zeros((4, 6), dtype=torch.complex128))


def test_use_after_free():
    plan = FFT(X)
    plan.free()
    for call in (plan.forward, plan.inverse, plan.execute):
        with raises(RuntimeError, "this FFT plan was freed"):
            call()
    with FFT(X) as plan:
        pass
    with raises(RuntimeError, "freed"):
        plan.forward(X)


@pytest.mark.parametrize("name, out, builtin, message", [
    ("fft", np.empty((4, 5), np.complex128), ValueError,
     "out has wrong shape (4, 5) (strides (5, 1)); expected shape (4, 6)"),
    ("fft", np.empty((4, 6), np.complex64), TypeError,
     "Cannot cast the complex128 result into out: out has dtype complex64, expected complex128"),
    ("rfft", np.empty((4, 4), np.float64), TypeError,
     "Cannot cast the complex128 result into out: out has dtype float64"),
    ("irfft2", np.empty((4, 10), np.complex128), TypeError, "expected float64"),
    # a wrong shape is said first, as NumPy says it
    ("irfft2", np.empty((4, 11), np.complex128), ValueError, "out has wrong shape (4, 11)"),
    ("fft", "", TypeError, "out must be of ArrayType: unsupported operand of type builtins.str"),
    # (a dtype accelmath reads nowhere, named: found by the fuzz)
    ("fft", np.empty((4, 6), object), TypeError,
     "Cannot cast the complex128 result into out: unsupported dtype 'object'"),
])
def test_wrong_out_for_a_function(name, out, builtin, message):
    x = X.real if name == "rfft" else X
    with raises(builtin, message):
        getattr(accelmath.fft, name)(x, out=out)


def test_wrong_out_for_a_plan():
    plan = FFT(X)
    with raises(ValueError, "out has wrong shape (4, 5) (strides (5, 1)); expected shape (4, 6)"):
        plan.forward(out=np.empty((4, 5), np.complex128))
    with raises(TypeError, "out has dtype complex64, expected complex128"):
        plan.forward(out=np.empty((4, 6), np.complex64))


@pytest.mark.parametrize("x", ["abc", {"a": 1}, {1, 2}])
def test_unsupported_objects(x):
    name = type(x).__qualname__
    with raises(TypeError, f"a: unsupported operand of type builtins.{name}"):
        accelmath.fft.fft(x)
    with raises(TypeError, f"builtins.{name}"):
        FFT(x)


def test_unsupported_out_object():
    """A list is read as a new NumPy array: a result written there would be lost."""
    with raises(TypeError, "out must be of ArrayType: unsupported operand of type builtins.list"):
        accelmath.fft.fft(X[0], out=[0j] * 6)


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble])
def test_long_double_has_no_gpu_transform(dtype):
    if np.dtype(dtype).itemsize == np.dtype(np.float64).itemsize * (
            2 if np.dtype(dtype).kind == "c" else 1):
        pytest.skip("long double is double precision on this platform")
    with raises(TypeError, "(long double) has no GPU FFT"):
        accelmath.fft.fft(np.zeros(8, dtype), execution="cuda")


def test_memo_hits_are_validated(monkeypatch):
    """A repeated call is remembered, and a later call finds it only if its arguments are
    valid: a bool or a float would equal the int of a valid call in a dict."""
    from accelmath.fft import _transform

    made = []
    host_transform = _transform.host_transform
    monkeypatch.setattr(_transform, "host_transform",
                        lambda *args: made.append(args) or host_transform(*args))
    accelmath.fft.clear_cache()
    x = np.ones((4, 6))
    for _ in range(3):
        accelmath.fft.fft(x, axis=1, workers=1)
        accelmath.fft.fftn(x, s=(4, 6), axes=(0, 1))
    assert len(made) == 2, "repeated calls are remembered"
    with raises(ValueError, "workers must be None or a nonzero integer"):
        accelmath.fft.fft(x, axis=1, workers=True)
    with raises(ValueError, "workers must be None or a nonzero integer"):
        accelmath.fft.fft(x, axis=1, workers=1.0)
    with raises(ValueError, "axis must be an integer, got True"):
        accelmath.fft.fft(x, axis=True, workers=1)
    with raises(ValueError, "s must be an integer, got 4.0"):
        accelmath.fft.fftn(x, s=(4.0, 6), axes=(0, 1))
    with raises(ValueError, "axis must be an integer, got 1.0"):
        accelmath.fft.fftn(x, s=(4, 6), axes=(0, 1.0))


@pytest.mark.gpu
def test_memo_hits_are_validated_on_the_gpu():
    cp = pytest.importorskip("cupy")
    x = cp.ones((4, 6), cp.complex128)
    for _ in range(3):
        accelmath.fft.fft(x)
    for workers in (True, 0, 1.5):
        with raises(ValueError, "workers must be None or a nonzero integer"):
            accelmath.fft.fft(x, workers=workers)


@pytest.mark.parametrize("call", [
    lambda: accelmath.fft.fftn(X, s=(4,), axes=(0, 1)),
    lambda: accelmath.fft.fft2(X, s=(4, 6, 2)),
    lambda: accelmath.fft.irfftn(X, s=(4, 6), axes=(1,)),
])
def test_s_and_axes_of_different_lengths(call):
    with raises(ValueError, "must have the same length"):
        call()


@pytest.mark.parametrize("call, message", [
    (lambda: accelmath.fft.fftn(X, axes=(0.5,)), "axis must be an integer, got 0.5"),
    (lambda: accelmath.fft.fft(X, axis="0"), "axis must be an integer, got '0'"),
    (lambda: accelmath.fft.fftn(X, s=(4.0, 6), axes=(0, 1)), "must be an integer, got 4.0"),
    (lambda: accelmath.fft.fft(X, n=2.5), "must be an integer, got 2.5"),
])
def test_non_integer_axes_and_lengths(call, message):
    with raises(ValueError, message):
        call()


@pytest.mark.parametrize("call, message", [
    (lambda: FFT(X, axes=()), "axes is empty"),
    (lambda: FFT(X, kind="r2r"), 'Invalid kind \'r2r\', should be "c2c", "r2c" or "c2r"'),
    (lambda: FFT(X, last_axis_size=4), "last_axis_size applies to c2r plans only"),
    (lambda: FFT(X, kind="c2r", last_axis_size=12),
     "a c2r output of 12 points on axis 1 needs 7 input points there, but the operand has 6"),
    (lambda: FFT(np.zeros((3, 1), np.complex128), kind="c2r"), "a c2r output of 0 points"),
    (lambda: FFT(X, axes=(0, 2)), "axis 2 is out of bounds"),
    (lambda: FFT(np.zeros((16, 20)), out_strides=(16, 1)), "out_strides (16, 1) do not lay "
     "out shape (16, 11) densely"),
    (lambda: FFT(X, out_strides=(1,)), "out_strides (1,) do not lay out"),
])
def test_bad_plan_arguments(call, message):
    with raises(ValueError, message):
        call()


def test_plan_of_the_wrong_dtype():
    with raises(TypeError, "a c2c plan computes in complex128, but the operand is float64"):
        FFT(np.zeros(4), kind="c2c")
    with raises(TypeError, "real input"):
        FFT(X, kind="r2c")


@pytest.mark.parametrize("kind, direction", [("r2c", "inverse"), ("c2r", "forward")])
def test_direction_of_another_kind(kind, direction):
    plan = FFT(X if kind == "c2r" else X.real, kind=kind)
    with raises(ValueError, f"direction '{direction}' does not fit a {kind} plan"):
        plan.execute(direction=direction)


def test_direction_not_a_string():
    with raises(ValueError, "Invalid direction ['forward']"):
        FFT(X).execute(direction=["forward"])


def test_helpers():
    with raises(ValueError, "n must be at least 1, got 0"):
        accelmath.fft.fftfreq(0)
    with raises(ValueError, "n must be an integer, got 2.5"):
        accelmath.fft.rfftfreq(2.5)
    with raises(ValueError, "axis 3 is out of bounds"):
        accelmath.fft.fftshift(X, axes=3)
    with raises(ValueError, 'device must be None or "cpu"'):
        accelmath.fft.fftfreq(4, device="cuda")


def test_bad_n_and_workers_name_the_argument():
    x = np.ones(8)
    with pytest.raises(InvalidArgumentError, match="n must be an integer"):
        accelmath.fft.fft(x, n=2.5)
    for workers in (0, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="workers"):
            accelmath.fft.fft(x, workers=workers)
        with pytest.raises(InvalidArgumentError, match="workers"):
            FFT(x, workers=workers)
    assert np.allclose(accelmath.fft.fft(x, workers=-1), np.fft.fft(x))


def test_out_that_cannot_take_the_result():
    """A read-only array, or a lazily conjugated or negated torch view (whose memory holds
    other values), cannot be written as ``out``: refused, not silently left unwritten."""
    read_only = np.zeros(X.shape, np.complex128)
    read_only.flags.writeable = False
    with raises(ValueError, "out is read-only"):
        accelmath.fft.fft(X, out=read_only)
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(X)
    with raises(ValueError, "out is a lazily conjugated or negated view"):
        accelmath.fft.fft(t, out=torch.zeros_like(t).conj())
    with raises(ValueError, "out is a lazily conjugated or negated view"):
        accelmath.fft.irfft(t, n=8, out=torch.zeros(X.shape[0], 8, dtype=torch.complex128)
                            .conj().imag)


def test_tensors_on_other_devices():
    torch = pytest.importorskip("torch")
    with raises(TypeError, "tensor on device meta"):
        accelmath.fft.fft(torch.zeros(8, dtype=torch.complex64, device="meta"))


def test_execution_cuda_without_a_gpu():
    from accelmath._core.gpu.device import gpu_available
    from accelmath.errors import NoDeviceError

    if gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(NoDeviceError, match='execution="cuda" needs a CUDA GPU'):
        accelmath.fft.fft(X, execution="cuda")


def test_stream_is_checked_on_the_cpu_too():
    with raises(TypeError, "stream must be"):
        accelmath.fft.fft(X, stream="s")
    with accelmath.fft.FFT(X) as plan:  # a host plan's execute too
        with raises(TypeError, "stream must be"):
            plan.execute(X, stream="s")


def test_cache_limits():
    info = accelmath.fft.cache_info()
    assert set(info) == {"hits", "misses", "size", "bytes", "max_size", "max_bytes"}
    for kwargs in ({"max_size": -1}, {"max_bytes": -5}, {"max_size": 1.5}, {"max_size": "a"}):
        with pytest.raises(InvalidArgumentError, match=next(iter(kwargs))):
            accelmath.fft.set_cache_limits(**kwargs)
    assert accelmath.fft.cache_info() == info


# -- issue 38: half precision and other byte orders, huge lengths, fake device arrays ---------

def _values(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype, kind, reference", [
    ("float16", None, np.fft.rfftn), (">f8", None, np.fft.rfftn), (">f4", None, np.fft.rfftn),
    (">c16", None, np.fft.fftn), (">c8", None, np.fft.fftn), (">c16", "c2r", np.fft.irfftn),
])
def test_host_plans_of_half_precision_and_other_byte_orders(dtype, kind, reference):
    """A host plan of float16 or big-endian data computes what NumPy does (converted first,
    NumPy's result dtype): made from such an operand, and given one after a plan made from
    the native byte order."""
    x = _values(np.random.default_rng(), (4, 6), dtype)
    expected = reference(x)
    kwargs = {} if kind is None else {"kind": kind}
    native = x.astype(x.dtype.newbyteorder("="))
    for template in (x, native):
        with FFT(template, **kwargs) as plan:
            got = plan.execute(x)
            assert got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
            out = np.empty(expected.shape, expected.dtype)
            assert plan.execute(x, out=out) is out
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)
    functions = {np.fft.rfftn: accelmath.fft.rfftn, np.fft.fftn: accelmath.fft.fftn,
                 np.fft.irfftn: accelmath.fft.irfftn}
    got = functions[reference](x)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_host_plans_of_half_precision_torch_tensors():
    torch = pytest.importorskip("torch")
    t = torch.arange(8, dtype=torch.float16)
    with FFT(t) as plan:
        got = plan.execute()
    assert got.dtype == torch.complex64
    np.testing.assert_allclose(got.numpy(), np.fft.rfft(t.numpy()), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("call, s", [
    (lambda: accelmath.fft.fft(np.ones(4), n=2**62), (2**62,)),
    (lambda: accelmath.fft.irfft(np.ones(4, np.complex128), n=2**62), (2**62,)),
    (lambda: accelmath.fft.fftn(np.ones((4, 4)), s=(2**40, 2**40), axes=(0, 1)),
     (2**40, 2**40)),
    (lambda: accelmath.fft.rfft(np.ones((0, 3)), n=2**62), (2**62,)),
])
def test_lengths_no_array_can_hold(call, s):
    """Lengths whose result (or zero-padded input) no array can hold are refused before
    anything is allocated, naming n or s."""
    with raises(ValueError, f"n or s = {s} asks for a "):
        call()
    with raises(ValueError, "more than an array can hold (9223372036854775807 bytes)"):
        call()


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_of_too_many_points(monkeypatch, name):
    from accelmath.errors import OutOfMemoryError

    count = 2**62 if name == "fftfreq" else 2**61 + 1
    with raises(ValueError, f"n = {2**62} asks for a float64 result of shape ({count},): "
                            f"{8 * count} bytes"):
        getattr(accelmath.fft, name)(2**62)

    def out_of_memory(*args):
        raise MemoryError("Unable to allocate")

    monkeypatch.setattr(np.fft, name, out_of_memory)
    with raises(MemoryError, "n = 64 asks for a float64 result of shape") as info:
        getattr(accelmath.fft, name)(64)
    assert isinstance(info.value, OutOfMemoryError)


def test_lengths_that_run_out_of_memory(monkeypatch):
    """An allocation of a padded transform that fails names n or s and the bytes asked for;
    the call is not remembered, so that the same call fails the same way."""
    from accelmath.errors import OutOfMemoryError
    from accelmath.fft import _cpu

    def out_of_memory(self, *args, **kwargs):
        raise MemoryError("Unable to allocate 1.00 KiB")

    monkeypatch.setattr(_cpu.HostTransform, "execute", out_of_memory)
    accelmath.fft.clear_cache()
    for _ in range(2):
        with raises(MemoryError, "n or s = (64,) asks for a complex128 result of shape (64,): "
                                 "1024 bytes (0.0 GiB) (besides the input zero-padded to "
                                 "(64,)), more memory than could be allocated") as info:
            accelmath.fft.fft(np.ones(4), n=64)
        assert isinstance(info.value, OutOfMemoryError)
        assert isinstance(info.value.__cause__, MemoryError)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bounds memory by RLIMIT_AS")
def test_n_of_2_to_the_40_names_n():
    """The case of the issue, allocated for real (in a process whose address space is bounded,
    so that no overcommitting kernel lets 8 TiB through)."""
    code = textwrap.dedent("""
        import resource
        import numpy as np
        import accelmath.fft
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        bound = 1 << 36
        resource.setrlimit(resource.RLIMIT_AS, (bound if hard < 0 else min(bound, hard), hard))
        try:
            accelmath.fft.fft(np.ones(4), n=2**40)
        except MemoryError as exc:
            print(type(exc).__name__, exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OutOfMemoryError n or s = (1099511627776,) asks for a "
                                  "complex128 result of shape (1099511627776,): "
                                  "17592186044416 bytes"), done.stdout


class _FakeDeviceArray:
    """An object whose ``__cuda_array_interface__`` names device memory at an address no
    driver knows."""

    def __init__(self, **changes):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f8",
                                         "data": (0x7F0000001000, False), "version": 3,
                                         **changes}


def test_a_device_array_without_a_gpu(monkeypatch):
    from accelmath._core.gpu import device
    from accelmath._core.operand import protocols
    from accelmath.errors import NoDeviceError

    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "no NVIDIA driver (a test)")
    monkeypatch.setattr(protocols, "pointer_device", lambda ptr: None)
    for call, name in ((lambda: accelmath.fft.fft(_FakeDeviceArray()), "a"),
                       (lambda: FFT(_FakeDeviceArray()), "operand")):
        with raises(RuntimeError, f"{name}: an operand of type {__name__}._FakeDeviceArray has "
                                  f"__cuda_array_interface__ (CUDA device memory), but no CUDA "
                                  f"GPU is usable: no NVIDIA driver (a test)") as info:
            call()
        assert isinstance(info.value, NoDeviceError)


def test_a_malformed_array_interface_names_the_argument():
    with raises(TypeError, "a: the __cuda_array_interface__ of "
                           f"{__name__}._FakeDeviceArray has shape (-4,); expected a dict"):
        accelmath.fft.fft(_FakeDeviceArray(shape=(-4,)))


def test_unhashable_arguments_are_refused_with_the_front_in_place():
    """The memo's front (keying calls on array types whose plans have one) keys plain
    values alone: an unhashable norm or execution still gets the checked path's error, not a
    TypeError, and a bool or float length its own."""
    from accelmath.fft import _transform

    types = _transform.dispatcher.front_types
    added = np.ndarray not in types
    types.add(np.ndarray)
    try:
        x = np.ones(8, complex)
        for _ in range(3):  # (keyed, remembered where it may be, then recalled)
            np.testing.assert_allclose(accelmath.fft.fft(x), np.fft.fft(x))
        with pytest.raises(InvalidArgumentError, match="norm"):
            accelmath.fft.fft(x, norm=["ortho"])
        with pytest.raises(InvalidArgumentError, match="execution"):
            accelmath.fft.fft(x, execution=["cuda"])
        for n in (8.0, True):  # (equal to 8 and 1 in a dict: never keyed)
            accelmath.fft.fft(x, int(n)), accelmath.fft.fft(x, int(n))
            with pytest.raises(TypeError, match="n must be an integer"):
                accelmath.fft.fft(x, n)
    finally:
        if added:
            types.discard(np.ndarray)


def test_numpys_exception_kinds_catch_ours():
    """An axis out of bounds is NumPy's AxisError (an IndexError) too, a non-integer length or
    axis a TypeError too, as NumPy raises them; each stays a ValueError (InvalidArgumentError),
    as before."""
    from accelmath.errors import ArgumentTypeError, AxisError

    x = np.ones(8, complex)
    for call in (lambda: accelmath.fft.fft(x, axis=1), lambda: accelmath.fft.fftn(x, axes=(3,)),
                 lambda: accelmath.fft.fftshift(x, 2)):
        with pytest.raises(IndexError):
            call()
        with pytest.raises(AxisError):
            call()
        with pytest.raises(np.exceptions.AxisError):
            call()
        with pytest.raises(InvalidArgumentError):
            call()
    for call in (lambda: accelmath.fft.fft(x, n=2.0), lambda: accelmath.fft.fft(x, axis=1.0),
                 lambda: accelmath.fft.fftn(x, axes=(0.0,))):
        with pytest.raises(TypeError):
            call()
        with pytest.raises(ArgumentTypeError):
            call()
    for exc in (IndexError, TypeError):  # (what NumPy raises in the same cases)
        with pytest.raises(exc):
            np.fft.fft(x, axis=1) if exc is IndexError else np.fft.fft(x, n=2.0)

"""Prologues and epilogues of the FFT functions and plans, and convolve / correlate /
Convolver against scipy.signal: on the CPU for NumPy arrays and torch tensors, and on the GPU
for CuPy, torch and JAX arrays, each against a float64 NumPy oracle on fresh random data."""

import numpy as np
import pytest
import scipy.signal
from closeness import assert_close

import accelmath.fft as F
from accelmath.errors import InvalidArgumentError, StateError
from accelmath.fusion import frequency

NORMS = ("backward", "ortho", "forward")


def _rng():
    return np.random.default_rng()


# -- epilogues and prologues ----------------------------------------------------------------

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2",
                                  "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                                  "irfftn"])
def test_every_function_takes_an_epilogue_with_the_norm_folded_in(name, norm):
    rng = _rng()
    x = rng.standard_normal((6, 10))
    if name.startswith(("i", "h")) and name not in ("ihfft",) or name in ("fft", "fft2", "fftn"):
        x = x + 1j * rng.standard_normal((6, 10))
    if name == "ihfft":
        x = x.real
    weight = rng.standard_normal()
    expected = getattr(np.fft, name)(x, norm=norm) * weight + 1
    got = getattr(F, name)(x, norm=norm, epilogue=lambda y, w: y * w + 1,
                           epilogue_args=(weight,))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert_close(got, expected, 1e-12)


def test_an_epilogue_may_change_the_dtype_and_read_frequencies_and_arrays():
    rng = _rng()
    x = rng.standard_normal((8, 12))
    power = F.rfft2(x, epilogue=lambda y: abs(y) ** 2)
    assert power.dtype == np.float64
    assert_close(power, np.abs(np.fft.rfft2(x)) ** 2, 1e-12)
    ky, kx = np.fft.fftfreq(8)[:, None], np.fft.rfftfreq(12)[None, :]
    derivative = F.rfft2(x, epilogue=lambda y: y * 2j * np.pi * frequency(-1))
    assert_close(derivative, np.fft.rfft2(x) * 2j * np.pi * kx, 1e-12)
    laplace = F.rfft2(x, epilogue=lambda y: y * (frequency(0) ** 2 + frequency(1) ** 2))
    assert_close(laplace, np.fft.rfft2(x) * (ky ** 2 + kx ** 2), 1e-12)
    weights = rng.standard_normal((8, 7))
    assert_close(F.rfft2(x, norm="ortho", epilogue=lambda y, w: y * w, epilogue_args=(weights,)),
                 np.fft.rfft2(x, norm="ortho") * weights, 1e-12)


def test_a_prologue_feeds_the_transform():
    rng = _rng()
    x = rng.standard_normal(64)
    window = np.hanning(64)
    assert_close(F.rfft(x, prologue=lambda v, w: v * w, prologue_args=(window,)),
                 np.fft.rfft(x * window), 1e-12)
    spectrum = np.fft.rfft(x)
    filtered = F.irfft(spectrum, prologue=lambda y: y * (frequency(0) < 0.1), n=64)
    keep = np.fft.rfftfreq(64) < 0.1
    assert_close(filtered, np.fft.irfft(spectrum * keep, n=64), 1e-12)


def test_none_for_arguments_is_none():
    rng = _rng()
    x = rng.standard_normal(16) + 0j
    twice = np.fft.fft(x * 2) * 3
    assert_close(F.fft(x, prologue=lambda v: v * 2, prologue_args=None,
                       epilogue=lambda y: y * 3, epilogue_args=None), twice, 1e-12)
    with F.FFT(x, epilogue=lambda y: y * 3, epilogue_args=None) as plan:
        assert_close(plan.execute(x * 2, epilogue_args=None), twice, 1e-12)


def test_out_and_torch_tensors():
    torch = pytest.importorskip("torch")
    rng = _rng()
    x = rng.standard_normal((4, 16))
    out = np.empty((4, 9), np.float64)
    assert F.rfft(x, epilogue=lambda y: abs(y), out=out) is out
    assert_close(out, np.abs(np.fft.rfft(x)), 1e-12)
    got = F.fft(torch.from_numpy(x), norm="ortho", epilogue=lambda y: y.conj())
    assert isinstance(got, torch.Tensor)
    assert_close(got.numpy(), np.fft.fft(x, norm="ortho").conj(), 1e-12)


def test_fused_calls_refuse_what_they_cannot_run():
    x = np.ones(8)
    with pytest.raises(InvalidArgumentError, match="epilogue_args given without an epilogue"):
        F.fft(x, epilogue_args=(1.0,))
    with pytest.raises(InvalidArgumentError, match="prologue_args given without a prologue"):
        F.fft(x, prologue_args=(1.0,))
    with pytest.raises(InvalidArgumentError, match="does not broadcast to the result's shape"):
        F.fft(x, epilogue=lambda y, w: y * w, epilogue_args=(np.ones(3),))
    with pytest.raises(InvalidArgumentError, match="out has shape"):
        F.fft(x, epilogue=lambda y: abs(y), out=np.empty(8, np.complex128))
    with pytest.raises(InvalidArgumentError, match="not callable"):
        F.fft(x, epilogue=3)


@pytest.mark.parametrize("norm", NORMS)
def test_a_plan_with_an_epilogue_takes_new_arguments_each_execute(norm):
    rng = _rng()
    x = rng.standard_normal((5, 32)) + 1j * rng.standard_normal((5, 32))
    with F.FFT(x, axes=(1,), norm=norm, epilogue=lambda y, w, s: y * w + s) as plan:
        for _ in range(2):
            w, s = rng.standard_normal(32), rng.standard_normal()
            assert_close(plan.forward(epilogue_args=(w, s)),
                         np.fft.fft(x, axis=1, norm=norm) * w + s, 1e-12)
            assert_close(plan.inverse(x, epilogue_args=(w, s)),
                         np.fft.ifft(x, axis=1, norm=norm) * w + s, 1e-12)
    with pytest.raises(StateError):
        plan.forward(epilogue_args=(w, s))
    plain = F.FFT(x)
    with pytest.raises(InvalidArgumentError, match="need a plan made with"):
        plain.execute(epilogue_args=(1.0,))


def test_a_plan_keeps_the_arguments_it_was_made_with_for_calls_that_give_none():
    rng = _rng()
    x = rng.standard_normal((5, 32)) + 1j * rng.standard_normal((5, 32))
    w, s = rng.standard_normal(32), rng.standard_normal()
    plan = F.FFT(x, axes=(1,), epilogue=lambda y, ww, ss: y * ww + ss, epilogue_args=(w, s))
    assert_close(plan.forward(), np.fft.fft(x, axis=1) * w + s, 1e-12)
    assert_close(plan.execute(x * 2), np.fft.fft(x * 2, axis=1) * w + s, 1e-12)
    w2 = rng.standard_normal(32)
    assert_close(plan.forward(epilogue_args=(w2, 0.0)), np.fft.fft(x, axis=1) * w2, 1e-12)
    real = rng.standard_normal((16, 16))
    window = np.outer(np.hanning(16), np.hanning(16))
    plan = F.FFT(real, prologue=lambda v, ww: v * ww, prologue_args=(window,))
    assert_close(plan.execute(), np.fft.rfft2(real * window), 1e-12)
    with pytest.raises(InvalidArgumentError, match="need a plan made with"):
        F.FFT(x, epilogue_args=(w,))
    with pytest.raises(InvalidArgumentError, match="epilogue_args given without an epilogue"):
        F.FFT(x, prologue=lambda v: v, epilogue_args=(w,))
    one = F.FFT(x, axes=(1,), epilogue=lambda y, ww: y * ww, epilogue_args=w)  # (one value)
    assert_close(one.forward(), np.fft.fft(x, axis=1) * w, 1e-12)


def test_a_real_plan_with_a_prologue_and_an_epilogue():
    rng = _rng()
    x = rng.standard_normal((16, 16))
    window = np.outer(np.hanning(16), np.hanning(16))
    plan = F.FFT(x, prologue=lambda v, w: v * w, epilogue=lambda y: abs(y) ** 2)
    got = plan.execute(x, prologue_args=(window,))
    assert got.dtype == np.float64
    assert_close(got, np.abs(np.fft.rfft2(x * window)) ** 2, 1e-12)


# -- convolve, correlate, Convolver ---------------------------------------------------------

CASES = [((30,), (7,), None), ((7,), (30,), None), ((12, 9), (5, 4), None),
         ((12, 9), (5, 4), (1,)), ((6, 12, 9), (1, 5, 4), (1, 2)), ((4, 10), (4, 3), [-1]),
         ((3, 1, 8), (1, 4, 8), (2,))]


def _pair(rng, s1, s2, dtype):
    def one(shape):
        v = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            v = v + 1j * rng.standard_normal(shape)
        return v.astype(dtype)

    return one(s1), one(s2)


def _tolerance(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _assert_like_scipy(got, expected, a, b, dtype):
    """``got`` is SciPy's ``expected`` (its shape and dtype) to the precision of ``dtype``,
    relative to ||a|| ||b||, the scale of every output element's sum of products (relative to
    the result's own norm, a one-element result whose products cancel would ask for more
    digits than the dtype holds)."""
    assert got.shape == expected.shape and got.dtype == expected.dtype
    error = np.linalg.norm(got.astype(complex) - expected) / (np.linalg.norm(a)
                                                                * np.linalg.norm(b))
    assert error <= _tolerance(dtype), f"relative error {error:.3g}"


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("s1, s2, axes", CASES)
def test_convolve_is_scipy_fftconvolve(s1, s2, axes, mode, dtype):
    a, b = _pair(_rng(), s1, s2, dtype)
    try:
        expected = scipy.signal.fftconvolve(a, b, mode=mode, axes=axes)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)[:30]):
            F.convolve(a, b, mode=mode, axes=axes)
        return
    _assert_like_scipy(F.convolve(a, b, mode=mode, axes=axes), expected, a, b, dtype)


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("s1, s2", [((30,), (7,)), ((7,), (30,)), ((12, 9), (5, 4)),
                                    ((6, 5), (6, 5))])
def test_correlate_is_scipy_correlate(s1, s2, mode, dtype):
    a, b = _pair(_rng(), s1, s2, dtype)
    expected = scipy.signal.correlate(a, b, mode=mode, method="fft")
    _assert_like_scipy(F.correlate(a, b, mode=mode), expected, a, b, dtype)


def test_correlate_along_some_axes_reverses_only_those():
    rng = _rng()
    a, b = rng.standard_normal((3, 20)), rng.standard_normal((3, 6))
    expected = np.stack([scipy.signal.correlate(a[i], b[i]) for i in range(3)])
    assert_close(F.correlate(a, b, axes=1), expected, 1e-12)


def test_integers_promote_and_empty_inputs_give_empty_results():
    a, b = np.arange(10), np.array([1, 2, 3])
    got = F.convolve(a, b)
    assert got.dtype == np.float64
    assert_close(got, np.convolve(a, b).astype(float), 1e-12)
    assert F.convolve(np.ones(0), np.ones(3)).shape == (0,)


@pytest.mark.parametrize("call, message", [
    (lambda: F.convolve(np.ones(3), np.ones((3, 3))), "same dimensionality"),
    (lambda: F.convolve(np.ones(3), np.ones(3), mode="circular"), "acceptable mode flags"),
    (lambda: F.convolve(np.ones((3, 4)), np.ones((2, 4)), axes=(0, 0)), "repeats an axis"),
    (lambda: F.convolve(np.ones((3, 4)), np.ones((2, 5)), axes=0), "incompatible shapes"),
    (lambda: F.convolve(np.ones((3, 4)), np.ones(2)[None], axes=5), "out of range"),
    (lambda: F.convolve(np.ones((5, 2)), np.ones((2, 5)), mode="valid"),
     "at least as large as the other"),
])
def test_convolution_errors_are_scipys(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("correlate", [False, True])
def test_a_convolver_keeps_its_kernel(mode, correlate):
    rng = _rng()
    kernel = rng.standard_normal((5, 3))
    reference = scipy.signal.correlate if correlate else scipy.signal.fftconvolve
    with F.Convolver(kernel, (20, 16), mode=mode, correlate=correlate) as conv:
        for _ in range(3):
            image = rng.standard_normal((20, 16))
            assert_close(conv(image), reference(image, kernel, mode=mode), 1e-12)
        with pytest.raises(InvalidArgumentError, match="images of shape"):
            conv(np.ones((16, 20)))
    with pytest.raises(StateError, match="freed"):
        conv(image)
    with pytest.raises(InvalidArgumentError, match="needs images at least as large"):
        F.Convolver(np.ones((30, 20)), (20, 16), mode="valid")


# -- on a GPU -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_fft_on_cupy(cp, dtype):
    rng = _rng()
    x = rng.standard_normal((64, 96)).astype(dtype)
    k = (rng.standard_normal((64, 49)) + 1j * rng.standard_normal((64, 49))).astype(
        np.result_type(dtype, np.complex64))
    dx, dk = cp.asarray(x), cp.asarray(k)
    got = F.irfft2(F.rfft2(dx), s=(64, 96), prologue=lambda y, kk: y * kk,
                   prologue_args=(dk,))
    expected = np.fft.irfft2(np.fft.rfft2(x.astype(np.float64)) * k, s=(64, 96))
    assert isinstance(got, cp.ndarray) and got.dtype == dtype
    assert_close(got.get(), expected, _tolerance(dtype))
    power = F.rfft2(dx, norm="ortho", epilogue=lambda y: abs(y) ** 2 * frequency(1))
    assert_close(power.get(), np.abs(np.fft.rfft2(x.astype(np.float64), norm="ortho")) ** 2
                 * np.fft.rfftfreq(96), 4 * _tolerance(dtype))
    with F.FFT(dx.astype(np.result_type(dtype, np.complex64)), axes=(1,),
               epilogue=lambda y, w: y * w) as plan:
        for _ in range(2):
            w = cp.asarray(rng.standard_normal(96).astype(dtype))
            assert_close(plan.forward(epilogue_args=(w,)).get(),
                         np.fft.fft(x.astype(np.float64), axis=1) * w.get(), _tolerance(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_on_cupy_and_torch(cp, torch_cuda, mode):
    torch = torch_cuda
    rng = _rng()
    a, b = rng.standard_normal((40, 33)), rng.standard_normal((9, 7))
    got = F.convolve(cp.asarray(a), cp.asarray(b), mode=mode)
    assert isinstance(got, cp.ndarray)
    assert_close(got.get(), scipy.signal.fftconvolve(a, b, mode=mode), 1e-12)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    got = F.correlate(ta, tb, mode=mode)
    assert isinstance(got, torch.Tensor)
    assert_close(got.cpu().numpy(), scipy.signal.correlate(a, b, mode=mode), 1e-12)
    with F.Convolver(tb, (40, 33), mode=mode) as conv:
        assert_close(conv(ta).cpu().numpy(), scipy.signal.fftconvolve(a, b, mode=mode), 1e-12)


@pytest.mark.gpu
def test_convolve_on_jax(jax_gpu):
    jnp = jax_gpu.numpy
    rng = _rng()
    a, b = rng.standard_normal((3, 50)), rng.standard_normal((3, 11))
    got = F.convolve(jnp.asarray(a), jnp.asarray(b), mode="same", axes=1)
    assert_close(np.asarray(got), scipy.signal.fftconvolve(a, b, mode="same", axes=1), 1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_a_remembered_fused_call_takes_new_arrays_and_scalars(cp, torch_cuda, package):
    from accelmath.fft._fusion import call as _fused_call

    rng = _rng()

    def device(a):
        return cp.asarray(a) if package == "cupy" else torch_cuda.from_numpy(a).cuda()

    def host(a):
        return a.get() if package == "cupy" else a.cpu().numpy()

    epilogue = lambda y, w, s: y * w + s  # noqa: E731
    known = len(_fused_call._remembered)
    for norm in ("backward", "ortho", "backward"):
        x = (rng.standard_normal((8, 64)) + 1j * rng.standard_normal((8, 64))).astype(
            np.complex64)
        w = rng.standard_normal(64).astype(np.complex64)
        s = float(rng.standard_normal())
        got = F.fft(device(x), norm=norm, epilogue=epilogue, epilogue_args=(device(w), s))
        assert_close(host(got), np.fft.fft(x.astype(np.complex128), norm=norm) * w + s, 1e-5)
    assert len(_fused_call._remembered) == known + 2  # (one call per norm, remembered once)
    # a view read through a copy (a conjugated tensor) is read as what it stands for
    if package == "torch":
        x = rng.standard_normal(64).astype(np.complex64)
        w = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64)
        for _ in range(2):
            got = F.fft(device(x), epilogue=epilogue, epilogue_args=(device(w).conj(), 0.0))
            assert_close(host(got), np.fft.fft(x.astype(np.complex128)) * w.conj(), 1e-5)


@pytest.mark.gpu
def test_a_remembered_fused_call_takes_arrays_and_scalars_in_every_slot(cp):
    # two arrays (one broadcast down the rows: the strided form) and two scalars of two types,
    # new values in each call: each reaches its own kernel parameter
    rng = _rng()
    epilogue = lambda y, a, s, b, t: (y * a + s) * b - t  # noqa: E731
    for _ in range(3):
        x = (rng.standard_normal((6, 32)) + 1j * rng.standard_normal((6, 32))).astype(
            np.complex128)
        a = rng.standard_normal((6, 1))
        b = rng.standard_normal(32) + 1j * rng.standard_normal(32)
        s, t = float(rng.standard_normal()), complex(rng.standard_normal(), 1.0)
        got = F.fft(cp.asarray(x), norm="ortho", epilogue=epilogue,
                    epilogue_args=(cp.asarray(a), s, cp.asarray(b), t))
        expected = (np.fft.fft(x, norm="ortho") * a + s) * b - t
        assert_close(got.get(), expected, 1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_a_remembered_prologue_call_takes_new_arrays_and_scalars(cp, torch_cuda, package):
    from accelmath.fft._fusion import call as _fused_call

    rng = _rng()

    def device(a):
        return cp.asarray(a) if package == "cupy" else torch_cuda.from_numpy(a).cuda()

    def host(a):
        return a.get() if package == "cupy" else a.cpu().numpy()

    prologue = lambda s, k, g: s * k * g  # noqa: E731
    known = len(_fused_call._remembered)
    for norm in ("backward", "ortho", "backward", "ortho"):
        r = rng.standard_normal((16, 30))
        spectrum = np.fft.rfft2(r).astype(np.complex64)
        k = (rng.standard_normal(16) + 0j)[:, None].astype(np.complex64)  # (broadcast)
        g = float(rng.standard_normal())
        got = F.irfft2(device(spectrum), s=(16, 30), norm=norm, prologue=prologue,
                       prologue_args=(device(k), g))
        expected = np.fft.irfft2(spectrum.astype(np.complex128) * k * g, s=(16, 30), norm=norm)
        assert got.shape == (16, 30)
        assert_close(host(got), expected, 1e-5)
    assert len(_fused_call._remembered) == known + 2  # (one call per norm, remembered once)
    # the input is read as given each call: a conjugated torch view is not read as its memory
    if package == "torch":
        x = (rng.standard_normal(32) + 1j * rng.standard_normal(32)).astype(np.complex64)
        for _ in range(2):
            got = F.fft(device(x).conj(), prologue=lambda z: z * 2)
            assert_close(host(got), np.fft.fft(x.conj().astype(np.complex128) * 2), 1e-5)


@pytest.mark.gpu
def test_a_remembered_prologue_call_refuses_a_misaligned_input(cp):
    base = cp.zeros(65, cp.complex64)
    aligned = cp.ndarray((64,), cp.complex64, memptr=base.data + 8)
    prologue = lambda z: z * 2  # noqa: E731
    for _ in range(2):
        F.fft(aligned, prologue=prologue)
    misaligned = cp.ndarray((64,), cp.complex64, memptr=base.data + 2)
    with pytest.raises(InvalidArgumentError, match="not aligned"):
        F.fft(misaligned, prologue=prologue)
    cp.cuda.Device().synchronize()


@pytest.mark.gpu
def test_remembered_fused_calls_from_several_threads(cp):
    import concurrent.futures

    epilogue = lambda y, w, s: y * w + s  # noqa: E731
    x0 = cp.asarray(np.arange(64.0) + 1j)
    F.fft(x0, epilogue=epilogue, epilogue_args=(x0, 1.0))  # (remembered from here on)
    cp.cuda.Device().synchronize()

    def calls(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.standard_normal(64) + 1j * rng.standard_normal(64)
            w = rng.standard_normal(64) + 1j * rng.standard_normal(64)
            s = float(rng.standard_normal())
            got = F.fft(cp.asarray(x), epilogue=epilogue, epilogue_args=(cp.asarray(w), s))
            assert_close(got.get(), np.fft.fft(x) * w + s, 1e-12)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(calls, range(4)))


@pytest.mark.gpu
def test_a_remembered_fused_call_refuses_a_misaligned_argument(cp):
    x = cp.asarray(np.arange(64.0, dtype=np.complex64))
    base = cp.zeros(65, cp.complex64)
    aligned = cp.ndarray((64,), cp.complex64, memptr=base.data + 8)
    epilogue = lambda y, w: y * w  # noqa: E731
    for _ in range(2):
        F.fft(x, epilogue=epilogue, epilogue_args=(aligned,))
    misaligned = cp.ndarray((64,), cp.complex64, memptr=base.data + 2)
    with pytest.raises(InvalidArgumentError, match="not aligned"):
        F.fft(x, epilogue=epilogue, epilogue_args=(misaligned,))
    cp.cuda.Device().synchronize()


@pytest.mark.gpu
def test_a_remembered_fused_call_sees_a_changed_closure_value(cp):
    x = np.arange(16.0) + 1j
    gain = 2.0
    epilogue = lambda y: y * gain  # noqa: E731
    for value in (2.0, 3.0, 3.0):
        gain = value
        got = F.fft(cp.asarray(x), epilogue=epilogue)
        assert_close(got.get(), np.fft.fft(x) * value, 1e-12)


# -- what a review found ------------------------------------------------------------------

@pytest.mark.parametrize("wrong", [{"axis": 1.0}, {"axis": True}, {"workers": 2.0},
                                   {"prologue_args": (1.0,)}])
def test_a_call_like_a_remembered_one_but_for_a_wrong_argument_is_refused(wrong):
    x = np.ones((4, 8)) + 0j
    epilogue = lambda y: y * 2  # noqa: E731
    arguments = {"axis": 1, **wrong}
    F.fft(x, axis=1, epilogue=epilogue)  # (remembered: its geometry)
    with pytest.raises(InvalidArgumentError):
        F.fft(x, epilogue=epilogue, **arguments)


@pytest.mark.parametrize("given", [0.0, False, np.float64(0), np.ones(8), (1.0,), [2.0]],
                         ids=["0.0", "False", "numpy-0", "array", "tuple", "list"])
@pytest.mark.parametrize("role", ["prologue", "epilogue"])
def test_arguments_without_their_function_are_refused(role, given):
    # (falsy scalars and arrays too: none is taken for "no arguments")
    x = np.ones(8) + 0j
    with pytest.raises(InvalidArgumentError, match=f"{role}_args given without"):
        F.fft(x, **{f"{role}_args": given})
    other = "epilogue" if role == "prologue" else "prologue"
    with pytest.raises(InvalidArgumentError, match=f"{role}_args given without"):
        F.fft(x, **{other: lambda y: y * 2, f"{role}_args": given})
    with pytest.raises(InvalidArgumentError, match="need a plan made with"):
        F.FFT(x).execute(x, **{f"{role}_args": given})


@pytest.mark.parametrize("role", ["prologue", "epilogue"])
def test_an_unhashable_norm_is_refused_as_a_norm_on_the_memo_path(role):
    # a torch tensor has a memo key (a CPU one too); the norm makes it unhashable
    torch = pytest.importorskip("torch")
    x = torch.ones(8, dtype=torch.complex128)
    with pytest.raises(InvalidArgumentError, match="norm"):
        F.fft(x, norm=["ortho"], **{role: lambda y: y * 2})


@pytest.mark.gpu
@pytest.mark.parametrize("wrong", [{"axis": 1.0}, {"axis": True}, {"workers": 2.0},
                                   {"prologue_args": (1.0,)}])
def test_a_remembered_device_call_refuses_a_wrong_argument(cp, wrong):
    x = cp.ones((4, 8), cp.complex64)
    epilogue = lambda y: y * 2  # noqa: E731
    for _ in range(2):  # (the second call runs as remembered)
        F.fft(x, axis=1, epilogue=epilogue)
    with pytest.raises(InvalidArgumentError):
        F.fft(x, epilogue=epilogue, **{"axis": 1, **wrong})


def test_clear_cache_forgets_the_fused_calls():
    from accelmath.fft._fusion import call as _fused_call

    F.fft(np.ones(8) + 0j, epilogue=lambda y: y * 2)
    assert _fused_call._geometries
    F.clear_cache()
    assert not _fused_call._geometries and not _fused_call._remembered

def test_values_read_through_an_object_are_not_kept_from_an_earlier_call():
    class Gain:
        value = 4.0

    gain = Gain()
    x = np.arange(4.0) + 0j
    for value in (4.0, 5.0):
        gain.value = value
        got = F.fft(x, epilogue=lambda y: y * gain.value)
        assert_close(got, np.fft.fft(x) * value, 1e-12)
    for scale, dtype in ((2.0, np.complex128), (np.float32(2.0), np.complex128),
                         (2.0, np.complex128)):
        assert F.fft(x, epilogue=lambda y: y * scale).dtype == dtype
    single = x.astype(np.complex64)
    for scale, dtype in ((2.0, np.complex64), (np.float64(2.0), np.complex128)):
        assert F.fft(single, epilogue=lambda y: y * scale).dtype == dtype


def test_an_epilogue_never_writes_into_the_input():
    x = np.arange(4.0) + 0j
    kept = x.copy()
    got = F.fftn(x, axes=(), epilogue=lambda y: y * 2)
    np.testing.assert_array_equal(x, kept)
    np.testing.assert_array_equal(got, kept * 2)


def test_out_that_is_a_lazily_conjugated_view_is_refused():
    torch = pytest.importorskip("torch")
    x = torch.arange(4.0, dtype=torch.float64)
    out = torch.zeros(3, dtype=torch.complex128).conj()
    with pytest.raises(TypeError, match="read through a copy"):
        F.rfft(x, epilogue=lambda y: y * 2, out=out)


def test_empty_convolutions_keep_the_kind():
    jnp = pytest.importorskip("jax.numpy")
    got = F.convolve(jnp.ones(0), jnp.ones(3))
    assert "jax" in type(got).__module__ and got.shape == (0,)


def test_a_half_precision_plan_on_the_cpu_takes_a_prologue():
    x = np.random.default_rng().standard_normal(16).astype(np.float16)
    with F.FFT(x, prologue=lambda v, s: (v * s).astype(np.float16)) as plan:
        got = plan.execute(x, prologue_args=(2.0,))
    expected = np.fft.rfft((x * np.float16(2)).astype(np.float64))
    assert_close(got, expected, 2e-3)
    with pytest.raises(InvalidArgumentError, match="the plan takes float16 operands"):
        F.FFT(x, prologue=lambda v: v * np.float32(2)).execute(x)


@pytest.mark.parametrize("s1, s2", [((4, 16), (1, 5)), ((1, 16), (4, 5)),
                                    ((4, 1, 16), (1, 3, 5)), ((3, 4, 16), (3, 1, 5))])
@pytest.mark.parametrize("mode", ["full", "same"])
def test_batches_that_broadcast_convolve_as_scipy(s1, s2, mode):
    # (one batch broadcast to the other's: the larger spectrum is the inverse's input and
    # the other its prologue's argument; each broadcasting: their product first)
    rng = np.random.default_rng()
    a = rng.standard_normal(s1)
    b = rng.standard_normal(s2) + 1j * rng.standard_normal(s2)
    expected = scipy.signal.fftconvolve(a, b, mode=mode, axes=-1)
    assert_close(F.convolve(a, b, mode=mode, axes=-1), expected, 1e-12, same_type=True)
    with F.Convolver(b, s1, mode=mode, axes=-1) as convolver:
        assert_close(convolver(a), expected, 1e-12, same_type=True)


def test_importing_fft_does_not_load_the_fusion_layer():
    import subprocess
    import sys

    code = ("import sys, accelmath.fft; "
            "print('accelmath.fusion' in sys.modules, 'accelmath.fft._fusion.call' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "False"]

"""The accelmath.fft functions against numpy.fft, the oracle (as CuPy's FFT tests do).

Every test body runs on NumPy arrays, CPU PyTorch tensors and CPU JAX arrays and, with a GPU,
on CuPy arrays, CUDA PyTorch tensors and GPU JAX arrays (each skipped without its package), on
fresh random data seeded by the test's parameters: random shapes
(primes, odd sizes, 1), random axes subsets and orders (negative ones too), every norm, cut
and padded lengths, strided and reversed views, integer and bool inputs, ``out=``, single
precision.
"""

import zlib

import numpy as np
import pytest

import accelmath.fft

ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_AXES = ["fft2", "ifft2", "rfft2", "irfft2"]
N_AXES = ["fftn", "ifftn", "rfftn", "irfftn"]
ALL = ONE_AXIS + TWO_AXES + N_AXES
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn"}  # complex input is refused
HALF_INPUT = {"irfft", "hfft", "irfft2", "irfftn"}  # c2r: output length from n or s
NORMS = [None, "backward", "ortho", "forward"]
SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17]
SEEDS = range(12)


class NumPy:
    name = "numpy"
    gpu = False

    def asarray(self, a):
        return a

    def to_numpy(self, r):
        assert isinstance(r, np.ndarray), f"expected a numpy.ndarray, got {type(r)}"
        return r

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)


class Torch:
    name = "torch"
    gpu = False

    def __init__(self, torch):
        self.torch = torch

    def asarray(self, a):
        # torch has no negative strides: reversed views are copied
        return self.torch.from_numpy(a if all(s >= 0 for s in a.strides) else a.copy())

    def to_numpy(self, r):
        assert isinstance(r, self.torch.Tensor), f"expected a torch.Tensor, got {type(r)}"
        assert r.device.type == "cpu"
        return r.numpy()

    def empty(self, shape, dtype):
        return self.torch.from_numpy(np.empty(shape, dtype))


class Jax:
    name = "jax"
    gpu = False

    def __init__(self, jax):
        jax.config.update("jax_enable_x64", True)
        self.jax = jax

    def asarray(self, a):
        return self.jax.numpy.asarray(a)

    def to_numpy(self, r):
        assert isinstance(r, self.jax.Array), f"expected a jax.Array, got {type(r)}"
        assert r.devices() == {self.jax.devices("cpu")[0]}
        return np.asarray(r)

    def empty(self, shape, dtype):
        pytest.skip("JAX arrays cannot be out= (test_jax_out_refused)")


class CuPy:
    """CuPy device arrays; views of host arrays are the same views of a device copy."""

    name = "cupy"
    gpu = True

    def __init__(self, cp):
        self.cp = cp

    def asarray(self, a):
        base = a.base if isinstance(a.base, np.ndarray) else None
        if base is None or not base.flags.c_contiguous:
            return self.cp.asarray(a)
        offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        copy = self.cp.asarray(base)
        return self.cp.ndarray(a.shape, a.dtype, copy.data + offset, strides=a.strides)

    def to_numpy(self, r):
        assert isinstance(r, self.cp.ndarray), f"expected a cupy.ndarray, got {type(r)}"
        return self.cp.asnumpy(r)

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype)


class TorchCuda(Torch):
    name = "torch-cuda"
    gpu = True

    def asarray(self, a):
        return super().asarray(a).cuda()

    def to_numpy(self, r):
        assert isinstance(r, self.torch.Tensor), f"expected a torch.Tensor, got {type(r)}"
        assert r.device.type == "cuda"
        return r.cpu().numpy()

    def empty(self, shape, dtype):
        return super().empty(shape, dtype).cuda()


class JaxGpu(Jax):
    name = "jax-gpu"
    gpu = True

    def asarray(self, a):
        return self.jax.device_put(a, self.jax.devices("gpu")[0])

    def to_numpy(self, r):
        assert isinstance(r, self.jax.Array), f"expected a jax.Array, got {type(r)}"
        assert r.devices() == {self.jax.devices("gpu")[0]}
        return np.asarray(r)


def _gpu_jax():
    jax = pytest.importorskip("jax")
    try:
        jax.devices("gpu")
    except RuntimeError:
        pytest.skip("JAX without a GPU")
    return JaxGpu(jax)


def _cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return TorchCuda(torch)


# The same cases on the CPU path and, with a GPU, on device arrays of each package.
_PACKAGES = {"numpy": NumPy, "torch": lambda: Torch(pytest.importorskip("torch")),
             "jax": lambda: Jax(pytest.importorskip("jax")),
             "cupy": lambda: CuPy(pytest.importorskip("cupy")), "torch-cuda": _cuda_torch,
             "jax-gpu": _gpu_jax}


@pytest.fixture(params=["numpy", "torch", "jax"] + [
    pytest.param(name, marks=pytest.mark.gpu) for name in ("cupy", "torch-cuda", "jax-gpu")])
def xp(request):
    return _PACKAGES[request.param]()


def rng_for(*key):
    """A generator seeded by the test's parameters (reproducible, distinct per case)."""
    return np.random.default_rng([zlib.crc32(repr(key).encode())])


def random_input(rng, name, shape, dtype=np.float64):
    x = rng.standard_normal(shape).astype(dtype)
    if name not in REAL_INPUT and (name in HALF_INPUT or rng.random() < 0.7):
        x = x + 1j * rng.standard_normal(shape).astype(dtype)
    return x


def assert_close(actual, expected, rtol=1e-10, what=""):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    error = np.linalg.norm(actual - expected)
    scale = np.linalg.norm(expected)
    assert error <= rtol * max(scale, 1e-300), f"{what}: relative error {error / scale:.3g}"


def random_one_axis_case(rng, name):
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.choice(SIZES, ndim))
    axis = int(rng.integers(-ndim, ndim))
    m = shape[axis]
    n = [None, None, max(1, m - 1), m + int(rng.integers(1, 4)), int(rng.integers(1, 20))][
        int(rng.integers(5))]
    if name in HALF_INPUT and n is None and m == 1:
        n = int(rng.integers(1, 6))  # the default 2 * (m - 1) would be 0
    return shape, axis, n


OMIT = object()  # leave axes to the function's default


def random_many_axes_case(rng, name):
    """(shape, axes to pass or OMIT, the axes they resolve to, s) for a 2-D or n-D function."""
    two = name in TWO_AXES
    ndim = int(rng.integers(2 if two else 1, 5))
    shape = [int(v) for v in rng.choice(SIZES, ndim)]
    if int(np.prod(shape)) > 4000:  # keep it fast
        shape = [min(v, 5) for v in shape]
    count = 2 if two else int(rng.integers(1, ndim + 1))
    omit = rng.random() < 0.3
    if omit:  # (-2, -1) for the 2-D functions; the last len(s) axes, or all, for the n-D ones
        axes = tuple(range(-count, 0))
        with_s = rng.random() < 0.5 or count < ndim
    else:
        axes = tuple(int(a) - (ndim if rng.random() < 0.3 else 0)
                     for a in rng.permutation(ndim)[:count])
        with_s = rng.random() < 0.5
    s = None
    if with_s or name in HALF_INPUT and shape[axes[-1]] == 1:
        s = tuple(max(1, shape[a] + int(rng.integers(-2, 4))) for a in axes)
    passed = OMIT
    if not omit:
        passed = axes
    elif not two and rng.random() < 0.5:
        passed = None  # the same as omitting them
    return tuple(shape), passed, axes, s


# --- one-axis functions ----------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ONE_AXIS)
def test_one_axis_functions(xp, name, seed):
    rng = rng_for(name, seed)
    shape, axis, n = random_one_axis_case(rng, name)
    norm = NORMS[int(rng.integers(4))]
    x = random_input(rng, name, shape)
    expected = getattr(np.fft, name)(x, n, axis, norm)
    actual = getattr(accelmath.fft, name)(xp.asarray(x), n, axis, norm)
    assert_close(xp.to_numpy(actual), expected, what=f"{name}{shape} n={n} axis={axis} {norm}")


@pytest.mark.parametrize("name", ONE_AXIS)
def test_length_4088(xp, name):
    rng = rng_for(name, 4088)
    shape = (2045,) if name in HALF_INPUT else (4088,)  # c2r: 4088 outputs by default
    x = random_input(rng, name, shape)
    for norm in NORMS:
        expected = getattr(np.fft, name)(x, norm=norm)
        actual = getattr(accelmath.fft, name)(xp.asarray(x), norm=norm)
        assert expected.shape[-1] in (4088, 2045)
        assert_close(xp.to_numpy(actual), expected, what=f"{name} 4088 {norm}")


@pytest.mark.parametrize("name", ["irfft", "hfft"])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 15, 16])
def test_odd_and_even_output_lengths(xp, name, n):
    rng = rng_for(name, n)
    x = random_input(rng, name, (3, 9))
    assert_close(xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x), n)),
                 getattr(np.fft, name)(x, n), what=f"{name} n={n}")


# --- several axes ----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", TWO_AXES + N_AXES)
def test_many_axes_functions(xp, name, seed):
    rng = rng_for(name, seed)
    shape, passed, axes, s = random_many_axes_case(rng, name)
    norm = NORMS[int(rng.integers(4))]
    x = random_input(rng, name, shape)
    expected = getattr(np.fft, name)(x, s, axes, norm)  # axes explicit: numpy 2 wants them
    kwargs = {} if passed is OMIT else {"axes": passed}
    actual = getattr(accelmath.fft, name)(xp.asarray(x), s, norm=norm, **kwargs)
    assert_close(xp.to_numpy(actual), expected,
                 what=f"{name}{shape} s={s} axes={kwargs.get('axes', 'default')} {norm}")


@pytest.mark.parametrize("name", N_AXES)
def test_all_axes_by_default(xp, name):
    rng = rng_for(name, "all")
    x = random_input(rng, name, (3, 4, 5))
    assert_close(xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x))),
                 getattr(np.fft, name)(x), what=name)


# --- layouts ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_strided_and_reversed_views(xp, name):
    rng = rng_for(name, "views")
    base = random_input(rng, name, (9, 14, 12))
    views = [base[::2, 1::3, ::-1], base[::-2, :, 2:11].transpose(2, 0, 1),
             base[1:8, ::2, ::3].transpose(1, 2, 0), np.asfortranarray(base[:, :5, :7])]
    for x in views:
        if name in ONE_AXIS:
            args = (None, 0)  # n, axis
        elif name in TWO_AXES:
            args = (None, (2, 0))
        else:
            args = (None, (-1, 0, 1))
        expected = getattr(np.fft, name)(x, *args)
        actual = getattr(accelmath.fft, name)(xp.asarray(x), *args)
        assert_close(xp.to_numpy(actual), expected, what=f"{name} strides {x.strides}")


def test_torch_views():
    torch = pytest.importorskip("torch")
    t = torch.randn(8, 6, 10, dtype=torch.complex128)
    for view in (t[::2, :, 1::2], t.permute(2, 0, 1), t.transpose(0, 1)[:, 1:]):
        assert not view.is_contiguous()
        expected = np.fft.fftn(view.numpy(), axes=(0, 2))
        actual = accelmath.fft.fftn(view, axes=(0, 2))
        assert isinstance(actual, torch.Tensor)
        assert_close(actual.numpy(), expected, what=f"torch strides {view.stride()}")


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "irfft2", "rfftn"])
def test_batched_stacks(xp, name):
    rng = rng_for(name, "batch")
    x = random_input(rng, name, (5, 3, 8, 6))
    kwargs = {"axis": -1} if name in ONE_AXIS else {"axes": (-2, -1)}
    expected = getattr(np.fft, name)(x, **kwargs)
    actual = getattr(accelmath.fft, name)(xp.asarray(x), **kwargs)
    assert_close(xp.to_numpy(actual), expected, what=name)


# --- dtypes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", ALL)
def test_integer_and_bool_inputs_promote_like_numpy(xp, name, dtype):
    rng = rng_for(name, np.dtype(dtype).name)
    x = rng.integers(0, 2 if dtype is np.bool_ else 9, (4, 6)).astype(dtype)
    expected = getattr(np.fft, name)(x)
    actual = xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x)))
    assert actual.dtype == (np.float64 if name in HALF_INPUT else np.complex128)
    assert_close(actual, expected, what=f"{name} {np.dtype(dtype).name}")


@pytest.mark.parametrize("name", ALL)
def test_single_precision(xp, name):
    rng = rng_for(name, "single")
    x = random_input(rng, name, (6, 10), np.float32)
    result = xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x), norm="ortho"))
    assert result.dtype == (np.float32 if name in HALF_INPUT else np.complex64)
    wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    expected = getattr(np.fft, name)(wide, norm="ortho")
    assert_close(result.astype(expected.dtype), expected, rtol=1e-5, what=f"{name} single")


# --- out= ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_out(xp, name):
    rng = rng_for(name, "out")
    x = random_input(rng, name, (5, 8))
    expected = getattr(np.fft, name)(x, norm="forward")
    out = xp.empty(expected.shape, expected.dtype)
    result = getattr(accelmath.fft, name)(xp.asarray(x), norm="forward", out=out)
    assert result is out
    assert_close(xp.to_numpy(out), expected, what=f"{name} out=")


def test_jax_out_refused():
    """JAX arrays are immutable: out= of one is refused, naming the argument, by the
    functions and by plans."""
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.zeros((4, 8), dtype=jnp.complex64)
    with pytest.raises(ValueError, match="out is a jax array"):
        accelmath.fft.fft(x, out=jnp.zeros_like(x))
    with pytest.raises(ValueError, match="out is a jax array"):
        accelmath.fft.FFT(x).execute(out=jnp.zeros_like(x))


def test_execution_cpu_on_host(xp):
    if xp.gpu:
        pytest.skip("execution=\"cpu\" takes host arrays")
    x = random_input(rng_for("cpu"), "fft", (4, 8))
    actual = accelmath.fft.fft(xp.asarray(x), execution="cpu", workers=2)
    assert_close(xp.to_numpy(actual), np.fft.fft(x), what="execution=cpu")


@pytest.mark.parametrize("name", ["fftn", "rfftn", "irfftn"])
def test_numpy_2_arguments(xp, name):
    """``s`` of -1 for "the input's length", the input named ``a``, NumPy integers for
    ``workers``, as numpy.fft and scipy.fft take them."""
    x = random_input(rng_for(name), name, (6, 5, 4))
    expected = getattr(np.fft, name)(x, s=(-1, 7), axes=(0, 2))
    actual = getattr(accelmath.fft, name)(a=xp.asarray(x), s=(-1, 7), axes=(0, 2),
                                          workers=np.int64(2))
    assert_close(xp.to_numpy(actual), expected, what=name)


def test_in_place(xp):
    """``out`` the input itself, as numpy.fft allows."""
    if xp.name.startswith("jax"):
        pytest.skip("JAX arrays are immutable")
    x = random_input(rng_for("in place"), "fft2", (3, 8, 6))
    a = xp.asarray(x.copy())
    result = accelmath.fft.fft2(a, out=a)
    assert result is a
    assert_close(xp.to_numpy(a), np.fft.fft2(x), what="in place")


def test_input_is_not_modified(xp):
    x = random_input(rng_for("keep"), "irfft2", (6, 5))
    keep = x.copy()
    accelmath.fft.irfft2(xp.asarray(x))
    assert np.array_equal(x, keep)


def test_torch_layouts_from_meta_tensors():
    """The layout a torch result gets comes from torch's own meta transforms (its CUDA
    layouts); other packages keep the default."""
    torch = pytest.importorskip("torch")
    from accelmath._core.operand import wrap_operand
    from accelmath.fft._functions import _package_strides

    real = wrap_operand(torch.zeros(6, 40, 32))
    spectrum = torch.zeros(6, 40, 17, dtype=torch.complex64)
    meta = torch.fft.rfftn(torch.zeros(6, 40, 32, device="meta"), dim=(0, 1)).stride()
    assert _package_strides("r2c", real, (0, 1), None) == tuple(meta) == (1, 6, 126)
    assert _package_strides("r2c", real, (2,), None) == (680, 17, 1)
    # irfftn over several axes: the halved axis fastest, the others in the input's order
    assert _package_strides("c2r", wrap_operand(spectrum.transpose(0, 1)), (0, 1, 2),
                            32) == (32, 1280, 1)
    # a c2c over a slow axis writes it fastest
    assert _package_strides("c2c", wrap_operand(spectrum), (0,), None) == (1, 102, 6)
    assert _package_strides("r2c", wrap_operand(np.zeros((6, 40, 32))), (0, 1), None) is None

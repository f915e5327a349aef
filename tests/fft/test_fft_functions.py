"""The accelmath.fft functions against numpy.fft, the oracle (as CuPy's FFT tests do).

Every test body runs on NumPy arrays, CPU PyTorch tensors and CPU JAX arrays and, with a GPU,
on CuPy arrays, CUDA PyTorch tensors, GPU JAX arrays and Numba device arrays (each skipped
without its package), on
fresh random data seeded by the test's parameters: random shapes
(primes, odd sizes, 1), random axes subsets and orders (negative ones too), every norm, cut
and padded lengths, strided and reversed views, integer and bool inputs, ``out=``, single
precision.
"""

import contextlib
import zlib

import numpy as np
import pytest
from closeness import assert_close

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
        # (on the CPU also where JAX has a GPU: its default device)
        return self.jax.device_put(a, self.jax.devices("cpu")[0])

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


class NumbaGpu:
    """Numba device arrays; views of host arrays (positive strides) are the same views of a
    device copy."""

    name = "numba"
    gpu = True

    def __init__(self, cuda):
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        self.cuda, self.array_type = cuda, DeviceNDArray

    def asarray(self, a):
        base = a.base if isinstance(a.base, np.ndarray) else None
        if base is None or not base.flags.c_contiguous or any(s < 0 for s in a.strides):
            return self.cuda.to_device(np.ascontiguousarray(a))
        offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        copy = self.cuda.to_device(base)
        return self.array_type(a.shape, a.strides, a.dtype, gpu_data=copy.gpu_data.view(offset))

    def to_numpy(self, r):
        assert isinstance(r, self.array_type), f"expected a Numba device array, got {type(r)}"
        return r.copy_to_host()

    def empty(self, shape, dtype):
        return self.cuda.device_array(shape, dtype)


def _numba_gpu():
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("Numba without a CUDA GPU")
    return NumbaGpu(cuda)


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
             "jax-gpu": _gpu_jax, "numba": _numba_gpu}


@pytest.fixture(params=["numpy", "torch", "jax"] + [
    pytest.param(name, marks=pytest.mark.gpu)
    for name in ("cupy", "torch-cuda", "jax-gpu", "numba")])
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
    assert_close(xp.to_numpy(actual), expected,
                 what=f"{name}{shape} n={n} axis={axis} {norm}", same_type=True)


@pytest.mark.parametrize("name", ONE_AXIS)
def test_length_4088(xp, name):
    rng = rng_for(name, 4088)
    shape = (2045,) if name in HALF_INPUT else (4088,)  # c2r: 4088 outputs by default
    x = random_input(rng, name, shape)
    for norm in NORMS:
        expected = getattr(np.fft, name)(x, norm=norm)
        actual = getattr(accelmath.fft, name)(xp.asarray(x), norm=norm)
        assert expected.shape[-1] in (4088, 2045)
        assert_close(xp.to_numpy(actual), expected, what=f"{name} 4088 {norm}", same_type=True)


@pytest.mark.parametrize("name", ["irfft", "hfft"])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 15, 16])
def test_odd_and_even_output_lengths(xp, name, n):
    rng = rng_for(name, n)
    x = random_input(rng, name, (3, 9))
    assert_close(xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x), n)),
                 getattr(np.fft, name)(x, n), what=f"{name} n={n}", same_type=True)


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
    # s without axes (but for the 2-D functions' default ones) warns, as in NumPy 2
    deprecated = s is not None and (passed is None or passed is OMIT and name in N_AXES)
    with pytest.warns(DeprecationWarning) if deprecated else contextlib.nullcontext():
        actual = getattr(accelmath.fft, name)(xp.asarray(x), s, norm=norm, **kwargs)
    assert_close(xp.to_numpy(actual), expected,
                 what=f"{name}{shape} s={s} axes={kwargs.get('axes', 'default')} {norm}",
                 same_type=True)


@pytest.mark.parametrize("name", N_AXES)
def test_all_axes_by_default(xp, name):
    rng = rng_for(name, "all")
    x = random_input(rng, name, (3, 4, 5))
    assert_close(xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x))), getattr(np.fft, name)(x),
                 what=name, same_type=True)


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
        assert_close(xp.to_numpy(actual), expected,
                     what=f"{name} strides {x.strides}", same_type=True)


def test_torch_views():
    torch = pytest.importorskip("torch")
    t = torch.randn(8, 6, 10, dtype=torch.complex128)
    for view in (t[::2, :, 1::2], t.permute(2, 0, 1), t.transpose(0, 1)[:, 1:]):
        assert not view.is_contiguous()
        expected = np.fft.fftn(view.numpy(), axes=(0, 2))
        actual = accelmath.fft.fftn(view, axes=(0, 2))
        assert isinstance(actual, torch.Tensor)
        assert_close(actual.numpy(), expected,
                     what=f"torch strides {view.stride()}", same_type=True)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "irfft2", "rfftn"])
def test_batched_stacks(xp, name):
    rng = rng_for(name, "batch")
    x = random_input(rng, name, (5, 3, 8, 6))
    kwargs = {"axis": -1} if name in ONE_AXIS else {"axes": (-2, -1)}
    expected = getattr(np.fft, name)(x, **kwargs)
    actual = getattr(accelmath.fft, name)(xp.asarray(x), **kwargs)
    assert_close(xp.to_numpy(actual), expected, what=name, same_type=True)


# --- dtypes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", ALL)
def test_integer_and_bool_inputs_promote_like_numpy(xp, name, dtype):
    rng = rng_for(name, np.dtype(dtype).name)
    x = rng.integers(0, 2 if dtype is np.bool_ else 9, (4, 6)).astype(dtype)
    expected = getattr(np.fft, name)(x)
    actual = xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x)))
    assert actual.dtype == (np.float64 if name in HALF_INPUT else np.complex128)
    assert_close(actual, expected, what=f"{name} {np.dtype(dtype).name}", same_type=True)


@pytest.mark.parametrize("name", ALL)
def test_single_precision(xp, name):
    rng = rng_for(name, "single")
    x = random_input(rng, name, (6, 10), np.float32)
    result = xp.to_numpy(getattr(accelmath.fft, name)(xp.asarray(x), norm="ortho"))
    assert result.dtype == (np.float32 if name in HALF_INPUT else np.complex64)
    wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    expected = getattr(np.fft, name)(wide, norm="ortho")
    assert_close(result.astype(expected.dtype), expected, rtol=1e-5,
                 what=f"{name} single", same_type=True)


# --- out= ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_out(xp, name):
    rng = rng_for(name, "out")
    x = random_input(rng, name, (5, 8))
    expected = getattr(np.fft, name)(x, norm="forward")
    out = xp.empty(expected.shape, expected.dtype)
    result = getattr(accelmath.fft, name)(xp.asarray(x), norm="forward", out=out)
    assert result is out
    assert_close(xp.to_numpy(out), expected, what=f"{name} out=", same_type=True)


@pytest.mark.parametrize("name", ["fft", "rfft2", "irfftn"])
def test_out_of_the_other_byte_order(name):
    # (SciPy's engine writes only native byte order: computed, then copied into out)
    x = random_input(rng_for(name, "byte order"), name, (5, 8))
    expected = getattr(np.fft, name)(x)
    out = np.empty(expected.shape, expected.dtype.newbyteorder())
    assert getattr(accelmath.fft, name)(x, out=out) is out
    assert_close(out.astype(expected.dtype), expected,
                 what=f"{name} out=, other byte order", same_type=True)
    kind, axes = _PLANS[name]
    out[...] = 0
    with accelmath.fft.FFT(x, axes=axes, kind=kind) as plan:
        assert plan.execute(x, out=out) is out
    assert_close(out.astype(expected.dtype), expected,
                 what=f"{name} plan out=, other order", same_type=True)


_PLANS = {"fft": ("c2c", (-1,)), "rfft2": ("r2c", (0, 1)), "irfftn": ("c2r", (0, 1))}


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
    assert_close(xp.to_numpy(actual), np.fft.fft(x), what="execution=cpu", same_type=True)


@pytest.mark.parametrize("name", ["fftn", "rfftn", "irfftn"])
def test_numpy_2_arguments(xp, name):
    """``s`` of -1 for "the input's length", the input named ``a``, NumPy integers for
    ``workers``, as numpy.fft and scipy.fft take them."""
    x = random_input(rng_for(name), name, (6, 5, 4))
    expected = getattr(np.fft, name)(x, s=(-1, 7), axes=(0, 2))
    actual = getattr(accelmath.fft, name)(a=xp.asarray(x), s=(-1, 7), axes=(0, 2),
                                          workers=np.int64(2))
    assert_close(xp.to_numpy(actual), expected, what=name, same_type=True)


def test_in_place(xp):
    """``out`` the input itself, as numpy.fft allows."""
    if xp.name.startswith("jax"):
        pytest.skip("JAX arrays are immutable")
    x = random_input(rng_for("in place"), "fft2", (3, 8, 6))
    a = xp.asarray(x.copy())
    result = accelmath.fft.fft2(a, out=a)
    assert result is a
    assert_close(xp.to_numpy(a), np.fft.fft2(x), what="in place", same_type=True)


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
    from accelmath.fft._transform import _package_strides

    real = wrap_operand(torch.zeros(6, 40, 32))
    spectrum = torch.zeros(6, 40, 17, dtype=torch.complex64)
    meta = torch.fft.rfftn(torch.zeros(6, 40, 32, device="meta"), dim=(0, 1)).stride()
    assert _package_strides("r2c", real, (0, 1), None) == tuple(meta) == (1, 6, 126)
    assert _package_strides("r2c", real, (2,), None) == (680, 17, 1)
    # irfftn over several axes: the halved axis fastest, the others in the input's order
    view = spectrum.transpose(0, 1)
    theirs = torch.fft.irfftn(torch.empty_strided(view.shape, view.stride(), dtype=view.dtype,
                                                  device="meta"), s=(40, 6, 32), dim=(0, 1, 2))
    assert _package_strides("c2r", wrap_operand(view), (0, 1, 2), 32) == theirs.stride()
    # a c2c over a slow axis writes it fastest
    assert _package_strides("c2c", wrap_operand(spectrum), (0,), None) == (1, 102, 6)
    assert _package_strides("r2c", wrap_operand(np.zeros((6, 40, 32))), (0, 1), None) is None


# --- NumPy's rules beyond the transforms: repeated axes, long double, array-likes -----------

REPEATED = [("fftn", (0, 0), None), ("ifftn", (1, 0, 1), None), ("fft2", (1, 1), (6, 3)),
            ("rfftn", (0, 0, 1), (10, 20, 40)), ("rfftn", (1, 0, 1), None),
            ("irfftn", (1, 1), (5, 8)), ("irfftn", (0, 1, 0), None),
            ("irfftn", (1, 0, 1), (4, 3, 9))]


@pytest.mark.parametrize("name, axes, s", REPEATED)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_repeated_axes_are_transformed_again(xp, name, axes, s, norm):
    """An axis given twice is transformed twice, one run of distinct axes after another, as
    NumPy does (numpy's gh-27159 among the cases)."""
    x = random_input(rng_for(name, axes, s), name, (6, 5, 4))
    expected = getattr(np.fft, name)(x, s, axes, norm)
    actual = getattr(accelmath.fft, name)(xp.asarray(x), s, axes, norm)
    assert_close(xp.to_numpy(actual), expected, what=f"{name} axes={axes} s={s}", same_type=True)


@pytest.mark.parametrize("axes, s", [((0, 0, 2), None), ((2, 0, 2), (4, 6, 9)), ((1, 1), None)])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_repeated_axes_of_hermitian_transforms(xp, axes, s, norm):
    """hfftn and ihfftn over repeated axes: by their definition, irfftn of the conjugate and
    the conjugate of rfftn with the norm direction swapped."""
    swapped = {None: "forward", "ortho": "ortho", "forward": "backward"}[norm]
    x = random_input(rng_for("hfftn", axes, s), "irfftn", (6, 5, 8))
    expected = np.fft.irfftn(x.conj(), s, axes, swapped)
    actual = accelmath.fft.hfftn(xp.asarray(x), s, axes, norm)
    assert_close(xp.to_numpy(actual), expected, what=f"hfftn axes={axes}", same_type=True)
    expected = np.fft.rfftn(x.real, s, axes, swapped).conj()
    actual = accelmath.fft.ihfftn(xp.asarray(x.real.copy()), s, axes, norm)
    assert_close(xp.to_numpy(actual), expected, what=f"ihfftn axes={axes}", same_type=True)


@pytest.mark.parametrize("name", ["hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_hermitian_transforms_of_several_axes(xp, name):
    scipy_fft = pytest.importorskip("scipy.fft")
    x = random_input(rng_for(name), "irfftn" if name.startswith("h") else "rfftn", (6, 5, 8))
    for norm in NORMS:
        expected = getattr(scipy_fft, name)(x, axes=(0, 2), norm=norm)
        actual = getattr(accelmath.fft, name)(xp.asarray(x), axes=(0, 2), norm=norm)
        assert_close(xp.to_numpy(actual), expected, what=f"{name} {norm}", same_type=True)


LONG = np.dtype(np.longdouble)


@pytest.mark.parametrize("name", ALL + ["hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_long_double_computes_in_long_double(name):
    """As numpy.fft (NumPy 2) and scipy.fft compute it: long double in, long double out, to
    long double's precision."""
    if LONG.itemsize == 8:
        pytest.skip("long double is double precision on this platform")
    scipy_fft = pytest.importorskip("scipy.fft")
    rng = rng_for(name, "long double")
    x = random_input(rng, name if name in ALL else ("rfftn" if "i" in name[:2] else "irfftn"),
                     (4, 6)).astype(np.clongdouble)
    x = x.real.copy() if name in REAL_INPUT or name in ("ihfft2", "ihfftn") else x
    peer = np.fft if hasattr(np.fft, name) else scipy_fft
    expected = getattr(peer, name)(x)
    actual = getattr(accelmath.fft, name)(x)
    assert actual.dtype == expected.dtype and actual.dtype.itemsize >= 2 * LONG.itemsize // (
        1 if actual.dtype.kind == "c" else 2)
    assert_close(actual, expected, rtol=2e-18, what=f"{name} long double", same_type=True)


@pytest.mark.parametrize("x", [[1.0, 2.0, 3.0], (1, 2, 3, 4), [[1, 2], [3, 4]], 5.0,
                               [1 + 2j, 3 - 1j]])
def test_array_likes_as_numpy_takes_them(x):
    for name in ("fft", "ifft", "rfft", "fftn", "irfftn") if np.ndim(x) else ("fftn",):
        if name.startswith("r") and np.iscomplexobj(x):
            continue
        expected = getattr(np.fft, name)(x)
        actual = getattr(accelmath.fft, name)(x)
        assert isinstance(actual, np.ndarray)
        assert_close(actual, expected, what=f"{name} of {x!r}", same_type=True)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2"])
def test_numpy_2_deprecations(name):
    """``s`` without ``axes``, and None in ``s``, warn as NumPy 2 warns (and compute as it
    computes); with ``axes`` given, nothing warns."""
    import warnings

    x = random_input(rng_for(name, "deprecated"), name, (5, 6, 4))
    kwargs = {"axes": None} if name.endswith("2") else {}
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None` if `s`"):
        actual = getattr(accelmath.fft, name)(x, s=(-1, 5), **kwargs)
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None` if `s`"):
        expected = getattr(np.fft, name)(x, s=(-1, 5), **kwargs)
    assert_close(actual, expected, what=name, same_type=True)
    with pytest.warns(DeprecationWarning, match="array containing `None` values to `s`"):
        actual = getattr(accelmath.fft, name)(x, s=(None, 3), axes=(0, 2))
    assert_close(actual, getattr(np.fft, name)(x, s=(5, 3), axes=(0, 2)), what=name, same_type=True)
    # a None means the 1-D transform's default: irfft's 2 * (m - 1) on irfftn's last axis
    with pytest.warns(DeprecationWarning, match="array containing `None` values to `s`"):
        actual = getattr(accelmath.fft, name)(x, s=(3, None), axes=(0, 2))
    with pytest.warns(DeprecationWarning, match="array containing `None` values to `s`"):
        expected = getattr(np.fft, name)(x, s=(3, None), axes=(0, 2))
    assert_close(actual, expected, what=name, same_type=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(accelmath.fft, name)(x, s=(-1, 5), axes=(0, 1))


def test_no_axes_at_all(xp):
    """A transform over no axes gives back its input, as numpy.fft and scipy.fft do."""
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    assert accelmath.fft.fftn(x, axes=()) is x
    assert accelmath.fft.ifft2(x, axes=[]) is x


# --- the CPU backend -------------------------------------------------------------------------

def test_out_overlapping_the_input():
    """An ``out`` that overlaps the input is written as if the input had been read first."""
    rng = rng_for("overlap")
    y = rng.standard_normal((8, 8)) + 1j * rng.standard_normal((8, 8))
    for out_of in (lambda a: a, lambda a: a.T, lambda a: a[::-1], lambda a: a[:, :8]):
        a = y.copy()
        expected = np.fft.fft(a, axis=0)
        out = out_of(a)
        assert accelmath.fft.fft(a, axis=0, out=out) is out
        assert_close(out, expected, what="out overlapping the input", same_type=True)
    a = y.real.copy()
    out = a.view(np.complex128)[:, :4].reshape(8, 4)  # (a view of the input's memory)
    expected = np.fft.rfft(a[:, :6])
    assert accelmath.fft.rfft(a, 6, out=out[:, :4]) is not None
    assert_close(out[:, :4], expected, what="rfft into its input's memory", same_type=True)


@pytest.fixture
def engine_calls(monkeypatch):
    """The threads each host transform was given, recorded around the engine."""
    from accelmath.fft import _cpu

    engine, seen = _cpu.engine(), []

    class Recording:
        def c2c(self, *args):
            seen.append(args[-1])
            return engine.c2c(*args)

    monkeypatch.setattr(_cpu, "_engines", [Recording()])
    accelmath.fft.clear_cache()  # (remembered calls hold the engine they were made with)
    yield seen
    accelmath.fft.clear_cache()


def test_workers(engine_calls):
    import os

    scipy_fft = pytest.importorskip("scipy.fft")
    x = random_input(rng_for("workers"), "fft", (8, 16))
    accelmath.fft.fft(x, workers=3)
    accelmath.fft.fft(x, workers=-1)
    accelmath.fft.fft(x)
    with scipy_fft.set_workers(2):  # the default in this context, as scipy.fft takes it
        accelmath.fft.fft(x)
    assert engine_calls == [3, os.cpu_count(), 1, 2]


@pytest.mark.parametrize("name", ALL + ["hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_numpy_fft_stands_in_for_scipys_engine(monkeypatch, name):
    """Where SciPy's engine module is not found, numpy.fft computes, with the same results."""
    from accelmath.fft import _cpu

    monkeypatch.setattr(_cpu, "_ENGINE_MODULES", ("scipy.fft._no_such_module",))
    monkeypatch.setattr(_cpu, "_engines", [])
    accelmath.fft.clear_cache()
    try:
        assert _cpu.engine().name == "numpy.fft"
        x = random_input(rng_for(name, "engine"), name if name in ALL else (
            "rfftn" if name.startswith("i") else "irfftn"), (6, 5))
        x = x.real.copy() if name in ("ihfft2", "ihfftn") else x
        scipy_fft = pytest.importorskip("scipy.fft")
        for norm in NORMS:
            expected = getattr(scipy_fft, name)(x, norm=norm)
            out = np.empty(expected.shape, expected.dtype)
            assert_close(getattr(accelmath.fft, name)(x, norm=norm, out=out), expected,
                         what=f"{name} on numpy.fft, {norm}", same_type=True)
    finally:
        accelmath.fft.clear_cache()


def test_torch_cpu_input_into_a_numpy_out():
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 8, dtype=torch.complex128)
    out = np.empty((4, 8), np.complex128)
    for _ in range(2):  # the second call is remembered
        assert accelmath.fft.fft(t, out=out) is out
        np.testing.assert_allclose(out, np.fft.fft(t.numpy()), atol=1e-12)

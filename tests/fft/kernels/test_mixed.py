"""accelmath's mixed-radix transforms (``fft._kernels.mixed``): the Stockham schedule against
numpy.fft for lengths of every kind of factor (CPU), the kernels' source compiled by NVRTC
(no GPU needed), and on the GPU the 2-D filter's three kernels against NumPy in float64,
float32 and float64, even and odd widths, a large prime factor, further arrays and scalars,
CuPy and torch, another stream."""

import numpy as np
import pytest

from accelmath._core.gpu import modules
from accelmath.fft._kernels import mixed as _mixed

LENGTHS = [8, 12, 97, 125, 143, 146, 1000, 1016, 1155, 2044, 4088, 4096, 6144, 11 * 13 * 17]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("sign", [-1, 1])
def test_the_schedule_is_the_dft(n, sign):
    rng = np.random.default_rng()
    x = rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))
    expected = np.fft.fft(x) if sign < 0 else n * np.fft.ifft(x)
    got = _mixed.reference(x, sign)
    assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()


def test_radices_and_fits():
    assert _mixed.radices(4088) == [73, 7, 8]
    assert _mixed.radices(2 * 131) is None and _mixed.radices(0) is None
    assert np.prod(_mixed.radices(6144)) == 6144
    assert _mixed.fits(4088, 4088, 16) and not _mixed.fits(8192, 4088, 16)
    assert _mixed.fits(4088, 4088, 16, 227 * 1024) and not _mixed.fits(4088, 4088, 16, 99 * 1024)
    # a block holds two columns, or two rows of half an even width, and the constants of
    # the prime 73 of both directions
    block = 2 * 4088 * 16 + 2 * 73 * 16
    assert _mixed.fits(4088, 2 * 4088, 16, block)
    assert not _mixed.fits(4088, 2 * 4088, 16, block - 1)
    assert _mixed.fits(146, 2 * 4088, 16, block)
    assert not _mixed.fits(146, 2 * 4088, 16, block - 1)
    assert not _mixed.fits(146, 4088 + 1, 16, 2 * 4088 * 16)  # (an odd width, whole)
    assert not _mixed.fits(262, 97, 16) and not _mixed.fits(97, 4, 8)


def _element(dtype):
    from accelmath.fusion import _cuda
    from accelmath.fusion._elementwise import arguments, traced, types_of

    complex_dtype = np.dtype("complex64" if dtype == "float32" else "complex128")
    fn = traced(lambda s, k, a: s * k + a, "fn")
    values = arguments((np.ones((4, 3), complex_dtype), 2.0), "args")
    expression = fn.expression([complex_dtype, *types_of(values)])
    return _cuda.element_source(expression, 2, 0, complex_dtype.name, narrow=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4088, 4088), (146, 97)])
def test_the_kernels_compile(nvrtc, dtype, shape):
    source = _mixed.filter_source(*shape, dtype, _element(dtype))
    image = modules.compile_cuda(source, modules.CompileOptions(arch=(9, 0)), "mixed.cu")
    for name in (b"rows_forward", b"rows_inverse", b"columns", b"init_tables"):
        assert name in image


# --- on the GPU -------------------------------------------------------------------------------


def _mixed_way(x, fn, args):
    """spectral_filter(x, fn, args) by the mixed-radix way itself (compiled first)."""
    from accelmath._core.operand import wrap_named
    from accelmath.fft._fusion import filter as spectral
    from accelmath.fusion._elementwise import arguments, traced

    traced_fn = traced(fn, "fn")
    op, values = wrap_named(x, "x"), arguments(args, "args")
    fused = spectral._new_fused(op, traced_fn, values, (0, 1), ("test",))
    assert fused is not None and fused.mixed is not None
    modules.wait_for_compiles()
    assert fused.mixed.ready
    return spectral._run_mixed(fused, op, values, None, None)


def _expected(x, k, a):
    spectrum = np.fft.rfft2(x.astype(np.float64))
    return np.fft.irfft2(spectrum * k + a, s=x.shape)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(4088, 4088), (146, 97), (96, 1100), (1155, 64)])
def test_the_filter_on_cupy(cp, dtype, shape):
    rng = np.random.default_rng()
    x = rng.standard_normal(shape).astype(dtype)
    half = (shape[0], shape[1] // 2 + 1)
    k = (rng.standard_normal(half) + 1j * rng.standard_normal(half)) / 10
    k = k.astype("complex64" if dtype == "float32" else "complex128")
    got = _mixed_way(cp.asarray(x), lambda s, kk, a: s * kk + a, (cp.asarray(k), 0.5))
    assert isinstance(got, cp.ndarray) and got.dtype == dtype and got.shape == shape
    expected = _expected(x, k, 0.5)
    error = np.abs(cp.asnumpy(got) - expected).max() / np.abs(expected).max()
    assert error <= (2e-5 if dtype == "float32" else 1e-12)


@pytest.mark.gpu
def test_the_filter_on_torch_and_another_stream(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()
    x = rng.standard_normal((4088, 4088))
    k = np.fft.rfft2(rng.standard_normal((4088, 4088))) / 4088
    tx, tk = torch.from_numpy(x).cuda(), torch.from_numpy(k).cuda()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = _mixed_way(tx, lambda s, kk: s * kk, (tk,))
    side.synchronize()
    expected = np.fft.irfft2(np.fft.rfft2(x) * k, s=x.shape)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    assert np.abs(got.cpu().numpy() - expected).max() <= 1e-12 * np.abs(expected).max()


@pytest.mark.gpu
def test_spectral_filter_picks_a_way_and_agrees(cp):
    from accelmath import fft

    rng = np.random.default_rng()
    x = rng.standard_normal((4088, 4088))
    k = np.fft.rfft2(rng.standard_normal((4088, 4088))) / 4088
    cx, ck = cp.asarray(x), cp.asarray(k)
    expected = np.fft.irfft2(np.fft.rfft2(x) * k, s=x.shape)
    for _ in range(3):  # (the first call may run before the kernels are compiled)
        got = fft.spectral_filter(cx, lambda s, kk: s * kk, (ck,))
        modules.wait_for_compiles()
        assert np.abs(cp.asnumpy(got) - expected).max() <= 1e-12 * np.abs(expected).max()


def test_a_failed_compile_leaves_the_way_not_ready(monkeypatch):
    """Asked again and again after its background compile failed, a Filter says it is not
    ready (the way is not offered), never raises."""

    class Finished:
        def is_alive(self):
            return False

    for name, value in (("filter_source", lambda *args: "source"),
                        ("device_options", lambda device_id: None),
                        ("is_compiled", lambda *args: False),
                        ("compile_soon", lambda *args: Finished())):
        monkeypatch.setattr(_mixed.kernels, name, value)
    kernels = _mixed.Filter(4088, 4088, "float64", "", 0)
    assert [kernels.ready for _ in range(3)] == [False] * 3

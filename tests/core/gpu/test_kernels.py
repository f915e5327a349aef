"""The strided copy/scale kernel: how layouts merge, that its source compiles for every
architecture accelmath runs on, and, on a GPU, its results against NumPy."""

import numpy as np
import pytest

from accelmath._core.gpu import kernels
from accelmath._core.gpu.kernels import MAX_DIMS, SOURCE, copy_scale, merge_dims
from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.errors import InvalidArgumentError


def test_merge_dims():
    # contiguous in both layouts: one dimension
    assert merge_dims([(4, 12, 12), (3, 4, 4), (4, 1, 1)]) == [(48, 1, 1)]
    # contiguous in one layout only: kept apart
    assert merge_dims([(4, 16, 12), (3, 4, 4), (4, 1, 1)]) == [(4, 16, 12), (12, 1, 1)]
    # a transpose merges nothing
    assert merge_dims([(3, 1, 4), (4, 3, 1)]) == [(3, 1, 4), (4, 3, 1)]
    assert merge_dims([]) == []


@pytest.mark.parametrize("arch", [(7, 5), (8, 0), (9, 0)])  # CUDA 13's NVRTC starts at 7.5
def test_the_source_compiles(arch, monkeypatch, nvrtc):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # compile here, not from an earlier run's store
    dtypes = ("float16", "complex32", "float32", "int32", "complex64", "float64", "complex128")
    for variant in dtypes:  # (each dtype compiled alone, as SourceModules does)
        cubin = compile_cuda(SOURCE, CompileOptions(arch=arch, extra=(f"-DACCELMATH_{variant}",)),
                             "accelmath_kernels.cu")
        for dtype in dtypes:
            for name in (f"copy_{dtype}", f"flat_{dtype}"):
                assert (name.encode() in cubin) == (dtype == variant), (variant, name)


def test_too_many_dimensions_are_refused(monkeypatch):
    # checked before anything reaches a device
    monkeypatch.setattr(kernels, "_kernel_module", lambda device_id, variant=None: (None, 1))
    shape = (2,) * (MAX_DIMS + 1)
    strides = tuple(2 ** (2 * k + 1) for k in range(MAX_DIMS + 1))[::-1]  # gaps: no merging
    with pytest.raises(InvalidArgumentError, match=f"exceeds {MAX_DIMS}"):
        copy_scale(0, 0, shape, strides, strides, "float32", 2.0, None, 0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "complex64", "float64", "complex128"])
@pytest.mark.parametrize("scale, conj", [(None, False), (0.5, False), (None, True), (3.0, True)])
def test_copy_scale_against_numpy(dtype, scale, conj):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    host = rng.standard_normal((6, 5, 7)).astype(dtype)
    if host.dtype.kind == "c":
        host = host + 1j * rng.standard_normal(host.shape).astype(dtype)
    src = cp.asarray(host)[:, ::2, 1:]  # strided source
    dst = cp.zeros((6, 6, 3), dtype).transpose(0, 2, 1)  # another layout, the same shape
    item = src.itemsize
    copy_scale(src.data.ptr, dst.data.ptr, src.shape, tuple(s // item for s in src.strides),
               tuple(s // item for s in dst.strides), dtype, scale, None, src.device.id,
               conj=conj)
    cp.cuda.Device().synchronize()
    expected = host[:, ::2, 1:] * (1 if scale is None else scale)
    if conj:
        expected = np.conj(expected)
    np.testing.assert_allclose(dst.get(), expected, rtol=1e-6)


@pytest.mark.gpu
def test_int32_copies_are_exact():
    cp = pytest.importorskip("cupy")
    host = np.random.default_rng().integers(-2 ** 31, 2 ** 31, (3, 4), dtype=np.int32)
    src = cp.asarray(host)
    dst = cp.zeros((2, 3, 4), np.int32)
    copy_scale(src.data.ptr, dst.data.ptr, (2, 3, 4), (0, 4, 1), (12, 4, 1), "int32", None,
               None, src.device.id)  # broadcast over the first axis
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(dst.get(), np.broadcast_to(host, (2, 3, 4)))

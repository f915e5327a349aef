"""RawKernel: its arguments as the C types a kernel takes, clear errors for what it cannot
pass, its source compiled without a GPU and, on a GPU, kernels launched on CuPy and torch
arrays on their current streams."""

import ctypes

import numpy as np
import pytest

from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.errors import InvalidArgumentError, StateError, UnsupportedOperandError
from accelmath.fusion import RawKernel
from accelmath.fusion._raw import _parameter

AXPY = r'''
extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}
extern "C" __global__ void typed(float f, int i, unsigned char b, int* out) {
    out[0] = (int)f; out[1] = i; out[2] = b;
}
'''


@pytest.mark.parametrize("value, c_type, expected", [
    (3, ctypes.c_longlong, 3), (-2**63, ctypes.c_longlong, -2**63),
    (2.5, ctypes.c_double, 2.5), (True, ctypes.c_bool, True),
    (np.float32(1.5), ctypes.c_float, 1.5), (np.int32(-7), ctypes.c_int32, -7),
    (np.uint8(200), ctypes.c_uint8, 200), (np.bool_(False), ctypes.c_bool, False),
    (np.uint64(2**64 - 1), ctypes.c_uint64, 2**64 - 1),
])
def test_scalars_pass_as_their_c_type(value, c_type, expected):
    operands = []
    converted = _parameter(value, 0, operands)
    assert type(converted) is c_type and converted.value == expected
    assert operands == []


def test_none_is_a_null_pointer_and_ctypes_values_pass_as_they_are():
    assert _parameter(None, 0, []).value is None
    value = ctypes.c_short(5)
    assert _parameter(value, 0, []) is value

    class Pair(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int), ("b", ctypes.c_double)]

    pair = Pair(1, 2.0)
    assert _parameter(pair, 0, []) is pair


@pytest.mark.parametrize("value, words", [
    (1 + 2j, "complex"), (np.complex64(1), "complex64"), ("x", "str"), ([1, 2], "list"),
    (np.zeros(3), "host array"), (np.float16(1), "float16"),
])
def test_what_a_kernel_cannot_take_is_refused_by_position(value, words):
    with pytest.raises(UnsupportedOperandError, match=f"argument 2 .*{words}"):
        _parameter(value, 2, [])


def test_an_int_outside_a_long_long_is_refused():
    with pytest.raises(InvalidArgumentError, match="argument 1 is 9223372036854775808"):
        _parameter(2**63, 1, [])


@pytest.mark.parametrize("source, name, options, words", [
    (b"x", "k", (), "source must be a str"),
    ("x", "not a name", (), "not a kernel name"),
    ("x", "k", "-DN=1", "not a sequence of option strings"),
    ("x", "k", (1,), "not a sequence of option strings"),
])
def test_bad_construction_is_refused(source, name, options, words):
    with pytest.raises(InvalidArgumentError, match=words):
        RawKernel(source, name, options=options)


def test_a_launch_without_a_device_array_says_so():
    kernel = RawKernel(AXPY, "axpy")
    with pytest.raises(InvalidArgumentError, match="axpy: no device array"):
        kernel(1, 32, (1.0, None, None, 0))
    with pytest.raises(UnsupportedOperandError, match="argument 1 is a host array"):
        kernel(1, 32, (1.0, np.zeros(4), np.zeros(4), 4))


def test_the_source_compiles_without_a_gpu(nvrtc):
    kernel = RawKernel(AXPY, "axpy", options=("-DUNUSED=1",))
    image = compile_cuda(kernel.source, CompileOptions(arch=(9, 0), extra=kernel.options),
                         "axpy.cu")
    assert image[:4] == b"\x7fELF"
    assert "axpy" in repr(kernel)


@pytest.mark.gpu
def test_axpy_on_cupy_arrays_on_a_stream(cp):
    rng = np.random.default_rng()
    x, y = rng.standard_normal((2, 100_003))
    kernel = RawKernel(AXPY, "axpy")
    with cp.cuda.Stream(non_blocking=True) as stream:
        dx, dy = cp.asarray(x), cp.asarray(y)
        kernel(64, 256, (1.5, dx, dy, x.size))
        stream.synchronize()
    np.testing.assert_allclose(dy.get(), y + 1.5 * x, rtol=0,
                               atol=1e-15 * np.abs(y + 1.5 * x).max())


@pytest.mark.gpu
def test_kernels_on_torch_tensors_and_typed_scalars(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()
    x, y = rng.standard_normal((2, 1000))
    dx, dy = (torch.from_numpy(v).cuda() for v in (x, y))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        RawKernel(AXPY, "axpy")(4, 128, (-2.0, dx, dy, x.size))
    stream.synchronize()
    np.testing.assert_allclose(dy.cpu().numpy(), y - 2.0 * x, rtol=0,
                               atol=1e-15 * np.abs(y - 2.0 * x).max())
    out = torch.zeros(3, dtype=torch.int32, device="cuda")
    RawKernel(AXPY, "typed")(1, 1, (np.float32(7.9), np.int32(-4), np.uint8(250), out))
    assert out.cpu().tolist() == [7, -4, 250]


@pytest.mark.gpu
def test_compile_in_the_background_then_launch(cp):
    kernel = RawKernel(AXPY + "// background\n", "axpy")
    kernel.compile(0, wait=False)
    dx, dy = cp.ones(10), cp.zeros(10)
    kernel(1, 32, (3.0, dx, dy, 10))
    assert dy.get().tolist() == [3.0] * 10


@pytest.mark.gpu
def test_a_kernel_is_ready_once_compiled(cp):
    import uuid

    kernel = RawKernel(AXPY + f"// {uuid.uuid4()}\n", "axpy")  # (in no store yet)
    assert not kernel.ready(0)
    thread = kernel.compile(0, wait=False, deferred=True)
    assert kernel.compile(0, wait=False) is thread  # (one compile of the code)
    thread.join()
    assert kernel.ready(0)
    assert kernel.compile(0) is None
    assert kernel.compile(0, wait=False) is None  # (loaded)
    kernel.free()
    with pytest.raises(StateError):
        kernel.ready(0)


@pytest.mark.gpu
def test_the_kernels_of_one_source_share_one_compile(cp, monkeypatch, tmp_path):
    from accelmath._core.gpu import modules

    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    compiles = []
    real = modules._nvrtc_compile
    monkeypatch.setattr(modules, "_nvrtc_compile", lambda *a: compiles.append(1) or real(*a))
    source = AXPY + "// shared\n"
    out = cp.zeros(3, dtype=cp.int32)
    RawKernel(source, "typed")(1, 1, (np.float32(2), np.int32(3), np.uint8(4), out))
    RawKernel(source, "axpy")(1, 32, (1.0, cp.ones(4), cp.zeros(4), 4))
    assert out.get().tolist() == [2, 3, 4]
    assert len(compiles) == 1

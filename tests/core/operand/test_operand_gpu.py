"""Operands of device arrays (CuPy, CUDA torch, JAX on a GPU): zero copy, streams, the
fast-path readers, and gradients refused on the GPU paths of accelmath.fft."""

import os

import numpy as np
import pytest

from accelmath._core import hostcall
from accelmath._core.operand import (adapter_named, check_same_device, device_adapter,
                                      wrap_operand)
from accelmath._core.gpu.stream import resolve_stream, stream_handle
from accelmath.errors import DeviceMismatchError, GradientError

pytestmark = pytest.mark.gpu


def test_cupy_zero_copy_and_streams(cp):
    x = cp.arange(24, dtype=cp.complex64).reshape(4, 6)[:, ::2]
    op = wrap_operand(x)
    assert op.ptr == x.data.ptr and op.shape == (4, 3) and op.strides == (6, 2)
    assert op.dtype == "complex64" and op.device_id == 0 and op.package == "cupy"
    assert resolve_stream(None, op) == cp.cuda.get_current_stream().ptr
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        assert resolve_stream(None, op) == s.ptr
    assert resolve_stream(s, op) == s.ptr
    assert resolve_stream(s.ptr, op) == s.ptr


def test_cupy_stream_getter_names_cupys_current_stream(cp):
    import threading

    adapter = adapter_named("cupy")
    current = adapter.stream_getter(0)
    ptds = os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0") != "0"
    per_thread = cp.cuda.runtime.streamPerThread if ptds else None
    if hostcall.status().startswith("C call shim"):
        assert type(current).__name__ == "CapsuleStream"  # CuPy's own C function
    assert current() in (cp.cuda.get_current_stream(0).ptr, per_thread)
    for s in (cp.cuda.Stream(non_blocking=True), cp.cuda.Stream.null, cp.cuda.Stream()):
        with s:
            # (with CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1, CuPy runs its null stream's work
            # on the per-thread stream, and its C function names that one)
            assert current() == (per_thread if ptds and s.ptr == 0 else s.ptr)
            assert s.ptr == cp.cuda.get_current_stream(0).ptr
    s = cp.cuda.Stream(non_blocking=True)
    seen = []
    with s:  # another thread has its own current stream
        thread = threading.Thread(target=lambda: seen.append(current()))
        thread.start()
        thread.join()
        assert current() == s.ptr
    assert seen != [s.ptr] and seen[0] in (cp.cuda.get_current_stream(0).ptr, per_thread)


@pytest.mark.parametrize("make", [lambda cp: cp.zeros((4, 6), cp.complex64),
                                  lambda cp: cp.zeros((6, 4), cp.complex64).T])
def test_cupy_reader(make, cp):
    adapter = adapter_named("cupy")
    x = make(cp)
    read = adapter.reader(adapter.layout_key(x))
    assert read(x) == x.data.ptr
    y = make(cp)
    assert read(y) == y.data.ptr
    assert read(x.astype(cp.complex128)) is None
    assert read(cp.zeros((3, 6), cp.complex64)) is None
    other_order = x.copy(order="F" if x.flags.c_contiguous else "C")
    assert read(other_order) is None
    assert read(x.real) is None and read(x[:3]) is None
    # the same layout on another device (memory of device 1 as CuPy would describe it: read,
    # never touched)
    memory = cp.cuda.UnownedMemory(x.data.ptr, x.nbytes, x, device_id=1)
    elsewhere = cp.ndarray(x.shape, x.dtype, cp.cuda.MemoryPointer(memory, 0), x.strides)
    assert elsewhere.data.device_id == 1 and read(elsewhere) is None
    if hostcall.status().startswith("C call shim"):
        assert type(read).__name__ == "Reader"  # made in C
    keyed = adapter.reader(adapter.layout_key(x), keyed=True)  # (shape and dtype: the key's)
    assert keyed(y) == y.data.ptr and keyed(other_order) is None


def test_torch_cuda_reader_and_stream_through_the_exchange_api(torch_cuda):
    torch = torch_cuda
    adapter = adapter_named("torch")
    x = torch.randn(4, 6, dtype=torch.complex64, device="cuda")
    read = adapter.reader(adapter.layout_key(x))
    if getattr(torch.Tensor, "__dlpack_c_exchange_api__", None) is not None and \
            hostcall.status().startswith("C call shim"):
        assert type(read).__name__ == "ExchangeReader"
    assert read(x) == x.data_ptr()
    y = torch.randn(4, 6, dtype=torch.complex64, device="cuda")
    assert read(y) == y.data_ptr()
    for other in (x.cpu(), x.conj(), x.T.contiguous().T, x.clone().requires_grad_(),
                  x.to(torch.complex128)):
        assert read(other) is None
    current = adapter.stream_getter(0)
    assert current() == torch.cuda.current_stream().cuda_stream
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert current() == s.cuda_stream != 0
    assert current() == torch.cuda.current_stream().cuda_stream


def test_torch_zero_copy_and_streams(torch_cuda):
    torch = torch_cuda
    x = torch.randn(5, 7, dtype=torch.float64, device="cuda").T
    op = wrap_operand(x)
    assert op.ptr == x.data_ptr() and op.shape == (7, 5) and op.strides == (1, 7)
    assert op.device_id == 0 and op.package == "torch"
    assert resolve_stream(None, op) == torch.cuda.current_stream().cuda_stream
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert resolve_stream(None, op) == s.cuda_stream
    assert resolve_stream(s, op) == s.cuda_stream


def test_torch_lazy_views_are_resolved_on_the_current_stream(torch_cuda):
    # the copy is torch's work on its current stream: work on another stream must wait for it
    torch = torch_cuda
    plain = torch.randn(64, 32, dtype=torch.complex128, device="cuda")
    assert wrap_operand(plain).ready is None
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        op = wrap_operand(plain.conj())
    assert op.ready == s.cuda_stream and not op.obj.is_conj()
    other = torch.cuda.Stream()
    op.wait_ready(other)  # (an event recorded on s, waited for on other)
    assert op.ready is None
    torch.testing.assert_close(op.obj, plain.conj().resolve_conj())

    from accelmath import linalg

    x = torch.randn(256, 256, dtype=torch.complex128, device="cuda")
    c = torch.randn(256, 256, dtype=torch.complex128, device="cuda")
    # the product on other, c.conj() resolved on the current stream
    got = linalg.matmul(x, x, c=c.conj(), beta=1.0, stream=other)
    other.synchronize()
    expected = x.cpu().numpy() @ x.cpu().numpy() + c.cpu().numpy().conj()
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("transpose", [False, True])
def test_torch_readers_tell_cpu_from_cuda(transpose, torch_cuda):
    torch = torch_cuda
    adapter = adapter_named("torch")
    cpu = torch.zeros(6, 4, dtype=torch.complex64)
    cpu = cpu.T if transpose else cpu
    cuda = cpu.cuda() if not transpose else torch.zeros(6, 4, dtype=torch.complex64,
                                                        device="cuda").T
    assert (cpu.shape, cpu.stride()) == (cuda.shape, cuda.stride())
    cpu_read = adapter.reader(adapter.layout_key(cpu))
    cuda_read = adapter.reader(adapter.layout_key(cuda))
    assert cpu_read(cpu) == cpu.data_ptr() and cuda_read(cuda) == cuda.data_ptr()
    assert cpu_read(cuda) is None and cuda_read(cpu) is None
    if torch.cuda.device_count() > 1:
        other = cuda.to("cuda:1")
        assert cuda_read(other) is None


def test_torch_cuda_tensors_that_record_gradients(torch_cuda):
    torch = torch_cuda
    import accelmath.fft

    plain = torch.randn(8, 16, dtype=torch.float32, device="cuda")
    x = plain.clone().requires_grad_(True)
    with pytest.raises(GradientError, match="torch.no_grad"):
        wrap_operand(x)
    accelmath.fft.rfft2(plain)
    accelmath.fft.rfft2(plain)  # (the call memo, where the functions keep one)
    with pytest.raises(GradientError):
        accelmath.fft.rfft2(x)
    plan = accelmath.fft.FFT(plain, kind="r2c")
    plan.execute(plain)
    with pytest.raises(GradientError):
        plan.execute(x)  # (the fast execute sends it to the checks)
    with pytest.raises(GradientError):
        plan.execute(plain, out=torch.empty(8, 9, dtype=torch.complex64, device="cuda",
                                            requires_grad=True))
    with torch.no_grad():
        result = plan.execute(x)
    expected = np.fft.rfft2(plain.cpu().numpy())
    np.testing.assert_allclose(result.cpu().numpy(), expected, rtol=1e-4, atol=1e-3)


def test_device_adapter_allocates_on_the_gpu():
    adapter = device_adapter()
    assert adapter.package in ("cupy", "torch")
    a = adapter.empty((3, 4), "complex64", 0)
    assert wrap_operand(a).device_id == 0


@pytest.mark.parametrize("strides", [(12, 4, 1), (1, 2, 6), (3, 1, 6)])
def test_cupy_allocations_of_any_strides(cp, strides):
    array, ptr = adapter_named("cupy").empty_strided((2, 3, 4), strides, "float64", 0)
    assert isinstance(array, cp.ndarray) and array.shape == (2, 3, 4)
    assert tuple(s // 8 for s in array.strides) == strides and ptr == array.data.ptr


def test_cuda_core_stream():
    pytest.importorskip("cuda.core")  # (not a dependency: its streams are taken when given)
    from cuda.core import Device

    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    assert stream_handle(s) == int(s.handle)


def test_jax_operand():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX without a GPU")
    import jax.numpy as jnp

    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    op = wrap_operand(x)
    assert op.shape == (3, 4) and op.strides == (4, 1) and op.dtype == "float32"
    assert op.device_id is not None and op.package == "jax"
    assert op.ptr == x.unsafe_buffer_pointer()


def test_cuda_array_interface_producer(cp):
    x = cp.arange(10, dtype=cp.float64)

    class Producer:
        __cuda_array_interface__ = x.__cuda_array_interface__

    op = wrap_operand(Producer())
    assert op.ptr == x.data.ptr and op.shape == (10,) and op.device_id == 0


def test_device_mismatch(cp):
    a = wrap_operand(cp.zeros(3))
    b = wrap_operand(np.zeros(3))
    with pytest.raises(DeviceMismatchError, match="cuda:0"):
        check_same_device(a, b, names=("x", "out"))

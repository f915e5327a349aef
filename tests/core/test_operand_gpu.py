"""Operand wrapping and stream resolution for device arrays (CuPy, CUDA torch, JAX)."""

import os

import numpy as np
import pytest

from accelmath._core.operand import wrap_operand, check_same_device
from accelmath._core.stream import resolve_stream, stream_handle
from accelmath.errors import DeviceMismatchError

pytestmark = pytest.mark.gpu


def test_cupy_zero_copy_and_streams():
    cp = pytest.importorskip("cupy")
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


def test_torch_zero_copy_and_streams():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.randn(5, 7, dtype=torch.float64, device="cuda").T
    op = wrap_operand(x)
    assert op.ptr == x.data_ptr() and op.shape == (7, 5) and op.strides == (1, 7)
    assert op.device_id == 0 and op.package == "torch"
    assert resolve_stream(None, op) == torch.cuda.current_stream().cuda_stream
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert resolve_stream(None, op) == s.cuda_stream
    assert resolve_stream(s, op) == s.cuda_stream


def test_cuda_core_stream():
    from cuda.core import Device

    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    assert stream_handle(s) == int(s.handle)


def test_jax_operand():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX without a GPU")
    import jax.numpy as jnp

    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    op = wrap_operand(x)
    assert op.shape == (3, 4) and op.strides == (4, 1) and op.dtype == "float32"
    assert op.device_id is not None and op.package == "jax"
    assert op.ptr == x.unsafe_buffer_pointer()


def test_cuda_array_interface_producer():
    cp = pytest.importorskip("cupy")
    x = cp.arange(10, dtype=cp.float64)

    class Producer:
        __cuda_array_interface__ = x.__cuda_array_interface__

    op = wrap_operand(Producer())
    assert op.ptr == x.data.ptr and op.shape == (10,) and op.device_id == 0


def test_device_mismatch():
    cp = pytest.importorskip("cupy")
    a = wrap_operand(cp.zeros(3))
    b = wrap_operand(np.zeros(3))
    with pytest.raises(DeviceMismatchError, match="cuda:0"):
        check_same_device(a, b, names=("x", "out"))

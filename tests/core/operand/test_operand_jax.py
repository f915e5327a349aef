"""JAX arrays as operands (CPU here; GPU in test_operand_gpu.py): read through DLPack once
ready, immutable, results handed back as JAX arrays."""

import numpy as np
import pytest

from accelmath._core.operand import adapter_for, wrap_operand

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

CPU = jax.devices("cpu")[0]


def host(x):
    """``x`` on JAX's CPU device (the default device is the GPU where JAX has one)."""
    return jax.device_put(x, CPU)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "bfloat16", "int32", "bool"])
def test_host_arrays(dtype):
    x = host(jnp.zeros((3, 4), dtype))
    op = wrap_operand(x)
    assert op.package == "jax" and op.obj is x and op.device_id is None
    assert (op.shape, op.strides, op.dtype) == ((3, 4), (4, 1), dtype)
    assert op.ptr == x.unsafe_buffer_pointer()
    assert op.keepalive is not None  # the capsule, keeping the buffer alive
    assert op.ready is None  # (JAX's streams are waited for by block_until_ready)


def test_transposes_come_back_in_c_order():
    op = wrap_operand(host(jnp.arange(12.0).reshape(3, 4).T))
    assert op.shape == (4, 3) and op.strides == (3, 1)


def test_adapter():
    x = host(jnp.arange(6, dtype=jnp.float32))
    adapter = adapter_for(x)
    assert adapter.package == "jax" and adapter.immutable
    assert adapter.layout_key(x) is None  # no fast path: every call waits for the array
    assert adapter.astype(x, "complex64").dtype == jnp.complex64
    np.testing.assert_array_equal(adapter.to_numpy(x), np.arange(6, dtype=np.float32))
    back = adapter.from_numpy(np.ones(3), x)
    assert isinstance(back, jax.Array) and next(iter(back.devices())) == next(iter(x.devices()))


def test_wrap_waits_for_the_array(monkeypatch):
    x = host(jnp.ones(4))
    waited = []
    adapter = adapter_for(x)
    real = type(x).block_until_ready
    monkeypatch.setattr(type(x), "block_until_ready", lambda self: waited.append(self) or
                        real(self))
    adapter.wrap(x)
    assert waited == [x]

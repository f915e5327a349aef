"""JAX arrays: read through DLPack once JAX's own streams are done with them; results are
buffers of the device adapter handed to JAX through DLPack (JAX arrays are immutable)."""

from accelmath._core.operand.base import Adapter
from accelmath._core.operand.protocols import GenericAdapter

__all__ = ["JaxAdapter"]


class JaxAdapter(GenericAdapter):
    """The adapter of ``jax.Array``."""

    immutable = True

    def __init__(self):
        super().__init__("jax")
        import jax
        import jax.dlpack

        self._jax = jax
        self._from_dlpack = jax.dlpack.from_dlpack

    def wrap(self, x):
        # JAX runs on streams of its own: wait for x before other streams read it.
        x.block_until_ready()
        return self._wrap_dlpack(x, ordered=True)

    def astype(self, x, dtype):
        return x.astype(dtype)

    def finish(self, result, stream, device_id):
        """A JAX array over the result buffer (zero copy, through DLPack). The buffer's
        package hands it over in the order of ``stream``, where the work writing it was
        enqueued: JAX's streams wait for that work before they read it."""
        with self.stream_scope(stream, device_id):
            return self._from_dlpack(result)

    def from_numpy(self, a, like):
        if like is None:
            return self._jax.device_put(a)  # (JAX's default device)
        return self._jax.device_put(a, next(iter(like.devices())))

    def from_dlpack(self, x):
        return self._from_dlpack(x)

    # JAX's own copy (the base adapter's), not the DLPack import of the generic one: NumPy's
    # takes host data only
    to_numpy = Adapter.to_numpy

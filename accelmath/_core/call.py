"""One call on the device: its package, device and stream, resolved by one rule, and its
results allocated in that stream's order.

The stream rule (:func:`stream_of`): a call runs on the stream the caller names, else on the
current stream of the operands' package on their device. A named stream that is not that
current stream is *explicit*: results are then allocated inside the package's scope of that
stream (:meth:`Context.empty`), so that the package's pool does not hand their memory out
again while the work on the named stream may still be writing it.
"""

from accelmath._core.gpu.stream import stream_handle
from accelmath._core.layout import contiguous_strides

__all__ = ["Context", "stream_of"]


def stream_of(stream, current_stream):
    """``(handle, explicit)``: the handle of the call's stream, ``stream`` where given (an
    int or a stream object) else ``current_stream()``, and whether it is not the current one.

    Examples
    --------
    >>> from accelmath._core.call import stream_of
    >>> stream_of(None, lambda: 7), stream_of(7, lambda: 7), stream_of(3, lambda: 7)
    ((7, False), (7, False), (3, True))
    """
    current = current_stream()
    if stream is None:
        return current, False
    handle = stream_handle(stream)
    return handle, handle != current


class Context:
    """One call's device, package, stream and allocations.

    Parameters
    ----------
    op : Operand
        The operand whose package and device the results follow (its pending work is
        ordered before the call's stream).
    stream : stream object, int or None
        The caller's stream (None: the package's current stream); see :func:`stream_of`.
    """

    __slots__ = ("adapter", "device_id", "stream", "explicit", "dtype")

    def __init__(self, op, stream):
        self.adapter = op.adapter
        self.device_id = op.device_id
        self.dtype = op.dtype
        self.stream, self.explicit = stream_of(
            stream, lambda: op.adapter.current_stream(op.device_id))
        op.wait_ready(self.stream)

    @classmethod
    def on(cls, adapter, device_id, stream, explicit, dtype):
        """The context of a call whose stream is resolved already (by :func:`stream_of`)."""
        ctx = cls.__new__(cls)
        ctx.adapter, ctx.device_id, ctx.stream = adapter, device_id, stream
        ctx.explicit, ctx.dtype = explicit, dtype
        return ctx

    def allocate(self, *allocators):
        """Each ``allocate()`` (a package's allocator of one layout: () -> (array,
        address)) in the order of the call's stream, in one scope: their pairs, in order."""
        if self.explicit:
            with self.adapter.stream_scope(self.stream, self.device_id):
                return [allocate() for allocate in allocators]
        return [allocate() for allocate in allocators]

    def empty(self, shape, dtype=None, strides=None):
        """A new array of the caller's package (C order, or dense with element ``strides``)
        and its address."""
        shape = tuple(shape)
        dtype = self.dtype if dtype is None else dtype
        strides = contiguous_strides(shape) if strides is None else strides
        if self.explicit:
            with self.adapter.stream_scope(self.stream, self.device_id):
                return self.adapter.empty_strided(shape, strides, dtype, self.device_id)
        return self.adapter.empty_strided(shape, strides, dtype, self.device_id)

    def finish(self, array):
        """What the caller gets for a result written by the work enqueued so far (JAX's
        arrays are handed over once it is queued)."""
        if self.adapter.immutable:
            return self.adapter.finish(array, self.stream, self.device_id)
        return array

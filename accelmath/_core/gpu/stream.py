"""Resolve the CUDA stream a call runs on.

An explicit ``stream=`` may be an integer handle, a CuPy stream, a PyTorch stream, a
``cuda.core`` stream or any object with ``__cuda_stream__``. Without one, a call runs on the
current stream of the operand's package (CuPy's or PyTorch's), or on the legacy default
stream for other packages. Data of the producers of the CUDA array protocols is read in the
order of the stream they name (:func:`order_after`).
"""

import ctypes

from accelmath.errors import UnsupportedOperandError

__all__ = ["resolve_stream", "stream_handle", "check_stream", "cupy_stream", "order_after"]

_LEGACY = (0, 1)  # the legacy default stream: NULL, or CU_STREAM_LEGACY as the protocols say
_EVENT_DISABLE_TIMING = 2


def check_stream(stream):
    """Refuse ``stream`` where it is given and is not a stream (as :func:`stream_handle`
    does): what a path without streams (the CPU's) does with the argument.

    Examples
    --------
    >>> from accelmath._core.gpu.stream import check_stream
    >>> check_stream(None), check_stream(0)
    (None, None)
    """
    if stream is not None:
        stream_handle(stream)


def stream_handle(stream):
    """The ``cudaStream_t`` handle (an int) of an explicit stream object.

    Parameters
    ----------
    stream : int or stream object
        An int handle, an object with ``__cuda_stream__`` (cuda.core, recent CuPy and PyTorch),
        a CuPy stream (``.ptr``) or a PyTorch stream (``.cuda_stream``).

    Raises
    ------
    UnsupportedOperandError
        For anything else (a ``TypeError`` naming the type).

    Examples
    --------
    >>> from accelmath._core.gpu.stream import stream_handle
    >>> stream_handle(0)
    0
    """
    if type(stream) is int:
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    for attr in ("ptr", "cuda_stream"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    if isinstance(stream, int) and not isinstance(stream, bool):
        return int(stream)
    raise UnsupportedOperandError(
        f"stream must be an int handle, a CuPy, PyTorch or cuda.core stream, or an object "
        f"with __cuda_stream__; got {type(stream).__qualname__}")


def resolve_stream(stream, operand):
    """The stream handle for work on ``operand``: ``stream`` if given, else the current one.

    Parameters
    ----------
    stream : int, stream object or None
        The explicit stream (see :func:`stream_handle`), or None for the current stream of
        the operand's package on its device.
    operand : Operand
        The operand the work is for.

    Returns
    -------
    int
        The ``cudaStream_t`` handle (0 is the legacy default stream).
    """
    if stream is None:
        return operand.adapter.current_stream(operand.device_id)
    return stream_handle(stream)


def order_after(stream, producer, device_id):
    """Make the work enqueued next on ``stream`` wait for the work already enqueued on
    ``producer`` (both handles, on device ``device_id``), without blocking the host.

    Examples
    --------
    >>> from accelmath._core.gpu.stream import order_after
    >>> order_after(0, 1, 0)  # both the legacy default stream: nothing to do
    """
    if stream == producer or (stream in _LEGACY and producer in _LEGACY):
        return
    from accelmath._core.gpu.device import ensure_context
    from accelmath.bindings import driver

    ensure_context(device_id)
    event = ctypes.c_void_p()
    driver.lib.event_create(ctypes.byref(event), _EVENT_DISABLE_TIMING)
    try:
        driver.lib.event_record(event, producer)
        driver.lib.stream_wait_event(stream, event, 0)
    finally:
        driver.lib.event_destroy(event)  # (released once the wait is done)


class _StreamHandle:
    """A raw stream handle seen through the CUDA stream protocol."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return 0, self.handle


def cupy_stream(cupy, handle, device_id):
    """A CuPy stream object for the raw ``handle`` of ``device_id``: as a context manager, it
    makes CuPy allocate from its pool, and run, in that stream's order."""
    if handle == 0:
        return cupy.cuda.Stream.null
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:  # CuPy >= 14
        return from_external(_StreamHandle(handle))
    return cupy.cuda.ExternalStream(handle, device_id)

"""Memory accelmath owns: device workspaces from the caller's package pool, the page-locked
host buffers through which small results are read back (:func:`read_back`, and
:func:`read_back_later`, which lets more work be enqueued before waiting for the values), and
a page-locked flag per thread that kernels raise without a copy (:func:`host_flag`).

A workspace is allocated for one stream and used only on it, so that a plan run from several
streams never shares scratch memory between them, and freeing it back to a stream-ordered pool
is safe. CuPy's pool and PyTorch's caching allocator are used when the caller's arrays come
from them; otherwise CuPy, then PyTorch.
"""

import ctypes
import importlib
import threading

import numpy

from accelmath._core.gpu.stream import _EVENT_DISABLE_TIMING, cupy_stream
from accelmath.bindings import driver
from accelmath.errors import CudaLibraryError, UnsupportedOperandError

__all__ = ["Workspace", "allocate_workspace", "host_flag", "read_back", "read_back_later",
           "Later"]


class Workspace:
    """Device memory owned by accelmath: ``ptr`` and ``nbytes``; freed by :meth:`free`."""

    __slots__ = ("ptr", "nbytes", "_owner", "_release")

    def __init__(self, ptr, nbytes, owner=None, release=None):
        self.ptr = ptr
        self.nbytes = nbytes
        self._owner = owner
        self._release = release

    def free(self):
        """Return the memory to its pool (idempotent)."""
        if self._release is not None:
            self._release(self.ptr)
        self._release = None
        self._owner = None
        self.ptr = 0


def _cupy_workspace(nbytes, device_id, stream):
    import cupy

    with cupy.cuda.Device(device_id), cupy_stream(cupy, stream, device_id):
        memptr = cupy.cuda.alloc(nbytes)
    return Workspace(memptr.ptr, nbytes, owner=memptr)


def _torch_workspace(nbytes, device_id, stream):
    import torch

    ptr = torch.cuda.caching_allocator_alloc(nbytes, device_id, stream)
    return Workspace(ptr, nbytes, release=torch.cuda.caching_allocator_delete)


_ALLOCATORS = {"cupy": _cupy_workspace, "torch": _torch_workspace}


def allocate_workspace(nbytes, device_id, stream, package):
    """Allocate ``nbytes`` of device memory for use on ``stream``.

    Parameters
    ----------
    nbytes : int
        Size in bytes (0 gives an empty workspace with ``ptr == 0``).
    device_id : int
        The CUDA device.
    stream : int
        The stream handle the memory will be used on.
    package : str
        The caller's array package; its pool is used when it has one.

    Returns
    -------
    Workspace
    """
    if nbytes == 0:
        return Workspace(0, 0)
    order = [package] + [p for p in ("cupy", "torch") if p != package]
    for name in order:
        if name not in _ALLOCATORS:
            continue
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return _ALLOCATORS[name](nbytes, device_id, stream)
    raise UnsupportedOperandError("device workspaces need CuPy or PyTorch installed")


_PORTABLE = 1  # CU_MEMHOSTALLOC_PORTABLE: page-locked for every context, so every device
_local = threading.local()  # .spares: this thread's _PageLocked buffers free for a read


class _PageLocked:
    """Page-locked host memory, freed with its last reference once the copy into it that
    ``event`` (a CUDA event handle, or None) marks is done."""

    __slots__ = ("ptr", "nbytes", "event", "_driver")

    def __init__(self, nbytes):
        ptr = ctypes.c_void_p()
        driver.lib.mem_host_alloc(ctypes.byref(ptr), nbytes, _PORTABLE)
        self.ptr, self.nbytes, self.event, self._driver = ptr.value, nbytes, None, driver.lib

    def wait(self):
        """Wait for the copy into the buffer, if any, and forget its event (kept where the
        wait fails, so the buffer is neither read nor freed as if the copy were done)."""
        event = self.event
        if event is not None:
            self._driver.event_synchronize(event)
            self.event = None
            self._driver.event_destroy(event)

    def __del__(self):
        try:
            self.wait()  # (a copy never waited for, as after an error: no DMA into freed memory)
            self._driver.mem_free_host(self.ptr)
        except Exception:  # (at exit the driver may be gone; the process frees it anyway)
            pass


def _take(nbytes):
    """A page-locked buffer of at least ``nbytes`` from this thread's spares, else a new one
    (sized to a power of two, at least 4 KiB); None where page-locked memory cannot be had."""
    spares = _spares()
    for i, buffer in enumerate(spares):
        if buffer.nbytes >= nbytes:
            return spares.pop(i)
    try:
        return _PageLocked(max(4096, 1 << (nbytes - 1).bit_length()))
    except CudaLibraryError:
        return None


def read_back(ptr, count, dtype, stream):
    """``count`` values of ``dtype`` at device address ``ptr``, read once the work enqueued
    on ``stream`` so far is done: a new NumPy array.

    The copy goes through a page-locked buffer of the calling thread (kept for the next
    read), which the driver copies into directly, without staging pageable memory: the read
    that ends a checked call (its info codes) costs less. Where page-locked memory cannot be
    had, the copy goes to the array itself.
    """
    out = numpy.empty(count, dtype)
    nbytes = out.nbytes
    if not nbytes:
        return out
    buffer = _take(nbytes)
    driver.lib.memcpy_async(out.ctypes.data if buffer is None else buffer.ptr, ptr, nbytes,
                            stream)
    driver.lib.stream_synchronize(stream)
    if buffer is not None:
        ctypes.memmove(out.ctypes.data, buffer.ptr, nbytes)
        _spares().append(buffer)
    return out


def read_back_later(ptr, count, dtype, stream):
    """Enqueue on ``stream`` the read back of ``count`` values of ``dtype`` at device
    address ``ptr`` (once the work enqueued so far is done), for a :class:`Later` that waits
    for it: work enqueued in between keeps the GPU busy while the caller waits for the
    values alone, so the values can be checked without the GPU going idle.

    Examples
    --------
    >>> import numpy
    >>> from accelmath._core.gpu.memory import read_back_later
    >>> read_back_later(0, 0, numpy.int32, 0).result()
    array([], dtype=int32)
    """
    nbytes = count * numpy.dtype(dtype).itemsize
    buffer = _take(nbytes) if nbytes else None
    if buffer is None:  # (nothing to read, or no page-locked memory: read now)
        return Later(count, dtype, values=read_back(ptr, count, dtype, stream))
    event = ctypes.c_void_p()
    driver.lib.event_create(ctypes.byref(event), _EVENT_DISABLE_TIMING)
    buffer.event = event.value  # (from here the buffer waits for it before it is freed)
    try:
        driver.lib.memcpy_async(buffer.ptr, ptr, nbytes, stream)
        driver.lib.event_record(event, stream)
    except BaseException:
        try:  # (a copy enqueued, no event recorded after it: wait for the stream instead)
            driver.lib.stream_synchronize(stream)
        finally:
            buffer.wait()
        raise
    return Later(count, dtype, buffer)


def _spares():
    spares = getattr(_local, "spares", None)
    if spares is None:
        spares = _local.spares = []
    return spares


class Later:
    """A read back :func:`read_back_later` enqueued: :meth:`result` waits for its values.

    A Later dropped unread keeps its buffer out of reuse; the buffer waits for its copy
    before it is freed."""

    __slots__ = ("count", "dtype", "_buffer", "_values")

    def __init__(self, count, dtype, buffer=None, values=None):
        self.count, self.dtype, self._buffer, self._values = count, dtype, buffer, values

    def result(self):
        """The values: a NumPy array, once the copy is done (the first call waits)."""
        if self._values is None:
            buffer = self._buffer
            buffer.wait()
            out = numpy.empty(self.count, self.dtype)
            ctypes.memmove(out.ctypes.data, buffer.ptr, out.nbytes)
            self._buffer, self._values = None, out
            _spares().append(buffer)  # (its copy is done: free for the next read)
        return self._values


class HostFlag:
    """An int32 of page-locked host memory that kernels write at its host address (memory
    from ``cuMemHostAlloc`` is reachable so from every device, under the unified addressing
    of 64-bit platforms): a kernel raises it, and the host reads it once the stream is done,
    with no copy enqueued and nothing to scan. :func:`host_flag` gives the calling thread's.
    """

    __slots__ = ("ptr", "_buffer", "_word")

    def __init__(self):
        self._buffer = _PageLocked(4)
        self.ptr = self._buffer.ptr
        self._word = ctypes.c_int32.from_address(self.ptr)

    def lower(self):
        """Set the flag to 0, before the work that may raise it is enqueued."""
        self._word.value = 0

    def raised_after(self, stream):
        """Whether the flag was raised once the work enqueued on ``stream`` so far is done
        (this waits for it)."""
        driver.lib.stream_synchronize(stream)
        return self.raised()

    def raised(self):
        """Whether the flag was raised, read now: for a caller that has waited already for
        the work that may raise it (an event after it)."""
        return self._word.value != 0


def host_flag():
    """The calling thread's :class:`HostFlag`, lowered; None where page-locked memory cannot
    be had. One thread's checks run one at a time, each waiting for its stream, so a
    thread's flag serves them all."""
    flag = getattr(_local, "flag", None)
    if flag is None:
        try:
            flag = HostFlag()
        except CudaLibraryError:
            flag = False  # (not tried again)
        _local.flag = flag
    if not flag:
        return None
    flag.lower()
    return flag

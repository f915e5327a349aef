"""Device workspaces from the caller's package pool.

A workspace is allocated for one stream and used only on it, so that a plan run from several
streams never shares scratch memory between them, and freeing it back to a stream-ordered pool
is safe. CuPy's pool and PyTorch's caching allocator are used when the caller's arrays come
from them; otherwise CuPy, then PyTorch.
"""

import importlib

from accelmath._core.stream import cupy_stream
from accelmath.errors import UnsupportedOperandError

__all__ = ["Workspace", "allocate_workspace"]


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

"""Launching a kernel: a :class:`LaunchConfig` (grid, block, shared memory, clusters) checked
once against what every GPU allows, and :func:`launch`, which enqueues a kernel on a stream
with no checks on its path (``cuLaunchKernel`` through the call shim, about 2 us less than
through ctypes). The kernels come from :mod:`accelmath._core.gpu.modules`.
"""

import ctypes
import functools
import operator
from dataclasses import dataclass, field

from accelmath._core import hostcall
from accelmath.bindings import driver
from accelmath.errors import InvalidArgumentError

__all__ = ["LaunchConfig", "allow_dynamic_shared", "config", "kept_launch", "launch",
           "launch_parameters"]

# What one launch may ask for (every GPU since compute capability 3.0): threads per block in
# x, y, z and in all, and blocks in x, y, z.
_MAX_BLOCK = (1024, 1024, 64)
_MAX_THREADS = 1024
_MAX_GRID = (2**31 - 1, 65535, 65535)
_MAX_FUNCTION_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def allow_dynamic_shared(function, nbytes):
    """Let ``function`` be launched with ``nbytes`` of dynamic shared memory: past 48 KiB a
    kernel must opt in, up to what its GPU has (227 KiB a block on Hopper)."""
    driver.lib.func_set_attribute(function, _MAX_FUNCTION_SHARED, nbytes)


def _dims(value, name, limits):
    """``value`` (an int, or 1 to 3 ints) as an ``(x, y, z)`` tuple, checked against
    ``limits``, or InvalidArgumentError."""
    try:
        dims = ((operator.index(value),) if not hasattr(value, "__len__")
                else tuple(operator.index(v) for v in value))
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise InvalidArgumentError(
            f"{name}={value!r} is not a launch dimension: expected a positive int or 1 to 3 "
            f"positive ints (x, y, z)")
    dims = dims + (1,) * (3 - len(dims))
    if limits is not None and any(d > limit for d, limit in zip(dims, limits)):
        raise InvalidArgumentError(
            f"{name}={value!r} exceeds what a launch allows: at most {limits} in (x, y, z)")
    return dims


@dataclass(frozen=True)
class LaunchConfig:
    """How a kernel is launched: checked once, used by :func:`launch` at each call.

    Parameters
    ----------
    grid : int or tuple of int
        Blocks in x, or in (x, y) or (x, y, z).
    block : int or tuple of int
        Threads per block, likewise; at most 1024 in all.
    shared_bytes : int
        Dynamic shared memory per block (past 48 KiB, see :func:`allow_dynamic_shared`).
    cluster : int or tuple of int, optional
        Blocks per thread-block cluster (compute capability 9.0 and later), likewise; each
        dimension of ``grid`` must be a multiple of it. ``None``: no cluster at launch (a
        kernel declared with ``__cluster_dims__`` has its clusters anyway).

    Examples
    --------
    >>> from accelmath._core.gpu.launch import LaunchConfig
    >>> LaunchConfig(grid=(64, 2), block=256, cluster=8).grid
    (64, 2, 1)
    >>> LaunchConfig(grid=4, block=2048)
    Traceback (most recent call last):
    ...
    accelmath.errors.InvalidArgumentError: block=2048 exceeds what a launch allows: ...
    """

    grid: tuple
    block: tuple
    shared_bytes: int = 0
    cluster: tuple = None
    _dims: tuple = field(init=False, repr=False, compare=False)
    _attributes: object = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        grid = _dims(self.grid, "grid", _MAX_GRID)
        block = _dims(self.block, "block", _MAX_BLOCK)
        if block[0] * block[1] * block[2] > _MAX_THREADS:
            raise InvalidArgumentError(
                f"block={self.block!r} has {block[0] * block[1] * block[2]} threads: a block "
                f"has at most {_MAX_THREADS}")
        try:
            shared = operator.index(self.shared_bytes)
        except TypeError:
            shared = -1
        if not 0 <= shared < 2**32:
            raise InvalidArgumentError(
                f"shared_bytes={self.shared_bytes!r} is not a byte count: expected an int "
                f"from 0 to 2**32 - 1")
        cluster, attributes = None, None
        if self.cluster is not None:
            cluster = _dims(self.cluster, "cluster", None)
            if any(g % c for g, c in zip(grid, cluster)):
                raise InvalidArgumentError(
                    f"grid={self.grid!r} is not a whole number of clusters of "
                    f"{self.cluster!r}: each grid dimension must be a multiple of the cluster's")
            attributes = (driver.CUlaunchAttribute * 1)()
            attributes[0].id = driver.LAUNCH_ATTRIBUTE["cluster_dimension"]
            dim = attributes[0].value.cluster_dim
            dim.x, dim.y, dim.z = cluster
        for name, value in (("grid", grid), ("block", block), ("shared_bytes", shared),
                            ("cluster", cluster), ("_dims", (*grid, *block, shared)),
                            ("_attributes", attributes)):
            object.__setattr__(self, name, value)


@functools.lru_cache(maxsize=1024)
def config(grid, block, shared_bytes=0):
    """``LaunchConfig(grid, block, shared_bytes)``, made and checked once per arguments
    (hashable ones: ints and tuples), for launches on a per-call path.

    Examples
    --------
    >>> from accelmath._core.gpu.launch import config
    >>> config((64, 2), 256) is config((64, 2), 256)
    True
    """
    return LaunchConfig(grid=grid, block=block, shared_bytes=shared_bytes)


_launch_kernel = []  # [(cuLaunchKernel as hostcall.fast makes it, its C name)], once bound


def _bound_launch():
    if not _launch_kernel:
        func, c_name = driver.lib.raw("launch_kernel")
        _launch_kernel.append((hostcall.fast(func), c_name))
    return _launch_kernel[0]


def launch(function, config, args, stream):
    """Enqueue ``function`` on ``stream`` as ``config`` says, with ``args``.

    No checks here, on the per-call path: ``config`` was checked when it was made.

    Parameters
    ----------
    function : ctypes.c_void_p
        A kernel, from :meth:`Module.function`.
    config : LaunchConfig
        Grid, block, shared memory, cluster.
    args : sequence of ctypes values
        The kernel's parameters in order (``ctypes.c_void_p`` for pointers, ``c_int``,
        ``c_float``, a ``ctypes.Structure`` for a struct...), alive until this returns.
    stream : int or None
        The stream handle (``None`` or 0: the legacy default stream).
    """
    launch_parameters(function, config,
                      (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args]), stream)


def kept_launch(function, config, parameters):
    """``run(stream)``: :func:`launch_parameters` of ``function`` as ``config`` says with the
    ctypes array ``parameters``, all but the stream bound once: for parameters kept in place
    and rewritten between launches (the driver copies them at each)."""
    if config._attributes is not None:
        return lambda stream: launch_parameters(function, config, parameters, stream)
    call, c_name = _launch_kernel[0] if _launch_kernel else _bound_launch()
    head, address = (function.value, *config._dims), ctypes.addressof(parameters)

    def run(stream):
        status = call(*head, stream, address, None)
        if status:
            driver.lib.raise_status(c_name, status)

    return run


def launch_parameters(function, config, parameters, stream):
    """:func:`launch` with the kernel's parameters given as cuLaunchKernel takes them: a ctypes
    array of their addresses (``parameters``), which may be reused once this returns (the
    driver copies the values)."""
    if config._attributes is None:
        call, c_name = _launch_kernel[0] if _launch_kernel else _bound_launch()
        status = call(function.value, *config._dims, stream, ctypes.addressof(parameters), None)
        if status:
            driver.lib.raise_status(c_name, status)
    else:
        native = driver.CUlaunchConfig(*config._dims, stream, config._attributes, 1)
        driver.lib.launch_kernel_ex(ctypes.byref(native), function, parameters, None)

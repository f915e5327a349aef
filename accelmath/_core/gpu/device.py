"""GPU presence, compute capability, driver and library versions, and the current context.

Every query here is safe on a machine without a GPU, without the NVIDIA driver or without the
CUDA wheels: :func:`gpu_available` answers ``False``, :func:`devices` an empty list,
:func:`driver_version` ``None``, and :func:`library_info` records why a library is missing
instead of raising. Only :func:`compute_capability` and :func:`ensure_context`, which need a
GPU, raise :class:`~accelmath.errors.NoDeviceError`.

Examples
--------
>>> from accelmath._core.gpu import device
>>> isinstance(device.gpu_available(), bool)
True
>>> from accelmath.bindings import LIBRARIES
>>> list(device.library_info()) == list(LIBRARIES)
True
"""

import ctypes
import importlib
import operator
import threading
from ctypes import byref, c_int, c_size_t, c_void_p

from accelmath._core import hostcall
from accelmath.bindings import LIBRARIES, _loader, driver
from accelmath.errors import InvalidArgumentError, LibraryNotFoundError, NoDeviceError

__all__ = [
    "block_shared_memory",
    "compute_capability",
    "devices",
    "driver_version",
    "ensure_context",
    "gpu_available",
    "gpu_unavailable_reason",
    "library_info",
]

_lock = threading.Lock()
# The outcome of probing the driver, once per process: (device count, reason if none).
_probe = None
_handles = {}       # device ordinal -> CUdevice
_capabilities = {}  # device ordinal -> (major, minor)
_shared = {}        # device ordinal -> (the shared memory a block may opt in to, bytes,)
_primary = {}       # device ordinal -> retained primary CUcontext (an int)
_threads = threading.local()  # per thread: ensure_context's fast read


def _probe_driver():
    """Initialize the driver once and return ``(device_count, reason_if_none)``; never raises."""
    global _probe
    if _probe is not None:
        return _probe
    with _lock:
        if _probe is None:
            try:
                lib = driver.lib
                lib.init(0)
                count = c_int()
                lib.device_get_count(byref(count))
                reason = None if count.value > 0 else "the NVIDIA driver reports no CUDA device"
                _probe = (count.value, reason)
            except LibraryNotFoundError as exc:
                _probe = (0, f"no NVIDIA driver: {exc.reason}")
            except Exception as exc:  # cuInit failures, and anything else: this must not raise
                _probe = (0, str(exc) or type(exc).__name__)
    return _probe


def gpu_available():
    """Whether at least one CUDA GPU is usable.

    The driver is probed once per process; later calls return the cached answer.

    Returns
    -------
    bool
        ``False`` when ``libcuda.so.1`` is missing, ``cuInit`` fails, or the driver sees no
        device. Never raises.

    Examples
    --------
    >>> from accelmath._core.gpu.device import gpu_available
    >>> gpu_available() in (True, False)
    True
    """
    return _probe_driver()[0] > 0


def gpu_unavailable_reason():
    """Why no GPU is usable, as a sentence, or ``None`` when one is.

    Examples
    --------
    >>> from accelmath._core.gpu.device import gpu_available, gpu_unavailable_reason
    >>> (gpu_unavailable_reason() is None) == gpu_available()
    True
    """
    return _probe_driver()[1]


def driver_version():
    """The CUDA version the installed driver supports, as ``(major, minor)``.

    Returns
    -------
    tuple of int or None
        For example ``(12, 4)``; ``None`` when there is no NVIDIA driver. Never raises.

    Examples
    --------
    >>> from accelmath._core.gpu.device import driver_version
    >>> v = driver_version()
    >>> v is None or len(v) == 2
    True
    """
    try:
        value = c_int()
        driver.lib.driver_get_version(byref(value))
    except Exception:  # no driver, or a driver too broken to answer
        return None
    return value.value // 1000, value.value % 1000 // 10


def _check_device_id(device_id):
    count, reason = _probe_driver()
    if count == 0:
        raise NoDeviceError(f"device {device_id!r} was asked for, but no CUDA GPU is usable: {reason}")
    try:
        index = operator.index(device_id)
    except TypeError:
        index = -1
    if isinstance(device_id, bool) or not 0 <= index < count:
        raise InvalidArgumentError(
            f"device_id={device_id!r} is not a device of this machine: expected an int from 0 to "
            f"{count - 1} ({count} GPU{'s' if count > 1 else ''} found)")


def _handle(device_id):
    handle = _handles.get(device_id)
    if handle is None:
        value = c_int()
        driver.lib.device_get(byref(value), device_id)
        handle = _handles[device_id] = value.value
    return handle


def _attribute(handle, name):
    value = c_int()
    driver.lib.device_get_attribute(byref(value), driver.ATTRIBUTE[name], handle)
    return value.value


def _cached(cache, device_id, *names):
    """The attributes ``names`` of a GPU as a tuple, read once per device into ``cache``."""
    found = cache.get(device_id)
    if found is None:
        _check_device_id(device_id)
        handle = _handle(device_id)
        found = cache[device_id] = tuple(_attribute(handle, name) for name in names)
    return found


def compute_capability(device_id):
    """The compute capability of a GPU, as ``(major, minor)``; cached per device.

    Parameters
    ----------
    device_id : int
        The device ordinal.

    Returns
    -------
    tuple of int
        For example ``(9, 0)`` for an H100.

    Raises
    ------
    NoDeviceError
        If no GPU is usable.
    InvalidArgumentError
        If ``device_id`` is not the ordinal of a GPU of this machine.

    Examples
    --------
    >>> from accelmath._core.gpu.device import compute_capability, gpu_available
    >>> not gpu_available() or compute_capability(0) >= (7, 0)
    True
    """
    return _cached(_capabilities, device_id, "compute_capability_major",
                   "compute_capability_minor")


def block_shared_memory(device_id):
    """The shared memory a block of a kernel may take on a GPU, once it opts in past
    48 KiB (227 KiB on Hopper); cached per device.

    Parameters
    ----------
    device_id : int
        The device ordinal.

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    NoDeviceError
        If no GPU is usable.
    InvalidArgumentError
        If ``device_id`` is not the ordinal of a GPU of this machine.

    Examples
    --------
    >>> from accelmath._core.gpu.device import block_shared_memory, gpu_available
    >>> not gpu_available() or block_shared_memory(0) >= 48 * 1024
    True
    """
    return _cached(_shared, device_id, "max_shared_memory_per_block_optin")[0]


def devices():
    """The usable CUDA GPUs, one dictionary each.

    Returns
    -------
    list of dict
        Each with the keys ``index`` (the ordinal), ``name``, ``compute_capability``
        (``(major, minor)``), ``total_memory`` (bytes) and ``multiprocessor_count``. An empty
        list when no GPU is usable.

    Examples
    --------
    >>> from accelmath._core.gpu.device import devices, gpu_available
    >>> len(devices()) > 0 if gpu_available() else devices() == []
    True
    """
    count = _probe_driver()[0]
    lib = driver.lib
    found = []
    for index in range(count):
        handle = _handle(index)
        name = ctypes.create_string_buffer(256)
        lib.device_get_name(name, len(name), handle)
        memory = c_size_t()
        lib.device_total_mem(byref(memory), handle)
        found.append({
            "index": index,
            "name": name.value.decode(errors="replace"),
            "compute_capability": compute_capability(index),
            "total_memory": memory.value,
            "multiprocessor_count": _attribute(handle, "multiprocessor_count"),
        })
    return found


def ensure_context(device_id):
    """Make a CUDA context for ``device_id`` current on the calling thread.

    A context already current on that device is kept (whoever made it: CuPy, PyTorch or
    accelmath). Otherwise the device's primary context, the one the CUDA runtime and the array
    packages share, is retained (once per process) and made current.

    Parameters
    ----------
    device_id : int
        The device ordinal.

    Returns
    -------
    int
        The current ``CUcontext``, as an address.

    Raises
    ------
    NoDeviceError
        If no GPU is usable.
    InvalidArgumentError
        If ``device_id`` is not the ordinal of a GPU of this machine.

    Examples
    --------
    >>> from accelmath._core.gpu.device import ensure_context, gpu_available
    >>> not gpu_available() or ensure_context(0) != 0
    True
    """
    primary = _primary.get(device_id)
    if primary is not None:  # the common case: its primary context is already current
        try:
            read, current = _threads.current
        except AttributeError:
            read, current = _threads.current = _current_reader()
        if read(ctypes.addressof(current)) == 0 and current.value == primary:
            return primary
    if device_id not in _handles:  # first use of this device here: validate it once
        _check_device_id(device_id)
    lib = driver.lib
    handle = _handle(device_id)
    current = c_void_p()
    lib.ctx_get_current(byref(current))
    if current.value:
        current_device = c_int()
        lib.ctx_get_device(byref(current_device))
        if current_device.value == handle:
            if primary is None and _primary_active(handle):
                # (the package's context is the primary one, as a rule: kept, for the fast
                # read above; an inactive primary is not made for it)
                _retain_primary(device_id, handle)
            return current.value
    context = _retain_primary(device_id, handle)
    lib.ctx_set_current(context)
    return context


def _retain_primary(device_id, handle):
    """The primary context of ``device_id`` (an int), retained once per process and never
    released: plans and modules made in it may outlive any object that could own the
    release."""
    context = _primary.get(device_id)
    if context is None:
        with _lock:
            context = _primary.get(device_id)
            if context is None:
                retained = c_void_p()
                driver.lib.device_primary_ctx_retain(byref(retained), handle)
                context = _primary[device_id] = retained.value
    return context


def _primary_active(handle):
    """Whether the primary context of device ``handle`` exists (is active)."""
    flags, active = ctypes.c_uint(), c_int()
    driver.lib.device_primary_ctx_get_state(handle, byref(flags), byref(active))
    return bool(active.value)


def _current_reader():
    """This thread's ``(read, buffer)``: ``read(address)`` is cuCtxGetCurrent writing the
    current context to ``buffer`` (a ctypes pointer) at that address, through the call shim
    (a tenth of a ctypes call with ``byref``: :func:`ensure_context` runs on every launch)."""
    lib = driver.lib
    func = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)((lib.c_name("ctx_get_current"),
                                                            lib.cdll))
    return hostcall.fast(func), c_void_p()


def library_info():
    """Where each CUDA library accelmath uses was found, and its version.

    Loads the libraries (not at import time: only when called). Never raises: a library that
    is missing, or whose version cannot be read, has the reason in ``error``.

    Returns
    -------
    dict
        For each library of :data:`accelmath.bindings.LIBRARIES`, by name, a dict with ``path`` (the file loaded,
        or ``None``), ``version`` (what the binding's ``version()`` returns, or ``None``) and
        ``error`` (``None``, or a message saying what went wrong: ``"not found: ..."`` for a
        missing library).

    Examples
    --------
    >>> from accelmath._core.gpu.device import library_info
    >>> info = next(iter(library_info().values()))
    >>> sorted(info)
    ['error', 'path', 'version']
    """
    info = {}
    for name, module_name in LIBRARIES.items():
        entry = info[name] = {"path": None, "version": None, "error": None}
        try:
            entry["path"] = _loader.load_library(name)[1]
        except LibraryNotFoundError as exc:
            entry["error"] = f"not found: {exc.reason}"
            continue
        except Exception as exc:  # anything unexpected from the loader: report, do not raise
            entry["error"] = f"{type(exc).__name__}: {exc}"
            continue
        try:
            module = importlib.import_module(f"accelmath.bindings.{module_name}")
            entry["version"] = module.version()
        except Exception as exc:  # a binding not written yet, or a failing query
            entry["error"] = f"version unknown: {type(exc).__name__}: {exc}"
    return info

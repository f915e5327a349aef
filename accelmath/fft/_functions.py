"""The NumPy-compatible FFT functions: normalize, get a cached plan, execute.

Every transform goes through :func:`_transform`: host arrays run on ``scipy.fft`` (unless
``execution="cuda"``), device arrays through a cached :class:`~accelmath.fft.FFT` plan.
hfft and ihfft are irfft and rfft of conjugates with the norm direction swapped, as in NumPy.
"""

import contextlib
import threading

from accelmath._core.cache import PlanCache
from accelmath._core.operand import (ITEMSIZE, Operand, adapter_for, check_mutable,
                                     check_same_device, wrap_operand)
from accelmath._core.stream import resolve_stream, stream_handle
from accelmath.errors import InvalidArgumentError, NoDeviceError
from accelmath.fft import _normalize as norms
from accelmath.fft._layout import is_dense, output_layout, plan_steps
from accelmath.fft._plan import FFT, scipy_transform

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "cache_info", "clear_cache", "set_cache_limits"]

_caches = {}
_caches_lock = threading.Lock()
_limits = {"max_size": 64, "max_bytes": 4 << 30}
# Calls seen before, by their arguments as given (the operand by its package's own layout
# key): call -> (cache, plan key). Only calls that run straight on the caller's array are
# remembered, so a repeated call skips argument normalization altogether.
_calls = {}
_MAX_CALLS = 1024


def _cache(device_id):
    cache = _caches.get(device_id)
    if cache is None:
        with _caches_lock:
            cache = _caches.setdefault(device_id, PlanCache(**_limits))
    return cache


def cache_info(device=None):
    """Statistics of the plan cache behind the stateless functions.

    Parameters
    ----------
    device : int, optional
        A device id; by default the statistics of all devices are summed.

    Returns
    -------
    dict
        ``hits``, ``misses``, ``size`` (plans cached), ``bytes`` (the workspace bytes they
        hold, for every thread and stream that ran them),
        ``max_size`` and ``max_bytes``.

    Examples
    --------
    >>> import accelmath.fft
    >>> sorted(accelmath.fft.cache_info())
    ['bytes', 'hits', 'max_bytes', 'max_size', 'misses', 'size']
    """
    infos = [c.info() for d, c in list(_caches.items()) if device is None or d == device]
    total = {k: sum(getattr(i, k) for i in infos) for k in ("hits", "misses", "size")}
    total["bytes"] = sum(i.nbytes for i in infos)
    total.update(_limits)
    return total


def clear_cache():
    """Drop every cached plan (plans in use finish first) and reset the statistics."""
    _calls.clear()
    for cache in list(_caches.values()):
        cache.clear()


def set_cache_limits(max_size=None, max_bytes=None):
    """Set the plan cache limits per device: entries and workspace bytes (None: unchanged).

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.set_cache_limits(max_size=32)
    >>> accelmath.fft.cache_info()["max_size"]
    32
    >>> accelmath.fft.set_cache_limits(max_size=64)
    """
    if max_size is not None:
        max_size = _limits["max_size"] = _limit(max_size, "max_size")
    if max_bytes is not None:
        max_bytes = _limits["max_bytes"] = _limit(max_bytes, "max_bytes")
    for cache in list(_caches.values()):
        cache.set_limits(max_size, max_bytes)


def _limit(value, what):
    value = norms.index(value, what)
    if value < 0:
        raise InvalidArgumentError(f"{what} must be at least 0, got {value}")
    return value


def _cpu(kind, op, s, axes, norm, inverse, conjugate, out, workers):
    """Host execution through scipy.fft."""
    a = op.adapter.to_numpy(op.obj)
    r = scipy_transform(kind, a, s, axes, norm, inverse, conjugate, workers)
    return op.adapter.from_numpy(r, op.obj) if out is None else _write_out(op, out, r)


def _checked_out(op, out, shape, dtype):
    """The operand of ``out``, checked to take a result of ``shape`` and ``dtype`` of the
    operand ``op`` (raises, naming ``out``)."""
    out_op = wrap_operand(out)
    check_same_device(op, out_op, names=("a", "out"))
    if (tuple(out_op.shape), out_op.dtype) != (tuple(shape), dtype):
        raise InvalidArgumentError(
            f"out has shape {tuple(out_op.shape)} and dtype {out_op.dtype}, expected shape "
            f"{tuple(shape)} and dtype {dtype}")
    if out_op.obj is not out:
        raise InvalidArgumentError(
            "out is a lazily conjugated or negated view; pass a tensor that owns its values")
    return out_op


def _write_out(op, out, r):
    """Copy the host result ``r`` of operand ``op`` into the host array ``out``, checked."""
    out_op = _checked_out(op, out, r.shape, r.dtype.name)
    target = out_op.adapter.to_numpy(out)
    if not target.flags.writeable:
        raise InvalidArgumentError("out is read-only")
    target[...] = r
    return out


def _to_device(x):
    """Copy a host array to the GPU (CuPy when installed, else PyTorch)."""
    from accelmath._core.device import gpu_available, gpu_unavailable_reason
    from accelmath._core.operand import _device_adapter

    if not gpu_available():
        raise NoDeviceError(f'execution="cuda" needs a CUDA GPU: {gpu_unavailable_reason()}')
    return _device_adapter().to_device(wrap_operand(x).adapter.to_numpy(x))


def _resize(op, axes, lengths, stream):
    """``op`` cut or zero-padded to ``lengths`` along ``axes`` (a view when only cut), the copy
    enqueued on ``stream`` (a handle; None: the current stream)."""
    from accelmath._core.kernels import copy_scale

    shape = list(op.shape)
    for axis, length in zip(axes, lengths):
        shape[axis] = length
    shape = tuple(shape)
    if shape == op.shape:
        return op
    if all(n <= m for n, m in zip(shape, op.shape)):
        return Operand(op.obj, op.ptr, shape, op.strides, op.dtype, op.device_id, op.adapter,
                       op.keepalive)
    padded = op.adapter.zeros(shape, op.dtype, op.device_id)
    new = wrap_operand(padded)
    new.adapter = op.adapter  # results stay in the caller's package (JAX allocates elsewhere)
    common = tuple(min(a, b) for a, b in zip(shape, op.shape))
    copy_scale(op.ptr, new.ptr, common, op.strides, new.strides, op.dtype, None,
               resolve_stream(stream, op), op.device_id)
    return new


def _transform(kind, x, s, axes, norm, default_axes, inverse, out, stream, execution,
               workers, conjugate=False):
    """Every FFT function ends here: see the module docstring."""
    call = None
    if out is None and execution == "auto":
        adapter = adapter_for(x)
        layout = adapter.layout_key(x)
        if layout is not None:
            call = (kind, inverse, s, axes, norm, conjugate, type(x), layout)
            try:
                seen = _calls.get(call)
            except TypeError:  # s or axes given as lists
                seen = call = None
            if seen is not None:
                plan = seen[0].get(seen[1])
                if plan is not None:
                    return plan._launch(adapter.data_ptr(x), None, inverse, stream)
    norm = norms.check_norm(norm)
    norms.check_execution(execution)
    workers = norms.check_workers(workers)
    if out is not None:
        check_mutable(out)
    try:
        op = wrap_operand(x)
    except TypeError as exc:  # (the accelmath errors of unsupported arrays and dtypes)
        raise type(exc)(f"a: {exc}") from None
    axes, s = norms.normalize_axes(op.shape, s, axes, default_axes)
    if not axes and kind != "c2c":
        raise InvalidArgumentError("axes must name at least one axis for a real transform")
    for axis in axes:
        if op.shape[axis] == 0 and (s is None or kind == "c2r"):
            raise InvalidArgumentError(f"axis {axis} has length 0; cannot transform it")
    in_dtype, out_dtype = norms.transform_dtypes(kind, op.dtype, op.adapter.complex32)
    last_axis_size = None
    if kind == "c2r":
        last_axis_size = s[-1] if s is not None else 2 * (op.shape[axes[-1]] - 1)
        if last_axis_size < 1:
            raise InvalidArgumentError(
                f"invalid number of data points ({last_axis_size}) specified")
    if not op.on_device and execution != "cuda":
        if stream is not None:
            stream_handle(stream)  # (checked, though the CPU has no streams)
        return _cpu(kind, op, s, axes, norm, inverse, conjugate, out, workers)
    if execution == "cpu":
        raise InvalidArgumentError('execution="cpu" needs a host operand; this one is on the GPU')
    scope = contextlib.nullcontext()
    if stream is not None:
        stream = stream_handle(stream)
        if stream != resolve_stream(None, op):
            # the package takes the explicit stream as its current one for this call: the
            # conversions, copies and allocations below follow its order, as the transform
            scope = op.adapter.stream_scope(stream, op.device_id)
    with scope:
        return _device_transform(kind, x, op, s, axes, norm, inverse, out, stream, workers,
                                 conjugate, in_dtype, last_axis_size, call)


def _device_transform(kind, x, op, s, axes, norm, inverse, out, stream, workers, conjugate,
                      in_dtype, last_axis_size, call):
    """The rest of :func:`_transform` for a device transform, or a host one moved there."""
    if not op.on_device:
        from accelmath._core.operand import _device_adapter

        result = _transform(kind, _to_device(x), s, axes, norm, None, inverse, None, stream,
                            "auto", workers, conjugate)
        host = _device_adapter().to_numpy(result)
        return op.adapter.from_numpy(host, x) if out is None else _write_out(op, out, host)
    op.wait_ready(stream)  # (producers of the CUDA array protocols: their streams' work)
    direct = op.obj is x
    if op.dtype != in_dtype:
        x = op.adapter.astype(x, in_dtype)
        op = wrap_operand(x)
        direct = False
    if kind == "c2r":
        s = (*(s[:-1] if s is not None else (op.shape[a] for a in axes[:-1])),
             last_axis_size // 2 + 1)
    if s is not None:
        resized = _resize(op, axes, s, stream)
        direct = direct and resized is op
        op = resized
    out_op = gapped = None
    if out is not None:
        out_shape, _ = output_layout(kind, axes, op.shape, op.strides, last_axis_size)
        out_op = _checked_out(op, out, out_shape,
                              norms.transform_dtypes(kind, op.dtype, op.adapter.complex32)[1])
        if not is_dense(out_op.shape, out_op.strides):
            # a view with gaps: the result goes there in one copy
            gapped, out, out_op = out_op, None, None
    key = (kind, axes, op.shape, op.strides, op.dtype, norm, conjugate, last_axis_size,
           out_op.strides if out_op is not None else None, op.adapter.package)

    def create():
        out_strides = out_op.strides if out_op else None
        if out_op is None:
            out_strides = _package_strides(kind, op, axes, last_axis_size)
        return FFT(op, axes=axes, kind=kind, norm=norm, last_axis_size=last_axis_size,
                   conjugate=conjugate, out_strides=out_strides)

    cache = _cache(op.device_id)
    plan = cache.get_or_create(key, create)
    if call is not None and direct:
        if len(_calls) >= _MAX_CALLS:
            _calls.clear()
        _calls[call] = (cache, key)
    result = plan._run(op, out, inverse, stream)
    if gapped is None:
        return result
    from accelmath._core.kernels import copy_scale

    made = wrap_operand(result)
    copy_scale(made.ptr, gapped.ptr, made.shape, made.strides, gapped.strides, made.dtype, None,
               resolve_stream(stream, op), op.device_id)
    return gapped.obj


def _package_strides(kind, op, axes, last_axis_size):
    """The result strides the operand's package gives its own transform where cuFFT writes
    them with no copy of the output (torch's transposed layouts), else None (dense, in the
    input's axis order)."""
    out_shape, _ = output_layout(kind, axes, op.shape, op.strides, last_axis_size)
    strides = op.adapter.fft_strides(kind, op.shape, op.strides, op.dtype, axes, out_shape)
    # (some torch versions' meta tensors report overlapping strides: those are not taken)
    if strides is None or not is_dense(out_shape, strides):
        return None
    # a c2r reads a scratch copy of its input, which the plan lays out in any order
    if kind != "c2r" and plan_steps(kind, axes, op.shape, op.strides, out_shape,
                                    strides) is None:
        return None
    return strides


_DOC = """{summary}

Signature-compatible with ``{peer}.{name}``, plus keyword-only ``out``, ``stream``,
``execution`` and ``workers``. Host arrays run on the CPU (``scipy.fft``), device arrays on
their GPU through a cached cuFFT plan; the result is of the input's package, dense, in the
input's axis order, except that the result of a torch tensor has the strides ``torch.fft``
gives it (where cuFFT can write them directly): a real transform over axes 0 and 1 comes back
transposed, and its inverse in C order.

Parameters
----------
a : array
    Input (NumPy, CuPy, PyTorch, JAX, or any ``__dlpack__`` / ``__cuda_array_interface__``
    producer). Integer and bool inputs are promoted as NumPy does; float16 computes in half
    precision on torch tensors (complex32 spectra) and in single precision elsewhere, as
    ``scipy.fft`` does.
{size_doc}
norm : {{"backward", "ortho", "forward"}}, optional
    Normalization mode (default "backward").
out : array, optional
    Where to write the result (same device; the result's shape and dtype; not a JAX array,
    as those are immutable).
stream : int or stream object, optional
    The CUDA stream (default: the current stream of the input's package). Everything
    the call enqueues (a dtype conversion, padding, moves of host data) and the result's
    allocation follow it.
execution : {{"auto", "cuda", "cpu"}}
    "auto" runs where ``x`` lives; "cuda" moves host data to the GPU and back.
workers : int, optional
    CPU threads for host execution.

Returns
-------
array
    {returns}

Examples
--------
>>> import numpy as np
>>> import {peer}
>>> import accelmath.fft
>>> x = np.random.default_rng(0).standard_normal({example_shape})
>>> bool(np.allclose(accelmath.fft.{name}(x), {peer}.{name}(x)))
True
"""

_ONE_AXIS = """n : int, optional
    Length of the transformed axis of the {what} (cut or zero-padded); default: {default}.
axis : int, optional
    The axis to transform (default -1)."""
_MANY_AXES = """s : sequence of int, optional
    Lengths of the transformed axes of the {what} (cut or zero-padded); default: {default}.
axes : sequence of int, optional
    The axes to transform (default: {axes_default})."""


def _define(name, kind, inverse, arity, summary, returns, conjugate=False, swap=False):
    """Build one public function: ``arity`` is 1 (n, axis), 2 (s, axes=(-2,-1)) or "n"."""
    what = "output" if kind == "c2r" else "input"
    default = ("2 * (m - 1) for the last axis, m its input length" if kind == "c2r"
               else "the input's")
    if arity == 1:
        size_doc = _ONE_AXIS.format(what=what, default=default)

        def function(a, n=None, axis=-1, norm=None, *, out=None, stream=None,
                     execution="auto", workers=None):
            s = None if n is None else (norms.length(n),)
            return _transform(kind, a, s, (axis,), swap_norm(norm) if swap else norm, None,
                              inverse, out, stream, execution, workers, conjugate)
    else:
        default_axes = (-2, -1) if arity == 2 else None
        size_doc = _MANY_AXES.format(
            what=what, default=default,
            axes_default="(-2, -1)" if arity == 2 else "the last len(s) axes, or all")

        def function(a, s=None, axes=default_axes, norm=None, *, out=None, stream=None,
                     execution="auto", workers=None):
            return _transform(kind, a, s, axes, swap_norm(norm) if swap else norm, None,
                              inverse, out, stream, execution, workers, conjugate)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = _DOC.format(
        summary=summary, name=name, size_doc=size_doc, returns=returns,
        example_shape="(4, 6)" if arity != 1 else "(8,)",
        peer="scipy.fft" if conjugate and arity != 1 else "numpy.fft")
    return function


def swap_norm(norm):
    return norms.swap_norm(norm)


_C, _R = "The complex transform.", "The real result."
fft = _define("fft", "c2c", False, 1, "One-dimensional discrete Fourier transform.", _C)
ifft = _define("ifft", "c2c", True, 1, "One-dimensional inverse discrete Fourier transform.", _C)
rfft = _define("rfft", "r2c", False, 1,
               "One-dimensional Fourier transform of real input (the non-negative half).",
               "The complex half-spectrum (``n // 2 + 1`` points on the axis).")
irfft = _define("irfft", "c2r", True, 1, "Inverse of :func:`rfft`.", _R)
hfft = _define("hfft", "c2r", True, 1,
               "Fourier transform of a Hermitian-symmetric signal (given by its first half).",
               _R, conjugate=True, swap=True)
ihfft = _define("ihfft", "r2c", False, 1, "Inverse of :func:`hfft`.",
                "The complex half-spectrum.", conjugate=True, swap=True)
fft2 = _define("fft2", "c2c", False, 2, "Two-dimensional discrete Fourier transform.", _C)
ifft2 = _define("ifft2", "c2c", True, 2, "Two-dimensional inverse discrete Fourier transform.",
                _C)
rfft2 = _define("rfft2", "r2c", False, 2, "Two-dimensional Fourier transform of real input.",
                "The complex half-spectrum.")
irfft2 = _define("irfft2", "c2r", True, 2, "Inverse of :func:`rfft2`.", _R)
fftn = _define("fftn", "c2c", False, "n", "N-dimensional discrete Fourier transform.", _C)
ifftn = _define("ifftn", "c2c", True, "n", "N-dimensional inverse discrete Fourier transform.",
                _C)
rfftn = _define("rfftn", "r2c", False, "n", "N-dimensional Fourier transform of real input.",
                "The complex half-spectrum.")
irfftn = _define("irfftn", "c2r", True, "n", "Inverse of :func:`rfftn`.", _R)
hfft2 = _define("hfft2", "c2r", True, 2,
                "Two-dimensional FFT of a Hermitian-symmetric signal (as ``scipy.fft.hfft2``).",
                _R, conjugate=True, swap=True)
ihfft2 = _define("ihfft2", "r2c", False, 2, "Inverse of :func:`hfft2`.",
                 "The complex half-spectrum.", conjugate=True, swap=True)
hfftn = _define("hfftn", "c2r", True, "n",
                "N-dimensional FFT of a Hermitian-symmetric signal (as ``scipy.fft.hfftn``).",
                _R, conjugate=True, swap=True)
ihfftn = _define("ihfftn", "r2c", False, "n", "Inverse of :func:`hfftn`.",
                 "The complex half-spectrum.", conjugate=True, swap=True)

"""Where every FFT function ends: validate, recall or plan, execute (:func:`transform`).

A call first checks what its memo key cannot hold (``workers``), then looks its arguments
up in the call memo of :data:`dispatcher` (:mod:`accelmath._core.dispatch`): an identical call
seen before runs at once, its arguments known to be valid. Otherwise the arguments are
normalized as NumPy does (deprecation warnings included), and

* host arrays run on the CPU backend (:mod:`accelmath.fft._cpu`: SciPy's engine for NumPy
  arrays; for CPU tensors ``torch.fft``, or SciPy's engine where that measured faster),
  unless ``execution="cuda"``;
* device arrays run through a cached :class:`~accelmath.fft.FFT` plan (host data with
  ``execution="cuda"`` is copied there and back);
* axes given more than once are transformed run by run of distinct axes, as NumPy does.

hfft and ihfft are irfft and rfft of conjugates with the norm direction swapped, as in NumPy:
the functions pass ``conjugate=True`` and the swapped norm.
"""

import contextlib
import threading
from typing import NamedTuple, Optional

import numpy

from accelmath._core.arguments import check_execution, check_workers
from accelmath._core.dispatch import Dispatcher, to_device, to_host
from accelmath._core.layout import is_dense
from accelmath._core.operand import Operand, adapter_for, wrap_operand
from accelmath._core.plan import check_out
from accelmath._core.stream import check_stream, resolve_stream, stream_handle
from accelmath.errors import (InvalidArgumentError, NoDeviceError, OutOfMemoryError,
                              UnsupportedDTypeError, UnsupportedOperandError)
from accelmath.fft import _normalize as norms
from accelmath.fft._cpu import host_transform
from accelmath.fft._layout import output_layout, plan_steps
from accelmath.fft._package_layouts import package_fft_strides
from accelmath.fft._plan import FFT

__all__ = ["transform", "read_operand", "dispatcher", "HostCall", "cache_info", "clear_cache",
           "set_cache_limits", "wait_for_drops"]

#: The plan caches and call memo of the FFT functions.
dispatcher = Dispatcher()
_drops = []  # the threads of _drop_when_compiled, until wait_for_drops joins them
_drops_lock = threading.Lock()  # (plans are made on several threads at once)

_DIRECTIONS = ("forward", "inverse")


def cache_info(device=None):
    """Statistics of the plan caches behind the FFT functions.

    Parameters
    ----------
    device : int, optional
        A device id; by default the statistics of all devices are summed.

    Returns
    -------
    dict
        ``hits``, ``misses``, ``size`` (plans cached), ``bytes`` (the workspace bytes they
        hold, for every thread and stream that ran them), ``max_size`` and ``max_bytes``.

    Examples
    --------
    >>> import accelmath.fft
    >>> sorted(accelmath.fft.cache_info())
    ['bytes', 'hits', 'max_bytes', 'max_size', 'misses', 'size']
    """
    return dispatcher.cache_info(device)


def clear_cache():
    """Drop every cached plan (plans in use finish first) and every remembered call; reset
    the statistics.

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.clear_cache()
    >>> accelmath.fft.cache_info()["size"]
    0
    """
    dispatcher.clear_cache()


def set_cache_limits(max_size=None, max_bytes=None):
    """Set the plan cache limits of each device: plans kept, and the workspace bytes they
    hold together (None: unchanged).

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.set_cache_limits(max_size=32)
    >>> accelmath.fft.cache_info()["max_size"]
    32
    >>> accelmath.fft.set_cache_limits(max_size=64)
    """
    dispatcher.set_cache_limits(max_size, max_bytes)


class HostCall(NamedTuple):
    """What the call memo holds for a call that runs on the host."""

    transform: object  # the prepared HostTransform, TorchTransform or TorchViaHost
    inverse: bool
    workers: Optional[int]
    like: Operand  # the inputs' layout, for checking ``out=`` (no array held)
    out_dtype: str
    run: object  # ``transform.runner(inverse, workers)``: the call without out=


def _plain(value):
    """Whether ``value`` may be part of a call key: None or a tuple of ints (a bool or a
    float would equal an int in a dict and find a call whose arguments were valid)."""
    if value is None:
        return True
    if value.__class__ is not tuple:
        return False
    for v in value:
        if v.__class__ is not int:
            return False
    return True


def _numpy_layout(x):
    # the CPU engine reads any strides: shape and dtype (byte order included) decide
    return x.shape, x.dtype


def _torch_layout(layout_key):
    """What a call key holds of a torch tensor: for CPU tensors their shape and dtype, since
    torch.fft reads any strides and lazily conjugated views (None for one that records
    gradients: checked against the grad mode each call); ``layout_key``'s for the others."""
    def read(x):
        if x.is_cpu:
            return None if x.requires_grad else (x.shape, x.dtype)
        return layout_key(x)

    return read


_LAYOUTS = {numpy.ndarray: _numpy_layout}  # type -> what a call key holds of its arrays


def _new_reader(x):
    """What reads the call-key part of arrays of ``x``'s type (kept in :data:`_LAYOUTS`), or
    None for what is not an array (the slow path says why)."""
    try:
        adapter = adapter_for(x)
    except TypeError:
        return None
    read = adapter.layout_key
    if adapter.package == "torch":
        read = _torch_layout(adapter.layout_key)
    _LAYOUTS[type(x)] = read
    return read


def transform(kind, x, s, axes, norm, inverse, conjugate, out, stream, execution, workers):
    """Compute a ``kind`` ("c2c", "r2c", "c2r") transform of ``x``: every function ends here.

    ``s``, ``axes`` and ``norm`` are as the caller gave them (the one-axis functions pass
    ``(n,)``, ``n`` checked, and ``(axis,)``); hfft and ihfft pass ``conjugate=True`` and the
    swapped norm. See the module docstring.
    """
    if workers is not None:
        workers = check_workers(workers)
    call = None
    if (axes is not None or s is None) and (s is None or _plain(s)) and _plain(axes):
        read = _LAYOUTS.get(x.__class__) or _new_reader(x)
        layout = None if read is None else read(x)
        if layout is not None:
            call = (kind, inverse, conjugate, s, axes, norm, execution, workers, out is None,
                    type(x), layout)
            try:
                entry = dispatcher.recall(call)
            except TypeError:  # an unhashable norm or execution: refused below
                entry = call = None
            if entry is not None:
                if entry.__class__ is HostCall:
                    check_stream(stream)
                    if out is None:
                        return entry.run(x)
                    return _run_host(entry, x, out)
                return entry.execute(x, direction=_DIRECTIONS[inverse], stream=stream)
    norm = norms.check_norm(norm)
    check_execution(execution)
    norms.warn_deprecated(s, axes, stacklevel=3)  # (the caller of the public function)
    op = read_operand(x)
    axes, s = norms.normalize_axes(op.shape, s, axes, unique=False)
    if not axes and kind != "c2c":
        raise InvalidArgumentError("axes must name at least one axis for a real transform")
    if s is None:  # (lengths given pad an axis of length 0 with zeros, as in NumPy)
        for axis in axes:
            if op.shape[axis] == 0:
                raise norms.data_points_error(0, f"along axis {axis}, which has length 0")
    in_dtype, out_dtype = norms.transform_dtypes(kind, op.dtype, op.adapter.complex32)
    last = None
    if kind == "c2r":
        last = s[-1] if s is not None else 2 * (op.shape[axes[-1]] - 1)
        if last < 1:
            raise norms.data_points_error(
                last, f"along axis {axes[-1]}: 2 * (m - 1) output points for its m = 1 input "
                      f"point; pass n or s")
    if s is not None:
        norms.check_size(kind, op.shape, axes, s, in_dtype, out_dtype)
    if len(set(axes)) < len(axes):
        if s is None:  # NumPy's lengths: the input's, taken before any transform
            s = tuple(op.shape[a] for a in axes[:-1]) + (last or op.shape[axes[-1]],)
        return _by_runs(kind, op.obj, s, axes, norm, inverse, conjugate, out, stream, execution,
                        workers)
    if not axes:  # a c2c over no axes: the input, as numpy.fft and scipy.fft give it back
        return op.obj if out is None else _write_out(op.adapter.astype(op.obj, out_dtype), op,
                                                     out, stream)
    try:
        return _execute(kind, x, op, s, axes, norm, inverse, conjugate, out, stream, execution,
                        workers, in_dtype, out_dtype, last, call)
    except MemoryError as exc:
        if s is None or isinstance(exc, OutOfMemoryError):  # (the input's own size, or said)
            raise
        raise norms.too_large_error(kind, op.shape, axes, s, in_dtype, out_dtype) from exc


def _execute(kind, x, op, s, axes, norm, inverse, conjugate, out, stream, execution, workers,
             in_dtype, out_dtype, last, call):
    """Run a checked call on the host or on the device."""
    if not op.on_device and execution != "cuda":
        if stream is not None:
            stream_handle(stream)
        return _host(kind, x, op, s, axes, norm, inverse, conjugate, out, workers, call)
    norms.check_gpu_dtype(op.dtype)
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
        return _device(kind, x, op, s, axes, norm, inverse, conjugate, out, stream, workers,
                       in_dtype, out_dtype, last, call)


def read_operand(x):
    """The operand of ``x`` (errors name the argument ``a``); NumPy's long double arrays,
    which the core does not describe, as a host record of their own."""
    try:
        return wrap_operand(x)
    except UnsupportedDTypeError as exc:
        adapter = adapter_for(x)
        if adapter.package == "numpy":
            a = adapter.to_numpy(x)
            if a.dtype.name in norms.LONG_DOUBLES:
                return Operand(a, 0, a.shape, None, a.dtype.name, None, adapter)
        raise UnsupportedDTypeError(f"a: {exc}") from None
    except (UnsupportedOperandError, NoDeviceError) as exc:
        raise type(exc)(f"a: {exc}") from None


def _by_runs(kind, x, s, axes, norm, inverse, conjugate, out, stream, execution, workers):
    """A transform over axes given more than once (of lengths ``s``), as NumPy computes it:
    one transform per run of distinct axes (:func:`~accelmath.fft._normalize.axis_groups`),
    in NumPy's order (from the last axis; a c2r ends with its halved axis). The runs without
    the halved axis of a real transform are c2c; for hfft and ihfft those go the other way
    with the norm swapped back, since a conjugate transformed one way is the conjugate of the
    other way's result."""
    runs = norms.axis_groups(axes)
    real = runs[-1]  # the run holding the last axis
    for i, run in enumerate(runs if kind == "c2r" else runs[::-1]):
        part_kind, part_inverse, part_norm, part_conjugate = kind, inverse, norm, conjugate
        if run is not real:
            part_kind, part_conjugate = "c2c", False
            if conjugate:
                part_inverse, part_norm = not inverse, norms.swap_norm(norm)
        x = transform(part_kind, x, s[run], axes[run], part_norm, part_inverse, part_conjugate,
                      out if i == len(runs) - 1 else None, stream, execution, workers)
    return x


def _host(kind, x, op, s, axes, norm, inverse, conjugate, out, workers, call):
    """The host execution of a checked call; remembered under ``call`` where given."""
    torch = op.package == "torch"
    # torch.fft reads the tensor as given (lazily conjugated views too)
    data = x if torch else op.adapter.to_numpy(op.obj)
    transform = host_transform(kind, tuple(op.shape), op.dtype if torch else data.dtype, axes,
                               s, norm, conjugate, op.package)
    like = Operand(None, 0, op.shape, op.strides, op.dtype, None, op.adapter)
    entry = HostCall(transform, inverse, workers, like, numpy.dtype(transform.out_dtype).name,
                     transform.runner(inverse, workers))
    result = _run_host(entry, data, out)
    # (remembered once it ran: a call that failed, out of memory say, fails again the same way)
    if call is not None and (torch or op.obj is x):  # (runs straight on the caller's array)
        dispatcher.remember(call, entry)
    if out is None and not torch:  # (NumPy's results are NumPy's; JAX's go back to JAX)
        result = op.adapter.from_numpy(result, op.obj)
    return result


def _run_host(entry, data, out):
    """Execute remembered host call ``entry`` on ``data`` (a NumPy array, or a CPU tensor)."""
    transform = entry.transform
    if out is None:
        return entry.run(data)
    out_op = check_out(out, entry.like, transform.out_shape, entry.out_dtype)
    if out_op.package == "torch" or entry.like.package != "torch":
        target = out if entry.like.package == "torch" else out_op.adapter.to_numpy(out)
    else:  # torch's transform into a host array of another package: through a view
        import torch

        target = torch.from_numpy(out_op.adapter.to_numpy(out))
    transform.execute(data, inverse=entry.inverse, out=target, workers=entry.workers)
    return out


def _write_out(result, op, out, stream):
    """``result`` (of operand ``op``'s package and device) as the call's result: itself, or
    copied into ``out``."""
    if out is None:
        return result
    made = wrap_operand(result)
    out_op = check_out(out, op, made.shape, made.dtype)
    if not op.on_device:
        out_op.adapter.to_numpy(out)[...] = out_op.adapter.to_numpy(result)
        return out
    from accelmath._core.kernels import copy_scale

    copy_scale(made.ptr, out_op.ptr, made.shape, made.strides, out_op.strides, made.dtype, None,
               resolve_stream(stream, op), op.device_id)
    return out


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


def _device(kind, x, op, s, axes, norm, inverse, conjugate, out, stream, workers, in_dtype,
            out_dtype, last, call):
    """The device execution of a checked call (host data moved there and back)."""
    if not op.on_device:
        result = transform(kind, to_device(op.obj), s, axes, norm, inverse, conjugate, None,
                           stream, "auto", workers)
        if out is None:
            return to_host(result, op)
        host = adapter_for(result).to_numpy(result)
        out_op = check_out(out, op, host.shape, host.dtype.name)
        out_op.adapter.to_numpy(out)[...] = host
        return out
    op.wait_ready(stream)  # (producers of the CUDA array protocols: their streams' work)
    direct = op.obj is x
    if op.dtype != in_dtype:
        x = op.adapter.astype(x, in_dtype)
        op = wrap_operand(x)
        direct = False
    if kind == "c2r":
        s = (*(s[:-1] if s is not None else (op.shape[a] for a in axes[:-1])), last // 2 + 1)
    if s is not None:
        resized = _resize(op, axes, s, stream)
        direct = direct and resized is op
        op = resized
    given, out_op, gapped = out, None, None
    if out is not None:
        out_shape, _ = output_layout(kind, axes, op.shape, op.strides, last)
        out_op = check_out(out, op, out_shape, out_dtype)
        if not is_dense(out_op.shape, out_op.strides):
            # a view with gaps: the result goes there in one copy
            gapped, out, out_op = out_op, None, None
    # a plan made from the caller's array reads later arrays of its type in a few lookups
    # (the memo's hits); one made from an operand record takes records only
    bound = x if direct else op
    key = (kind, axes, op.shape, op.strides, op.dtype, norm, conjugate, last,
           out_op.strides if out_op is not None else None, op.adapter.package, type(bound))

    def create():
        out_strides = out_op.strides if out_op is not None else _package_strides(
            kind, op, axes, last)
        plan = FFT(bound, axes=axes, kind=kind, norm=norm, last_axis_size=last,
                   conjugate=conjugate, out_strides=out_strides)
        plan._unbind()  # (cached: it holds no caller's array)
        made.append(plan)
        return plan

    made = []
    remembered = call if direct and given is None else None
    plan = dispatcher.plan(op.device_id, key, create, remembered)
    if made and made[0] is plan and _without_columns(plan):
        _drop_when_compiled(plan)
    result = plan.execute(op, out=out, direction=_DIRECTIONS[inverse], stream=stream)
    if gapped is None:
        return result
    return _write_out(result, op, gapped.obj, stream)


def _without_columns(plan):
    """Whether ``plan`` was made without the column kernel while it compiled (see
    ``CudaExecutor._with_columns``)."""
    executor = plan._executor
    return executor is not None and bool(executor.without_columns)


def _drop_when_compiled(plan):
    """Drop ``plan``, cached, from the cache once the column kernel's compiles it went
    without end (on a thread of its own), where one of them succeeded: the calls that led
    to it plan again, with the kernel among their candidates (a plan kept for thousands of
    calls would otherwise go without it). A compile that ended already is joined at once;
    one that failed leaves the plan cached (planning again would go without it again)."""
    from accelmath.fft import _columns  # (loaded with the cuFFT executor that made the plan)

    device_id, lengths = plan._executor.device_id, plan._executor.without_columns

    def drop():
        for length in lengths:
            _columns.compile_soon(device_id, length).join()  # (the thread already started)
        if any(_columns.compiled(device_id, length) for length in lengths):
            dispatcher.cache(device_id).drop_if(lambda cached: cached is plan)

    thread = threading.Thread(target=drop, name="accelmath-columns-compiled", daemon=True)
    with _drops_lock:
        _drops[:] = [t for t in _drops if t.is_alive()] + [thread]
    thread.start()


def wait_for_drops():
    """Wait until the plans made without the column kernel while it compiled are dropped,
    where its compile succeeded (the threads of :func:`_drop_when_compiled`)."""
    while True:
        with _drops_lock:
            if not _drops:
                return
            thread = _drops.pop()
        thread.join()


def _package_strides(kind, op, axes, last_axis_size):
    """The result strides the operand's package gives its own transform where cuFFT writes
    them with no copy of the output (torch's transposed layouts), else None (dense, in the
    input's axis order)."""
    out_shape, _ = output_layout(kind, axes, op.shape, op.strides, last_axis_size)
    strides = package_fft_strides(op.package, kind, op.shape, op.strides, op.dtype, axes,
                                  out_shape, op.device_id)
    # (some torch versions' meta tensors report overlapping strides: those are not taken)
    if strides is None or not is_dense(out_shape, strides):
        return None
    # a c2r reads a scratch copy of its input, which the plan lays out in any order
    if kind != "c2r" and plan_steps(kind, axes, op.shape, op.strides, out_shape,
                                    strides) is None:
        return None
    return strides

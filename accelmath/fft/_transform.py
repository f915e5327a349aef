"""Where every FFT function ends: validate, recall or plan, execute (:func:`transform`).

A call comes as a :class:`~accelmath.fft._records.Transform` record. It first checks what its
memo key cannot hold (``workers``), then looks the call up in the call memo of
:data:`dispatcher` (:mod:`accelmath._core.dispatch`) under a
:class:`~accelmath.fft._records.CallKey`: an identical call seen before runs at once, its
arguments known to be valid. Otherwise the arguments are normalized as NumPy does
(deprecation warnings included) into a :class:`~accelmath.fft._records.Checked` call, and

* host arrays run on the CPU backend (:mod:`accelmath.fft._cpu`: SciPy's engine for NumPy
  arrays; for CPU tensors ``torch.fft``, or SciPy's engine where that measured faster),
  unless ``execution="cuda"``;
* device arrays run through an :class:`~accelmath.fft.FFT` plan cached under a
  :class:`~accelmath.fft._records.PlanKey` (host data with ``execution="cuda"`` is copied
  there and back);
* axes given more than once are transformed run by run of distinct axes, as NumPy does.

hfft and ihfft are irfft and rfft of conjugates with the norm direction swapped, as in NumPy:
their records say ``conjugate=True`` and hold the swapped norm.
"""

import contextlib
import sys
import threading
from typing import NamedTuple, Optional

import numpy

from accelmath._core.arguments import check_execution, check_workers
from accelmath._core.call import stream_of
from accelmath._core.call_key import LAYOUT_READERS, layout_reader, plain
from accelmath._core.dispatch import Dispatcher, to_device, to_host
from accelmath._core.gpu.stream import resolve_stream, stream_handle
from accelmath._core.layout import is_dense
from accelmath._core.operand import Operand, adapter_for, wrap_operand
from accelmath._core.plan import check_out, host_target
from accelmath.errors import (InvalidArgumentError, NoDeviceError, OutOfMemoryError,
                              UnsupportedDTypeError, UnsupportedOperandError)
from accelmath.fft import _normalize as norms
from accelmath.fft._cpu import host_transform
from accelmath.fft._layout import output_layout, plan_steps
from accelmath.fft._package_layouts import package_fft_strides
from accelmath.fft._plan import FFT
from accelmath.fft._records import CallKey, Checked, PlanKey, record

__all__ = ["transform", "front", "recalled", "read_operand", "dispatcher", "HostCall",
           "cache_info", "clear_cache", "set_cache_limits", "wait_for_drops"]

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
    # the fused calls' plans and spectral_filter's c2r plans, where their modules are loaded
    # (each with its first call; either without the other)
    for name in ("call", "filter"):
        fused = sys.modules.get(f"accelmath.fft._fusion.{name}")
        if fused is not None:
            fused.forget()


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


def front(function, names):
    """Public function ``function`` of :mod:`accelmath.fft` (whose calls end in
    :func:`transform`) with the memo's front before it: calls of an array and plain values of
    the parameters ``names`` (length, axes, norm), with or without an epilogue and its
    ``epilogue_args``, run what an identical call ran, in C
    (:meth:`~accelmath._core.dispatch.Dispatcher.fronted`)."""
    return dispatcher.fronted(function, "accelmath.fft", 1, names, ("epilogue",),
                              ("epilogue_args",))


def transform(call, x, out, stream):
    """Compute the transform ``call`` (a :class:`~accelmath.fft._records.Transform`, as the
    caller gave it) of ``x``: every function ends here. See the module docstring."""
    front_key = dispatcher.taken()  # (the front's key of a public function's call)
    if call.workers is not None:  # (a key holds it checked: 2.0 must not find 2's call)
        call = call._replace(workers=check_workers(call.workers))
    s, axes = call.s, call.axes
    key = None
    if (axes is not None or s is None) and (s is None or plain(s)) and plain(axes):
        read = LAYOUT_READERS.get(x.__class__) or layout_reader(x)
        layout = None if read is None else read(x)
        if layout is not None:
            # the CallKey's fields in a plain tuple: equal to the CallKey remembered and hashed
            # alike, it finds it without a record made on each hit (a miss makes the record)
            key = (call, out is not None, type(x), layout)
            try:
                entry = dispatcher.recall(key)
            except TypeError:  # an unhashable norm or execution: refused below
                entry = key = None
            if entry is not None:
                if entry.__class__ is HostCall:
                    if stream is not None:  # (refused where it is no stream, as below)
                        stream_handle(stream)
                    if out is None:
                        return entry.run(x)
                    return _run_host(entry, x, out)
                if stream is None:  # (in C, where the plan's launcher takes x)
                    result = entry.direction_runs[call.inverse](x)
                    # (a keyed call offers its plan's launcher; any other, once, its type)
                    if out is None and (front_key is not None
                                        or x.__class__ not in dispatcher.front_types):
                        front = entry.front_run(call.inverse)
                        if front is not None:
                            dispatcher.remember_front(front_key, result, key, entry, front,
                                                      x.__class__)
                    return result
                return entry.execute(x, direction=_DIRECTIONS[call.inverse], stream=stream)
    if key is not None:
        key = record(CallKey, key)
    kind = call.kind
    norm = norms.check_norm(call.norm)
    check_execution(call.execution)
    norms.warn_deprecated(s, axes)
    op = read_operand(x)
    axes, s = norms.normalize_axes(op.shape, s, axes, unique=False, halved=kind == "c2r")
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
        return _by_runs(call._replace(s=s, axes=axes, norm=norm), op.obj, out, stream)
    if not axes:  # a c2c over no axes: the input, as numpy.fft and scipy.fft give it back
        return op.obj if out is None else _write_out(op.adapter.astype(op.obj, out_dtype), op,
                                                     out, stream)
    checked = Checked(call._replace(s=s, axes=axes, norm=norm), op, in_dtype, out_dtype, last)
    try:
        return _execute(checked, x, out, stream, key)
    except MemoryError as exc:
        if s is None or isinstance(exc, OutOfMemoryError):  # (the input's own size, or said)
            raise
        raise norms.too_large_error(kind, op.shape, axes, s, in_dtype, out_dtype) from exc


def recalled(call, x, layout):
    """``transform(call, x, None, None)`` of an array ``x`` whose layout key (the call memo's,
    as :func:`~accelmath._core.call_key.layout_reader` reads it) the caller already read: the
    remembered device call without reading it again, where there is one (``call``'s lengths
    and axes plain, its workers None)."""
    if call.workers is None:
        entry = dispatcher.recall((call, False, x.__class__, layout))
        if entry is not None and entry.__class__ is not HostCall:
            return entry.direction_runs[call.inverse](x)
    return transform(call, x, None, None)


def _execute(checked, x, out, stream, key):
    """Run ``checked`` (a :class:`~accelmath.fft._records.Checked` call of input ``x``) on
    the host or on the device; remembered under call key ``key`` where given."""
    op, execution = checked.operand, checked.transform.execution
    if not op.on_device and execution != "cuda":
        if stream is not None:
            stream_handle(stream)
        return _host(checked, x, out, key)
    norms.check_gpu_dtype(op.dtype)
    if execution == "cpu":
        raise InvalidArgumentError('execution="cpu" needs a host operand; this one is on the GPU')
    scope = contextlib.nullcontext()
    if stream is not None:
        stream, explicit = stream_of(stream, lambda: op.adapter.current_stream(op.device_id))
        if explicit:
            # the package takes the explicit stream as its current one for this call: the
            # conversions, copies and allocations below follow its order, as the transform
            scope = op.adapter.stream_scope(stream, op.device_id)
    with scope:
        return _device(checked, x, out, stream, key)


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


def _by_runs(call, x, out, stream):
    """A transform over axes given more than once (``call``: a checked
    :class:`~accelmath.fft._records.Transform`, ``s`` given), as NumPy computes it:
    one transform per run of distinct axes (:func:`~accelmath.fft._normalize.axis_groups`),
    in NumPy's order (from the last axis; a c2r ends with its halved axis). The runs without
    the halved axis of a real transform are c2c; for hfft and ihfft those go the other way
    with the norm swapped back, since a conjugate transformed one way is the conjugate of the
    other way's result."""
    runs = norms.axis_groups(call.axes)
    real = runs[-1]  # the run holding the last axis
    for i, run in enumerate(runs if call.kind == "c2r" else runs[::-1]):
        part = call._replace(s=call.s[run], axes=call.axes[run])
        if run is not real:
            part = part._replace(kind="c2c", conjugate=False)
            if call.conjugate:
                part = part._replace(inverse=not call.inverse, norm=norms.swap_norm(call.norm))
        x = transform(part, x, out if i == len(runs) - 1 else None, stream)
    return x


def _host(checked, x, out, key):
    """The host execution of a checked call (a :class:`~accelmath.fft._records.Checked` of
    input ``x``); remembered under call key ``key`` where given."""
    call, op = checked.transform, checked.operand
    torch = op.package == "torch"
    # torch.fft reads the tensor as given (lazily conjugated views too)
    data = x if torch else op.adapter.to_numpy(op.obj)
    transform = host_transform(call.kind, tuple(op.shape), op.dtype if torch else data.dtype,
                               call.axes, call.s, call.norm, call.conjugate, op.package)
    like = Operand(None, 0, op.shape, op.strides, op.dtype, None, op.adapter)
    entry = HostCall(transform, call.inverse, call.workers, like,
                     numpy.dtype(transform.out_dtype).name,
                     transform.runner(call.inverse, call.workers))
    result = _run_host(entry, data, out)
    # (remembered once it ran: a call that failed, out of memory say, fails again the same way)
    if key is not None and (torch or op.obj is x):  # (runs straight on the caller's array)
        dispatcher.remember(key, entry)
    if out is None and not torch:  # (NumPy's results are NumPy's; JAX's go back to JAX)
        result = op.adapter.from_numpy(result, op.obj)
    return result


def _run_host(entry, data, out):
    """Execute remembered host call ``entry`` on ``data`` (a NumPy array, or a CPU tensor)."""
    transform = entry.transform
    if out is None:
        return entry.run(data)
    if entry.out_dtype in norms.LONG_DOUBLES:  # (NumPy's alone: the core has no operand)
        transform.execute(data, inverse=entry.inverse, workers=entry.workers,
                          out=_long_double_out(out, transform.out_shape, entry.out_dtype))
        return out
    out_op = check_out(out, entry.like, transform.out_shape, entry.out_dtype)
    if out_op.package == "torch" or entry.like.package != "torch":
        target = out if entry.like.package == "torch" else host_target(out, out_op)
    else:  # torch's transform into a host array of another package: through a view
        import torch

        array = host_target(out, out_op)
        try:
            target = torch.from_numpy(array)
        except (ValueError, TypeError):  # (negative strides, another byte order: no view)
            array[...] = transform.execute(data, inverse=entry.inverse,
                                           workers=entry.workers).numpy()
            return out
    transform.execute(data, inverse=entry.inverse, out=target, workers=entry.workers)
    return out


def _long_double_out(out, shape, dtype):
    """``out`` checked to take a long double result of ``shape`` and ``dtype`` (a NumPy
    array of them, writable), as the plain ndarray of its memory: what
    :func:`~accelmath._core.plan.check_out` says of other results, in its words."""
    if not isinstance(out, numpy.ndarray):
        raise UnsupportedOperandError(f"out must be of ArrayType: a {dtype} result is written "
                                      f"into a NumPy array, not a {type(out).__qualname__}")
    if out.shape != tuple(shape):
        raise InvalidArgumentError(f"out has wrong shape {out.shape}; expected shape "
                                   f"{tuple(shape)}")
    if out.dtype != numpy.dtype(dtype):
        raise UnsupportedDTypeError(f"Cannot cast the {dtype} result into out: out has dtype "
                                    f"{out.dtype.name}, expected {dtype}")
    if not out.flags.writeable:
        raise InvalidArgumentError("out is read-only")
    return out if out.__class__ is numpy.ndarray else out.view(numpy.ndarray)


def _write_out(result, op, out, stream):
    """``result`` (of operand ``op``'s package and device) as the call's result: itself, or
    copied into ``out``."""
    if out is None:
        return result
    made = wrap_operand(result)
    out_op = check_out(out, op, made.shape, made.dtype)
    if not op.on_device:
        host_target(out, out_op)[...] = out_op.adapter.to_numpy(result)
        return out
    from accelmath._core.gpu.kernels import copy_scale

    copy_scale(made.ptr, out_op.ptr, made.shape, made.strides, out_op.strides, made.dtype, None,
               resolve_stream(stream, op), op.device_id)
    return out


def _resize(op, axes, lengths, stream):
    """``op`` cut or zero-padded to ``lengths`` along ``axes`` (a view when only cut), the copy
    enqueued on ``stream`` (a handle; None: the current stream)."""
    from accelmath._core.gpu.kernels import copy_scale

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


def _device(checked, x, out, stream, key):
    """The device execution of a checked call (a :class:`~accelmath.fft._records.Checked` of
    input ``x``; host data moved there and back); remembered under call key ``key`` where
    given, its plan cached under a :class:`~accelmath.fft._records.PlanKey`."""
    call, op, last = checked.transform, checked.operand, checked.last
    if not op.on_device:
        result = transform(call._replace(execution="auto"), to_device(op.obj), None, stream)
        if out is None:
            return to_host(result, op)
        host = adapter_for(result).to_numpy(result)
        host_target(out, check_out(out, op, host.shape, host.dtype.name))[...] = host
        return out
    kind, s, axes, norm, conjugate = call.kind, call.s, call.axes, call.norm, call.conjugate
    op.wait_ready(stream)  # (producers of the CUDA array protocols: their streams' work)
    direct = op.obj is x
    if op.dtype != checked.in_dtype:
        x = op.adapter.astype(x, checked.in_dtype)
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
        out_op = check_out(out, op, out_shape, checked.out_dtype)
        if not is_dense(out_op.shape, out_op.strides):
            # a view with gaps: the result goes there in one copy
            gapped, out, out_op = out_op, None, None
    # a plan made from the caller's array reads later arrays of its type in a few lookups
    # (the memo's hits); one made from an operand record takes records only
    bound = x if direct else op
    plan_key = PlanKey(kind, axes, op.shape, op.strides, op.dtype, norm, conjugate, last,
                       out_op.strides if out_op is not None else None, op.adapter.package,
                       type(bound))

    def create():
        out_strides = out_op.strides if out_op is not None else _package_strides(
            kind, op, axes, last)
        plan = FFT(bound, axes=axes, kind=kind, norm=norm, last_axis_size=last,
                   conjugate=conjugate, out_strides=out_strides)
        plan._unbind()  # (cached: it holds no caller's array)
        made.append(plan)
        return plan

    made = []
    remembered = key if direct and given is None else None
    plan = dispatcher.plan(op.device_id, plan_key, create, remembered)
    if made and made[0] is plan and _went_without(plan):
        _drop_when_compiled(plan)
    result = plan.execute(op, out=out, direction=_DIRECTIONS[call.inverse], stream=stream)
    if gapped is None:
        return result
    return _write_out(result, op, gapped.obj, stream)


def _went_without(plan):
    """Whether ``plan`` was made without a kernel of accelmath's while it compiled (see
    ``CudaExecutor._wait_for``)."""
    executor = plan._executor
    return executor is not None and bool(executor.waiting)


def _drop_when_compiled(plan):
    """Drop ``plan``, cached, from the cache once the compiles of the kernels it went without
    end (on a thread of its own), where one of them succeeded: the calls that led to it plan
    again, with the kernel among their candidates (a plan kept for thousands of calls would
    otherwise go without it). A compile that ended already is joined at once; one that
    failed leaves the plan cached (planning again would go without it again)."""
    from accelmath._core.gpu import modules  # (loaded with the executor that made the plan)

    device_id, codes = plan._executor.device_id, plan._executor.waiting

    def drop():
        for code in codes:
            modules.compile_soon(*code).join()  # (the thread already started)
        if any(modules.is_compiled(*code) for code in codes):
            dispatcher.cache(device_id).drop_if(lambda cached: cached is plan)

    thread = threading.Thread(target=drop, name="accelmath-kernels-compiled", daemon=True)
    with _drops_lock:
        _drops[:] = [t for t in _drops if t.is_alive()] + [thread]
    thread.start()


def wait_for_drops():
    """Wait until the plans made without a kernel while it compiled are dropped, where its
    compile succeeded (the threads of :func:`_drop_when_compiled`)."""
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

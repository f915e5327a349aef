"""Filtering in Fourier space, fused: :func:`spectral_filter`, ``irfftn(fn(rfftn(x)))``.

Everywhere it runs as ``irfftn(rfftn(x), prologue=fn)``: the forward transform, then the
inverse with ``fn`` as its prologue (one element-wise pass). On a GPU with thread block
clusters (compute capability 9.0 and later) there is a second way for a float32 array
transformed over its last two or three axes (and at most one axis before them), where the
first transformed axis has a length of accelmath's column kernel (a power of two from 512 to
8192): the r2c transforms of the other axes, then **one** pass of the column kernel that
transforms the columns forward, applies ``fn`` to each value and transforms them back, in
shared memory, and the c2r transforms. It reads and writes the half spectrum once where the
other way does three times.

A C-ordered float32 or float64 matrix whose lengths have a prime factor above 7 (4088 = 8 x 7 x
73, say), where cuFFT is slow, has a third way: accelmath's own mixed-radix kernels
(:mod:`accelmath.fft._kernels.mixed`), the rows' r2c transforms, one pass down the columns (forward,
``fn``, inverse) and the rows' c2r transforms.

The first call of a problem (shape, expression, device) times the ways and keeps the fastest
(:mod:`accelmath.fusion._strategy`, the choice kept in the store). Where the fused pass's
kernel is not compiled yet (a new expression on a machine whose store lacks it: about a second
of NVRTC) it is compiled in the background and the calls run the other way until it is ready.
"""

import math
import weakref

import numpy

from accelmath._core.call import Context
from accelmath._core.gpu.device import block_shared_memory
from accelmath._core.gpu.stream import resolve_stream
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE, wrap_named
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.errors import InvalidArgumentError
from accelmath.fft._kernels import columns as _columns, mixed as _mixed
from accelmath.fft import _normalize as norms
from accelmath.fft._functions_nd import irfftn, rfftn
from accelmath.fft._plan import FFT
from accelmath.fft._fusion.fused import output_context
from accelmath.fusion import _cuda
from accelmath.fusion._elementwise import (arguments, arrays_fit, broadcasts_to, traced, types_of,
                                           value_signature)
from accelmath.fusion._launch import aligned_strides, pointer
from accelmath.fusion._strategy import fastest

__all__ = ["spectral_filter"]


def _check_args(values, half):
    """Refuse an array of ``args`` that does not broadcast to the half spectrum's shape (named
    as the caller named it: the transforms below would call it a prologue's argument)."""
    for k, value in enumerate(values):
        if hasattr(value, "adapter"):
            shape = tuple(value.shape)
            if not broadcasts_to(shape, half):
                raise InvalidArgumentError(f"args[{k}] has shape {shape}, which does not "
                                           f"broadcast to the half spectrum's {half}")


def spectral_filter(x, fn, args=(), *, axes=None, stream=None, like=None):
    """The body of :func:`accelmath.fft.spectral_filter` (see there), loaded with its first
    call."""
    traced_fn = traced(fn, "fn")
    op = wrap_named(x, "x")
    values = arguments(args, "args")
    axes, _ = norms.normalize_axes(tuple(op.shape), None, axes, unique=True)
    lengths = tuple(op.shape[a] for a in axes)
    if axes:
        half = list(op.shape)
        half[axes[-1]] = half[axes[-1]] // 2 + 1
        _check_args(values, tuple(half))

    def separate():
        return irfftn(rfftn(x, axes=axes, stream=stream), s=lengths, axes=axes, stream=stream,
                      prologue=traced_fn.fn, prologue_args=args, like=like)

    fused = _fused_pass(op, traced_fn, values, axes) if op.on_device else None
    if fused is None:
        return separate()
    handle = resolve_stream(stream, op)
    ways = {f"fused column pass, {w} columns per cluster":
            (lambda w=w: _run(fused, w, x, values, stream, handle, like)) for w in fused.ready}
    if fused.mixed is not None and fused.mixed.ready:
        ways["mixed-radix passes"] = lambda: _run_mixed(fused, op, values, stream, like)
    ways["separate passes"] = separate
    chosen = fastest(fused.key + tuple(ways), fused.describe, ways, op.device_id, handle,
                     ("cufft",))
    return list(ways.values())[chosen]()


class _Fused:
    """What the fused pass of one problem needs: the expression, the spectrum's shape and the
    first transformed ``axis``, the kernel's source, the widths whose kernels are ``ready``
    (and those still compiling, ``pending``: width -> thread), the problem's key for the timed
    choice; and, made once, the ``Element`` struct with the extents and frequency periods filled in
    (``template``), the matrices' row pitch and count, the other axes (``others``) and the
    round trip's ``scale`` (the whole transform's 1 / n); and the c2r plans of the other axes,
    one per spectrum type (``inverse``, made at the first run of each)."""

    __slots__ = ("expression", "shape", "axis", "lengths", "source", "ready", "pending", "key",
                 "device_id", "template", "pitch", "batches", "others", "scale", "inverse",
                 "mixed", "__weakref__")

    def __init__(self, expression, shape, axis, lengths, source, key, device_id, mixed=None):
        self.expression, self.shape, self.axis = expression, shape, axis
        self.lengths, self.source = lengths, source
        self.key, self.device_id = key, device_id
        self.inverse = {}  # spectrum type -> the c2r plan of the other axes
        self.pitch, self.batches = math.prod(shape[axis + 1:]), math.prod(shape[:axis])
        self.others, self.scale = tuple(range(axis + 1, len(shape))), 1.0 / math.prod(lengths)
        context = output_context("r2c", shape, tuple(range(axis, len(shape))), lengths)
        self.template = _cuda.element_struct(expression, len(shape))()
        self.template.d.shape[:] = shape
        self.template.d.period[:] = context.periods
        self.template.d.half[:] = [int(a in context.half) for a in range(len(shape))]
        self.mixed = mixed  # the mixed-radix way's kernels (_mixed.Filter), where it applies
        widths = _columns.widths(lengths[0]) if source is not None else ()
        self.ready = tuple(w for w in widths
                           if _columns.compiled(device_id, lengths[0], source, w))
        # where none is compiled yet, every width compiles in the background: width -> its
        # compile's thread (where one is, the others are not compiled for it)
        self.pending = {} if self.ready else {
            w: _columns.compile_soon(device_id, lengths[0], source, w) for w in widths}

    def poll(self):
        """Move the widths whose compile ended to ``ready`` (or drop them, where it failed):
        a look at each thread, no key of the source computed per call."""
        for w, thread in list(self.pending.items()):
            if not thread.is_alive():
                del self.pending[w]
                if _columns.compiled(self.device_id, self.lengths[0], self.source, w):
                    self.ready += (w,)

    def describe(self):
        """The problem as a stable string, for the store."""
        return repr(self.key)


_MISSING = object()
_LIMIT = 64  # problems a function remembers
_made = weakref.WeakSet()  # every _Fused alive, whose c2r plans forget() drops


def forget():
    """Drop the c2r plans the fused passes keep (:func:`accelmath.fft.clear_cache`, through
    the fusion layer's ``forget``): made again at their problems' next runs."""
    for fused in list(_made):
        fused.inverse = {}


def _fused_pass(op, traced_fn, values, axes):
    """The :class:`_Fused` of a call (remembered per problem in ``traced_fn.passes``), or
    None where the fused pass does not apply or no kernel of it is compiled yet."""
    key = ("spectral_filter", tuple(op.shape), tuple(op.strides), op.dtype, op.device_id,
           axes, tuple(value_signature(v) for v in values))
    passes = traced_fn.passes
    found = passes.get(key, _MISSING)
    if found is _MISSING:
        found = _new_fused(op, traced_fn, values, axes, key)
        if len(passes) >= _LIMIT:
            passes.clear()
        passes[key] = found
    if found is None:
        return None
    if found.pending:
        found.poll()
    return found if found.ready or (found.mixed is not None and found.mixed.ready) else None


def _new_fused(op, traced_fn, values, axes, key):
    """A new :class:`_Fused`, or None where no fused pass applies: the column kernel's (a
    float32 array whose first transformed length is one of its lengths) or else the
    mixed-radix kernels' (a C-ordered float32 or float64 matrix, both axes, of lengths they
    take, one of them with a prime factor above 7)."""
    ndim = len(op.shape)
    k = len(axes)
    lengths = tuple(op.shape[a] for a in axes)
    if (op.dtype not in ("float32", "float64") or op.adapter.immutable or k not in (2, 3)
            or ndim - k > 1 or axes != tuple(range(ndim - k, ndim))):
        return None
    columns = (op.dtype == "float32" and lengths[0] in _columns.LENGTHS
               and _columns.available(op.device_id))
    spectrum_dtype = norms.complex_dtype(op.dtype)
    itemsize = ITEMSIZE[spectrum_dtype]
    mixed = (not columns and ndim == 2 and tuple(op.strides) == contiguous_strides(op.shape)
             and any(_mixed.awkward(n) for n in lengths)
             and _mixed.fits(*lengths, itemsize, block_shared_memory(op.device_id)))
    if not (columns or mixed):
        return None
    shape = tuple(op.shape[:-1]) + (op.shape[-1] // 2 + 1,)
    if not arrays_fit(values, shape, op.device_id):
        return None
    if math.prod(shape[ndim - k + 1:]) >= 2 ** 31:  # (the kernel's column count: an int)
        return None
    expression = traced_fn.expression([numpy.dtype(spectrum_dtype), *types_of(values)])
    if expression.dtype != numpy.dtype(spectrum_dtype) or any(
            not -ndim <= a < ndim for a in expression.axes()):
        return None
    axis = ndim - k
    element = _cuda.element_source(expression, ndim, axis, spectrum_dtype, narrow=True)
    source = _columns.round_trip_source(element) if columns else None
    kernels = (_mixed.Filter(*lengths, op.dtype, element, op.device_id) if mixed else None)
    fused = _Fused(expression, shape, axis, lengths, source, key + (expression.key,),
                   op.device_id, kernels)
    _made.add(fused)
    return fused


def _element(fused, values):
    """The kernel's ``Element`` struct of the further operands and scalars ``values``: a copy
    of the problem's template with their addresses, strides and values."""
    e = type(fused.template).from_buffer_copy(fused.template)
    shape, j = fused.shape, 0
    for k, (spec, value) in enumerate(zip(fused.expression.inputs[1:], values), 1):
        if not spec.array:
            setattr(e, f"s{k}", _cuda.scalar_argument(value, spec))
            continue
        j += 1
        setattr(e, f"in{j}", pointer(value).value)
        e.d.strides[j][:] = aligned_strides(value, shape)
    return e


def _run(fused, width, x, values, stream, handle, like):
    """The fused way: the other axes' r2c transforms, the column kernel's pass (``width``
    columns per cluster, scaling by the whole transform's ``1 / n``), their c2r (unscaled,
    overwriting the spectrum, a temporary of this call's)."""
    y = rfftn(x, axes=fused.others, stream=stream)
    spectrum = wrap_named(y, "the spectrum")
    for v in values:
        if hasattr(v, "adapter"):
            v.wait_ready(handle)
    length = fused.lengths[0]
    _columns.round_trip(spectrum.device_id, length, width, fused.source, spectrum.ptr,
                        fused.pitch, fused.pitch, fused.batches, fused.scale,
                        _element(fused, values), handle)
    inverse = fused.inverse.get(type(y))
    if inverse is None:
        inverse = fused.inverse[type(y)] = FFT(y, axes=fused.others, kind="c2r",
                                               norm="forward",
                                               last_axis_size=fused.lengths[-1],
                                               overwrite_input=True)
        inverse._unbind()  # (kept: it holds no call's spectrum)
    return inverse.execute(y, stream=stream, like=like)


def _run_mixed(fused, op, values, stream, like):
    """The mixed-radix way: the rows' r2c transforms, one pass down the columns (forward,
    the element, ``1 / n``, inverse) and the rows' c2r, each a kernel of accelmath's
    (:mod:`accelmath.fft._kernels.mixed`), through a spectrum of this call's."""
    ctx = Context(op, stream)
    for v in values:
        if hasattr(v, "adapter"):
            v.wait_ready(ctx.stream)
    spectrum, spectrum_ptr = ctx.empty(fused.shape, norms.complex_dtype(op.dtype))
    out, out_ptr = ctx.empty(op.shape, op.dtype)
    fused.mixed.run(op.ptr, spectrum_ptr, out_ptr, fused.scale, _element(fused, values),
                    ctx.stream)
    del spectrum  # (its memory goes back to the package's pool in the stream's order)
    out = ctx.finish(out)
    return out if like is None else returned_as(out, target_of(like))

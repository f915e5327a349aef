"""A stateless transform with a prologue or an epilogue (see :mod:`accelmath.fft._fusion.fused`):
what the public functions run where either is given.

A call with an epilogue or a prologue (not both) on CuPy arrays or torch tensors on the GPU,
on the current stream and without ``out=``, that ran as separate passes is remembered
(:class:`_Remembered`): a later call of the same transform, function and argument layouts
runs the transform's own remembered call and the function's kernel with the new addresses and
scalars (the prologue's into a new array), without the checks and the tracing its first call
made. An epilogue's call that the public function's front keyed (see
:func:`~accelmath.fft._transform.front`: a function that reads plain values, arrays and
Python numbers as its arguments) is offered to the front as well: the transform's launcher
chained with the kernel's launch in C (:meth:`~accelmath.fusion._launch.KeptLaunch.chain`),
so that a later such call enters no Python.
"""

import math
from typing import NamedTuple

from accelmath._core import hostcall
from accelmath._core.call_key import device_reader, plain
from accelmath._core.dispatch import MISS
from accelmath._core.gpu.stream import resolve_stream
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import wrap_named
from accelmath.errors import InvalidArgumentError
from accelmath.fft import _normalize as norms
from accelmath.fft._fusion import callbacks as _callback
from accelmath.fft._fusion.fused import (check_unused, input_context, lengths_of, output_context,
                                         run_epilogue)
from accelmath.fft._transform import dispatcher, read_operand, recalled, transform
from accelmath.fusion import _cuda
from accelmath.fusion._elementwise import (apply, arguments, front_names, function_key,
                                           reads_key, scalar_signature, traced, types_of)
from accelmath.fusion._graph import is_scalar
from accelmath.fusion._launch import KeptLaunch, alignment, prepared

__all__ = ["forget", "fused_call"]

_FUNCTION = type(lambda: None)


class _Geometry(NamedTuple):
    """What a fused call of one transform record on inputs of one shape needs besides its
    arrays, made once: the unscaled record, the norm's factor, the prologue's index and
    frequency context, and the transform's kind, axes and lengths (for the epilogue's)."""

    unscaled: object
    scale: float
    input_context: object
    kind: str
    axes: tuple
    lengths: tuple


_geometries = {}  # (call, input shape) -> _Geometry, at most _LIMIT
_remembered = {}  # _key(...) -> _Remembered, at most _LIMIT
_LIMIT = 1024
_OFFERS = 8  # front keys a remembered call is offered for, at most


def _geometry(call, shape):
    key = (call, shape) if _plain(call) else None
    try:
        found = None if key is None else _geometries.get(key)
    except TypeError:  # (an unhashable norm: checked below, and refused)
        found, key = None, None
    if found is None:
        norm = norms.check_norm(call.norm)
        axes, lengths = lengths_of(call, shape)
        scale = norms.scale_factor(norm, call.inverse, math.prod(lengths)) or 1.0
        found = _Geometry(call._replace(norm="forward" if call.inverse else "backward"),
                          scale, input_context(call.kind, shape, axes, lengths), call.kind,
                          axes, lengths)
        if key is not None:
            if len(_geometries) >= _LIMIT:
                _geometries.clear()
            _geometries[key] = found
    return found


def forget():
    """Drop the fused calls remembered and free the cuFFT callback plans
    (:func:`accelmath.fft.clear_cache` calls it)."""
    _remembered.clear()
    _geometries.clear()
    _allocations.clear()
    _callback.forget()


def fused_call(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args):
    """A stateless transform ``call`` of ``x`` with a prologue and/or an epilogue (see the
    module docstring)."""
    # (taken first, always: the transform within must not take a fused call's key)
    front_key, key = dispatcher.taken(), None
    fn, args, unused = ((epilogue, epilogue_args, prologue_args) if prologue is None
                        else (prologue, prologue_args, epilogue_args))
    if ((prologue is None or epilogue is None) and fn is not None and out is None
            and stream is None and (unused is None or unused.__class__ is tuple and not unused)):
        key = _key(call, x, fn, args, prologue is not None)
        if key is not None and prologue is None and epilogue.__class__ is _FUNCTION \
                and epilogue.__code__ not in dispatcher.codes:
            names = front_names(epilogue)  # (so that the front keys the next such call)
            if names is not None:
                dispatcher.key_code(epilogue.__code__, names)
        try:
            found = None if key is None else _remembered.get(key)
        except TypeError:  # (an unhashable norm or execution: refused by the checked path)
            found = key = None
        if found is not None:
            result = found.run(x, key[2], args)  # (key[2]: x's layout key)
            if result is not None:
                if front_key is not None and found.chain is not None:
                    found.offer(front_key, result)
                return result
    check_unused(prologue, prologue_args, epilogue, epilogue_args)
    op = read_operand(x)
    geometry = _geometry(call, tuple(op.shape))
    prologue = None if prologue is None else traced(prologue, "prologue")
    epilogue = None if epilogue is None else traced(epilogue, "epilogue", True)
    problem = _problem(call, op, geometry) if op.on_device and out is None else None
    if problem is not None:
        prepared = _callback.prepare(
            problem, prologue, arguments(prologue_args, "prologue_args"), epilogue,
            arguments(epilogue_args, "epilogue_args"), geometry.scale, call.inverse)
        if prepared is _callback.PENDING:
            key = None  # (remembered once the callback way was timed against this one)
        elif prepared is not None:
            handle = resolve_stream(stream, op)

            def separate(remember_as=None):
                return _separate(call, x, op, out, stream, geometry, prologue, prologue_args,
                                 epilogue, epilogue_args, remember_as)

            return _callback.choose(prepared, separate,
                                    lambda: _with_callbacks(prepared, problem, op, handle),
                                    op.device_id, handle, lambda: separate(key))
    return _separate(call, x, op, out, stream, geometry, prologue, prologue_args, epilogue,
                     epilogue_args, key, front_key)


def _separate(call, x, op, out, stream, geometry, prologue, prologue_args, epilogue,
              epilogue_args, key, front_key=None):
    """The transform with the prologue and the epilogue as passes of their own; remembered
    under ``key`` (see :class:`_Remembered`) where that is not None, and offered to the front
    under ``front_key`` where that is not None."""
    if prologue is not None:
        args = arguments(prologue_args, "prologue_args")
        made = apply(prologue, op, (), args, geometry.input_context, stream, name="prologue")
        if call.kind == "r2c" and wrap_named(made, "the prologue's result").dtype.startswith(
                "complex"):
            raise InvalidArgumentError(
                "the prologue returns complex values; a real-to-complex transform takes real "
                "ones (return the real part, .real)")
        if epilogue is None:
            result = transform(call, made, out, stream)
            if key is not None and op.obj is x and op.on_device and result is not made:
                _remember_prologue(key, call, geometry, prologue, op, made, args,
                                   prologue_args)
            return result
        x = made
    if epilogue is None:
        return transform(call, x, out, stream)
    y = wrap_named(transform(geometry.unscaled, x, None, stream), "the transform's result")
    # (a transform over no axes gives its input back: an epilogue must not write there)
    own = y.obj is not x and y.obj is not op.obj
    context = output_context(geometry.kind, tuple(y.shape), geometry.axes, geometry.lengths)
    args = arguments(epilogue_args, "epilogue_args")
    result = run_epilogue(epilogue, y, geometry.scale, args, context, out, stream, in_place=own)
    if key is not None and own and result is y.obj and op.obj is x and y.on_device:
        remembered = _remember(key, geometry, epilogue, y, args, context, epilogue_args)
        if remembered is not None and remembered.chain is not None:
            remembered.offer(front_key, result)
    return result


def _problem(call, op, geometry):
    """The :class:`~accelmath.fft._fusion.callbacks.Problem` of a stateless call on device
    operand ``op``, or None: where the call is too small, runs on the host, converts the
    input's dtype, cuts or pads it, reads it from an address cuFFT refuses, or its layout is
    not one cuFFT plan of callbacks."""
    shape = tuple(op.shape)
    if 2 * math.prod(shape) < _callback.MIN_POINTS:  # (a result is at most twice the input)
        return None  # (settled before the rest: the common small call pays one product)
    kind, axes, lengths = geometry.kind, geometry.axes, geometry.lengths
    in_dtype, out_dtype = _DTYPES.get((kind, op.dtype), (None, None))
    if (in_dtype is None or call.conjugate or call.execution == "cpu"
            or len(set(axes)) != len(axes) or op.ptr % op.itemsize):
        return None
    # the input's extents the transform reads, and the result's
    extents, out_shape = list(shape), list(shape)
    for a, n in zip(axes, lengths):
        extents[a] = out_shape[a] = n
    half = lengths[-1] // 2 + 1
    if kind == "r2c":
        out_shape[axes[-1]] = half
    elif kind == "c2r":
        extents[axes[-1]] = half
    if tuple(extents) != shape:
        return None
    out_shape = tuple(out_shape)
    return _callback.problem(
        kind, axes, shape, op.strides, out_shape, contiguous_strides(out_shape), in_dtype,
        out_dtype, False, op.device_id, op.package, geometry.input_context,
        output_context(kind, out_shape, axes, lengths))


def _with_callbacks(prepared, problem, op, handle):
    """The callback way of a stateless call: a new result of ``op``'s package."""
    adapter = op.adapter
    op.wait_ready(handle)
    make, pointer = _allocation(adapter, problem)
    with adapter.stream_scope(handle, op.device_id):
        out = make()
    prepared.run(op.ptr, pointer(out), handle)
    if adapter.immutable:
        return adapter.finish(out, handle, op.device_id)
    return out


_allocations = {}


def _allocation(adapter, problem):
    key = (adapter.package, problem.out_shape, problem.out_dtype, problem.device_id)
    found = _allocations.get(key)
    if found is None:
        if len(_allocations) >= _LIMIT:
            _allocations.clear()
        found = _allocations[key] = adapter.allocation(
            problem.out_shape, contiguous_strides(problem.out_shape), problem.out_dtype,
            problem.device_id)
    return found


_DTYPES = {("c2c", "complex64"): ("complex64", "complex64"),
           ("c2c", "complex128"): ("complex128", "complex128"),
           ("r2c", "float32"): ("float32", "complex64"),
           ("r2c", "float64"): ("float64", "complex128"),
           ("c2r", "complex64"): ("complex64", "float32"),
           ("c2r", "complex128"): ("complex128", "float64")}


def _plain(call):
    """Whether transform record ``call`` may be part of a memo key: lengths and axes that are
    ints (a bool or a float would equal an int, and find a call whose arguments were valid),
    as the transform's own call memo asks (see :func:`~accelmath._core.call_key.plain`)."""
    return (plain(call.s) and plain(call.axes)
            and (call.workers is None or call.workers.__class__ is int))


def _key(call, x, fn, args, prologue):
    """The memo key of a call with a prologue or (``prologue`` False) an epilogue ``fn``: the
    transform record, the function's role and key (its code and the values it reads), and
    the type and layout of ``x`` and of each array of ``args`` (a scalar's type); None where
    a part has none (host arrays, Numba's...), and for a function that reads other values than
    plain ones (its key is the function itself, which the memo would keep alive, and with it
    what it reads)."""
    reader = device_reader(x)
    layout = None if reader is None else reader[0](x)
    if layout is None or args.__class__ is not tuple or not _plain(call):
        return None
    function = function_key(fn)
    if function is fn:
        return None
    key = [call, x.__class__, layout, function, prologue]
    for value in args:
        if is_scalar(value):
            key.append(scalar_signature(value))
            continue
        reader = device_reader(value)
        layout = None if reader is None else reader[0](value)
        if layout is None:
            return None
        key.append((value.__class__, layout))
    return tuple(key)  # (hashed by the memo's lookup, which refuses an unhashable one)


class _Remembered:
    """A fused call that ran: its transform (the record, and where a prologue made its input,
    that input's allocation and layout key) and its function's kernel
    (:class:`~accelmath.fusion._launch.KeptLaunch`), with the pointer readers of its
    arrays and the specs of the scalars each call gives."""

    __slots__ = ("transform", "pointer", "readers", "kernel", "specs", "current_stream",
                 "device_id", "made", "chain", "offered")

    def __init__(self, transform, pointer, readers, kernel, specs, current_stream, device_id,
                 made=None, chain=None):
        self.transform = transform  # the transform's record (unscaled after an epilogue)
        self.pointer = pointer  # data_ptr of x's kind
        self.readers = readers  # per argument: (data_ptr, alignment) of an array, (None, 1)
        self.kernel, self.specs = kernel, specs
        self.current_stream, self.device_id = current_stream, device_id
        self.made = made  # a prologue's: (make, layout key of what it makes, x's alignment)
        self.chain = chain  # an epilogue's: what offer() chains it from (_chain_parts), or None
        self.offered = []  # the front keys it was offered for (at most _OFFERS)

    def offer(self, front_key, result):
        """Offer the front, for ``front_key`` (a call whose result is ``result``), this call
        chained in C: the transform plan's launcher (the plan its cache holds now: the memo
        holds none, which the cache alone keeps alive), then the epilogue's kernel; without a
        key, x's type joins the types the fronts key. At most :data:`_OFFERS` keys a call: a
        function whose key changes at each call (a global it reads made anew each time)
        stops being offered rather than filling the front; a key offered before is offered
        again only where the front dropped it."""
        (kept, readers, codes, pointer, stream, device_id, plan_key, inverse, x_type,
         function) = self.chain
        if front_key is None:
            dispatcher.remember_front(None, result, None, None, None, x_type)
            return
        if not _reads_as_traced(front_key, function):
            return  # (a value it reads changed between the front's key and the trace)
        if front_key in self.offered:
            if dispatcher.in_front(front_key):
                return  # (its chain missed this call, made by the memo: a new one would too)
        elif len(self.offered) >= _OFFERS:
            return
        else:
            self.offered.append(front_key)
        plan = dispatcher.recall(plan_key)
        first = getattr(plan, "front_run", None)
        first = None if first is None else first(inverse)
        run = None if first is None else kept.chain(first, pointer, readers, codes, stream,
                                                    device_id, MISS)
        if run is not None:
            dispatcher.remember_front(front_key, result, plan_key, plan, run, x_type)

    def run(self, x, layout, args):
        """The call of ``x`` (of layout key ``layout``) and further arguments ``args``: a new
        array of x's kind, or None where an address is not aligned to its element (the
        checked path says so)."""
        addresses, scalars = [], []
        for value, (read, align) in zip(args, self.readers):
            if read is None:
                scalars.append(value)
                continue
            address = read(value)
            if address % align:
                return None
            addresses.append(address)
        scalars = [_cuda.scalar_argument(v, spec) for v, spec in zip(scalars, self.specs)]
        if self.made is None:  # the transform, then the epilogue in place
            y = recalled(self.transform, x, layout)
            address = self.pointer(y)
            self.kernel.launch([address, *addresses, address], scalars, self.current_stream(),
                               self.device_id)
            return y
        make, made_layout, align = self.made
        address = self.pointer(x)
        if address % align:
            return None
        made = make()  # the prologue into an array of its own, then the transform
        self.kernel.launch([address, *addresses, self.pointer(made)], scalars,
                           self.current_stream(), self.device_id)
        return recalled(self.transform, made, made_layout)


def _reads_as_traced(front_key, function):
    """Whether the values the front's key ``front_key`` holds for the epilogue are those its
    trace read (``function``: its :func:`~accelmath.fusion._elementwise.function_key`):
    another thread may have changed one between the two."""
    try:
        values = hostcall.read_values(hostcall.keyword_part(front_key, "epilogue"))
        return reads_key(values, MISS) == function[1]
    except (TypeError, ValueError, IndexError):
        return False


def _kernel(fn, values, target, context, fixed):
    """The :class:`~accelmath.fusion._launch.KeptLaunch` of ``fn``'s kernel on ``values``
    (operands and scalars, the first ``len(fixed)`` scalars fixed: ``fixed``) into operand
    ``target``, and the specs of the other scalars; None where it has no element."""
    expression = fn.expression(types_of(values))
    found = prepared(expression, values, target, context)
    if found is None:
        return None
    specs = [spec for spec in expression.inputs if not spec.array]
    fixed = [_cuda.scalar_argument(v, spec) for v, spec in zip(fixed, specs)]
    arrays = sum(not is_scalar(v) for v in values)
    return (KeptLaunch(found, arrays, fixed, len(specs) - len(fixed)),
            tuple(specs[len(fixed):]))


def _readers(args, given):
    """The pointer readers of arguments ``args`` (see :class:`_Remembered`), or None where one
    was read through a copy (a resolved view): its address is not the one given."""
    if any(not is_scalar(a) and a.obj is not g for a, g in zip(args, given)):
        return None
    return tuple((None, 1) if is_scalar(a) else (a.adapter.data_ptr, alignment(a))
                 for a in args)


def _keep(key, remembered):
    if len(_remembered) >= _LIMIT:
        _remembered.clear()
    _remembered[key] = remembered


def _remember(key, geometry, fn, y, args, context, given):
    """Keep what a later call like this one (an epilogue's) needs (see :class:`_Remembered`);
    the entry kept, or None."""
    readers = _readers(args, given)
    found = None if readers is None else _kernel(fn, [y, geometry.scale, *args], y, context,
                                                 [geometry.scale])
    if found is None:
        return None
    remembered = _Remembered(geometry.unscaled, y.adapter.data_ptr, readers, *found,
                             y.adapter.stream_getter(y.device_id), y.device_id,
                             chain=_chain_parts(key, geometry, fn, y, args, context, found[1]))
    _keep(key, remembered)
    return remembered


def _chain_parts(key, geometry, fn, y, args, context, specs):
    """What :meth:`_Remembered.offer` chains the call remembered under ``key`` from, for the
    front: the epilogue's kernel from a launch of its own (its chains' alone), the readers of
    the further arrays, the scalars' codes, the result's pointer and stream getters, the
    device, the transform's call key and direction and x's type; None where a part has no
    fast reader, or more values than a chain takes."""
    if len(args) > hostcall.MAX_CHAIN:
        return None
    readers = []
    for a in args:
        layout = None if is_scalar(a) else a.adapter.layout_key(a.obj)
        if layout is None and not is_scalar(a):
            return None
        readers.append((None, 1) if layout is None else
                       (a.adapter.reader(layout, keyed=True), alignment(a)))
    codes = [_cuda.scalar_code(spec) for spec in specs]
    if None in codes:
        return None
    kept, _ = _kernel(fn, [y, geometry.scale, *args], y, context, [geometry.scale])
    return (kept, tuple(readers), codes, y.adapter.data_ptr,
            y.adapter.stream_getter(y.device_id), y.device_id,
            (geometry.unscaled, False, key[1], key[2]), geometry.unscaled.inverse, key[1],
            key[3])


def _remember_prologue(key, call, geometry, fn, op, made, args, given):
    """Keep what a later call like this one (a prologue's, which made ``made``) needs."""
    readers = _readers(args, given)
    made = wrap_named(made, "the prologue's result")
    reader = device_reader(made.obj)
    layout = None if reader is None else reader[0](made.obj)
    found = None if readers is None or layout is None else _kernel(
        fn, [op, *args], made, geometry.input_context, [])
    if found is not None:
        adapter = op.adapter
        make, _ = adapter.allocation(tuple(made.shape), tuple(made.strides), made.dtype,
                                     made.device_id)
        _keep(key, _Remembered(call, adapter.data_ptr, readers, *found,
                               adapter.stream_getter(op.device_id), op.device_id,
                               (make, layout, alignment(op))))

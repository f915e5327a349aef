"""A transform's prologue and epilogue inside cuFFT's own loads and stores (LTO callbacks).

The second way a transform with a prologue or an epilogue runs on the GPU, beside the
separate element-wise passes: one cuFFT plan made with accelmath's callbacks
(:mod:`accelmath.fusion._callback`), the prologue a load callback, the epilogue a store
callback. It applies where the transform is one cuFFT plan over its operands: input and result
dense in C order, the transformed axes the last ones (at most 3), no conjugation, single or
double precision, a prologue that keeps the input's dtype and an epilogue that keeps the
result's. A c2r transform always has a load callback (the identity where there is no prologue):
cuFFT may overwrite the buffer it reads, so it is given scratch memory and the callback reads
the operand itself, sparing the copy the plain plan makes.

cuFFT reaches the callbacks' further arrays and scalars through a table in device memory
whose address is fixed when the plan is made; each run rewrites it (one small copy, in stream
order) only where it changed. So new operands never re-plan.

Making such a plan takes NVRTC (tens of ms) and cuFFT's link of the callback (0.3 to 0.9 s):
:class:`Way` makes it on a thread of its own, and the calls run the separate passes until it
is ready. Then the first call of a problem times both ways and keeps the faster
(:mod:`accelmath.fusion._strategy`, remembered in the store): which wins depends on the
transform (on an H200 the separate pass won for a 4 x 2^22 complex64 product and the load
callback for a 4088^2 float64 c2r one, whose input copy it spares).
"""

import ctypes
import dataclasses
import logging
import math
import threading
from typing import NamedTuple

import numpy

from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.memory import allocate_workspace
from accelmath._core.gpu.modules import compile_cuda, device_options
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE
from accelmath.bindings import cufft, driver
from accelmath.errors import InvalidArgumentError
from accelmath.fft._cuda import TYPED_EXEC, aligned
from accelmath.fusion import _callback, _cuda
from accelmath.fusion._elementwise import arrays_fit, traced, types_of, value_signature
from accelmath.fusion._launch import aligned_strides, pointer
from accelmath.fusion._strategy import fastest

__all__ = ["LABELS", "PENDING", "Prepared", "Problem", "Side", "Way", "choose",
           "forget", "prepare", "problem", "wait_for_plans", "way"]

_log = logging.getLogger("accelmath")
_FILE = "accelmath_callback.cu"
MAX_RANK = 3
LABELS = ("separate passes", "cuFFT callbacks")
# Transforms of fewer points (input or result) than this keep to the separate passes: their
# calls are bound by host time, where the separate passes' remembered calls are the shortest
# (a call of the callback way runs the checked path). On an H200, a 2048^2 c2r with a prologue
# (4.2M points), which the device timing sent to the callbacks, took 0.184 ms a call on CuPy
# arrays against 0.111 for its remembered separate passes.
MIN_POINTS = 1 << 23
_DTYPES = ("complex64", "complex128", "float32", "float64")


def problem(kind, axes, in_shape, in_strides, out_shape, out_strides, in_dtype, out_dtype,
            conjugate, device_id, package, in_context, out_context):
    """The :class:`Problem` of a transform of this layout, or None where it is not one cuFFT
    plan of callbacks (see the module docstring) or is smaller than :data:`MIN_POINTS`."""
    ndim, rank = len(in_shape), len(axes)
    if (conjugate or not 1 <= rank <= MAX_RANK
            or tuple(a % ndim for a in axes) != tuple(range(ndim - rank, ndim))
            or in_dtype not in _DTYPES or out_dtype not in _DTYPES
            or not _c_order(in_shape, in_strides) or not _c_order(out_shape, out_strides)
            or 0 in in_shape or 0 in out_shape
            or max(math.prod(in_shape), math.prod(out_shape)) < MIN_POINTS):
        return None
    return Problem(kind, rank, tuple(in_shape), tuple(out_shape), in_dtype, out_dtype,
                   device_id, package, in_context, out_context)


def _c_order(shape, strides):
    """Whether a layout is dense in C order (an axis of one element may have any stride)."""
    return all(s == c for s, c, n in zip(strides, contiguous_strides(shape), shape) if n != 1)


def _dense_span(op, shape):
    """The element count of operand ``op`` where, broadcast to ``shape``, it is dense in C
    order over the trailing axes it spans and broadcast along the others; else None."""
    strides = aligned_strides(op, shape)
    span, a = 1, len(shape) - 1
    while a >= 0 and (shape[a] == 1 or strides[a] == span):
        span *= shape[a]
        a -= 1
    if any(shape[b] != 1 and strides[b] != 0 for b in range(a + 1)):
        return None
    return span


def _spans(values, shape):
    """The :func:`_dense_span` in ``shape`` of each array of ``values``, or None where one
    has none (the strided form)."""
    spans = tuple(_dense_span(v, shape) for v in values if hasattr(v, "adapter"))
    return None if None in spans else spans


class Side:
    """One callback of a plan: its ``role`` (load or store), the expression, the element
    array's shape and index/frequency context, and (once made) its table's device address
    and the bytes last written there."""

    def __init__(self, role, expression, shape, context, dtype, flat):
        self.role, self.expression, self.shape, self.dtype = role, expression, shape, dtype
        self.flat = flat
        self.source = _callback.callback_source(expression, len(shape), role, dtype, flat,
                                                math.prod(shape) < 2 ** 32)
        self.template = _callback.table_struct(expression, len(shape))()
        d = self.template.e.d
        d.shape[:] = shape
        d.period[:] = context.periods
        d.half[:] = [int(a in context.half) for a in range(len(shape))]
        self.template.post = 1.0
        self.ptr = 0
        self.written = None

    def table(self, values, spans, src, post):
        """The table of one call: the further operands' addresses and strides (in the flat
        form their element counts, ``spans``), the scalars, the element array's address
        ``src`` and the factor ``post``."""
        t = type(self.template).from_buffer_copy(self.template)
        j = 0
        for k, (spec, value) in enumerate(zip(self.expression.inputs[1:], values), 1):
            if not spec.array:
                setattr(t.e, f"s{k}", _cuda.scalar_argument(value, spec))
                continue
            j += 1
            setattr(t.e, f"in{j}", pointer(value).value)
            if self.flat:  # (the array's element count: its offsets are the index modulo it)
                t.e.d.strides[j][0] = spans[j - 1]
            else:
                t.e.d.strides[j][:] = aligned_strides(value, self.shape)
        t.src, t.post = src, post
        return t

    def callback_type(self):
        """cuFFT's ``cufftXtCallbackType`` of this callback."""
        real = "real" if self.dtype.startswith("float") else "complex"
        double = "_double" if self.dtype in ("float64", "complex128") else ""
        return cufft.CALLBACK_TYPE[f"{self.role}_{real}{double}"]


class CallbackPlan:
    """One cuFFT plan of a transform with callbacks ``sides`` (:class:`Side`), its tables,
    work area and (c2r) scratch input in one allocation of accelmath's."""

    def __init__(self, kind, in_shape, out_shape, rank, in_dtype, out_dtype, sides, device_id,
                 package):
        self.kind, self.in_dtype, self.sides = kind, in_dtype, sides
        self.device_id = device_id
        self._lock = threading.Lock()
        self._stream = None
        self._handle = None
        self._memory = None
        self._event = None
        ensure_context(device_id)
        images = [compile_cuda(side.source, dataclasses.replace(
            device_options(device_id), lto=True), _FILE) for side in sides]
        table_bytes = [aligned(ctypes.sizeof(side.template)) for side in sides]
        scratch = aligned(ITEMSIZE[in_dtype] * math.prod(in_shape)) if kind == "c2r" else 0
        base = sum(table_bytes) + scratch
        handle = ctypes.c_int()
        cufft.lib.create(ctypes.byref(handle))
        self._handle = handle.value
        try:
            cufft.lib.set_auto_allocation(handle, 0)
            # the tables' addresses are fixed here: allocate them first (the work area's size
            # is known once planned: a second allocation)
            self._memory = [allocate_workspace(base, device_id, 0, package)]
            offset = 0
            for side, image, nbytes in zip(sides, images, table_bytes):
                side.ptr = self._memory[0].ptr + offset
                offset += nbytes
                cufft.lib.xt_set_jit_callback(
                    handle, _callback.callback_name(side.role, side.dtype).encode(), image,
                    len(image), side.callback_type(), ctypes.byref(ctypes.c_void_p(side.ptr)))
            self._scratch = self._memory[0].ptr + offset
            arr = ctypes.c_longlong * rank
            complex_dtype = in_dtype if in_dtype.startswith("complex") else out_dtype
            n = (out_shape if kind == "c2r" else in_shape)[-rank:]
            size = ctypes.c_size_t()
            cufft.lib.xt_make_plan_many(
                handle, rank, arr(*n), arr(*in_shape[-rank:]), 1, math.prod(in_shape[-rank:]),
                cufft.DATA_TYPE[in_dtype], arr(*out_shape[-rank:]), 1,
                math.prod(out_shape[-rank:]), cufft.DATA_TYPE[out_dtype],
                math.prod(in_shape[:-rank]), ctypes.byref(size), cufft.DATA_TYPE[complex_dtype])
            work = allocate_workspace(size.value, device_id, 0, package)
            self._memory.append(work)
            cufft.lib.set_work_area(handle, work.ptr or None)
            event = ctypes.c_void_p()
            driver.lib.event_create(ctypes.byref(event), 2)  # CU_EVENT_DISABLE_TIMING
            self._event = event.value
        except Exception:
            self.free()
            raise
        name, self._with_direction = TYPED_EXEC[kind, in_dtype]
        self._exec, self._exec_name = cufft.lib.raw(name)

    def run(self, in_ptr, out_ptr, stream, inverse, operands, spans, posts):
        """Enqueue the transform of ``in_ptr`` into ``out_ptr`` on ``stream``, each side's
        callback with its further ``operands`` (operands and scalars), their ``spans`` (see
        :meth:`Side.table`) and its factor ``posts``."""
        with self._lock:
            if self._handle is None:
                raise RuntimeError("this callback plan was freed")
            if stream != self._stream:
                if self._stream is not None:  # (the tables are the plan's: in order)
                    driver.lib.event_record(self._event, self._stream)
                    driver.lib.stream_wait_event(stream, self._event, 0)
                cufft.lib.set_stream(self._handle, stream)
                self._stream = stream
            for side, values, counts, post in zip(self.sides, operands, spans, posts):
                table = side.table(values, counts, in_ptr, post)
                data = bytes(table)
                if data != side.written:
                    driver.lib.memcpy_htod_async(side.ptr, data, len(data), stream)
                    side.written = data
            src = self._scratch if self.kind == "c2r" else in_ptr
            args = (self._handle, src, out_ptr) + (
                ((cufft.INVERSE if inverse else cufft.FORWARD),) if self._with_direction else ())
            status = self._exec(*args)
            if status:
                cufft.lib.raise_status(self._exec_name, status)

    def free(self):
        """Wait for the plan's last work, then destroy it and return its memory (idempotent)."""
        with self._lock:
            if self._event is not None:
                if self._stream is not None:
                    driver.lib.event_record(self._event, self._stream)
                    driver.lib.event_synchronize(self._event)
                driver.lib.event_destroy(self._event)
                self._event = None
            if self._handle is not None:
                cufft.lib.destroy(self._handle)
                self._handle = None
            for memory in self._memory or ():
                memory.free()
            self._memory = None


class Way:
    """The callback way of one problem: its plan, made on a thread of its own on first ask
    (:meth:`plan`: None until ready, or for good where making it failed)."""

    def __init__(self, key, make):
        self.key = key
        self._make = make
        self._plan = None
        self.failed = False
        self._thread = None
        self._lock = threading.Lock()

    def plan(self, wait=False):
        """The :class:`CallbackPlan`, or None while it is being made (``wait``: wait for it)
        or where it cannot be made."""
        if self._plan is not None or self.failed:
            return self._plan
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._build, daemon=False,
                                                name="accelmath-cufft-callback")
                self._thread.start()
        if wait:
            self._thread.join()
        return self._plan

    def _build(self):
        try:
            self._plan = self._make()
        except Exception as exc:  # (the separate passes keep running: say why once)
            self.failed = True
            _log.info("cuFFT callback plan for %s not made: %s", self.key, exc)

    def free(self):
        """Free the plan (waiting for one being made)."""
        if self._thread is not None:
            self._thread.join()
        if self._plan is not None:
            self._plan.free()
            self._plan = None
        self.failed = True


_ways = {}  # key -> Way, at most _LIMIT
_LIMIT = 64
_ways_lock = threading.Lock()
background = True  # make plans on a thread of their own (tests wait for them instead)


def way(key, make):
    """The :class:`Way` of problem ``key`` (``make()`` makes its plan)."""
    found = _ways.get(key)
    if found is None:
        with _ways_lock:
            found = _ways.get(key)
            if found is None:
                if len(_ways) >= _LIMIT:
                    _forget_locked()
                found = _ways[key] = Way(key, make)
    return found


def _forget_locked():
    ways = list(_ways.values())
    _ways.clear()
    for w in ways:
        w.free()


def wait_for_plans():
    """Wait for every callback plan being made (benchmarks settle with it)."""
    for w in list(_ways.values()):
        w.plan(wait=True)


def forget():
    """Free every callback plan (:func:`accelmath.fft.clear_cache` calls it)."""
    with _ways_lock:
        _forget_locked()


PENDING = "pending"  # prepare(): the plan is being made


class Problem(NamedTuple):
    """A transform that :func:`applies`: its kind, rank, layouts (dense, C order), dtypes,
    device and package, and the index and frequency contexts of its input and result."""

    kind: str
    rank: int
    in_shape: tuple
    out_shape: tuple
    in_dtype: str
    out_dtype: str
    device_id: int
    package: str
    in_context: object
    out_context: object

    def key(self):
        """The fields that decide the plan (the contexts follow from them)."""
        return self[:8]


def _identity(x):
    return x


_IDENTITY = traced(_identity, "prologue")


def _expression(fn, element, values, dtype):
    """``fn``'s expression of an element of ``dtype`` and the further ``values``, or None
    where it does not compute ``dtype``."""
    expression = fn.expression([numpy.dtype(element), *types_of(values)])
    return expression if expression.dtype == numpy.dtype(dtype) else None


def prepare(problem, prologue, prologue_values, epilogue, epilogue_values, scale, inverse):
    """The callback way of a call, as a :class:`Prepared`; :data:`PENDING` while its plan is
    being made; None where it does not apply (an expression that changes the dtype, an array
    on another device or that does not broadcast) or its plan cannot be made.

    ``prologue`` / ``epilogue`` are traced functions or None (the epilogue traced with the
    norm's factor ``scale`` as its first scalar); ``prologue_values`` / ``epilogue_values``
    their further operands and scalars."""
    p = problem
    if epilogue is not None:
        epilogue_values = (scale, *epilogue_values)
    load = store = None
    if prologue is not None or p.kind == "c2r":
        fn = prologue if prologue is not None else _IDENTITY
        load = _expression(fn, p.in_dtype, prologue_values, p.in_dtype)
        if load is None or not arrays_fit(prologue_values, p.in_shape, p.device_id):
            return None
    if epilogue is not None:
        store = _expression(epilogue, p.out_dtype, epilogue_values, p.out_dtype)
        if store is None or not arrays_fit(epilogue_values, p.out_shape, p.device_id):
            return None
    load_spans = None if load is None else _spans(prologue_values, p.in_shape)
    store_spans = None if store is None else _spans(epilogue_values, p.out_shape)
    flat = (load_spans is not None, store_spans is not None)
    key = ("cufft callbacks", p.key(), None if load is None else load.key,
           None if store is None else store.key, flat)

    def make():
        sides = []
        if load is not None:
            sides.append(Side(_callback.LOAD, load, p.in_shape, p.in_context, p.in_dtype,
                              flat[0]))
        if store is not None:
            sides.append(Side(_callback.STORE, store, p.out_shape, p.out_context, p.out_dtype,
                              flat[1]))
        return CallbackPlan(p.kind, p.in_shape, p.out_shape, p.rank, p.in_dtype, p.out_dtype,
                            sides, p.device_id, p.package)

    found = way(key, make)
    plan = found.plan(wait=not background)
    if plan is None:
        return None if found.failed else PENDING
    operands, spans, posts = [], [], []
    if load is not None:
        operands.append(prologue_values if prologue is not None else ())
        spans.append(load_spans)
        posts.append(scale if epilogue is None else 1.0)
    if store is not None:
        operands.append(epilogue_values)
        spans.append(store_spans)
        posts.append(1.0)
    values = [v for side in operands for v in side]
    return Prepared(key + (inverse, tuple(value_signature(v) for v in values)), plan,
                    tuple(operands), tuple(spans), tuple(posts), inverse, ITEMSIZE[p.in_dtype],
                    ITEMSIZE[p.out_dtype], tuple(v for v in values if hasattr(v, "adapter")))


class Prepared(NamedTuple):
    """One call's callback way: ``run(in_ptr, out_ptr, stream)`` enqueues it."""

    key: tuple  # the strategy's: the plan's problem and expressions, direction, operands
    plan: CallbackPlan
    operands: tuple
    spans: tuple  # per side, the arrays' element counts in the flat form, else None
    posts: tuple
    inverse: bool
    in_align: int
    out_align: int
    arrays: tuple  # the further operands that are arrays

    def describe(self):
        """The problem as a stable string, for the store."""
        return repr(self.key)

    def run(self, in_ptr, out_ptr, stream):
        """Enqueue the transform of ``in_ptr`` into ``out_ptr`` on ``stream`` with this call's
        operands (after the further arrays' pending work)."""
        if in_ptr % self.in_align or out_ptr % self.out_align or in_ptr == out_ptr:
            raise InvalidArgumentError(
                "a transform with cuFFT callbacks takes operands at whole elements and a "
                "result apart from its input; copy the operand to an array of its own")
        for v in self.arrays:
            v.wait_ready(stream)
        self.plan.run(in_ptr, out_ptr, stream, self.inverse, self.operands, self.spans,
                      self.posts)


def choose(prepared, separate, callback, device_id, stream, chosen_separate=None):
    """The result of the faster of ``separate()`` and ``callback()`` for the problem of
    :class:`Prepared` ``prepared`` (timed on its first call,
    :func:`~accelmath.fusion._strategy.fastest`); where the separate way is the faster, of
    ``chosen_separate()`` where given (a call that remembers itself, which the timing runs
    must not: the call like it would then never meet the callback way again)."""
    ways = {LABELS[0]: separate, LABELS[1]: callback}
    chosen = fastest(prepared.key, prepared.describe, ways, device_id, stream, ("cufft",))
    if chosen:
        return callback()
    return (chosen_separate or separate)()

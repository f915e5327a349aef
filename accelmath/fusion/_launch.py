"""A fused expression's kernel on device operands: written for the operands' layout
(:mod:`accelmath.fusion._cuda`), compiled once per expression, layout and device (NVRTC, kept
in the store), and launched on the caller's stream. What a launch passes besides the pointers
and scalars (the layout, the element count, the ``Dims`` struct) is made once per layout of
the operands (:class:`_Launch`), so that a call like an earlier one only reads its addresses.
"""

import functools
import math
import threading

import numpy

from accelmath._core import hostcall
from accelmath._core.gpu import launch, modules
from accelmath._core.gpu.device import devices, ensure_context
from accelmath._core.layout import axis_order, contiguous_strides
from accelmath.bindings import driver
from accelmath.errors import InvalidArgumentError
from accelmath.fusion import _cuda
from accelmath.fusion._evaluate import Axes, normalize_axes
from accelmath.fusion._graph import is_scalar

__all__ = ["KeptLaunch", "aligned_strides", "alignment", "kernel_call", "pointer", "prepared",
           "run", "start"]

_BLOCK = 256
_FILE = "accelmath_fused.cu"
_kernels = {}  # (key, layout, out dtype, device) -> CUfunction


def aligned_strides(op, shape):
    """``op``'s element strides broadcast to ``shape`` (0 along broadcast axes)."""
    offset = len(shape) - len(op.shape)
    return tuple(0 if a < offset or op.shape[a - offset] == 1 else op.strides[a - offset]
                 for a in range(len(shape)))


def _kernel(expression, layout, out_dtype, device_id):
    key = (expression.key, layout, out_dtype, device_id)
    found = _kernels.get(key)
    if found is None:  # (loaded() compiles a source once: threads meeting here find one module)
        source = _cuda.source(expression, layout, out_dtype)
        module = modules.loaded(device_id, source, _FILE)
        found = _kernels[key] = module.function(_cuda.KERNEL)
    return found


@functools.lru_cache(maxsize=None)
def _block_limit(device_id):
    return 32 * devices()[device_id]["multiprocessor_count"]


def run(expression, values, out, context=None, stream=None):
    """Evaluate ``expression`` into device operand ``out`` by one kernel
    (:func:`~accelmath.fusion._elementwise.compute` evaluates host arrays with NumPy).

    Parameters
    ----------
    expression : Expression
    values : sequence
        Operands (for the array inputs) and scalars, in the inputs' order.
    out : Operand
        The result, of the broadcast shape; its dtype may be narrower than the expression's
        (a conversion as NumPy's ``astype``).
    context : Axes, optional
        What index and frequency mean (default: ``out``'s shape).
    stream : int, optional
        The stream handle (device work).
    """
    found = prepared(expression, values, out, context)
    if found is None:  # (no element)
        return
    launch_, function, config = found
    start(function, config, launch_.arguments(expression, values, out), stream, out.device_id)


def start(function, config, words, stream, device_id):
    """Launch ``function`` with the kernel arguments ``words`` (:meth:`_Launch.filled`) on
    ``stream``, in a context of ``device_id`` current on this thread."""
    ensure_context(device_id)
    launch.launch(function, config, words, stream)


def prepared(expression, values, out, context):
    """``(launch, function, config)``: the :class:`_Launch` of ``expression`` on the layouts of
    ``values`` into device operand ``out``, its kernel on ``out``'s device (compiled or
    loaded once) and launch configuration; None where the result has no element."""
    launch_ = _prepared(expression, values, out, context)
    if launch_ is None:
        return None
    kernel = launch_.kernels.get((out.dtype, out.device_id))
    if kernel is None:
        function = _kernel(expression, launch_.layout, numpy.dtype(out.dtype), out.device_id)
        blocks = min(-(-launch_.count.value // _BLOCK), _block_limit(out.device_id))
        kernel = launch_.kernels[(out.dtype, out.device_id)] = (
            function, launch.config(blocks, _BLOCK))
    return launch_, kernel[0], kernel[1]


class _Launch:
    """What the fused kernel of one expression on one layout of operands keeps between calls:
    its :class:`~accelmath.fusion._cuda.Layout`, the element count and the ``Dims`` struct as
    kernel arguments (the same for every call of the layout), and the kernel and launch
    configuration per result dtype and device. Only the pointers and scalars change."""

    __slots__ = ("layout", "count", "dims", "kernels")

    def __init__(self, layout, count, dims):
        self.layout, self.count, self.dims, self.kernels = layout, count, dims, {}

    def arguments(self, expression, values, out):
        """The kernel's arguments as ctypes values (see :meth:`filled`) of operands and
        scalars ``values`` into operand ``out``."""
        return self.filled([pointer(v) for v in values if not is_scalar(v)], pointer(out),
                           [_cuda.scalar_argument(v, spec)
                            for v, spec in zip(values, expression.inputs) if not spec.array])

    def filled(self, arrays, out, scalars):
        """The kernel's arguments, in its parameters' order: the arrays' pointers, the
        result's, the scalars (ctypes values, :func:`~accelmath.fusion._cuda.scalar_argument`),
        the element count and (strided) the ``Dims`` struct."""
        return [*arrays, out, *scalars, *self.fixed()]

    def fixed(self):
        """The kernel's last arguments, the same in every call: the element count and (strided)
        the ``Dims`` struct."""
        return (self.count,) if self.dims is None else (self.count, self.dims)


class KeptLaunch:
    """Launches of one fused kernel on one layout whose parameters are kept between calls in
    memory of their own (:func:`~accelmath._core.gpu.launch.launch_parameters`): each call
    writes the addresses and its scalars in place, under a lock (the driver copies them at
    launch); the leading scalars given here, the element count and the ``Dims`` stay."""

    __slots__ = ("_function", "_config", "_words", "_parameters", "_slots", "_kept", "_run",
                 "_lock", "_arrays", "_numbers")

    def __init__(self, found, arrays, fixed, free):
        """``found``: :func:`prepared`'s ``(launch, function, config)``; ``arrays`` the array
        inputs' count; ``fixed`` the leading scalars (ctypes values), ``free`` the count of the
        scalars each call gives."""
        launch_, self._function, self._config = found
        self._arrays, self._numbers = arrays, None  # (_numbers: see chain)
        self._words = (_cuda.ctypes.c_void_p * (arrays + 1))()  # the inputs', the result's
        base = _cuda.ctypes.addressof(self._words)
        size = _cuda.ctypes.sizeof(_cuda.ctypes.c_void_p)
        self._kept = (*fixed, *launch_.fixed())  # (alive while the parameters point there)
        words = [base + k * size for k in range(arrays + 1)]
        words += [_cuda.ctypes.addressof(v) for v in fixed]
        self._slots = range(len(words), len(words) + free)
        words += [0] * free + [_cuda.ctypes.addressof(v) for v in launch_.fixed()]
        self._parameters = (_cuda.ctypes.c_void_p * len(words))(*words)
        self._run = launch.kept_launch(self._function, self._config, self._parameters)
        self._lock = threading.Lock()

    def chain(self, first, pointer, readers, codes, stream, device_id, miss):
        """This kernel in place over the result of launcher ``first``, in C
        (:func:`accelmath._core.hostcall.chain`); None where it would not be in C (no call
        shim, a launch with attributes, a scalar of a type the chain does not write).

        A launch that makes chains makes nothing else: its parameters point at the numbers
        its chains write (one place, shared by all of them: each writes and launches under
        the interpreter lock, between the launcher's return and the kernel's launch).
        ``readers``: per further value, ``(read, align)`` for an array (``read`` a keyed
        reader of its layout), ``(None, 1)`` for a scalar; ``codes``: each scalar's
        :func:`~accelmath.fusion._cuda.scalar_code`; ``stream`` the current stream's getter,
        ``pointer`` the result's address."""
        arrays = 1 + sum(read is not None for read, _ in readers)
        if (self._config._attributes is not None or None in codes
                or arrays != self._arrays or len(codes) != len(self._slots)
                or len(readers) > hostcall.MAX_CHAIN):
            return None
        ctypes = _cuda.ctypes
        with self._lock:  # (made once: every chain of this launch writes there)
            if self._numbers is None:
                numbers = (ctypes.c_double * (2 * len(codes) or 1))()
                for k, slot in enumerate(self._slots):
                    self._parameters[slot] = ctypes.addressof(numbers) + 16 * k
                self._numbers = numbers
        base = ctypes.addressof(self._numbers)
        elements, word, scalar = [], 1, 0
        for read, align in readers:
            if read is None:
                elements.append((codes[scalar], base + 16 * scalar))
                scalar += 1
            else:
                elements.append(("a", read, align, word))
                word += 1
        call, c_name = driver.lib.raw("launch_kernel")
        context_get, _ = driver.lib.raw("ctx_get_current")
        return hostcall.chain(
            first, pointer, elements, ctypes.addressof(self._words), len(self._words),
            ctypes.cast(call, ctypes.c_void_p).value, (self._function.value, *self._config._dims),
            ctypes.addressof(self._parameters), stream,
            lambda status: driver.lib.raise_status(c_name, status),
            ctypes.cast(context_get, ctypes.c_void_p).value, ensure_context(device_id), miss,
            self)

    def launch(self, addresses, scalars, stream, device_id):
        """Launch on ``stream`` with the array inputs' and the result's ``addresses`` (ints,
        in that order) and the free scalars (ctypes values)."""
        with self._lock:
            self._words[:] = addresses
            parameters = self._parameters
            for slot, value in zip(self._slots, scalars):
                parameters[slot] = _cuda.ctypes.addressof(value)
            ensure_context(device_id)
            self._run(stream)


_launches = {}  # (expression, context, result layout, operands' layouts) -> _Launch
_LAUNCH_LIMIT = 4096


def _prepared(expression, values, out, context):
    """The :class:`_Launch` of ``expression`` on the layouts of ``values`` into ``out`` (made
    once per layout), or None where the result has no element."""
    shape = tuple(out.shape)
    key = (expression.key, None if context is None else (context.periods, context.half),
           shape, tuple(out.strides),
           tuple((tuple(v.shape), tuple(v.strides)) for v in values if not is_scalar(v)))
    found = _launches.get(key)
    if found is not None:
        return found
    n = math.prod(shape)
    if n == 0:
        return None
    context = context or Axes(shape)
    arrays = [v for v in values if not is_scalar(v)]
    axes = normalize_axes(expression, len(shape)) if expression.axes() else {}
    dense = contiguous_strides(shape)
    single = tuple(j for j, op in enumerate(arrays) if op.size == 1)  # (read at offset 0)
    flat = all(j in single or (tuple(op.shape) == shape and _dense(op, dense))
               for j, op in enumerate(arrays)) and _dense(out, dense)
    layout = _cuda.Layout(flat, 0 if flat and not axes else len(shape), single if flat else (),
                          n < 2 ** 32)
    dims = None
    if layout.ndim:
        # the elements taken in the result's memory order, so that its writes are coalesced
        # (a result in another order than C's: torch's rfft2); where index or frequency
        # name axes, in C order (the coordinates are the axes' own)
        order = axis_order(out.strides) if not axes else range(len(shape))
        dims = _cuda.dims_struct(layout.ndim, len(arrays) + 1)()
        dims.shape[:] = [shape[a] for a in order]
        for j, op in enumerate(arrays + [out]):
            strides = aligned_strides(op, shape) if op.size != 1 else (0,) * len(shape)
            dims.strides[j][:] = [strides[a] for a in order]
        dims.period[:] = [context.periods[a] for a in order]
        dims.half[:] = [int(a in context.half) for a in order]
    found = _Launch(layout, _cuda.ctypes.c_longlong(n), dims)
    if len(_launches) >= _LAUNCH_LIMIT:
        _launches.clear()
    _launches[key] = found
    return found


def kernel_call(expression, values, out, context):
    """``(layout, arguments)``: the :class:`~accelmath.fusion._cuda.Layout` of the fused
    kernel of ``expression`` on operands and scalars ``values`` into operand ``out``, and its
    arguments as ctypes values (no device touched; the layout's part made once)."""
    found = _prepared(expression, values, out, context)
    if found is None:
        found = _Launch(_cuda.Layout(True, 0), _cuda.ctypes.c_longlong(0), None)
    return found.layout, found.arguments(expression, values, out)


def _dense(op, dense):
    return all(s == d for s, d, e in zip(op.strides, dense, op.shape) if e != 1)


def alignment(op):
    """The bytes the address of operand ``op``'s elements must be a multiple of (a complex
    number's: its parts')."""
    return op.itemsize // 2 if op.dtype.startswith("complex") else op.itemsize


def pointer(op):
    """Operand ``op``'s address as a kernel argument, or InvalidArgumentError where it is not
    aligned to its element (:func:`alignment`)."""
    if op.ptr % alignment(op):
        raise InvalidArgumentError(
            f"an array of {op.dtype} at address {op.ptr:#x} is not aligned to its element")
    return _cuda.ctypes.c_void_p(op.ptr)

"""Running an expression on arrays: :func:`elementwise`, and :func:`apply` for the other
domains (an FFT's prologue and epilogue, a product's epilogue).

On host arrays the expression is evaluated by NumPy (:mod:`accelmath.fusion._evaluate`); on
device arrays it is one kernel (:mod:`accelmath.fusion._launch`), launched on the caller's
stream. The result is of the first array's kind.
"""

import functools
import types

import numpy

from accelmath._core.gpu.stream import check_stream, resolve_stream
from accelmath._core.layout import axis_order, contiguous_strides
from accelmath._core.operand import check_mutable, check_same_device, wrap_named
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath._core.plan import check_apart, host_target
from accelmath.errors import (InvalidArgumentError, TraceError, UnsupportedDTypeError,
                              UnsupportedOperandError)
from accelmath.fusion._evaluate import evaluate
from accelmath.fusion._graph import DTYPES, is_scalar
from accelmath.fusion._launch import run
from accelmath.fusion._trace import Symbol, trace

__all__ = ["Elementwise", "Fixed", "Traced", "apply", "arguments", "arrays_fit", "check_out",
           "elementwise", "compute", "dtype_of", "front_names", "function_key", "reads_key",
           "scalar_signature", "scaled",
           "traced", "types_of", "value_signature"]

_traced = {}  # (function, with a scale) -> Traced, at most _TRACED_LIMIT
_TRACED_LIMIT = 512
_APPLIED_LIMIT = 256  # signatures a Traced or Fixed remembers the checks of


class Traced:
    """A Python function and its expressions, one per signature of argument types, traced on
    first use; ``applied``: what :func:`apply` remembers of the calls that passed its checks,
    per signature of their values; ``passes``: what a transform's fused pass remembers of the
    problems it met (its own memo, with its own bound)."""

    __slots__ = ("fn", "name", "_expressions", "applied", "passes")

    def __init__(self, fn, name="fn"):
        if not callable(fn):
            raise InvalidArgumentError(f"{name}={fn!r} is not callable: pass a function of the "
                                       "element, such as lambda x: x * 2")
        self.fn, self.name, self._expressions, self.applied = fn, name, {}, {}
        self.passes = {}

    def expression(self, types):
        """The expression of the function on arguments of ``types`` (dtypes for arrays,
        example values for scalars, as :func:`~accelmath.fusion.trace` takes)."""
        key = tuple(t if isinstance(t, numpy.dtype) else scalar_signature(t) for t in types)
        found = self._expressions.get(key)
        if found is None:
            found = self._expressions[key] = trace(self.fn, *types)
        return found


class Fixed:
    """An expression already traced, taken where a :class:`Traced` is (its own expression
    whatever the argument types: the caller traced it for them); ``applied`` and ``passes``
    as a :class:`Traced`'s."""

    __slots__ = ("_expression", "applied", "passes")

    def __init__(self, expression):
        self._expression, self.applied, self.passes = expression, {}, {}

    def expression(self, types):
        """The expression (``types`` are the ones it was traced for)."""
        return self._expression


def scaled(fn):
    """``fn`` with a scale folded in: ``fn(element * scale, *args)``, ``scale`` its second
    argument (an FFT's normalization, a product's alpha)."""
    def with_scale(element, scale, *args):
        return fn(element * scale, *args)

    return with_scale


def traced(fn, name, with_scale=False):
    """The :class:`Traced` of a prologue or epilogue ``fn`` (``with_scale``: of
    :func:`scaled` ``(fn)``), kept per function, so that a later call with the same function
    reuses its traces. A lambda written in a loop is a new function object each time round:
    it is found again by its code and by the values it reads (its closure's cells, the
    globals it names, its defaults), where all of them are hashable."""
    key = (function_key(fn), with_scale)
    try:
        found = _traced.get(key)
    except TypeError:  # an unhashable callable: traced anew each call
        found, key = None, None
    if found is None:
        found = Traced(scaled(fn) if with_scale and callable(fn) else fn, name)
        if key is not None:
            if len(_traced) >= _TRACED_LIMIT:
                _traced.clear()
            _traced[key] = found
    return found


_MISSING = object()
# values a function may read and still be found again by its code: values that cannot change
# under it (numbers, strings, modules, functions; an object's attributes could)
_VALUES = (type(None), bool, int, float, complex, str, bytes, numpy.generic, numpy.dtype, type,
           types.ModuleType, types.FunctionType, types.BuiltinFunctionType, numpy.ufunc)


# the types of _VALUES met most, by exact type (a dict lookup before isinstance's walk)
_EXACT = {t: False for t in (type(None), bool, int, str, bytes, type, types.ModuleType,
                             types.FunctionType, types.BuiltinFunctionType, numpy.ufunc)}
_EXACT.update({float: True, complex: True})  # (True: keyed by repr)


def _value_key(value):
    """``value`` with its type (2.0 and numpy.float64(2.0), or 0.0 and -0.0, are other
    traces), or None where it is not a value of :data:`_VALUES`."""
    try:
        by_repr = _EXACT.get(type(value))
    except TypeError:  # (a type of an unhashable metaclass: no value of _VALUES)
        return None
    if by_repr is not None:
        return (type(value), repr(value)) if by_repr else (type(value), value)
    if value is _MISSING:
        return ("missing",)
    if isinstance(value, tuple):
        parts = tuple(_value_key(v) for v in value)
        return None if None in parts else ("tuple", parts)
    if not isinstance(value, _VALUES):
        return None
    if isinstance(value, (float, complex, numpy.floating, numpy.complexfloating)):
        return (type(value), repr(value))  # (repr tells -0.0 from 0.0)
    return (type(value), value)


_NAMES = {}  # code object -> the names it and the code nested in it read (globals, attributes)


def _names(code):
    """The global and attribute names ``code`` reads, the code nested in it (a comprehension,
    a lambda) included."""
    found = _NAMES.get(code)
    if found is None:
        names = dict.fromkeys(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names.update(dict.fromkeys(_names(const)))
        if len(_NAMES) >= _APPLIED_LIMIT:
            _NAMES.clear()
        found = _NAMES[code] = tuple(names)
    return found


def function_key(fn):
    """What decides ``fn``'s traces: its code and the values it reads (its closure's cells,
    the globals it and the code nested in it name, its defaults), where all are plain values;
    else the function itself (a bound method too: its object's attributes are read). A
    function it reads is keyed as itself, not by what that function reads in turn (that is
    kept from the first trace, as the guide says)."""
    code = getattr(fn, "__code__", None)
    if code is None or isinstance(fn, types.MethodType):
        return fn
    names = _names(code)
    if not (names or getattr(fn, "__closure__", None) or getattr(fn, "__defaults__", None)
            or getattr(fn, "__kwdefaults__", None)):
        return (code, ())  # (it reads nothing but its arguments: the common lambda)
    try:
        found = fn.__globals__
        read = [cell.cell_contents for cell in fn.__closure__ or ()]
        read += [found.get(name, _MISSING) for name in names]
        read += list(fn.__defaults__ or ())
        read += [value for _, value in sorted((fn.__kwdefaults__ or {}).items())]
    except (ValueError, AttributeError):  # (an empty cell)
        return fn
    keys = tuple(_value_key(value) for value in read)
    if None in keys:
        return fn
    try:
        hash(keys)
    except TypeError:
        return fn
    return (code, keys)


def front_names(fn):
    """The global names ``fn``'s code reads, where a front may key it by its code and what it
    reads (:func:`accelmath._core.hostcall.front`): a plain function without defaults (the
    caller found its :func:`function_key` plain); else None."""
    if (fn.__class__ is not types.FunctionType or fn.__defaults__ is not None
            or fn.__kwdefaults__ is not None):
        return None
    return _names(fn.__code__)


def reads_key(values, missing):
    """The part of a :func:`function_key` that ``values`` make, the values a function reads
    in its order (its closure's cells, then its globals; ``missing`` for one that is absent):
    equal to its ``function_key(fn)[1]`` where they are what it reads now."""
    return tuple(_value_key(_MISSING if v is missing else v) for v in values)


def _broadcast(shapes, names):
    try:
        return numpy.broadcast_shapes(*shapes)
    except ValueError:
        listed = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, shapes))
        raise InvalidArgumentError(f"the arrays do not broadcast together: {listed}") from None
    except RuntimeError as exc:  # (NumPy's limit on the axes it broadcasts)
        raise InvalidArgumentError(f"a fused function's arrays have too many axes: {exc}") \
            from None


def arguments(args, name):
    """The further arguments ``args`` of a prologue or epilogue (named ``name``: a sequence,
    one value, or None for none) as a list, arrays wrapped as operands."""
    if args is None:  # (as the functions' ``absent`` reads it)
        return []
    if not isinstance(args, (tuple, list)):
        args = (args,)
    values = []
    for k, value in enumerate(args):
        if is_scalar(value):
            values.append(checked_scalar(value, f"{name}[{k}]"))
        else:
            values.append(wrap_named(value, f"{name}[{k}]"))
    return values


def checked_scalar(value, name):
    """Scalar argument ``value`` (named ``name``), refused where it is a Python int that a
    64-bit integer does not hold (the kernel's parameter would wrap it)."""
    if value.__class__ is int and not -2 ** 63 <= value < 2 ** 63:
        raise InvalidArgumentError(f"{name} = {value} does not fit a 64-bit integer, which a "
                                   "fused expression takes a Python int as; pass it as a float")
    return value


def dtype_of(name, what="an array"):
    """The NumPy dtype of accelmath's dtype name ``name``, or UnsupportedDTypeError where a
    fused expression cannot compute in it (bfloat16, complex32)."""
    try:
        dtype = numpy.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype not in DTYPES:  # (bfloat16 is NumPy's where ml_dtypes is loaded)
        raise UnsupportedDTypeError(
            f"{what} of {name}: a fused expression computes in bool, int32, int64, float16, "
            "float32, float64, complex64 and complex128; convert it first")
    return dtype


def arrays_fit(values, shape, device_id):
    """Whether every array among operands and scalars ``values`` is on ``device_id`` and
    broadcasts to ``shape`` without growing it: what a pass that reaches the arrays itself (a
    transform's fused pass, a cuFFT callback) takes; where one does not, the element-wise way
    says what is wrong."""
    for v in values:
        if hasattr(v, "adapter"):
            if v.device_id != device_id or not broadcasts_to(tuple(v.shape), shape):
                return False
    return True


def types_of(values):
    """What :meth:`Traced.expression` takes for ``values`` (operands and scalars): their
    dtypes and the scalars."""
    return [v if not hasattr(v, "adapter") else dtype_of(v.dtype) for v in values]


def scalar_signature(value):
    """What decides a scalar's part in a trace: its type (and a NumPy scalar's dtype); its
    value never does."""
    return (type(value), getattr(value, "dtype", None))


def value_signature(value):
    """What decides a value's part in a fused call's checks and trace: an operand's dtype,
    shape and device; a scalar's :func:`scalar_signature`."""
    if is_scalar(value):
        return scalar_signature(value)
    return (value.dtype, tuple(value.shape), value.device_id)


def _check_arguments(element, args, name):
    """Refuse further arrays ``args`` of a prologue or epilogue (``name``) that are not on
    ``element``'s device or do not broadcast to its shape."""
    arrays = [v for v in args if hasattr(v, "adapter")]
    if arrays:
        check_same_device(element, *arrays,
                          names=["the transform's " + ("input" if name == "prologue"
                                                       else "result")]
                          + [f"{name}_args" for _ in arrays])
    shape = tuple(element.shape)
    for k, op in enumerate(arrays):
        if not broadcasts_to(tuple(op.shape), shape):
            raise InvalidArgumentError(
                f"{name}_args: an array of shape {tuple(op.shape)} does not broadcast to the "
                f"{'input' if name == 'prologue' else 'result'}'s shape {shape}")


def broadcasts_to(shape, target):
    """Whether an array of ``shape`` broadcasts to ``target`` without growing it."""
    try:
        return numpy.broadcast_shapes(target, shape) == target
    except ValueError:
        return False


def apply(traced_fn, element, leading, args, context, stream, out=None, name="epilogue",
          in_place=True):
    """Run ``traced_fn`` (a :class:`Traced`) on operand ``element``, with the scalars
    ``leading`` before the operands and scalars ``args`` (which must broadcast to the
    element's shape), into ``out`` (an operand), or else in place where an epilogue keeps
    the element's dtype and package, or else into a new array of the element's package.
    ``name`` ("prologue" or "epilogue") names the arguments in messages; ``in_place=False``
    where the element is not the caller's own new array (a transform over no axes returns its
    input). The result array."""
    values = [element, *leading, *args]
    # (the values' signatures -> the expression, and whether it keeps the element's dtype:
    # kept by the function's own Traced, so that nothing keeps a function alive)
    applied, key = traced_fn.applied, tuple(value_signature(v) for v in values)
    found = applied.get(key)
    if found is None:
        _check_arguments(element, args, name)
        expression = traced_fn.expression(types_of(values))
        found = (expression, dtype_of(element.dtype) == expression.dtype)
        if len(applied) >= _APPLIED_LIMIT:
            applied.clear()
        applied[key] = found
    expression, keeps_dtype = found
    handle = resolve_stream(stream, element) if element.on_device else None
    if handle is not None:
        for op in values:
            if not is_scalar(op):
                op.wait_ready(handle)
    writable = in_place and out is None and name == "epilogue" and keeps_dtype
    in_place = element if writable else None
    shape = tuple(element.shape)
    return compute(expression, values, shape, element, out, context, handle, in_place)


def compute(expression, values, shape, like, out=None, context=None, handle=None,
            in_place=None):
    """``expression`` on ``values`` (operands and scalars) over ``shape``: into operand
    ``out`` where given, else into operand ``in_place`` where it can be written there (a
    device array or a NumPy array of a mutable package), else into a new array of ``like``'s
    package (on its device, ``handle`` the stream). The result array."""
    if in_place is not None and (in_place.adapter.immutable or not in_place.on_device
                                 and in_place.package != "numpy"):
        in_place = None
    target = out or in_place
    if not like.on_device:
        arguments = [v if is_scalar(v) else v.adapter.to_numpy(v.obj) for v in values]
        try:
            if target is not None and target.package == "numpy":
                evaluate(expression, arguments, shape, context,
                         out=host_target(target.obj, target))
                return target.obj
            result = evaluate(expression, arguments, shape, context)
        except OverflowError as exc:  # (a Python int beyond an integer element's type)
            raise InvalidArgumentError(f"a scalar argument does not fit the expression's "
                                       f"integer type: {exc}") from None
        if target is not None:  # (the memory checked, through its NumPy view)
            host_target(target.obj, target)[...] = result
            return target.obj
        return like.adapter.from_numpy(result, like.obj)
    if target is not None:
        run(expression, values, target, context, handle)
        return target.obj
    # a new result dense in the axis order of ``like`` where it has the result's shape (as
    # the packages' own element-wise operations keep it: the kernel then reads and writes
    # both in one order), else in C order; allocated in the kernel's stream order
    order = axis_order(like.strides) if tuple(like.shape) == shape and like.strides else None
    with like.adapter.stream_scope(handle, like.device_id):
        result, _ = like.adapter.empty_strided(shape, contiguous_strides(shape, order),
                                               expression.dtype.name, like.device_id)
    run(expression, values, wrap_named(result, "out"), context, handle)
    return like.adapter.finish(result, handle, like.device_id)


class Elementwise:
    """A Python function of elements, fused: see :func:`elementwise`."""

    def __init__(self, fn):
        self._traced = Traced(fn)
        functools.update_wrapper(self, fn, updated=())

    def expression(self, *arguments):
        """The :class:`~accelmath.fusion.Expression` the function makes for these arguments
        (arrays, or dtypes, and scalars)."""
        return self._traced.expression([a if is_scalar(a) else numpy.dtype(
            a if isinstance(a, (type, str, numpy.dtype)) else getattr(a, "dtype", a))
            for a in arguments])

    def _composed(self, arguments, out, stream, like):
        """The function of traced values ``arguments``: called inside another traced
        function, it is part of that one's expression (and so of its one pass)."""
        if out is not None or stream is not None or like is not None:
            raise TraceError("a fused function called inside another takes no out=, stream= "
                             "or like=: its result is part of the other's expression")
        return self.__wrapped__(*arguments)

    def __call__(self, *arguments, out=None, stream=None, like=None):
        """Apply the function to the arrays and scalars ``arguments``, element by element
        (broadcasting), into a new array of the first array's kind or into ``out``.

        Parameters
        ----------
        *arguments : array or scalar
            The function's arguments: the element's array first, then further arrays (that
            broadcast against it) and scalars.
        out : array, optional
            Where to write the result: of the broadcast shape and the result's dtype, on the
            arrays' device.
        stream : int or stream object, optional
            The CUDA stream (default: the current stream of the first array's package).
        like : str, module or array, optional
            The kind of the result (default: the first array's): a package's name or module
            (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

        Returns
        -------
        array
            ``out``, or the new result.
        """
        if arguments and arguments[0].__class__ is Symbol:  # (inside a traced function)
            return self._composed(arguments, out, stream, like)
        if like is not None:
            like = target_of(like)
            return returned_as(self(*arguments, out=out, stream=stream), like)
        if not arguments or is_scalar(arguments[0]):
            raise InvalidArgumentError(
                "the first argument of a fused function is the element's array; got "
                + ("none" if not arguments else f"the scalar {arguments[0]!r}"))
        values, names = [], []
        for position, value in enumerate(arguments):
            if is_scalar(value):
                values.append(checked_scalar(value, f"argument {position}"))
            else:
                values.append(wrap_named(value, f"argument {position}"))
                names.append(f"argument {position}")
        arrays = [v for v in values if not is_scalar(v)]
        check_same_device(*arrays, names=names)
        first = arrays[0]
        expression = self._traced.expression(
            [v if is_scalar(v) else dtype_of(v.dtype) for v in values])
        shape = _broadcast([op.shape for op in arrays], names)
        if first.on_device:
            handle = resolve_stream(stream, first)
            for op in arrays:
                op.wait_ready(handle)
        else:
            if stream is not None:
                check_stream(stream)
            handle = None
        target = None if out is None else check_out(out, shape, expression.dtype, first)
        return compute(expression, values, shape, first, target, None, handle)


def check_out(out, shape, dtype, first):
    """The operand of ``out=``: of ``shape`` and ``dtype``, on ``first``'s device, writable
    (raises, naming what differs)."""
    check_mutable(out)
    target = wrap_named(out, "out")
    if target.obj is not out:  # (a lazily conjugated view, read as a resolved copy)
        raise UnsupportedOperandError(
            "out is a view that is read through a copy (a lazily conjugated or negated torch "
            "tensor): a result written there would be lost; pass a plain array")
    if tuple(target.shape) != tuple(shape) or dtype_of(target.dtype) != dtype:
        raise InvalidArgumentError(
            f"out has shape {tuple(target.shape)} and dtype {target.dtype}; the result has "
            f"shape {tuple(shape)} and dtype {dtype}")
    if target.device_id != first.device_id:
        raise UnsupportedOperandError("out is not on the device of the arguments")
    if target.adapter.immutable:
        raise UnsupportedOperandError(f"out is a {target.package} array, which cannot be "
                                      "written: leave out=None")
    if target.package == "numpy" and not target.obj.flags.writeable:
        raise InvalidArgumentError("out is read-only (a broadcast view, or a flag set so)")
    check_apart(target)
    return target


def elementwise(fn):
    """Fuse ``fn``, an ordinary Python function of elements, into one pass over arrays.

    ``fn`` is traced once per signature of argument types (see
    :func:`~accelmath.fusion.trace` for what it may contain) and runs as one CUDA kernel on
    device arrays (compiled once, kept in the store) or through NumPy on host arrays. Scalar
    arguments are passed at each call: new values never recompile.

    Parameters
    ----------
    fn : callable
        A function of the element (its first argument) and further arrays or scalars,
        returning one value.

    Returns
    -------
    Elementwise
        Callable as ``f(*arrays_and_scalars, out=None, stream=None, like=None)``: the arrays
        broadcast together (NumPy's rules), the result is of the first array's kind (NumPy,
        CuPy, torch, JAX, Numba...) or ``like``'s, on the caller's stream. Called inside
        another fused function (a prologue, an epilogue...), it is part of that one's
        expression.

    Raises
    ------
    TraceError
        At the first call, for a construct that cannot be fused.
    InvalidArgumentError
        For arrays that do not broadcast, or an ``out`` of another shape or dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.fusion import elementwise, relu
    >>> f = elementwise(lambda x, bias, scale: relu(x + bias) * scale)
    >>> f(np.array([[-1.0, 2.0]]), np.array([0.5, 0.5]), 2.0).tolist()
    [[0.0, 5.0]]
    """
    return Elementwise(fn)

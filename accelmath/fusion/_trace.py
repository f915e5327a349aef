"""Tracing: an ordinary Python function called once on symbolic values becomes an
:class:`~accelmath.fusion._graph.Expression`.

A :class:`Symbol` stands for one element of an array (or a scalar argument) while the function
runs. Python's operators, ``abs``, the NumPy ufuncs and functions of :data:`_UFUNCS` and
:data:`_FUNCTIONS`, ``.real``, ``.imag``, ``.conj()``, ``.astype()`` and this package's
:func:`relu`, :func:`gelu`, :func:`sigmoid`, :func:`index` and :func:`frequency` record nodes;
anything else raises :class:`~accelmath.errors.TraceError` naming the construct. A Python
``if`` (or ``and``, ``or``, ``not``) on a symbolic value raises too: the expression is one
value per element, chosen with ``numpy.where``.
"""

import numbers
import threading

import numpy

from accelmath.errors import InvalidArgumentError, TraceError
from accelmath.fusion._graph import (DTYPES, OPERATIONS, SCALARS, Builder, Input, is_scalar,
                                     numpy_operation, weak_dtype)

__all__ = ["Symbol", "frequency", "gelu", "index", "input_of", "relu", "sigmoid", "trace"]

_state = threading.local()  # .builder: the Builder of the trace running on this thread

# NumPy ufuncs -> operation names (OPERATIONS)
_UFUNCS = {
    numpy.add: "add", numpy.subtract: "subtract", numpy.multiply: "multiply",
    numpy.true_divide: "divide", numpy.power: "power", numpy.negative: "negative",
    numpy.absolute: "absolute", numpy.exp: "exp", numpy.log: "log", numpy.sqrt: "sqrt",
    numpy.sin: "sin", numpy.cos: "cos", numpy.tanh: "tanh", numpy.conjugate: "conjugate",
    numpy.maximum: "maximum", numpy.minimum: "minimum", numpy.less: "less",
    numpy.less_equal: "less_equal", numpy.greater: "greater",
    numpy.greater_equal: "greater_equal", numpy.equal: "equal", numpy.not_equal: "not_equal",
    numpy.logical_and: "logical_and", numpy.logical_or: "logical_or",
    numpy.logical_not: "logical_not",
}
# NumPy functions (through __array_function__) -> operation names
_FUNCTIONS = {numpy.real: "real", numpy.imag: "imag", numpy.where: "where",
              numpy.conj: "conjugate", numpy.abs: "absolute"}


def _builder(what):
    builder = getattr(_state, "builder", None)
    if builder is None:
        raise TraceError(f"{what} is only defined inside a traced function (a prologue, an "
                         "epilogue or an accelmath.fusion.elementwise function)")
    return builder


class Symbol:
    """One element of an array (or a scalar argument) while a function is traced. Use it as
    a NumPy scalar: operators, ``abs``, NumPy ufuncs, ``numpy.where``, ``.real``, ``.imag``,
    ``.conj()``, ``.astype(dtype)``; its ``dtype`` is the value's type."""

    __slots__ = ("_builder", "_node")
    __array_priority__ = 1000

    def __init__(self, builder, node):
        self._builder, self._node = builder, node

    @property
    def dtype(self):
        """The value's dtype (NumPy's promotion rules)."""
        return self._builder.nodes[self._node].dtype

    def __repr__(self):
        return f"<traced {self.dtype} value>"

    # -- operators --------------------------------------------------------------------------
    def _apply(self, op, *others, name=None, attr=None, reverse=False, python=None):
        args = [self, *others]
        if reverse:
            args.reverse()
        return _apply(op, args, name=name, attr=attr, python=python)

    def __add__(self, o): return self._apply("add", o, name="+")
    def __radd__(self, o): return self._apply("add", o, name="+", reverse=True)
    def __sub__(self, o): return self._apply("subtract", o, name="-")
    def __rsub__(self, o): return self._apply("subtract", o, name="-", reverse=True)
    def __mul__(self, o): return self._apply("multiply", o, name="*")
    def __rmul__(self, o): return self._apply("multiply", o, name="*", reverse=True)
    def __truediv__(self, o): return self._apply("divide", o, name="/")
    def __rtruediv__(self, o): return self._apply("divide", o, name="/", reverse=True)
    def __pow__(self, o): return self._apply("power", o, name="**")
    def __rpow__(self, o): return self._apply("power", o, name="**", reverse=True)
    def __neg__(self): return self._apply("negative", name="unary -")
    def __pos__(self): return self
    def __abs__(self): return self._apply("absolute", name="abs", python=True)
    def __lt__(self, o): return self._apply("less", o, name="<")
    def __le__(self, o): return self._apply("less_equal", o, name="<=")
    def __gt__(self, o): return self._apply("greater", o, name=">")
    def __ge__(self, o): return self._apply("greater_equal", o, name=">=")
    def __eq__(self, o): return self._apply("equal", o, name="==")
    def __ne__(self, o): return self._apply("not_equal", o, name="!=")
    def __and__(self, o): return self._apply("logical_and", o, name="&")
    def __rand__(self, o): return self._apply("logical_and", o, name="&", reverse=True)
    def __or__(self, o): return self._apply("logical_or", o, name="|")
    def __ror__(self, o): return self._apply("logical_or", o, name="|", reverse=True)
    def __invert__(self): return self._apply("logical_not", name="~")

    # -- methods and attributes -------------------------------------------------------------
    @property
    def real(self):
        """The real part."""
        return self._apply("real", name=".real")

    @property
    def imag(self):
        """The imaginary part."""
        return self._apply("imag", name=".imag")

    def conj(self):
        """The complex conjugate."""
        return self._apply("conjugate", name=".conj()")

    conjugate = conj

    def astype(self, dtype):
        """The value converted to ``dtype``."""
        try:
            target = numpy.dtype(dtype)
        except TypeError:
            raise TraceError(f".astype({dtype!r}): not a dtype") from None
        if target not in DTYPES:
            raise TraceError(f".astype({target}): a fused expression computes in "
                             f"{', '.join(str(d) for d in DTYPES)}")
        return self._apply("astype", name=f".astype({target})", attr=target)

    # -- NumPy's protocols ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        op = _UFUNCS.get(ufunc)
        if op is None:
            raise TraceError(f"numpy.{ufunc.__name__} is not supported in a fused expression; "
                             f"the supported ufuncs: {_names(_UFUNCS)}")
        if method != "__call__" or kwargs:
            raise TraceError(f"numpy.{ufunc.__name__}.{method} with "
                             f"{sorted(kwargs) or 'no keywords'}: a fused expression takes "
                             "plain ufunc calls (no out=, where=, dtype=, reduce...)")
        return _apply(op, inputs, name=f"numpy.{ufunc.__name__}")

    def __array_function__(self, func, types, args, kwargs):
        op = _FUNCTIONS.get(func)
        if op is None or kwargs:
            raise TraceError(f"numpy.{func.__name__} is not supported in a fused expression; "
                             f"the supported functions: {_names(_FUNCTIONS)} and the ufuncs")
        return _apply(op, args, name=f"numpy.{func.__name__}")

    # -- what an element cannot do ----------------------------------------------------------
    def __bool__(self):
        raise TraceError("a traced value has no truth value here: a Python if, and, or, not "
                         "or a chained comparison on it cannot be fused; choose with "
                         "numpy.where(condition, a, b) and combine conditions with & and |")

    def _refuse(self, what, hint=""):
        raise TraceError(f"{what} of a traced value is not supported: it stands for one "
                         f"element of an array{hint}")

    def _operator(self, symbol):
        raise TraceError(f"the operator {symbol} is not supported in a fused expression; it "
                         "takes + - * / ** unary -, abs(), comparisons, & | ~ and the ufuncs")

    def __floordiv__(self, o): self._operator("//")
    def __rfloordiv__(self, o): self._operator("//")
    def __mod__(self, o): self._operator("%")
    def __rmod__(self, o): self._operator("%")
    def __divmod__(self, o): self._operator("divmod()")
    def __rdivmod__(self, o): self._operator("divmod()")
    def __matmul__(self, o): self._operator("@")
    def __rmatmul__(self, o): self._operator("@")
    def __lshift__(self, o): self._operator("<<")
    def __rlshift__(self, o): self._operator("<<")
    def __rshift__(self, o): self._operator(">>")
    def __rrshift__(self, o): self._operator(">>")
    def __xor__(self, o): self._operator("^")
    def __rxor__(self, o): self._operator("^")
    def __round__(self, ndigits=None): self._operator("round()")
    def __trunc__(self): self._operator("math.trunc()")
    def __floor__(self): self._operator("math.floor()")
    def __ceil__(self): self._operator("math.ceil()")
    def __hash__(self): self._refuse("hashing (a dict key, a set member)")  # (== traces)
    def __len__(self): self._refuse("len()")
    def __iter__(self): self._refuse("iteration")
    def __getitem__(self, key): self._refuse("indexing")
    def __index__(self): self._refuse("use as an integer")
    def __int__(self): self._refuse("int()", _CAST)
    def __float__(self): self._refuse("float()", _CAST)
    def __complex__(self): self._refuse("complex()", _CAST)

    def __array__(self, *args, **kwargs):
        self._refuse("conversion to a NumPy array or scalar (numpy.asarray(x), "
                     "numpy.float64(x))", _CAST)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):  # (protocols probed: absent)
            raise AttributeError(name)
        raise TraceError(f".{name} of a traced value is not supported; it has .real, .imag, "
                         ".conj(), .astype() and .dtype")


_CAST = "; cast it with x.astype(numpy.float64) (or another dtype)"


def _names(table):
    return ", ".join(sorted(f"numpy.{f.__name__}" for f in table))


def _node_of(builder, value, name):
    """The node of an argument of an operation: a symbol of this trace or a constant."""
    if isinstance(value, Symbol):
        if value._builder is not builder:
            raise TraceError(f"{name}: a traced value from another trace")
        return value._node
    if is_scalar(value):
        return builder.constant(value)
    if isinstance(value, numbers.Number):  # a Fraction, a Decimal: as Python's float
        return builder.constant(complex(value) if isinstance(value, numbers.Complex)
                                and not isinstance(value, numbers.Real) else float(value))
    kind = type(value).__name__
    raise TraceError(f"{name} of a {kind}: inside a fused expression only the traced values "
                     "and Python or NumPy scalars take part; pass arrays as arguments")


def _apply(op, args, name, attr=None, python=None):
    """The symbol of ``op`` on ``args`` (symbols of the running trace or scalars)."""
    arity = OPERATIONS[op].arity
    if len(args) != arity:  # (numpy.where(condition) alone, say)
        raise TraceError(f"{name} takes {arity} argument{'s' if arity > 1 else ''} in a fused "
                         f"expression, got {len(args)}")
    builder = _builder(name)
    nodes = tuple(_node_of(builder, a, name) for a in args)
    return Symbol(builder, builder.apply(op, nodes, attr=attr, name=name, python=python))


def _activation(op, x):
    if isinstance(x, Symbol):
        return _apply(op, (x,), name=f"accelmath.fusion.{op}")
    return numpy_operation(op, None, [numpy.asarray(x)])


def relu(x):
    """``max(x, 0)``, element by element: on a traced value inside a fused function, or on a
    NumPy array (or scalar) outside one.

    Examples
    --------
    >>> from accelmath.fusion import relu
    >>> relu([-1.0, 2.0]).tolist()
    [0.0, 2.0]
    """
    return _activation("relu", x)


def gelu(x):
    """GELU in its tanh form, ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`` (as
    cuBLASLt's GELU epilogue and ``torch.nn.functional.gelu(approximate="tanh")``).

    Examples
    --------
    >>> from accelmath.fusion import gelu
    >>> round(float(gelu(1.0)), 6)
    0.841192
    """
    return _activation("gelu", x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``, element by element.

    Examples
    --------
    >>> from accelmath.fusion import sigmoid
    >>> float(sigmoid(0.0))
    0.5
    """
    return _activation("sigmoid", x)


def _check_axis(axis, name):
    if isinstance(axis, (bool, numpy.bool_)) or not isinstance(axis, (int, numpy.integer)):
        raise InvalidArgumentError(f"{name}(axis={axis!r}): axis must be an integer")
    return int(axis)


def index(axis):
    """The element's index along ``axis`` of the element's array (int64), inside a traced
    function: a filter computed where it is applied instead of read from memory.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.fusion import elementwise, index
    >>> elementwise(lambda x: x * index(-1))(np.ones((2, 3))).tolist()
    [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
    """
    axis = _check_axis(axis, "index")
    builder = _builder("accelmath.fusion.index")
    return Symbol(builder, builder.axis_leaf("index", axis))


def frequency(axis):
    """The element's frequency along ``axis`` in cycles per sample, inside a traced function:
    ``numpy.fft.fftfreq(n)[i]`` for an element at index ``i`` of an axis of ``n`` points; on
    the last axis of a real transform's half spectrum, ``numpy.fft.rfftfreq(n)[i]`` with ``n``
    the transform's length. float32 next to single precision elements, else float64.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.fusion import elementwise, frequency
    >>> elementwise(lambda x: x * frequency(0))(np.ones(4)).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    axis = _check_axis(axis, "frequency")
    builder = _builder("accelmath.fusion.frequency")
    return Symbol(builder, builder.axis_leaf("frequency", axis))


def input_of(value, position):
    """The :class:`~accelmath.fusion._graph.Input` an argument ``value`` is traced as: a
    scalar for Python and NumPy scalars, else an array of ``value`` (a dtype or anything with
    one)."""
    if type(value) in SCALARS:
        return Input(weak_dtype(value), False, True)
    if isinstance(value, numpy.generic):
        dtype, array = value.dtype, False
    else:
        try:
            dtype = numpy.dtype(value if isinstance(value, (type, str, numpy.dtype))
                                else value.dtype)
        except (AttributeError, TypeError):
            raise TraceError(f"argument {position} is a {type(value).__name__}: not an array, "
                             "a scalar or a dtype") from None
        array = True
    if dtype not in DTYPES:
        raise TraceError(f"argument {position} is {dtype}; a fused expression takes "
                         f"{', '.join(str(d) for d in DTYPES)}")
    return Input(dtype, array)


def trace(fn, *arguments):
    """Trace ``fn`` into an :class:`~accelmath.fusion.Expression`.

    Parameters
    ----------
    fn : callable
        An ordinary Python function of one element (its first argument) and further
        arguments, returning one value.
    *arguments
        What each argument is: a dtype (or an array) for an array argument, a Python or NumPy
        scalar for a scalar one (its value is not baked in: only its type). The first is the
        element's.

    Returns
    -------
    Expression

    Raises
    ------
    TraceError
        For a construct that cannot be fused, named in the message.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.fusion import trace, relu
    >>> trace(lambda acc, bias, s: relu(acc + bias) * s, np.float32, np.float32, 0.5).dtype
    dtype('float32')
    """
    if not callable(fn):
        raise InvalidArgumentError(f"{fn!r} is not callable: pass a function of the element")
    if not arguments:
        raise InvalidArgumentError("trace needs the element's dtype at least")
    inputs = [input_of(value, position) for position, value in enumerate(arguments)]
    if not inputs[0].array:
        inputs[0] = inputs[0]._replace(array=True, weak=False)
    builder = Builder(inputs)
    previous = getattr(_state, "builder", None)
    _state.builder = builder
    try:
        result = fn(*(Symbol(builder, builder.input(k)) for k in range(len(inputs))))
        output = _node_of(builder, result, "the function's result") \
            if not isinstance(result, tuple) else None
    finally:
        _state.builder = previous
    if output is None:
        raise TraceError("the function returned a tuple: a fused function returns one value")
    return builder.finish(output)

"""Expressions: what tracing a Python function makes, canonical and hashed.

An :class:`Expression` is a small DAG of :class:`Node` records. Each node is made once per
distinct (operation, arguments, attribute) — common subexpressions are one node — and carries
its dtype, found by NumPy's own promotion rules (the operation run on one-element stand-ins of
the argument types), and whether it is *weak* (a Python scalar, which adapts to the array it
meets, as in NumPy 2). Operations whose arguments are all constants are folded into a constant.
The arguments of commutative operations are ordered by their subtrees' digests, so ``a * b``
and ``b * a`` are one expression, and :attr:`Expression.key` hashes the graph reached from the
output in that canonical order: equal keys mean the same computation on the same input types.

The operations, their arity and their NumPy meaning are one table, :data:`OPERATIONS`; the
evaluator (:mod:`accelmath.fusion._evaluate`) and the CUDA generator
(:mod:`accelmath.fusion._cuda`) read their meaning from their own tables keyed the same.
"""

import hashlib
import warnings
from typing import NamedTuple

import numpy

from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError

__all__ = ["DTYPES", "OPERATIONS", "Expression", "Input", "Node", "dtype_name", "dtype_text",
           "frequency_dtype", "numpy_operation"]

# the dtypes an expression computes in (what NumPy arrays, CuPy and torch share)
DTYPES = tuple(numpy.dtype(name) for name in (
    "bool", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"))


def _gelu(x):
    """GELU, tanh form: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, in x's dtype."""
    x = numpy.asarray(x)
    c = numpy.asarray(0.7978845608028654, x.dtype)
    k = numpy.asarray(0.044715, x.dtype)
    return 0.5 * x * (1 + numpy.tanh(c * (x + k * x * x * x)))


def _sigmoid(x):
    x = numpy.asarray(x)
    return 1 / (1 + numpy.exp(-x))


def _relu(x):
    x = numpy.asarray(x)
    return numpy.maximum(x, numpy.zeros((), x.dtype))


def _astype(x, dtype):
    return numpy.asarray(x).astype(dtype)


class Op(NamedTuple):
    """One operation: its arity, its NumPy meaning and what it takes."""

    arity: int
    numpy: object  # the NumPy function that defines it (and evaluates it)
    commutative: bool = False
    real_only: bool = False  # refused on complex arguments (an order, an activation)
    python: bool = False  # a Python operator: on weak scalars alone the result stays weak


OPERATIONS = {
    "add": Op(2, numpy.add, commutative=True, python=True),
    "subtract": Op(2, numpy.subtract, python=True),
    "multiply": Op(2, numpy.multiply, commutative=True, python=True),
    "divide": Op(2, numpy.true_divide, python=True),
    "power": Op(2, numpy.power, python=True),
    "negative": Op(1, numpy.negative, python=True),
    "absolute": Op(1, numpy.absolute),
    "exp": Op(1, numpy.exp),
    "log": Op(1, numpy.log),
    "sqrt": Op(1, numpy.sqrt),
    "sin": Op(1, numpy.sin),
    "cos": Op(1, numpy.cos),
    "tanh": Op(1, numpy.tanh),
    "conjugate": Op(1, numpy.conjugate),
    "real": Op(1, numpy.real, python=True),  # (numpy.real of a Python scalar is one)
    "imag": Op(1, numpy.imag, python=True),
    "maximum": Op(2, numpy.maximum, commutative=True, real_only=True),
    "minimum": Op(2, numpy.minimum, commutative=True, real_only=True),
    "less": Op(2, numpy.less, real_only=True),
    "less_equal": Op(2, numpy.less_equal, real_only=True),
    "greater": Op(2, numpy.greater, real_only=True),
    "greater_equal": Op(2, numpy.greater_equal, real_only=True),
    "equal": Op(2, numpy.equal, commutative=True),
    "not_equal": Op(2, numpy.not_equal, commutative=True),
    "logical_and": Op(2, numpy.logical_and, commutative=True),
    "logical_or": Op(2, numpy.logical_or, commutative=True),
    "logical_not": Op(1, numpy.logical_not),
    "where": Op(3, numpy.where),
    "relu": Op(1, _relu, real_only=True),
    "gelu": Op(1, _gelu, real_only=True),
    "sigmoid": Op(1, _sigmoid, real_only=True),
    "astype": Op(1, _astype),
}


class Input(NamedTuple):
    """What the traced function's argument at one position is.

    ``array``: an array of ``dtype`` (the element, at position 0, is one); else a scalar,
    ``weak`` where it is a Python scalar (it takes the type of the arrays it meets).
    """

    dtype: numpy.dtype
    array: bool
    weak: bool = False


class Node(NamedTuple):
    """One value of an expression: ``op`` applied to the nodes ``args`` (their positions in
    :attr:`Expression.nodes`), with ``attr`` (an input's position, a constant, an axis, a
    target dtype, or None)."""

    op: str
    args: tuple
    attr: object
    dtype: numpy.dtype
    weak: bool


_NAMES, _TEXTS = {}, {}  # dtype -> its name, its str(): NumPy computes both in Python


def dtype_name(dtype):
    """``dtype.name``, remembered per dtype (a trace and its source ask for it often)."""
    found = _NAMES.get(dtype)
    if found is None:
        found = _NAMES[dtype] = dtype.name
    return found


def dtype_text(dtype):
    """``str(dtype)`` (its byte order too), remembered per dtype."""
    found = _TEXTS.get(dtype)
    if found is None:
        found = _TEXTS[dtype] = str(dtype)
    return found


def frequency_dtype(element):
    """The dtype of ``frequency(axis)`` for an element of dtype ``element``: float32 next to
    single precision (so a float32 filter stays float32), float64 otherwise."""
    return numpy.dtype("float32") if element in (numpy.float32, numpy.complex64,
                                                  numpy.float16) else numpy.dtype("float64")


def stand_in(dtype, weak):
    """A one-element value of ``dtype`` for NumPy's promotion rules (a Python scalar where
    ``weak``)."""
    if weak:
        return {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1j}[dtype.kind]
    return numpy.ones(1, dtype)


#: The Python scalar types (a trace's weak scalars).
SCALARS = (bool, int, float, complex)


def is_scalar(value):
    """Whether ``value`` is a Python or NumPy scalar of a number (not a string's)."""
    return type(value) in SCALARS or (isinstance(value, numpy.generic)
                                      and not isinstance(value, (numpy.str_, numpy.bytes_)))


def weak_dtype(value):
    """The dtype a Python scalar ``value`` (bool, int, float, complex) is traced as."""
    return numpy.dtype({bool: "bool", int: "int64", float: "float64",
                        complex: "complex128"}[type(value)])


# the Python operators, for Python scalars alone (their result stays a Python scalar)
_PYTHON = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
           "multiply": lambda a, b: a * b, "divide": lambda a, b: a / b,
           "power": lambda a, b: a ** b, "negative": lambda a: -a, "absolute": abs,
           "real": lambda a: a.real, "imag": lambda a: a.imag}


def numpy_operation(op, attr, values):
    """``op`` (a name of :data:`OPERATIONS`) applied by NumPy to ``values``, floating point
    warnings silenced (an expression may divide by zero where ``where`` discards it); a
    conversion's other warnings too (a cast's, which NumPy's error state does not govern)."""
    definition = OPERATIONS[op]
    with numpy.errstate(all="ignore"):
        if op == "astype":
            with warnings.catch_warnings():  # (entered for casts alone: it costs 2 us)
                warnings.simplefilter("ignore")
                return definition.numpy(values[0], attr)
        return definition.numpy(*values)


def _python_operation(op, values):
    """``op`` on Python scalars, as Python computes it (None where Python cannot: 1 / 0)."""
    try:
        return _PYTHON[op](*values)
    except (ZeroDivisionError, OverflowError):
        return None


class Builder:
    """Makes nodes, one per distinct computation, with their dtypes and digests."""

    def __init__(self, inputs):
        self.nodes, self.digests, self._known = [], [], {}
        self.inputs = tuple(inputs)
        self.element = self.inputs[0].dtype

    def _add(self, op, args, attr, dtype, weak):
        key = (op, args, attr if op != "constant" else (type(attr), attr, dtype_text(dtype), weak))
        found = self._known.get(key)
        if found is not None:
            return found
        text = repr((op, attr if op != "constant" else repr(attr), dtype_text(dtype), weak,
                     tuple(self.digests[a] for a in args)))
        self.nodes.append(Node(op, args, attr, dtype, weak))
        self.digests.append(hashlib.sha256(text.encode()).hexdigest())
        found = self._known[key] = len(self.nodes) - 1
        return found

    def input(self, position):
        """The node of the traced function's argument at ``position``."""
        spec = self.inputs[position]
        return self._add("input", (), position, spec.dtype, spec.weak)

    def constant(self, value):
        """A literal of the traced function: a Python scalar (weak) or a NumPy scalar."""
        if type(value) in (bool, int, float, complex):
            if type(value) is int and not -2**63 <= value < 2**63:
                raise InvalidArgumentError(
                    f"the constant {value} does not fit a 64-bit integer")
            return self._add("constant", (), value, weak_dtype(value), True)
        dtype = numpy.dtype(value.dtype)
        _check_dtype(dtype, f"the constant {value!r}")
        return self._add("constant", (), value.item(), dtype, False)

    def axis_leaf(self, op, axis):
        """The node of ``index(axis)`` or ``frequency(axis)`` (``op``)."""
        dtype = numpy.dtype("int64") if op == "index" else frequency_dtype(self.element)
        return self._add(op, (), axis, dtype, False)

    def apply(self, op, args, attr=None, name=None, python=None):
        """The node of ``op`` on the nodes ``args``; ``name`` is how the user spelled it (for
        messages); ``python``: whether it is Python's own operation here (``abs()``, where
        ``numpy.abs`` is NumPy's: on a Python scalar the first stays a Python scalar)."""
        definition = OPERATIONS[op]
        if python is not None:
            definition = definition._replace(python=python)
        name = name or op
        nodes = [self.nodes[a] for a in args]
        if definition.real_only and any(n.dtype.kind == "c" for n in nodes):
            raise UnsupportedDTypeError(
                f"{name} is not defined for complex values (it orders them); take .real, "
                ".imag or abs() first")
        if op == "where" and nodes[0].dtype.kind != "b":
            raise UnsupportedDTypeError(
                f"numpy.where takes a boolean condition, got a {nodes[0].dtype} value; compare "
                "it first (x > 0)")
        if op in ("logical_and", "logical_or", "logical_not") and any(
                n.dtype.kind != "b" for n in nodes):
            raise UnsupportedDTypeError(f"{name} takes boolean values, got "
                                        f"{', '.join(str(n.dtype) for n in nodes)}")
        if op == "astype":
            if nodes[0].dtype.kind == "c" and attr.kind != "c":
                raise UnsupportedDTypeError(
                    f"astype({attr}) of a {nodes[0].dtype} value would drop the imaginary "
                    "part; take .real first")
        if op == "power" and all(n.dtype.kind in "biu" for n in nodes):
            raise UnsupportedDTypeError(
                "** of integers is not supported in a fused expression; make one side a "
                "float (x ** 2.0)")
        weak = definition.python and all(n.weak for n in nodes)
        stand_ins = [stand_in(n.dtype, n.weak) for n in nodes]
        try:
            result = (_python_operation(op, stand_ins) if weak
                      else numpy_operation(op, attr, stand_ins))
        except TypeError as error:
            raise UnsupportedDTypeError(
                f"{name} of {', '.join(str(n.dtype) for n in nodes)} values: {error}") from None
        dtype = weak_dtype(result) if weak else numpy.asarray(result).dtype
        if dtype not in DTYPES:  # (the message built only then)
            _check_dtype(dtype, f"{name} of {', '.join(str(n.dtype) for n in nodes)} values")
        if all(n.op == "constant" for n in nodes):  # folded
            if weak:
                value = _python_operation(op, [n.attr for n in nodes])
                if value is not None:
                    return self._add("constant", (), value, weak_dtype(value), True)
            else:
                values = [numpy.asarray(n.attr, n.dtype)[()] for n in nodes]
                value = numpy.asarray(numpy_operation(op, attr, values), dtype)[()]
                return self._add("constant", (), value.item(), dtype, False)
        if definition.commutative:
            args = tuple(sorted(args, key=self.digests.__getitem__))
        return self._add(op, tuple(args), attr, dtype, weak)

    def finish(self, output):
        """The :class:`Expression` of node ``output``: the nodes it reaches, in a canonical
        order (depth first, arguments in order), renumbered."""
        order, seen = [], {}
        stack = [(output, False)]  # (an iterative depth-first walk: chains may be long)
        while stack:
            index, expanded = stack.pop()
            if index in seen:
                continue
            if expanded:
                seen[index] = len(order)
                order.append(index)
                continue
            stack.append((index, True))
            for a in reversed(self.nodes[index].args):
                if a not in seen:
                    stack.append((a, False))
        nodes = tuple(self.nodes[i]._replace(args=tuple(seen[a] for a in self.nodes[i].args))
                      for i in order)
        signature = repr([(dtype_text(i.dtype), i.array, i.weak) for i in self.inputs])
        key = hashlib.sha256((signature + self.digests[output]).encode()).hexdigest()[:32]
        return Expression(nodes, self.inputs, key)


def _check_dtype(dtype, what):
    if dtype not in DTYPES:
        raise UnsupportedDTypeError(
            f"{what} is {dtype}; a fused expression computes in "
            f"{', '.join(str(d) for d in DTYPES)}")


class Expression:
    """A traced function: its nodes in canonical order (the last is the result), the inputs
    it takes, and a key that names the computation.

    Attributes
    ----------
    nodes : tuple of Node
        In an order where every argument comes before its use; the last node is the output.
    inputs : tuple of Input
        The traced function's arguments (the element first).
    key : str
        A hex digest of the canonical graph and the input types: equal keys mean the same
        computation.
    dtype : numpy.dtype
        The result's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.fusion import trace
    >>> e = trace(lambda x, b: np.exp(x) * b + 1.0, np.float32, np.float32)
    >>> e.dtype, len(e.nodes)
    (dtype('float32'), 6)
    >>> e.key == trace(lambda x, b: 1.0 + b * np.exp(x), np.float32, np.float32).key
    True
    """

    __slots__ = ("nodes", "inputs", "key", "dtype", "_axes")

    def __init__(self, nodes, inputs, key):
        self.nodes, self.inputs, self.key = nodes, inputs, key
        self.dtype = nodes[-1].dtype
        self._axes = sorted({n.attr for n in nodes if n.op in ("index", "frequency")})

    def axes(self):
        """The axes that ``index`` and ``frequency`` nodes name, as written (a new list)."""
        return list(self._axes)

    def __repr__(self):
        return (f"Expression({len(self.nodes)} nodes, {len(self.inputs)} inputs, "
                f"-> {self.dtype}, key {self.key[:12]})")

"""Python epilogues of a product: ``matmul(a, b, epilogue=lambda acc, bias: relu(acc + bias))``.

The epilogue is traced once (:mod:`accelmath.fusion`); its element ``acc`` is the product as
:func:`~accelmath.linalg.matmul` computes it, ``alpha * a @ b + beta * c``. :func:`match` maps
the head of the expression onto cuBLASLt's native epilogues, read from the element outward:

- ``acc * s``, ``s`` a real scalar (a constant or a scalar argument): folded into alpha and
  beta;
- ``+ bias``, an array argument: the native bias (where, at the call, it is a vector of the
  result's last extent and dtype);
- ``relu(...)`` or ``gelu(...)``: the native activation;
- after a ReLU, ``* s`` with ``s`` positive at the call: folded through the ReLU into alpha,
  beta and the bias (``relu(x) * s == relu(s * x)`` for ``s > 0``).

What remains of the expression runs as one fused pass over the product's result, in place. A
head whose conditions fail at a call (a negative scale, a bias of another shape) runs the whole
expression as that pass instead: the results are the same. On the GPU the first call of a
problem times the native head against the plain product with the whole expression as one
pass, and keeps the faster (in the store, for later processes).
"""

from typing import NamedTuple, Optional

import numpy

from accelmath._core.gpu.stream import resolve_stream
from accelmath._core.operand import wrap_named
from accelmath.fusion._elementwise import (Fixed, apply, arguments, check_out, dtype_of,
                                           elementwise, traced, types_of)
from accelmath.fusion._graph import Builder, Expression
from accelmath.fusion._launch import run
from accelmath.fusion._strategy import fastest

__all__ = ["Head", "after_product", "fused_matmul", "match", "remainder"]

_NATIVE = {(None, False): None, (None, True): "bias", ("relu", False): "relu",
           ("relu", True): "relu_bias", ("gelu", False): "gelu", ("gelu", True): "gelu_bias"}
_heads = {}  # expression key -> Head


class Head(NamedTuple):
    """What of an epilogue cuBLASLt runs natively, and what remains."""

    #: The native epilogue's name (``"relu_bias"``...), or None.
    native: Optional[str]
    #: The scalars folded into alpha and beta: ``("constant", value)`` or ``("input", k)``.
    scales: tuple
    #: Those of them that scale the bias too (the scales after a ReLU), and must be positive.
    after_relu: tuple
    #: The input position of the bias array, or None.
    bias: Optional[int]
    #: The remaining expression, of the native result (its element) and the same arguments;
    #: None where the head is the whole expression.
    rest: Optional[Expression]


def _scalar_source(expression, node):
    """``("constant", v)`` or ``("input", k)`` where ``node`` is a real scalar leaf."""
    if node.dtype.kind == "c":
        return None
    if node.op == "constant":
        return ("constant", node.attr)
    if node.op == "input" and not expression.inputs[node.attr].array:
        return ("input", node.attr)
    return None


def match(expression):
    """The :class:`Head` of ``expression`` (an epilogue's, its element at input 0)."""
    found = _heads.get(expression.key)
    if found is not None:
        return found
    nodes = expression.nodes
    uses = [0] * len(nodes)
    users = [None] * len(nodes)
    for index, node in enumerate(nodes):
        for a in node.args:
            uses[a] += 1
            users[a] = index
    uses[-1] += 1  # (the output)
    element = next((i for i, n in enumerate(nodes) if n.op == "input" and n.attr == 0), None)
    dtype = expression.inputs[0].dtype
    current, scales, after_relu, bias, activation = element, [], [], None, None

    def next_node(op_names):
        if current is None or uses[current] != 1 or users[current] is None:
            return None
        user = nodes[users[current]]
        if user.op not in op_names or user.dtype != dtype:
            return None
        return users[current], user

    def other(node):
        return nodes[node.args[1] if node.args[0] == current else node.args[0]]

    step = next_node(("multiply",))
    if step and _scalar_source(expression, other(step[1])):
        scales.append(_scalar_source(expression, other(step[1])))
        current = step[0]
    step = next_node(("add",))
    if step:
        operand = other(step[1])
        if operand.op == "input" and expression.inputs[operand.attr].array and operand.attr:
            bias, current = operand.attr, step[0]
    # (cuBLASLt's GELU in double precision is good to about 1e-11 only: float64 keeps its
    # GELU in the fused pass, to double's accuracy)
    step = next_node(("relu",) if dtype == numpy.float64 else ("relu", "gelu"))
    if step:
        activation, current = step[1].op, step[0]
    step = next_node(("multiply",)) if activation == "relu" else None
    if step and _scalar_source(expression, other(step[1])):
        source = _scalar_source(expression, other(step[1]))
        scales.append(source)
        after_relu.append(source)
        current = step[0]
    native = _NATIVE[activation, bias is not None]
    if current is None or (native is None and not scales):
        head = Head(None, (), (), None, expression)
    else:
        rest = None if current == len(nodes) - 1 else remainder(expression, current)
        head = Head(native, tuple(scales), tuple(after_relu), bias, rest)
    _heads[expression.key] = head
    return head


def remainder(expression, node):
    """``expression`` with its node ``node`` (of the element's dtype) taken as the element."""
    builder = Builder(expression.inputs)
    made = []
    for index, n in enumerate(expression.nodes):
        if index == node:
            made.append(builder.input(0))
        elif n.op == "input":
            made.append(builder.input(n.attr))
        elif n.op == "constant":
            made.append(builder.constant(n.attr if n.weak else numpy.asarray(n.attr,
                                                                              n.dtype)[()]))
        elif n.op in ("index", "frequency"):
            made.append(builder.axis_leaf(n.op, n.attr))
        else:
            made.append(builder.apply(n.op, tuple(made[a] for a in n.args), n.attr))
    return builder.finish(made[-1])


def _value(source, values):
    kind, what = source
    return what if kind == "constant" else values[what]


def _fits(head, values, n, dtype):
    """Whether the head's call-time conditions hold: positive scales after a ReLU, real
    scalars, a bias vector of the result's last extent and dtype."""
    # (the scales are real: a trace is made per scalar type, and complex ones are no head's)
    if any(not _value(s, values) > 0 for s in head.after_relu):
        return False
    if head.bias is not None:
        bias = values[head.bias]
        if (tuple(bias.shape) != (n,) or bias.dtype != dtype.name
                or n > 1 and bias.strides[0] != 1):  # (cuBLASLt reads it dense)
            return False
    return True


_SCALE_BIAS = []
_scratch = {}  # (stream, device, bias layout) -> a scaled bias's array, rewritten each call
_SCRATCH_LIMIT = 64


def _scaled_bias(op, factor, stream):
    """``bias * factor`` of the bias operand ``op``: on the host a new array; on a device an
    array kept per stream and layout, rewritten by each call on ``stream`` (the product that
    read it before is earlier on the same stream), so a call allocates nothing."""
    if not _SCALE_BIAS:
        _SCALE_BIAS.append(elementwise(lambda b, s: b * s))
    scale = _SCALE_BIAS[0]
    if not op.on_device:
        return scale(op.obj, factor)
    handle = resolve_stream(stream, op)
    key = (handle, op.device_id, op.package, tuple(op.shape), tuple(op.strides), op.dtype)
    target = _scratch.get(key)
    if target is None:
        with op.adapter.stream_scope(handle, op.device_id):
            array, _ = op.adapter.empty_strided(tuple(op.shape), (1,), op.dtype, op.device_id)
        if len(_scratch) >= _SCRATCH_LIMIT:
            _scratch.clear()
        target = _scratch[key] = wrap_named(array, "the scaled bias")
    op.wait_ready(handle)
    run(scale.expression(op.dtype, factor), [op, factor], target, None, handle)
    return target.obj


def fused_matmul(matmul, a, b, c, alpha, beta, epilogue, epilogue_args, out, stream,
                 execution, allow_tf32):
    """:func:`~accelmath.linalg.matmul` (given as ``matmul``) with a Python ``epilogue``.

    Where the head has a native form, a first device call of the problem times it against
    the plain product and one fused pass (:func:`accelmath.fusion._strategy.fastest`) and
    keeps the faster."""
    traced_fn = traced(epilogue, "epilogue")
    args = arguments(epilogue_args, "epilogue_args")
    a_op, b_op = wrap_named(a, "a"), wrap_named(b, "b")
    dtype = dtype_of(a_op.dtype, "a product")
    values = [None, *args]
    expression = traced_fn.expression([dtype] + types_of(args))
    full = Head(None, (), (), None, expression)
    head = match(expression)
    n = b_op.shape[-1] if len(b_op.shape) > 1 else None
    if (head.native is None and not head.scales or not _fits(head, values, n, dtype)
            or head.native is not None and dtype.kind == "c"):  # (no epilogue for complex)
        head = full

    def run_with(chosen, on_stream, into):
        return _run(chosen, matmul, a, b, c, alpha, beta, args, values, on_stream, execution,
                    allow_tf32, into)

    if head is not full and a_op.on_device and execution != "cpu":
        handle = resolve_stream(stream, a_op)
        layouts = tuple(None if x is None else (tuple(x.shape), tuple(x.strides), x.dtype)
                        for x in (a_op, b_op, None if c is None else wrap_named(c, "c")))
        key = ("matmul", expression.key, layouts, a_op.device_id, allow_tf32)
        index = fastest(key, lambda: repr(key[:3] + (allow_tf32,)), {
            "native epilogue": lambda: run_with(head, handle, None),
            "one fused pass": lambda: run_with(full, handle, None)},
            a_op.device_id, handle, ("cublasLt",))
        head = full if index else head
    return run_with(head, stream, out)


def _run(head, matmul, a, b, c, alpha, beta, args, values, stream, execution, allow_tf32,
         out):
    """The product with ``head`` native and the rest fused after it."""
    factor = 1
    for source in head.scales:
        factor = factor * _value(source, values)
    bias = None
    if head.bias is not None:
        after = 1
        for source in head.after_relu:
            after = after * _value(source, values)
        bias = values[head.bias]
        bias = bias.obj if after == 1 else _scaled_bias(bias, after, stream)
    product = matmul(a, b, c, alpha=alpha * factor, beta=beta * factor, epilogue=head.native,
                     bias=bias, out=out if head.rest is None else None, stream=stream,
                     execution=execution, allow_tf32=allow_tf32)
    if head.rest is None:
        return product
    return after_product(_fixed(head.rest), product, args, out, stream)


_fixeds = {}  # expression key -> its Fixed, which remembers the checks of its calls (as _heads)


def _fixed(expression):
    """The :class:`~accelmath.fusion._elementwise.Fixed` of ``expression``, one per
    computation (so that a call finds what an earlier one remembered)."""
    found = _fixeds.get(expression.key)
    if found is None:
        found = _fixeds[expression.key] = Fixed(expression)
    return found


def after_product(fn, product, args, out, stream):
    """``fn`` (a traced epilogue) over the array ``product`` and the operands and scalars
    ``args``, in one pass: into ``out``, else in place where it keeps the dtype, else into a
    new array."""
    element = wrap_named(product, "the product")
    target = None
    if out is not None:
        dtype = fn.expression(types_of([element, *args])).dtype
        target = check_out(out, tuple(element.shape), dtype, element)
    result = apply(fn, element, (), args, None, stream, out=target)
    return out if out is not None else result

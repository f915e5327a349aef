"""A matrix product's arguments read and checked once, for ``matmul`` and ``Matmul`` alike:
the operands (errors name them), their dtype, shapes, the epilogue's inputs, the scalars,
and where the product runs.
"""

import ctypes
import numbers
from typing import NamedTuple

from accelmath._core.arguments import check_execution
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import check_same_device, device_name, wrap_operand
from accelmath.errors import InvalidArgumentError, UnsupportedOperandError
from accelmath.linalg import _matmul_rules as rules
from accelmath.linalg._epilogue import check_epilogue_dtype, epilogue_named
from accelmath.linalg._matmul_cublaslt import Layout, Spec

__all__ = ["Problem", "read", "prepare", "spec_of", "scalar_of", "alignment_of"]

_NAMES = ("a", "b", "c", "bias", "aux")
_SCALAR = {"float32": ctypes.c_float, "float64": ctypes.c_double,
           "complex64": ctypes.c_float * 2, "complex128": ctypes.c_double * 2}


class Problem(NamedTuple):
    """A product's checked arguments.

    Attributes
    ----------
    ops : tuple
        The operands of a, b, c, bias and aux (None where absent).
    conj : tuple of bool
        Whether a and b are lazily conjugated views (their operands describe the memory).
    product : rules.Product
    dtype : str
    precision : rules.Precision
    epilogue : Epilogue
    on_gpu : bool
        Where the product runs.
    alpha, beta : number
    """

    ops: tuple
    conj: tuple
    product: rules.Product
    dtype: str
    precision: rules.Precision
    epilogue: object
    on_gpu: bool
    alpha: object
    beta: object


def read(x, name):
    """``(operand, conj)`` of argument ``x``: a lazily conjugated view (torch's
    ``is_conj()``) is read as its memory, with ``conj`` True, so that cuBLASLt conjugates
    it as it reads it; errors name the argument."""
    conj = False
    is_conj = getattr(x, "is_conj", None)
    if is_conj is not None and callable(is_conj) and is_conj():
        x, conj = x.conj(), True
    try:
        return wrap_operand(x), conj
    except UnsupportedOperandError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def scalar_of(value, name, dtype):
    """``value`` (alpha, beta) checked to be a number a product of ``dtype`` takes."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    if not dtype.startswith("complex") and isinstance(value, numbers.Complex) and not \
            isinstance(value, numbers.Real):
        if value.imag != 0:
            raise InvalidArgumentError(
                f"{name}={value!r} is complex but the operands are {dtype}")
        value = value.real
    return value


def prepare(a, b, c, bias, aux, alpha, beta, epilogue, execution, allow_tf32):
    """The :class:`Problem` of a product's arguments (see ``matmul``), or the error naming
    the argument at fault."""
    epilogue = epilogue_named(epilogue)
    execution = check_execution(execution)
    (a_op, a_conj), (b_op, b_conj) = read(a, "a"), read(b, "b")
    c_op = None if c is None else read(c, "c")[0]
    bias_op = None if bias is None else read(bias, "bias")[0]
    aux_op = None if aux is None else read(aux, "aux")[0]
    dtype = rules.check_dtypes([("a", a_op.dtype), ("b", b_op.dtype),
                                ("c", c_op and c_op.dtype), ("bias", bias_op and bias_op.dtype)])
    product = rules.product(a_op.shape, b_op.shape)
    precision = rules.precision(dtype, allow_tf32)
    check_epilogue_dtype(epilogue, dtype)
    if c_op is not None:
        rules.check_result(c_op.shape, product.shape, "c")
    _check_inputs(epilogue, product, dtype, bias_op, aux_op)
    ops = (a_op, b_op, c_op, bias_op, aux_op)
    present = [(op, name) for op, name in zip(ops, _NAMES) if op is not None]
    check_same_device(*(op for op, _ in present), names=[name for _, name in present])
    if execution == "cpu" and a_op.on_device:
        raise InvalidArgumentError(
            f'execution="cpu" needs host operands; a is on {device_name(a_op.device_id)}')
    on_gpu = a_op.on_device or execution == "cuda"
    return Problem(ops, (a_conj, b_conj), product, dtype, precision, epilogue, on_gpu,
                   scalar_of(alpha, "alpha", dtype), scalar_of(beta, "beta", dtype))


def _check_inputs(epilogue, product, dtype, bias, aux):
    """The bias and auxiliary input an epilogue takes: present where it takes them, absent
    where it does not."""
    label = "no epilogue" if epilogue.name is None else f"epilogue {epilogue.name!r}"
    if epilogue.bias and bias is None:
        raise InvalidArgumentError(
            f"{label} adds a bias: pass bias=, a vector of length {product.n} (the result's "
            "last axis)")
    if bias is not None:
        if not epilogue.bias:
            raise InvalidArgumentError(
                f"bias= is given but {label} adds none; use epilogue='bias' (or 'relu_bias', "
                "'gelu_bias', ...)")
        rules.bias_length(bias.shape, bias.strides, product.n)
    if epilogue.takes_aux and aux is None:
        raise InvalidArgumentError(
            f"{label} reads the auxiliary output of the forward product: pass aux=, as "
            f"{epilogue.takes_aux}_aux returned it")
    if aux is not None:
        if not epilogue.takes_aux:
            raise InvalidArgumentError(f"aux= is given but {label} reads none")
        expected = "uint8" if epilogue.takes_aux == "relu" else dtype
        if aux.dtype != expected:
            raise InvalidArgumentError(
                f"aux has dtype {aux.dtype}; {epilogue.name} takes the {expected} array "
                f"{epilogue.takes_aux}_aux returns")
        if epilogue.takes_aux == "gelu":
            rules.check_result(aux.shape, product.matrix_shape, "aux")


def matrix_layout(op, vector_axis, conj=False):
    """The :class:`Layout` of an operand seen as a batch of matrices."""
    shape, strides = rules.matrix_strides(op.shape, op.strides, vector_axis)
    return Layout(shape, strides, conj)


def spec_of(problem, out_strides, alignment):
    """The :class:`Spec` of a device product (``out_strides``: the result's element strides;
    None: C order)."""
    product = problem.product
    a, b, c, _, aux = problem.ops
    d = (contiguous_strides(product.matrix_shape) if out_strides is None
         else _expanded(product, out_strides))
    c_layout = None
    if c is not None:
        c_layout = Layout(product.matrix_shape, _expanded(product, c.strides))
    aux_layout = None if aux is None else Layout(tuple(aux.shape), tuple(aux.strides))
    return Spec(product, problem.dtype, problem.precision, problem.epilogue,
                matrix_layout(a, 0, problem.conj[0]), matrix_layout(b, 1, problem.conj[1]),
                c_layout, d, aux_layout, alignment)


def _expanded(product, strides):
    """Element strides of an array of the result's shape, seen in the result's matrix shape
    (the axes 1-D operands removed put back, of stride 0)."""
    strides = list(strides)
    if product.b_vector:
        strides.append(0)
    if product.a_vector:
        strides.insert(len(strides) - 1, 0)
    return tuple(strides)


def alignment_of(*ptrs, itemsize):
    """The byte alignment all addresses ``ptrs`` share: 256, 16, or the element's."""
    word = 0
    for ptr in ptrs:
        word |= ptr
    for alignment in (256, 16):
        if not word & (alignment - 1):
            return alignment
    return itemsize

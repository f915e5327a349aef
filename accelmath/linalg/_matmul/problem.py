"""A matrix product's arguments read and checked once, for ``matmul`` and ``Matmul`` alike:
the operands (errors name them), their dtype, shapes, the epilogue's inputs, the scalars,
and where the product runs; and the call memo key of ``matmul`` (:func:`call_key`), which
stands for all of that in a call repeated with arrays of the same layouts.
"""

import ctypes
import functools
import numbers
from typing import NamedTuple

import numpy

from accelmath._core.arguments import check_execution
from accelmath._core.call_key import read_keys
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import check_same_device, device_name, wrap_named
from accelmath._core.plan import check_out
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._matmul import rules
from accelmath.linalg._matmul.cublaslt import Layout, Spec
from accelmath.linalg._matmul.epilogue import aux_shape, check_epilogue_dtype, epilogue_named
from accelmath.linalg._memo import CallKey

__all__ = ["Problem", "read", "read_values", "prepare", "call_key", "checked_out",
           "scalar_of", "host_scalars", "spec_of", "alignment_of"]

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
    return read_values(x, name), conj


def read_values(x, name):
    """The operand of argument ``x``, describing its values (those of a lazily conjugated
    view: a copy); errors name the argument."""
    return wrap_named(x, name)


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


def default_beta(c):
    """beta where it is not given: 0, which reads no c, so that a c given without a beta is
    refused (rather than left unread)."""
    if c is not None:
        raise InvalidArgumentError(
            "c is given without beta, whose default 0 reads no c: pass beta=1 to add c (or "
            "beta=0 to leave it unread)")
    return 0


def prepare(a, b, c, bias, aux, alpha, beta, epilogue, execution, allow_tf32):
    """The :class:`Problem` of a product's arguments (see ``matmul``), or the error naming
    the argument at fault."""
    epilogue = epilogue_named(epilogue)
    execution = check_execution(execution)
    (a_op, a_conj), (b_op, b_conj) = read(a, "a"), read(b, "b")
    # (c, bias and aux are read as their values: a lazily conjugated view, as a copy)
    c_op = None if c is None else read_values(c, "c")
    bias_op = None if bias is None else read_values(bias, "bias")
    aux_op = None if aux is None else read_values(aux, "aux")
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
    beta = scalar_of(beta, "beta", dtype)
    if c_op is None and beta != 0:
        raise InvalidArgumentError(
            f"beta={beta!r} scales c, and no c is given: pass c, or leave beta at 0")
    return Problem(ops, (a_conj, b_conj), product, dtype, precision, epilogue, on_gpu,
                   scalar_of(alpha, "alpha", dtype), beta)


# The types of alpha and beta a key holds, by exact type (bools are not among them: the checks
# refuse them).
_SCALARS = frozenset((int, float, complex, numpy.float16, numpy.float32, numpy.float64,
                      numpy.int32, numpy.int64, numpy.complex64, numpy.complex128))
def call_key(a, b, c, bias, aux, out, alpha, beta, epilogue, execution, allow_tf32):
    """The call memo key of ``matmul``'s arguments, or None for a call not to remember.

    Equal keys mean calls that :func:`prepare`, ``out=``'s checks and the plan treat alike,
    so a call whose key was remembered after it passed them all runs without them. The key
    holds: alpha's and beta's types and what the checks and the plan ask of their values
    (whether their imaginary parts are 0, which real operands need, and whether beta is 0,
    which decides whether c is read: the values themselves are the call's own); epilogue
    (None or a str), execution (a str) and allow_tf32 (a bool), as given; for each of a, b,
    c, bias, aux and out, None or its type and layout key (shape, strides, dtype, device;
    for torch, the lazy conjugation and negation bits); and the alignment the addresses of
    a, b, out and (where beta is not 0) c share: 256, 16, or else their low bits, as
    cuBLASLt's plan is chosen for. The product reads the key's addresses only where no
    operand was copied (:func:`prepare` copies lazily negated views, say): a call is
    remembered only then.

    None where an argument has another type (a list, a JAX array, a bool alpha: the slow path
    reads and checks it), or a torch tensor records gradients (that depends on the grad mode
    of each call). CPU tensors get keys too (only device calls are remembered); NumPy
    arrays get none.
    """
    if (alpha.__class__ not in _SCALARS or beta.__class__ not in _SCALARS
            or allow_tf32.__class__ is not bool or execution.__class__ is not str
            or not (epilogue is None or epilogue.__class__ is str)):
        return None
    key = [alpha.__class__, alpha.imag != 0, beta.__class__, beta.imag != 0, beta != 0,
           epilogue, execution, allow_tf32]
    ptrs = []
    if not read_keys((a, b, c, bias, aux, out), key, ptrs):
        return None
    word = ptrs[0] | ptrs[1] | ptrs[5] | (ptrs[2] if beta != 0 else 0)
    key.append(256 if not word & 255 else 16 if not word & 15 else word & 15)
    return CallKey(tuple(key), tuple(ptrs))


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
                f"bias= is given, but {label} adds no bias; use epilogue='bias' (or "
                "'relu_bias', 'gelu_bias', ...)")
        rules.bias_length(bias.shape, bias.strides, product.n)
    if epilogue.takes_aux and aux is None:
        raise InvalidArgumentError(
            f"{label} reads the auxiliary output of the forward product: pass aux=, as "
            f"{epilogue.takes_aux}_aux returned it")
    if aux is not None:
        if not epilogue.takes_aux:
            raise InvalidArgumentError(
                f"aux= is given, but {label} reads no auxiliary input")
        expected = "uint8" if epilogue.takes_aux == "relu" else dtype
        if aux.dtype != expected:
            raise InvalidArgumentError(
                f"aux has dtype {aux.dtype}; {epilogue.name} takes the {expected} array "
                f"{epilogue.takes_aux}_aux returns")
        if epilogue.takes_aux == "gelu":
            rules.check_result(aux.shape, product.matrix_shape, "aux")
        elif tuple(aux.shape) != aux_shape("relu", product):
            raise InvalidArgumentError(
                f"aux has shape {tuple(aux.shape)}; {epilogue.name} takes the packed mask "
                f"relu_aux returns: uint8, shape {aux_shape('relu', product)}")


def checked_out(out, like, problem):
    """The operand of ``out``, checked to take the result (its shape first, in NumPy's
    words)."""
    shape = getattr(out, "shape", None)
    if isinstance(shape, tuple):
        rules.check_result(shape, problem.product.shape, "out")
    dtype = getattr(out, "dtype", None)
    name = getattr(dtype, "name", None) or str(dtype).replace("torch.", "")
    if dtype is not None and name != problem.dtype:
        raise UnsupportedDTypeError(
            f"Cannot cast ufunc 'matmul' output from {problem.dtype} to {name}: out must "
            f"have the result's dtype, {problem.dtype}")
    return check_out(out, like, problem.product.shape, problem.dtype)


def host_scalars(dtype, alpha, beta):
    """alpha and beta (checked for ``dtype``) as host scalars of the scale type, and their
    addresses: kept for the next call of the same values (cuBLASLt reads them when it is
    called, and nothing writes them). An alpha of zero is made anew: 0.0 and -0.0 are one
    key, and alpha's sign shows in the zeros of the result (beta's does not: a beta of zero
    reads no c)."""
    if alpha == 0:
        return _host_scalars.__wrapped__(dtype, alpha, beta)
    return _host_scalars(dtype, alpha, beta)


@functools.lru_cache(maxsize=256)
def _host_scalars(dtype, alpha, beta):
    kind = _SCALAR[rules.DTYPES[dtype].scale]
    values = []
    for value in (alpha, beta):
        value = complex(value)
        scalar = kind(value.real, value.imag) if dtype.startswith("complex") \
            else kind(value.real)
        values.append(scalar)
    return values, [ctypes.addressof(v) for v in values]


def matrix_layout(op, vector_axis, conj=False):
    """The :class:`Layout` of an operand seen as a batch of matrices."""
    shape, strides = rules.matrix_strides(op.shape, op.strides, vector_axis)
    return Layout(shape, strides, conj)


def spec_of(problem, out_strides, alignment):
    """The :class:`Spec` of a device product (``out_strides``: the result's element strides;
    None: C order)."""
    product = problem.product
    a, b, c, bias, aux = problem.ops
    if bias is not None and product.n > 1 and bias.strides[0] != 1:
        raise InvalidArgumentError(
            f"bias has stride {bias.strides[0]} (elements): cuBLASLt reads a bias as a dense "
            "vector; pass a contiguous one (a copy)")
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

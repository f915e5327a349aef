"""Epilogues: what a matrix product does to its result before writing it, one record each in
one table (:data:`EPILOGUES`), with the NumPy reference of each (the CPU path, and the
tests' oracle).

The result is ``d = f(alpha * a @ b + beta * c [+ bias])``, the bias running along the
result's last axis. The training epilogues keep what their backward pass needs (the
*auxiliary* output, ``aux``), and the backward ones read it:

- ``relu_aux``, ``relu_aux_bias``: ``aux`` is ReLU's mask, packed: a ``uint8`` array of
  shape ``(..., m, w)``, ``w`` the bytes of n bits rounded up to a multiple of 16 (cuBLASLt's
  128-bit rows), bit ``j % 8`` of byte ``j // 8`` of row ``i`` (``numpy.packbits`` with
  ``bitorder="little"``) set where the pre-activation of ``d[..., i, j]`` is positive; the
  padding bits are unspecified. :func:`relu_mask` unpacks it.
- ``gelu_aux``, ``gelu_aux_bias``: ``aux`` is GELU's input (the pre-activation), of ``d``'s
  matrix shape and dtype; on the GPU a view whose rows lie a multiple of 8 elements apart,
  as cuBLASLt writes it.
- ``drelu``, ``dgelu``: ``d = (alpha * a @ b + beta * c) * f'(pre)``, ``f'`` read from
  ``aux=``, exactly what the forward epilogue returned.
- ``drelu_bgrad``, ``dgelu_bgrad``: also the bias gradient ``d.sum(axis=-2)`` (length n).
- ``bgrada``: ``d`` and ``a.sum(axis=-1)`` (length m); ``bgradb``: ``d`` and
  ``b.sum(axis=-2)`` (length n): the gradient of a bias added along a product's axis.

GELU is the tanh form, cuBLASLt's: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

A record says everything a plan needs (cuBLASLt's enumerator for the swapped operands that
cuBLASLt sees, the inputs and outputs, the reference), so an epilogue from elsewhere (a
traced Python function) plugs in as another record.
"""

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy

from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError

__all__ = ["Epilogue", "EPILOGUES", "epilogue_named", "check_epilogue_dtype", "gelu",
           "gelu_derivative", "relu_mask", "pack_mask", "relu_aux_width", "gelu_aux_ld",
           "aux_shape", "outputs", "finish", "check_zero_k"]

_S = math.sqrt(2.0 / math.pi)
_C = 0.044715


def gelu(x):
    """GELU's tanh form, of a NumPy array."""
    return 0.5 * x * (1.0 + numpy.tanh(_S * (x + _C * x ** 3)))


def gelu_derivative(x):
    """The derivative of :func:`gelu`."""
    t = numpy.tanh(_S * (x + _C * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _S * (1.0 + 3.0 * _C * x * x)


def relu_aux_width(n):
    """Bytes per row of a packed ReLU mask of ``n`` columns: n bits in whole 128-bit words.

    Examples
    --------
    >>> from accelmath.linalg._matmul.epilogue import relu_aux_width
    >>> relu_aux_width(1), relu_aux_width(128), relu_aux_width(129)
    (16, 16, 32)
    """
    return -(-max(n, 1) // 128) * 16


def gelu_aux_ld(n):
    """Elements between the rows of a GELU auxiliary output of ``n`` columns (a multiple of
    8, as cuBLASLt asks)."""
    return -(-max(n, 1) // 8) * 8


def aux_shape(kind, product):
    """The shape of the auxiliary array of ``kind`` of a product (a
    :class:`~accelmath.linalg._matmul.rules.Product`): ``"relu"``, the packed mask (uint8);
    ``"gelu"``, the GELU input, its rows padded to :func:`gelu_aux_ld` elements.

    Examples
    --------
    >>> from accelmath.linalg._matmul.epilogue import aux_shape
    >>> from accelmath.linalg._matmul.rules import product
    >>> aux_shape("relu", product((2, 5, 3), (3, 7))), aux_shape("gelu", product((5, 3), (3, 7)))
    ((2, 5, 16), (5, 8))
    """
    width = relu_aux_width(product.n) if kind == "relu" else gelu_aux_ld(product.n)
    return product.batch + (product.m, width)


def pack_mask(positive):
    """A boolean array ``(..., m, n)`` packed as a ReLU mask (see the module docstring)."""
    n = positive.shape[-1]
    packed = numpy.packbits(positive, axis=-1, bitorder="little")
    pad = relu_aux_width(n) - packed.shape[-1]
    return numpy.concatenate(
        [packed, numpy.zeros(packed.shape[:-1] + (pad,), numpy.uint8)], axis=-1)


def relu_mask(aux, n):
    """The boolean mask ``(..., m, n)`` of a packed ReLU auxiliary output (NumPy)."""
    return numpy.unpackbits(numpy.asarray(aux), axis=-1, count=n, bitorder="little").astype(bool)


def _identity(pre, aux, n):
    """No epilogue: the pre-activation itself."""
    return pre, None


def _relu(pre, aux, n):
    """ReLU."""
    return numpy.maximum(pre, 0), None


def _relu_aux(pre, aux, n):
    """ReLU, and its packed mask."""
    return numpy.maximum(pre, 0), pack_mask(pre > 0)


def _gelu(pre, aux, n):
    """GELU."""
    return gelu(pre), None


def _gelu_aux(pre, aux, n):
    """GELU, and its input."""
    return gelu(pre), pre


def _drelu(pre, aux, n):
    """The gradient through ReLU, its mask read from ``aux``."""
    return numpy.where(relu_mask(aux, n), pre, 0), None


def _dgelu(pre, aux, n):
    """The gradient through GELU, its input read from ``aux``."""
    return pre * gelu_derivative(aux), None


@dataclass(frozen=True)
class Epilogue:
    """One epilogue (see the module docstring).

    Attributes
    ----------
    name : str
        Its name in ``epilogue=``.
    cublaslt : str or None
        cuBLASLt's enumerator (a key of ``cublaslt.EPILOGUE``) for the swapped product
        cuBLASLt computes (``d^T = b^T a^T``: so ``bgrada``, a sum of ``a``, is cuBLASLt's
        ``BGRADB``); None where cuBLASLt has none.
    bias : bool
        Whether it adds ``bias=`` (required then).
    makes_aux : str or None
        ``"relu"`` or ``"gelu"``: the auxiliary output it returns.
    takes_aux : str or None
        ``"relu"`` or ``"gelu"``: the auxiliary input it reads from ``aux=``.
    bias_gradient : str or None
        What else it returns: ``"result"`` (``d.sum(-2)``), ``"a"`` (``a.sum(-1)``) or
        ``"b"`` (``b.sum(-2)``).
    activation : bool
        Whether it orders values (ReLU, GELU): real dtypes only.
    reference : callable
        ``reference(pre, aux, n) -> (d, aux_out)``: the epilogue on the pre-activation
        ``pre`` (NumPy, bias added), given the auxiliary input ``aux`` where it reads one.
    """

    name: str
    cublaslt: Optional[str]
    bias: bool = False
    makes_aux: Optional[str] = None
    takes_aux: Optional[str] = None
    bias_gradient: Optional[str] = None
    activation: bool = False
    reference: Callable = _identity

    @property
    def returns(self):
        """How many arrays a product with it returns (1, or 2 with an auxiliary output or a
        bias gradient)."""
        return 2 if self.makes_aux or self.bias_gradient else 1


def _table(*records):
    return {record.name: record for record in records}


#: The epilogues by name; None (no epilogue) is ``EPILOGUES[None]``.
EPILOGUES = _table(
    Epilogue(None, "DEFAULT"),
    Epilogue("bias", "BIAS", bias=True),
    Epilogue("relu", "RELU", activation=True, reference=_relu),
    Epilogue("gelu", "GELU", activation=True, reference=_gelu),
    Epilogue("relu_bias", "RELU_BIAS", bias=True, activation=True, reference=_relu),
    Epilogue("gelu_bias", "GELU_BIAS", bias=True, activation=True, reference=_gelu),
    Epilogue("relu_aux", "RELU_AUX", makes_aux="relu", activation=True, reference=_relu_aux),
    Epilogue("gelu_aux", "GELU_AUX", makes_aux="gelu", activation=True, reference=_gelu_aux),
    Epilogue("relu_aux_bias", "RELU_AUX_BIAS", bias=True, makes_aux="relu", activation=True,
             reference=_relu_aux),
    Epilogue("gelu_aux_bias", "GELU_AUX_BIAS", bias=True, makes_aux="gelu", activation=True,
             reference=_gelu_aux),
    Epilogue("drelu", "DRELU", takes_aux="relu", activation=True, reference=_drelu),
    Epilogue("dgelu", "DGELU", takes_aux="gelu", activation=True, reference=_dgelu),
    Epilogue("drelu_bgrad", "DRELU_BGRAD", takes_aux="relu", bias_gradient="result",
             activation=True, reference=_drelu),
    Epilogue("dgelu_bgrad", "DGELU_BGRAD", takes_aux="gelu", bias_gradient="result",
             activation=True, reference=_dgelu),
    Epilogue("bgrada", "BGRADB", bias_gradient="a"),
    Epilogue("bgradb", "BGRADA", bias_gradient="b"),
)

_NAMES = ", ".join(repr(name) for name in EPILOGUES if name is not None)


def epilogue_named(epilogue):
    """The :class:`Epilogue` of ``epilogue=``: a name of :data:`EPILOGUES`, None, or a
    record itself.

    Examples
    --------
    >>> from accelmath.linalg._matmul.epilogue import epilogue_named
    >>> epilogue_named("relu_bias").cublaslt
    'RELU_BIAS'
    """
    if isinstance(epilogue, Epilogue):
        return epilogue
    record = EPILOGUES.get(epilogue) if isinstance(epilogue, (str, type(None))) else None
    if record is None:
        raise InvalidArgumentError(
            f"Invalid epilogue {epilogue!r}, should be None or one of {_NAMES}")
    return record


def check_epilogue_dtype(epilogue, dtype):
    """Raise for an epilogue on complex operands: cuBLASLt has none for them (and ReLU and
    GELU order values), on every path alike."""
    if epilogue.name is None or not dtype.startswith("complex"):
        return
    if epilogue.activation:
        raise UnsupportedDTypeError(
            f"epilogue {epilogue.name!r} applies ReLU or GELU, which need real values; the "
            f"operands are {dtype} (cuBLASLt has no such epilogue for them)")
    raise UnsupportedDTypeError(
        f"epilogue {epilogue.name!r} takes real operands; the operands are {dtype}, for which "
        "cuBLASLt has no epilogue: add a bias to the product (matmul(a, b) + bias), or sum "
        "its gradient, after it")


def outputs(ctx, problem):
    """New arrays of the epilogue's extra output (aux or bias gradient) of device product
    ``problem``, allocated in call context ``ctx``, and its address (None, 0 where there is
    none)."""
    epilogue, product = problem.epilogue, problem.product
    if epilogue.makes_aux == "relu":
        return ctx.empty(aux_shape("relu", product), "uint8")
    if epilogue.makes_aux == "gelu":
        return ctx.empty(aux_shape("gelu", product))
    if epilogue.bias_gradient:
        return ctx.empty(product.batch + (product.m if epilogue.bias_gradient == "a"
                                          else product.n,))
    return None, 0


def finish(ctx, problem, d, extra):
    """What the caller of device product ``problem`` gets: ``d``, or ``(d, extra)`` (a GELU
    input cut to n columns)."""
    d = ctx.finish(d)
    if problem.epilogue.returns == 1:
        return d
    extra = ctx.finish(extra)
    if problem.epilogue.makes_aux == "gelu":
        extra = extra[(slice(None),) * (len(extra.shape) - 1) + (slice(problem.product.n),)]
    return d, extra


def check_zero_k(problem):
    """Raise for a device product over an inner length of 0 with a c or an epilogue."""
    if problem.epilogue.name is not None or (problem.ops[2] is not None and problem.beta != 0):
        raise InvalidArgumentError(
            "on the GPU, a product with an inner length of 0 takes no c and no epilogue (its "
            "result is zeros)")

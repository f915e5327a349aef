"""Matrix products of host operands: NumPy's ``matmul`` in the operands' dtype (float16 and
bfloat16 accumulate in float32, then round once, as the GPU does), and the epilogues'
NumPy references (:mod:`~accelmath.linalg._matmul.epilogue`).

bfloat16 host operands are NumPy arrays of ``ml_dtypes.bfloat16`` or torch CPU tensors.
"""

import operator

import numpy

from accelmath._core.operand.numpy_arrays import numpy_dtype
from accelmath._core.plan import host_target
from accelmath.linalg._matmul.problem import checked_out

__all__ = ["WORK_DTYPE", "host_operand", "host_product", "plain_product", "run", "to_caller"]

#: The dtype half precisions are computed in on the CPU.
WORK_DTYPE = {"float16": "float32", "bfloat16": "float32"}


def host_operand(op, conj=False):
    """Host operand ``op`` as a NumPy array of its working dtype (conjugated where ``conj``:
    the operand describes a lazily conjugated view's memory)."""
    work = WORK_DTYPE.get(op.dtype)
    x = op.obj
    if work is not None and op.package != "numpy":
        x = op.adapter.astype(x, work)  # (torch's bfloat16 has no NumPy view)
    x = op.adapter.to_numpy(x) if op.package != "numpy" else x
    if work is not None:
        x = x.astype(work)
    return numpy.conj(x) if conj else x


def host_product(product, epilogue, a, b, c, bias, aux, alpha, beta):
    """``(d, extra)``: the product of NumPy arrays ``a`` and ``b`` (working dtype) with
    ``c``, ``bias`` and the auxiliary input ``aux`` (None where absent) under ``epilogue``;
    ``d`` of the result's shape, ``extra`` the auxiliary output or bias gradient (or None),
    all in the working dtype (the ReLU mask in uint8)."""
    a2 = a[..., None, :] if product.a_vector else a
    b2 = b[..., :, None] if product.b_vector else b
    pre = a2 @ b2  # (the operator: the ufunc itself, whatever numpy.matmul is bound to)
    if alpha != 1:
        pre = alpha * pre
    if c is not None and beta != 0:
        pre = pre + beta * numpy.reshape(c, product.matrix_shape)
    if bias is not None:
        pre = pre + bias
    if pre.shape != product.matrix_shape:  # (a bias or c broadcast over a smaller product)
        pre = numpy.broadcast_to(pre, product.matrix_shape).copy()
    d, extra = epilogue.reference(pre, aux, product.n)
    gradient = epilogue.bias_gradient
    if gradient == "result":
        extra = d.sum(axis=-2)
    elif gradient == "a":
        extra = numpy.broadcast_to(a2, product.batch + a2.shape[-2:]).sum(axis=-1)
    elif gradient == "b":
        extra = numpy.broadcast_to(b2, product.batch + b2.shape[-2:]).sum(axis=-2)
    return numpy.reshape(d, product.shape), extra


def plain_product(problem):
    """What computes host product ``problem`` (a :class:`~.problem.Problem`) on NumPy
    arrays of its operands' layouts as :func:`host_product` does, where the product is a
    plain ``a @ b`` (stacks of matrices of a dtype computed as it is; alpha 1, no c, bias,
    aux or epilogue): the operator itself. None for other products."""
    product = problem.product
    if (problem.epilogue.name is None and problem.alpha == 1
            and all(op is None for op in problem.ops[2:])
            and not (product.a_vector or product.b_vector or any(problem.conj))
            and problem.dtype not in WORK_DTYPE):
        return operator.matmul  # (host_product's ``a2 @ b2``)
    return None


def to_caller(result, like, dtype):
    """Host result ``result`` (working dtype; a ReLU mask stays uint8) as an array of
    ``dtype`` in the package of operand ``like``."""
    cast = result.dtype != numpy.uint8 and result.dtype.name != dtype
    if like.package == "numpy":
        return result.astype(numpy_dtype(dtype)) if cast else result
    # (C order, 0-d kept: numpy.ascontiguousarray would make a 0-d result 1-d)
    converted = like.adapter.from_numpy(numpy.require(result, requirements="C"), like.obj)
    return like.adapter.astype(converted, dtype) if cast else converted


def run(problem, out):
    """The product of host operands ``problem`` (a checked
    :class:`~accelmath.linalg._matmul.problem.Problem`) on NumPy, into ``out`` or a new
    result, in the package of ``a``: the result, or ``(result, extra)``."""
    like = problem.ops[0]
    arrays = [None if op is None else host_operand(op, conj)
              for op, conj in zip(problem.ops, problem.conj + (False,) * 3)]
    d, extra = host_product(problem.product, problem.epilogue, *arrays, problem.alpha,
                            problem.beta)
    if out is not None:
        out_op = checked_out(out, like, problem)
        result = to_caller(d, out_op, problem.dtype)
        if out_op.package == "torch":  # (its own assignment: torch's bfloat16 has no NumPy view)
            out[...] = result
        else:  # (the memory checked, through its NumPy view)
            host_target(out, out_op)[...] = result
        d = out
    else:
        d = to_caller(d, like, problem.dtype)
        if like.package == "numpy" and d.ndim == 0:  # (NumPy gives a scalar)
            d = d[()]
    if problem.epilogue.returns == 1:
        return d
    return d, to_caller(extra, like, problem.dtype)

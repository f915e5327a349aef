"""Matrix products: the stateless :func:`matmul`, on cuBLASLt for device operands and on NumPy
for host ones, with cuBLASLt's native epilogues (:mod:`~accelmath.linalg._matmul.epilogue`), and the
pieces the planned :class:`~accelmath.linalg.Matmul` (:mod:`.plan`) shares."""

from typing import Callable, NamedTuple

from accelmath._core.cache import PlanCache
from accelmath._core.call import Context, stream_of
from accelmath._core.dispatch import to_device, to_host
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE
from accelmath._core.stream import check_stream
from accelmath.errors import InvalidArgumentError
from accelmath.linalg._matmul import cpu
from accelmath.linalg._matmul import problem as problems
from accelmath.linalg._matmul.cublaslt import LtPlan, Spec
from accelmath.linalg._matmul.epilogue import aux_shape
from accelmath.linalg._memo import dispatcher

__all__ = ["matmul"]


def _host(problem, out):
    """The product of host operands (NumPy), in the package of ``a``."""
    a, b, c, bias, aux = problem.ops
    like = a
    arrays = [None if op is None else cpu.host_operand(op, conj)
              for op, conj in zip((a, b, c, bias, aux), problem.conj + (False,) * 3)]
    d, extra = cpu.host_product(problem.product, problem.epilogue, *arrays, problem.alpha,
                                problem.beta)
    if out is not None:
        out_op = problems.checked_out(out, like, problem)
        out[...] = cpu.to_caller(d, out_op, problem.dtype)  # (torch's bfloat16: no NumPy view)
        d = out
    else:
        d = cpu.to_caller(d, like, problem.dtype)
        if like.package == "numpy" and d.ndim == 0:  # (NumPy gives a scalar)
            d = d[()]
    if problem.epilogue.returns == 1:
        return d
    return d, cpu.to_caller(extra, like, problem.dtype)


def _outputs(ctx, problem):
    """New arrays of the epilogue's extra output (aux or bias gradient), and its address
    (None, 0 where there is none)."""
    epilogue, product = problem.epilogue, problem.product
    if epilogue.makes_aux == "relu":
        return ctx.empty(aux_shape("relu", product), "uint8")
    if epilogue.makes_aux == "gelu":
        return ctx.empty(aux_shape("gelu", product))
    if epilogue.bias_gradient:
        return ctx.empty(product.batch + (product.m if epilogue.bias_gradient == "a"
                                          else product.n,))
    return None, 0


def _finish(ctx, problem, d, extra):
    """What the caller gets: ``d``, or ``(d, extra)`` (a GELU input cut to n columns)."""
    d = ctx.finish(d)
    if problem.epilogue.returns == 1:
        return d
    extra = ctx.finish(extra)
    if problem.epilogue.makes_aux == "gelu":
        extra = extra[..., :problem.product.n]
    return d, extra


def _check_zero_k(problem):
    """Raise for a device product over an inner length of 0 with a c or an epilogue."""
    if problem.epilogue.name is not None or (problem.ops[2] is not None and problem.beta != 0):
        raise InvalidArgumentError(
            "on the GPU, a product with an inner length of 0 takes no c and no epilogue (its "
            "result is zeros)")


def _zero_k(ctx, problem, d):
    """A product over an inner length of 0 on the device: zeros (with nothing else to add)."""
    _check_zero_k(problem)
    with ctx.adapter.stream_scope(ctx.stream, ctx.device_id):
        d[...] = 0


def _device(problem, out, stream, call=None):
    """The product of device operands on cuBLASLt, through the plan cache; remembered under
    ``call`` (its :class:`~accelmath.linalg._matmul.problem.CallKey`) where given and the
    key's addresses are those the product read."""
    a, b, c, bias, aux = problem.ops
    ctx = Context(a, stream)
    for op in (b, c, bias, aux):
        if op is not None:
            op.wait_ready(ctx.stream)
    product = problem.product
    if out is None:
        d, d_ptr = ctx.empty(product.shape)
        out_strides = None
    else:
        out_op = problems.checked_out(out, a, problem)
        out_op.wait_ready(ctx.stream)
        d, d_ptr, out_strides = out, out_op.ptr, tuple(out_op.strides)
    if not (product.m and product.n and all(product.batch)) or product.k == 0:
        extra, _ = _outputs(ctx, problem)
        if product.m and product.n and all(product.batch):
            _zero_k(ctx, problem, d)
        return _finish(ctx, problem, d, extra)
    c_ptr = 0 if c is None or problem.beta == 0 else c.ptr
    alignment = problems.alignment_of(a.ptr, b.ptr, c_ptr, d_ptr,
                                      itemsize=ITEMSIZE[problem.dtype])
    spec = problems.spec_of(problem, out_strides, alignment)
    if c_ptr == 0:
        spec = spec._replace(c=None)
    plan = dispatcher.plan(a.device_id, spec, lambda: LtPlan(spec, a.device_id, a.adapter.package))
    ptrs = tuple(0 if op is None else op.ptr for op in problem.ops)
    result = _launch(plan, problem, ctx, d, ptrs[:2] + (c_ptr, d_ptr) + ptrs[3:],
                     problem.alpha, problem.beta)
    if call is not None and call.ptrs == ptrs + ((0 if out is None else d_ptr),):
        shape = product.shape
        dispatcher.remember(call.key, _Remembered(
            dispatcher.cache(a.device_id), spec, problem._replace(ops=None), a.adapter,
            a.device_id,
            a.adapter.allocator(shape, contiguous_strides(shape), problem.dtype, a.device_id),
            a.adapter.stream_getter(a.device_id),
            problem.epilogue.returns == 1 and not a.adapter.immutable))
    return result


def _launch(plan, problem, ctx, d, ptrs, alpha, beta):
    """Enqueue checked device product ``problem`` on cuBLASLt plan ``plan`` into ``d``
    (``ptrs``: the addresses of a, b, c (0 where the plan reads none), d, bias and aux), on
    the stream of ``ctx``, and return what the caller gets."""
    extra, extra_ptr = _outputs(ctx, problem)
    epilogue = problem.epilogue
    pa, pb, pc, pd, pbias, paux = ptrs
    # (the values live through the call)
    values, (alpha, beta) = problems.host_scalars(problem.dtype, alpha, beta)
    plan.run(pa, pb, pc, pd, extra_ptr if epilogue.bias_gradient else pbias,
             extra_ptr if epilogue.makes_aux else paux, alpha, beta, ctx.stream)
    del values
    return _finish(ctx, problem, d, extra)


class _Remembered(NamedTuple):
    """What the call memo keeps of a device product that ran: where its plan is cached, and
    what its execution needs (no caller's array)."""

    cache: PlanCache  # the device's plan cache
    spec: Spec  # the plan's key there
    problem: problems.Problem  # (without operands) the dtype, shapes and epilogue
    adapter: object
    device_id: int
    allocate: Callable  # a new result of the package's pool and its address
    current_stream: Callable  # the package's current stream on the device
    direct: bool  # the caller gets the result array alone, as allocated


def _recalled(entry, call, out, alpha, beta, stream):
    """The product of a call remembered as ``entry`` (``call``: its
    :class:`~accelmath.linalg._matmul.problem.CallKey`): the arrays' addresses, the stream,
    a new result, cuBLASLt; None where the plan has left the cache."""
    plan = entry.cache.get(entry.spec)
    if plan is None:
        return None
    handle, explicit = stream_of(stream, entry.current_stream)
    pa, pb, pc, pbias, paux, pd = call.ptrs
    if out is not None:
        d = out
    elif explicit:  # (the pool follows that stream)
        with entry.adapter.stream_scope(handle, entry.device_id):
            d, pd = entry.allocate()
    else:
        d, pd = entry.allocate()
    if entry.direct:
        _, (palpha, pbeta) = problems.host_scalars(entry.problem.dtype, alpha, beta)
        plan.run(pa, pb, pc if entry.spec.c is not None else 0, pd, pbias, paux, palpha, pbeta,
                 handle)
        return d
    ctx = Context.on(entry.adapter, entry.device_id, handle, explicit, entry.problem.dtype)
    return _launch(plan, entry.problem, ctx, d,
                   (pa, pb, pc if entry.spec.c is not None else 0, pd, pbias, paux), alpha, beta)


def matmul(a, b, c=None, *, alpha=1, beta=0, epilogue=None, bias=None, aux=None, out=None,
           stream=None, execution="auto", allow_tf32=False):
    """The matrix product ``epilogue(alpha * a @ b + beta * c)``, as ``numpy.matmul``.

    Parameters
    ----------
    a, b : array_like
        The operands (NumPy, CuPy, PyTorch, JAX, or any ``__dlpack__`` /
        ``__cuda_array_interface__`` producer), of one dtype: float16, bfloat16, float32,
        float64, complex64 or complex128. 1-D operands and broadcast leading dimensions
        follow ``numpy.matmul``. Transposed and strided views, and torch's lazily
        conjugated transposes (``x.mH``), are read where they lie, with no copy; other
        lazily conjugated views and layouts no cuBLASLt operation expresses are copied.
    c : array, optional
        Added as ``beta * c`` (the result's shape; read only where ``beta`` is not 0).
    alpha, beta : number, optional
        The scalars (default 1 and 0).
    epilogue : str, optional
        What happens to the result before it is written (default: nothing): ``"bias"``,
        ``"relu"``, ``"gelu"``, ``"relu_bias"``, ``"gelu_bias"`` return the result;
        ``"relu_aux"``, ``"gelu_aux"``, ``"relu_aux_bias"``, ``"gelu_aux_bias"`` return
        ``(d, aux)``, the auxiliary output a backward pass needs (ReLU's packed bit mask,
        uint8 ``(..., m, w)``; GELU's input, of the result's matrix shape); ``"drelu"``,
        ``"dgelu"`` take that ``aux=`` and return ``d * f'(pre)``; ``"drelu_bgrad"``,
        ``"dgelu_bgrad"`` return ``(d, d.sum(axis=-2))``; ``"bgrada"`` returns
        ``(d, a.sum(axis=-1))`` and ``"bgradb"`` ``(d, b.sum(axis=-2))``. GELU is the tanh
        form. ReLU and GELU take real operands only. See :mod:`accelmath.linalg._matmul.epilogue`
        for the exact layouts.
    bias : array, optional
        The bias of the ``*bias`` epilogues: a vector along the result's last axis (n).
    aux : array, optional
        The auxiliary input of ``drelu``, ``dgelu`` and their ``_bgrad`` forms: what the
        forward epilogue returned.
    out : array, optional
        Where to write the result: the result's shape and dtype, any strides (on the GPU,
        strides no cuBLASLt layout takes cost a copy from scratch space).
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the operands' package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where the operands live (host operands on NumPy); "cuda" moves host
        operands to the GPU and the results back.
    allow_tf32 : bool, optional
        Let float32 products run on TF32 tensor cores (about 10 significant bits in the
        products); off by default, so float32 stays float32.

    Returns
    -------
    array or tuple of arrays
        In the package (and on the stream) of ``a``; see ``epilogue``.

    Raises
    ------
    InvalidArgumentError
        For shapes ``numpy.matmul`` refuses (with NumPy's message), a ``c``, ``bias``,
        ``aux`` or ``out`` of the wrong shape, a missing bias, an unknown epilogue.
    UnsupportedDTypeError
        For mixed or unsupported dtypes (saying how to cast), or an epilogue the dtype
        does not have: nothing runs in another precision instead.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath import linalg
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> b = np.ones((3, 2))
    >>> linalg.matmul(a, b)
    array([[ 3.,  3.],
           [12., 12.]])
    >>> linalg.matmul(a, b, epilogue="relu_bias", bias=np.array([-5.0, 0.0]))
    array([[ 0.,  3.],
           [ 7., 12.]])
    """
    # a call like one remembered runs at once: its arguments were checked then (see
    # call_key); others are read and checked, and remembered once they ran on the device
    call = problems.call_key(a, b, c, bias, aux, out, alpha, beta, epilogue, execution,
                             allow_tf32)
    if call is not None:
        entry = dispatcher.recall(call.key)
        if entry is not None:
            result = _recalled(entry, call, out, alpha, beta, stream)
            if result is not None:
                return result
    problem = problems.prepare(a, b, c, bias, aux, alpha, beta, epilogue, execution,
                               allow_tf32)
    like = problem.ops[0]
    if not problem.on_gpu:
        check_stream(stream)
        return _host(problem, out)
    if like.on_device:
        return _device(problem, out, stream, call)
    # execution="cuda": host operands to the GPU and the results back
    moved = [None if op is None else to_device(op.obj) for op in problem.ops]
    device_problem = problems.prepare(*moved, problem.alpha, problem.beta, problem.epilogue,
                                      "auto", problem.precision.compute == "32F_FAST_TF32")
    if any(problem.conj):
        device_problem = device_problem._replace(conj=problem.conj)
    result = _device(device_problem, None, stream)
    results = result if isinstance(result, tuple) else (result,)
    results = tuple(to_host(r, like) for r in results)
    if out is not None:
        out_op = problems.checked_out(out, like, problem)
        out_op.adapter.to_numpy(out)[...] = out_op.adapter.to_numpy(results[0])
        results = (out,) + results[1:]
    return results if isinstance(result, tuple) else results[0]

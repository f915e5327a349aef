"""The stateless :func:`~accelmath.linalg.matmul`: a one-shot cached plan. Host operands run
on NumPy (a plain ``a @ b`` of NumPy arrays remembered as such); device operands on a
:class:`~accelmath.linalg.Matmul` cached per device for their types and layouts
(:func:`_device`), run with each call's alpha and beta. A call like one that ran before finds
that plan in the call memo and runs it at once (its arguments were checked then:
:func:`~accelmath.linalg._matmul.problem.call_key`)."""

import inspect
from typing import NamedTuple

import numpy

from accelmath._core.dispatch import to_device, to_host
from accelmath._core.gpu.stream import check_stream
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath._core.plan import host_target
from accelmath.errors import InvalidArgumentError
from accelmath.linalg._matmul import cpu
from accelmath.linalg._matmul import problem as problems
from accelmath.linalg._matmul.plan import Matmul, layout_of
from accelmath.linalg._memo import HostCall, dispatcher, host_call

__all__ = ["matmul"]


def _host(problem, out, key=None):
    """The product of host operands (NumPy), in the package of ``a``; remembered under
    ``key`` (:func:`~accelmath.linalg._memo.host_call`'s) where it is a plain ``a @ b``
    (:func:`~accelmath.linalg._matmul.cpu.plain_product`)."""
    result = cpu.run(problem, out)
    if key is not None:  # (once it ran)
        run = cpu.plain_product(problem)
        if run is not None:
            dispatcher.remember(key, HostCall(run))
    return result


class _PlanKey(NamedTuple):
    """What the cached plan of a device product is made for (see :func:`_device`)."""

    types: tuple  # the types of a, b, c, bias and aux as given (NoneType where absent)
    layouts: tuple  # their operands' shapes, strides, dtypes, devices and packages
    conj: tuple  # whether a and b are lazily conjugated views
    precision: object  # the compute and scale types (allow_tf32)
    epilogue: object  # its name, or None
    out_strides: object  # the result's element strides where not C order, else None
    alignment: int  # the bytes every address shares: 256, 16 or the element's


def _device(problem, given, out, stream, call=None):
    """The product of device operands ``problem`` (of arrays ``given``: a, b, c, bias and
    aux as the caller gave them): a :class:`~accelmath.linalg.Matmul` cached for their
    layouts, run with the call's own alpha and beta; remembered under ``call`` (its
    :class:`~accelmath.linalg._memo.CallKey`) where given."""
    check_stream(stream)  # (before the call is remembered)
    a, b, c, bias, aux = problem.ops
    word = a.ptr | b.ptr
    out_strides = None
    if out is not None:
        out_op = problems.checked_out(out, a, problem)
        word |= out_op.ptr
        if tuple(out_op.strides) != contiguous_strides(problem.product.shape):
            out_strides = tuple(out_op.strides)
    if c is not None and problem.beta != 0:
        word |= c.ptr
    elif c is not None:  # (a beta of 0 reads no c)
        problem = problem._replace(ops=(a, b, None, bias, aux))
        given = given[:2] + (None,) + given[3:]
    alignment = problems.alignment_of(word, itemsize=ITEMSIZE[problem.dtype])
    key = _PlanKey(tuple(type(x) for x in given), tuple(layout_of(op) for op in problem.ops),
                   problem.conj, problem.precision, problem.epilogue.name, out_strides,
                   alignment)
    plan = dispatcher.plan(a.device_id, key,
                           lambda: Matmul._for_call(problem, given, out_strides, alignment),
                           None if call is None else call.key)
    return _run(plan, *given, out, problem.alpha, problem.beta, stream)


def _run(plan, a, b, c, bias, aux, out, alpha, beta, stream):
    """Run cached plan ``plan`` on a call's arguments, with its alpha and beta: in the call
    shim where the call is a, b (and c) into ``out`` or a new result."""
    run = plan.scaled(alpha, beta)
    args = (a, b, c) if plan.uses_c else (a, b)
    if stream is None and bias is None and aux is None:
        return run(*args) if out is None else run(*args, out=out)
    return run(*args, bias=bias, aux=aux, out=out, stream=stream)


_NDARRAY = numpy.ndarray
# the defaults: a call that leaves them passes these very objects
_ONE, _ZERO, _AUTO, _NO_ARGS = 1, 0, "auto", ()
# NumPy's dtypes of native byte order are singletons: compared by identity, not hashed
_F32, _F64, _C64, _C128 = map(numpy.dtype, ("float32", "float64", "complex64", "complex128"))


def matmul(a, b, c=None, **options):
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
        Added as ``beta * c`` (the result's shape; read only where ``beta`` is not 0). A ``c``
        needs a ``beta`` given with it.
    alpha, beta : number, optional
        The scalars (default 1 and 0).
    epilogue : str or callable, optional
        What happens to the result before it is written (default: nothing). A Python
        function of the result's element and ``epilogue_args`` (``lambda acc, bias:
        relu(acc + bias) * 0.5``) is fused (:mod:`accelmath.fusion`): its head runs as
        cuBLASLt's native epilogue where it is one (scales, a bias vector, ReLU, GELU; see
        :mod:`accelmath.linalg._matmul.fused`), the rest as one pass over the result. The
        names: ``"bias"``,
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
    epilogue_args : sequence, optional
        The further arrays (broadcast against the result) and scalars of a Python epilogue.
    like : str, module or array, optional
        The kind of the results (default: the operands'): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

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
    if (not options and c is None and a.__class__ is _NDARRAY
            and b.__class__ is _NDARRAY):
        # the plainest call (NumPy arrays of one native dtype, no option): NumPy's product,
        # with no check and no memo, for any strides NumPy takes (shapes NumPy refuses, 0-d
        # operands among them, go on to the checks, for accelmath's error). The options are
        # read by name only where given: a function of eleven keyword-only parameters costs
        # about 0.1 us more per call to fill them, a tenth of NumPy's 8 x 8 product, and so
        # would a check of the operands' flags.
        dtype = a.dtype
        if b.dtype is dtype and (dtype is _F64 or dtype is _F32 or dtype is _C128
                                 or dtype is _C64):
            try:
                return a @ b
            except ValueError:
                pass
    return _matmul(a, b, c, **options)


def _matmul(a, b, c=None, *, alpha=_ONE, beta=None, epilogue=None, bias=None, aux=None,
           out=None, stream=None, execution=_AUTO, allow_tf32=False, epilogue_args=_NO_ARGS,
           like=None):
    """The body of :func:`matmul` (see there), its options as keyword-only parameters."""
    front_key = dispatcher.taken()  # (the front's key of a call matmul(a, b))
    if beta is None:
        beta = _ZERO if c is None else problems.default_beta(c)
    if like is not None:
        like = target_of(like)
        return returned_as(_matmul(a, b, c, alpha=alpha, beta=beta, epilogue=epilogue, bias=bias,
                                   aux=aux, out=out, stream=stream, execution=execution,
                                   allow_tf32=allow_tf32, epilogue_args=epilogue_args), like)
    if epilogue is not None and epilogue.__class__ is not str and callable(epilogue):
        if bias is not None or aux is not None:
            raise InvalidArgumentError(
                "bias= and aux= go with the named epilogues; a Python epilogue takes its arrays "
                "as epilogue_args (epilogue=lambda acc, b: relu(acc + b), epilogue_args=(bias,))")
        from accelmath.linalg._matmul.fused import fused_matmul  # (the fusion layer, on use)

        return fused_matmul(_matmul, a, b, c, alpha, beta, epilogue, epilogue_args, out, stream,
                            execution, allow_tf32)
    if epilogue_args:
        raise InvalidArgumentError("epilogue_args are the arguments of a Python epilogue; "
                                   f"epilogue={epilogue!r} takes none")
    # a call like one remembered runs at once: its arguments were checked then (see
    # host_call, for a plain product of NumPy arrays, and call_key); others are read and
    # checked, and remembered once they ran
    key = None
    if a.__class__ is numpy.ndarray and c is None and bias is None and aux is None and (
            out is None):  # (device arrays go straight to their own memo key)
        key, host = host_call("matmul", (a, b), (alpha, beta, epilogue, execution, allow_tf32),
                              stream)
        if host is not None:
            return host.run(a, b)
    call = problems.call_key(a, b, c, bias, aux, out, alpha, beta, epilogue, execution,
                             allow_tf32)
    if call is not None:
        plan = dispatcher.recall(call.key)
        if plan is not None:
            result = _run(plan, a, b, c, bias, aux, out, alpha, beta, stream)
            # (a keyed call, a plain one, offers its plan's launcher; any other, once, its type)
            if b.__class__ is a.__class__ and (front_key is not None
                                               or a.__class__ not in dispatcher.front_types):
                front = plan.front_run()
                if front is not None:
                    dispatcher.remember_front(front_key, result, call.key, plan, front,
                                              a.__class__)
            return result
    problem = problems.prepare(a, b, c, bias, aux, alpha, beta, epilogue, execution,
                               allow_tf32)
    like = problem.ops[0]
    if not problem.on_gpu:
        check_stream(stream)
        return _host(problem, out, key)
    if like.on_device:
        return _device(problem, (a, b, c, bias, aux), out, stream, call)
    # execution="cuda": host operands to the GPU and the results back
    moved = [None if op is None else to_device(op.obj) for op in problem.ops]
    device_problem = problems.prepare(*moved, problem.alpha, problem.beta, problem.epilogue,
                                      "auto", problem.precision.compute == "32F_FAST_TF32")
    if any(problem.conj):
        device_problem = device_problem._replace(conj=problem.conj)
    result = _device(device_problem, tuple(moved), None, stream)
    results = result if isinstance(result, tuple) else (result,)
    results = tuple(to_host(r, like) for r in results)
    if out is not None:
        out_op = problems.checked_out(out, like, problem)
        host_target(out, out_op)[...] = out_op.adapter.to_numpy(results[0])
        results = (out,) + results[1:]
    return results if isinstance(result, tuple) else results[0]


_matmul.__name__ = _matmul.__qualname__ = "matmul"  # (as its errors name it)
matmul.__signature__ = inspect.signature(_matmul)  # (what help() and the docs show)

# the public function: its plain calls matmul(a, b) made in C from the memo's front
# (accelmath._core.dispatch)
matmul = dispatcher.fronted(matmul, "accelmath.linalg", 2)

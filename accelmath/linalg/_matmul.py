"""Matrix products: the stateless :func:`matmul` and the planned :class:`Matmul`, on cuBLASLt
for device operands and on NumPy for host ones, with cuBLASLt's native epilogues
(:mod:`~accelmath.linalg._epilogue`)."""

from typing import Callable, NamedTuple

from accelmath._core.cache import PlanCache
from accelmath._core.dispatch import Dispatcher, to_device, to_host
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE, wrap_operand
from accelmath._core.plan import Plan, template_operand
from accelmath._core.stream import stream_handle
from accelmath.errors import InvalidArgumentError
from accelmath.linalg import _matmul_cpu as cpu
from accelmath.linalg import _matmul_problem as problems
from accelmath.linalg._context import Context
from accelmath.linalg._matmul_cublaslt import LtPlan, Spec

__all__ = ["matmul", "Matmul", "dispatcher"]

#: The plan caches of the stateless products, per device.
dispatcher = Dispatcher()


def _host(problem, out):
    """The product of host operands (NumPy), in the package of ``a``."""
    a, b, c, bias, aux = problem.ops
    like = a
    arrays = [None if op is None else cpu.host_operand(op, conj)
              for op, conj in zip((a, b, c, bias), problem.conj + (False, False))]
    aux_array = None if aux is None else aux.adapter.to_numpy(aux.obj)
    if aux_array is not None and problem.epilogue.takes_aux == "gelu":
        aux_array = aux_array.astype(cpu.WORK_DTYPE.get(problem.dtype, problem.dtype))
    d, extra = cpu.host_product(problem.product, problem.epilogue, *arrays, aux_array,
                                problem.alpha, problem.beta)
    if out is not None:
        out_op = problems.checked_out(out, like, problem)
        view = out_op.adapter.to_numpy(out)
        view[...] = d.astype(view.dtype)
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
        from accelmath.linalg._epilogue import relu_aux_width

        return ctx.empty(product.batch + (product.m, relu_aux_width(product.n)), "uint8")
    if epilogue.makes_aux == "gelu":
        from accelmath.linalg._epilogue import gelu_aux_ld

        return ctx.empty(product.batch + (product.m, gelu_aux_ld(product.n)))
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


def _zero_k(ctx, problem, d):
    """A product over an inner length of 0 on the device: zeros (with nothing else to add)."""
    if problem.epilogue.name is not None or (problem.ops[2] is not None and problem.beta != 0):
        raise InvalidArgumentError(
            "on the GPU, a product with an inner length of 0 takes no c and no epilogue (its "
            "result is zeros)")
    with ctx.adapter.stream_scope(ctx.stream, ctx.device_id):
        d[...] = 0


def _device(problem, out, stream, call=None):
    """The product of device operands on cuBLASLt, through the plan cache; remembered under
    ``call`` (its :class:`~accelmath.linalg._matmul_problem.CallKey`) where given and the
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
            a.adapter.stream_getter(a.device_id)))
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


def _recalled(entry, call, out, alpha, beta, stream):
    """The product of a call remembered as ``entry`` (``call``: its
    :class:`~accelmath.linalg._matmul_problem.CallKey`): the arrays' addresses, the stream,
    a new result, cuBLASLt; None where the plan has left the cache."""
    plan = entry.cache.get(entry.spec)
    if plan is None:
        return None
    explicit = stream is not None
    handle = stream_handle(stream) if explicit else entry.current_stream()
    pa, pb, pc, pbias, paux, pd = call.ptrs
    if out is not None:
        d = out
    elif explicit and handle != entry.current_stream():  # (the pool follows that stream)
        with entry.adapter.stream_scope(handle, entry.device_id):
            d, pd = entry.allocate()
    else:
        d, pd = entry.allocate()
    ctx = _StreamContext(entry.adapter, entry.device_id, handle, explicit, entry.problem.dtype)
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
        form. ReLU and GELU take real operands only. See :mod:`accelmath.linalg._epilogue`
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


_OPERANDS = ("a", "b", "c", "bias", "aux")


class Matmul(Plan):
    """A matrix product planned once and executed many times: ``epilogue(alpha * a @ b +
    beta * c)`` as :func:`matmul` computes it.

    On the GPU the plan holds cuBLASLt's descriptors, layouts and the heuristic's candidate
    algorithms (up to 8); it runs the first, or, after :meth:`autotune`, the fastest, a
    choice kept in the on-disk store so that a later plan of the same product (in this
    process or another) starts with it. :meth:`execute` reads the operands' addresses,
    resolves the stream and makes the cuBLASLt call.

    Parameters
    ----------
    a, b, c : array, optional
        Template operands: the plan is bound to them (``execute()`` with no arguments runs
        on them) and accepts later operands of the same type and layout. Leave ``a`` and
        ``b`` out to plan for a layout (``a_shape``, ``b_shape``, ``dtype``...).
    alpha, beta, epilogue, bias, aux, allow_tf32, execution
        As for :func:`matmul` (``bias`` and ``aux`` may also be given to :meth:`execute`).
    a_shape, b_shape, c_shape : tuple of int, optional
        The operands' shapes, for a plan made without operands (``c_shape``: where ``beta``
        is not 0).
    a_strides, b_strides, c_strides : tuple of int, optional
        Their element strides (default: C order); dense, in any axis order.
    dtype : str or dtype, optional
        Their dtype, for a plan made without operands.
    package : {"numpy", "cupy", "torch"}, optional
        Their package (default: NumPy for host operands, else CuPy where installed, else
        torch).
    device : int, optional
        Their GPU (default None: host memory; 0 where ``package`` is CuPy).
    stream : int or stream object, optional
        The stream :meth:`autotune` runs on by default.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg import Matmul
    >>> a, b = np.ones((2, 3)), np.full((3, 4), 2.0)
    >>> with Matmul(a, b, epilogue="bias", bias=np.arange(4.0)) as plan:
    ...     d = plan.execute()
    >>> d[0]
    array([6., 7., 8., 9.])
    """

    what = "matrix product plan"

    def __init__(self, a=None, b=None, c=None, *, alpha=1, beta=0, epilogue=None, bias=None,
                 aux=None, a_shape=None, b_shape=None, c_shape=None, a_strides=None,
                 b_strides=None, c_strides=None, dtype=None, package=None, device=None,
                 execution="auto", allow_tf32=False, stream=None):
        layout_only = a is None and b is None
        if layout_only:
            a = template_operand(a_shape, dtype, a_strides, package, device)
            b = template_operand(b_shape, dtype, b_strides, package, device)
            if c_shape is not None:
                c = template_operand(c_shape, dtype, c_strides, package, device)
        elif (a_shape, b_shape, c_shape, a_strides, b_strides, c_strides, dtype, package,
              device) != (None,) * 9 or a is None or b is None:
            raise InvalidArgumentError(
                "give either operands a and b, or a_shape, b_shape, dtype, package and device")
        templates = self._templates(a, b, epilogue, bias, aux) if layout_only else (bias, aux)
        problem = problems.prepare(a, b, c, *templates, alpha, beta, epilogue, execution,
                                   allow_tf32)
        self.problem = problem
        self.dtype, self.shape = problem.dtype, problem.product.shape
        self.epilogue = problem.epilogue.name
        self.alpha, self.beta = problem.alpha, problem.beta
        self.stream = stream
        op = problem.ops[0]
        if problem.on_gpu and not op.on_device:
            raise InvalidArgumentError(
                'execution="cuda" needs device operands here; matmul moves host data for you')
        self._lt = None
        self._bind(op, a, self.shape, contiguous_strides(self.shape), self.dtype,
                   problem.on_gpu, layout_only)
        given = (a, b, c, *templates)
        self._bound = (None,) * 5 if layout_only else given
        self._types = tuple(type(x) for x in given)
        self._layouts = tuple(None if o is None else (tuple(o.shape), tuple(o.strides), o.dtype,
                                                      o.device_id)
                              for o in problem.ops)
        self._conj = problem.conj + (False, False, False)
        if problem.on_gpu:
            self._plan_device(problem, given, layout_only)

    @staticmethod
    def _templates(a, b, epilogue, bias, aux):
        """The bias and aux a layout-only plan is made with: those given, else new arrays
        of the layouts the epilogue reads (execute takes the real ones)."""
        from accelmath.linalg._epilogue import epilogue_named, gelu_aux_ld, relu_aux_width

        record = epilogue_named(epilogue)
        a_op, b_op = wrap_operand(a), wrap_operand(b)
        adapter, device = a_op.adapter, a_op.device_id
        from accelmath.linalg._matmul_rules import product as product_of

        product = product_of(a_op.shape, b_op.shape)
        if record.bias and bias is None:
            bias = adapter.empty_strided((product.n,), (1,), a_op.dtype, device)[0]
        if record.takes_aux == "relu" and aux is None:
            shape = product.batch + (product.m, relu_aux_width(product.n))
            aux = adapter.empty_strided(shape, contiguous_strides(shape), "uint8", device)[0]
        elif record.takes_aux == "gelu" and aux is None:
            shape = product.batch + (product.m, gelu_aux_ld(product.n))
            aux = adapter.empty_strided(shape, contiguous_strides(shape), a_op.dtype,
                                        device)[0][..., :product.n]
        return bias, aux

    def _plan_device(self, problem, given, layout_only):
        a, b, c, bias, aux = problem.ops
        product = problem.product
        if product.k == 0 and (problem.epilogue.name is not None or (
                c is not None and problem.beta != 0)):
            _zero_k(None, problem, None)
        self._empty = not (product.m and product.n and all(product.batch))
        self._readers = tuple(
            None if op is None or op.obj is not x else (
                None if op.adapter.layout_key(x) is None
                else op.adapter.reader(op.adapter.layout_key(x)))
            for op, x in zip(problem.ops, given))
        if self._empty or product.k == 0:
            return
        ptrs = [op.ptr for op in (a, b, c) if op is not None]
        alignment = 256 if layout_only else problems.alignment_of(
            *ptrs, itemsize=ITEMSIZE[problem.dtype])
        spec = problems.spec_of(problem, None, alignment)
        if c is None or problem.beta == 0:
            spec = spec._replace(c=None)
        self._lt = LtPlan(spec, a.device_id, a.adapter.package)
        self._scalars, (self._alpha_ptr, self._beta_ptr) = problems.host_scalars(
            problem.dtype, problem.alpha, problem.beta)
        self._uses_c = spec.c is not None

    @property
    def algorithm(self):
        """The index of the candidate algorithm used (None on the CPU)."""
        return None if self._lt is None else self._lt.choice

    @property
    def candidates(self):
        """How many candidate algorithms the heuristic gave (0 on the CPU)."""
        return 0 if self._lt is None else len(self._lt.labels)

    def _pointer(self, i, x, stream):
        """The device address of operand ``i`` (``x``, or the bound one), checked against
        the plan's layout the first time a type or layout is seen."""
        if x is None:
            x = self._bound[i]
            if x is None:
                if self._layouts[i] is None:
                    return 0
                raise InvalidArgumentError(
                    f"this {self.what} was made for a layout, with no {_OPERANDS[i]} bound to "
                    f"it; pass {_OPERANDS[i]}")
        reader = self._readers[i]
        if reader is not None and type(x) is self._types[i]:
            ptr = reader(x)
            if ptr is not None:
                return ptr
        op, conj = problems.read(x, _OPERANDS[i])
        layout = (tuple(op.shape), tuple(op.strides), op.dtype, op.device_id)
        if layout != self._layouts[i] or conj != self._conj[i]:
            shape, strides, dtype, device = self._layouts[i] or (None,) * 4
            raise InvalidArgumentError(
                f"{_OPERANDS[i]} {op!r} (conjugated view: {conj}) does not match the plan's "
                f"layout: shape {shape}, strides {strides}, dtype {dtype}, conjugated view: "
                f"{self._conj[i]}")
        op.wait_ready(stream)
        return op.ptr

    def _absent(self, i, x):
        """0 for an operand the plan does not take; an error where one is given."""
        if x is not None:
            raise InvalidArgumentError(
                f"this {self.what} takes no {_OPERANDS[i]} (it was planned without one)")
        return 0

    def execute(self, a=None, b=None, c=None, *, bias=None, aux=None, out=None, stream=None):
        """Compute the product on operands of the plan's layout.

        Parameters
        ----------
        a, b, c : array, optional
            Operands of the plan's type and layout (default: those it was made with).
        bias, aux : array, optional
            The epilogue's inputs (default: those it was made with).
        out : array, optional
            Where to write the result (C order, the result's shape and dtype).
        stream : int or stream object, optional
            The CUDA stream (default: the current stream of the operands' package).

        Returns
        -------
        array or tuple of arrays
            As :func:`matmul` returns them.
        """
        if self._freed:
            self._check_live()
        if not self._on_device:
            return self._execute_host(a, b, c, bias, aux, out)
        explicit = stream is not None
        handle = self._stream_of(stream) if explicit else self._current_stream()
        pa, pb = self._pointer(0, a, handle), self._pointer(1, b, handle)
        pc = self._pointer(2, c, handle) if self._layouts[2] else self._absent(2, c)
        pbias = self._pointer(3, bias, handle) if self._layouts[3] else self._absent(3, bias)
        paux = self._pointer(4, aux, handle) if self._layouts[4] else self._absent(4, aux)
        if out is None:
            d, pd = self._allocate_on(handle) if explicit else self._allocate()
        else:
            reader = self._read_out.get(type(out))
            pd = None if reader is None else reader(out)
            if pd is None:
                pd = self._first_out(out, handle)
            d = out
        return self._enqueue(d, pa, pb, pc, pd, pbias, paux, handle, explicit, None)

    def _enqueue(self, d, pa, pb, pc, pd, pbias, paux, handle, explicit, algo):
        problem = self.problem
        epilogue = problem.epilogue
        extra, pextra = None, 0
        if epilogue.returns == 2:
            ctx = _StreamContext(self._adapter, self.device_id, handle, explicit, self.dtype)
            extra, pextra = _outputs(ctx, problem)
        if self._lt is not None:
            self._lt.run(pa, pb, pc if self._uses_c else 0, pd,
                         pextra if epilogue.bias_gradient else pbias,
                         pextra if epilogue.makes_aux else paux,
                         self._alpha_ptr, self._beta_ptr, handle, algo)
        elif not self._empty:  # (an inner length of 0: zeros)
            with self._adapter.stream_scope(handle, self.device_id):
                d[...] = 0
        if epilogue.returns == 1 and not self._adapter.immutable:
            return d
        ctx = _StreamContext(self._adapter, self.device_id, handle, explicit, self.dtype)
        return _finish(ctx, problem, d, extra)

    @staticmethod
    def _stream_of(stream):
        return stream_handle(stream)

    def autotune(self, a=None, b=None, c=None, *, bias=None, aux=None, iterations=4,
                 stream=None):
        """Time the candidate algorithms on the operands (default: those the plan was made
        with) and use the fastest from now on; the choice is stored, so a later plan of the
        same product (in another process too) starts with it, and a choice already stored
        is taken without timing.

        Parameters
        ----------
        a, b, c, bias, aux : array, optional
            As for :meth:`execute`.
        iterations : int, optional
            Timed runs of each candidate (the best counts), after one that warms up.
        stream : int or stream object, optional
            Default: the plan's ``stream``, else the operands' current stream.

        Returns
        -------
        accelmath._core.timing.Choice or None
            The choice (its ``times`` in ms where they were measured now); None on the CPU
            or where there is nothing to time.
        """
        self._check_live()
        from accelmath._core.arguments import length

        iterations = length(iterations, "iterations")
        if self._lt is None:
            return None
        stream = self.stream if stream is None else stream
        handle = self._current_stream() if stream is None else self._stream_of(stream)
        pa, pb = self._pointer(0, a, handle), self._pointer(1, b, handle)
        pc = self._pointer(2, c, handle) if self._layouts[2] else self._absent(2, c)
        pbias = self._pointer(3, bias, handle) if self._layouts[3] else self._absent(3, bias)
        paux = self._pointer(4, aux, handle) if self._layouts[4] else self._absent(4, aux)
        d, pd = self._allocate_on(handle)
        kept = []

        def enqueue(index):
            kept.append(self._enqueue(d, pa, pb, pc, pd, pbias, paux, handle, True, index))

        return self._lt.autotune(enqueue, handle, iterations)

    def _execute_host(self, a, b, c, bias, aux, out):
        given = [x if x is not None else self._bound[i]
                 for i, x in enumerate((a, b, c, bias, aux))]
        for i, x in enumerate(given):
            if x is None and self._layouts[i] is not None:
                raise InvalidArgumentError(
                    f"this {self.what} was made for a layout, with no {_OPERANDS[i]} bound "
                    f"to it; pass {_OPERANDS[i]}")
        problem = problems.prepare(*given, self.alpha, self.beta, self.problem.epilogue,
                                   "cpu", False)
        layouts = tuple(None if o is None else (tuple(o.shape), tuple(o.strides), o.dtype,
                                                o.device_id) for o in problem.ops)
        for i, (seen, planned) in enumerate(zip(layouts, self._layouts)):
            if seen != planned and i < 3:
                raise InvalidArgumentError(
                    f"{_OPERANDS[i]} has layout {seen}; the plan was made for {planned}")
        return _host(problem, out)

    def _release(self):
        if self._lt is not None:
            self._lt.free()
            self._lt = None
        self._bound = (None,) * 5

    def __repr__(self):
        if not hasattr(self, "_freed"):
            return "Matmul(not made)"
        state = "freed" if self._freed else ("cuda" if self._on_device else "cpu")
        return (f"Matmul(shape={self.shape}, dtype={self.dtype}, epilogue={self.epilogue!r}, "
                f"{state})")


class _StreamContext(Context):
    """A :class:`Context` for a stream already resolved (the plan's execute)."""

    def __init__(self, adapter, device_id, stream, explicit, dtype):
        self.adapter, self.device_id, self.stream = adapter, device_id, stream
        self.explicit, self.dtype = explicit, dtype

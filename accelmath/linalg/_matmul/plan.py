"""The planned matrix product :class:`Matmul`: made once (from operands or from a layout),
autotuned, executed many times, on cuBLASLt for device operands and on NumPy for host ones;
the stateless :func:`~accelmath.linalg.matmul` shares its pieces (:mod:`.stateless`)."""

import functools

from accelmath._core.arguments import absent, length
from accelmath._core.call import Context, stream_of
from accelmath._core.dispatch import missed
from accelmath._core.gpu.stream import check_stream
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE, device_name, wrap_operand
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath._core.plan import Plan, mismatch, template_operand
from accelmath.errors import InvalidArgumentError
from accelmath.linalg._matmul import cpu
from accelmath.linalg._matmul import problem as problems
from accelmath.linalg._matmul import small
from accelmath.linalg._matmul.cublaslt import LtPlan
from accelmath.linalg._matmul.epilogue import (aux_shape, check_zero_k, epilogue_named, finish,
                                               outputs)
from accelmath.linalg._matmul.rules import product as product_of

__all__ = ["Matmul", "layout_of"]


_OPERANDS = ("a", "b", "c", "bias", "aux")
_SCALED_RUNS = 64  # the most scalar pairs a plan keeps runs for (it starts over when full)


def layout_of(op):
    """What an operand must match of the plan's: shape, strides, dtype, device and package
    (None where absent)."""
    return None if op is None else (tuple(op.shape), tuple(op.strides), op.dtype,
                                    op.device_id, op.package)


class Matmul(Plan):
    """A matrix product planned once and executed many times: ``epilogue(alpha * a @ b +
    beta * c)`` as :func:`matmul` computes it.

    On the GPU the plan holds cuBLASLt's descriptors, layouts and the heuristic's candidate
    algorithms (up to 8); it runs the first, or, after :meth:`autotune`, the fastest, a
    choice kept in the on-disk store so that a later plan of the same product (in this
    process or another) starts with it. :meth:`execute` reads the operands' addresses,
    resolves the stream and makes the cuBLASLt call. Small products (float32 or float64, at
    most 128 a side, no ``c``, no epilogue) run on accelmath's own kernel instead, whose
    launch costs the host about half of a cuBLASLt call; a plan made while that kernel
    compiles (once per machine, in the background; :func:`~accelmath.linalg.prepare`
    starts it) runs on cuBLASLt, as does every plan where ``ACCELMATH_SMALL_PRODUCTS=0``.

    Parameters
    ----------
    a, b, c : array, optional
        Template operands: the plan is bound to them (``execute()`` with no arguments runs
        on them) and accepts later operands of the same type and layout. Leave ``a`` and
        ``b`` out to plan for a layout (``a_shape``, ``b_shape``, ``dtype``...).
    alpha, beta, epilogue, bias, aux, allow_tf32, execution
        As for :func:`matmul` (``bias`` and ``aux`` may also be given to :meth:`execute`). A
        Python ``epilogue`` runs as one fused pass over each product, its ``epilogue_args``
        given to :meth:`execute`.
    epilogue_args : sequence, optional
        The further arrays and scalars of a Python ``epilogue`` for each :meth:`execute`
        that gives none of its own (default: none; a call's own replace them, all of them).
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
    _fused = None  # a Python epilogue's pass after the product (see _execute_fused)
    _epilogue_args = ()  # its arguments where an execute gives none
    _small = None  # the small-product kernel, where it runs the product (see small)

    def __init__(self, a=None, b=None, c=None, *, alpha=1, beta=None, epilogue=None, bias=None,
                 aux=None, a_shape=None, b_shape=None, c_shape=None, a_strides=None,
                 b_strides=None, c_strides=None, dtype=None, package=None, device=None,
                 execution="auto", allow_tf32=False, stream=None, epilogue_args=()):
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
        self._fused = None
        if epilogue is not None and epilogue.__class__ is not str and callable(epilogue):
            self._fused, epilogue = _after_product(epilogue), None
        if not absent(epilogue_args):
            if self._fused is None:
                raise InvalidArgumentError(
                    "epilogue_args need a plan made with a Python epilogue")
            _arguments(epilogue_args)  # (their form, now; their values with each call's)
            self._epilogue_args = epilogue_args
        templates = self._templates(a, b, epilogue, bias, aux) if layout_only else (bias, aux)
        if beta is None:
            beta = problems.default_beta(c)
        problem = problems.prepare(a, b, c, *templates, alpha, beta, epilogue, execution,
                                   allow_tf32)
        check_stream(stream)  # (where it is given, whatever runs the plan)
        if problem.on_gpu and not problem.ops[0].on_device:
            raise InvalidArgumentError(
                'execution="cuda" needs device operands here; matmul moves host data for you')
        self._make(problem, (a, b, c, *templates), layout_only, stream)

    @classmethod
    def _for_call(cls, problem, given, out_strides, alignment):
        """The plan of a stateless call's device product ``problem`` (checked), for operands
        of the types and layouts of ``given`` (the arrays as the caller gave them, none of
        which it keeps) and results of element strides ``out_strides`` (None: C order);
        ``alignment``: the bytes the call's addresses share. The stateless ``matmul`` caches
        it and runs it with each call's own alpha and beta (:meth:`scaled`)."""
        plan = cls.__new__(cls)
        plan._make(problem, given, True, None, out_strides, alignment)
        return plan

    def _make(self, problem, given, layout_only, stream, out_strides=None, alignment=None):
        self.problem = problem
        self.dtype, self.shape = problem.dtype, problem.product.shape
        self.epilogue = problem.epilogue.name
        self.alpha, self.beta = problem.alpha, problem.beta
        self.stream = stream
        op = problem.ops[0]
        self._lt = None
        self._direct = False
        self._scaled_runs = {}  # (alpha, beta) -> the product with them (see scaled)
        self._front = None  # (front_run's launcher, the scalars it reads), once made
        self._bind(op, given[0], self.shape, contiguous_strides(self.shape), self.dtype,
                   problem.on_gpu, layout_only)
        if out_strides is not None:  # (results are allocated in C order all the same)
            self.out_strides = out_strides
        self._bound = (None,) * 5 if layout_only else tuple(given)
        self._types = tuple(type(x) for x in given)
        self._layouts = tuple(layout_of(op) for op in problem.ops)
        self._conj = problem.conj + (False, False, False)
        self._uses_c = False
        if problem.on_gpu:
            self._plan_device(problem, given, layout_only, out_strides, alignment)
        if layout_only:  # (its operands' records hold the arrays: the plan keeps none)
            self.problem = problem._replace(ops=None)

    @staticmethod
    def _templates(a, b, epilogue, bias, aux):
        """The bias and aux a layout-only plan is made with: those given, else new arrays
        of the layouts the epilogue reads (execute takes the real ones)."""
        record = epilogue_named(epilogue)
        a_op, b_op = wrap_operand(a), wrap_operand(b)
        adapter, device = a_op.adapter, a_op.device_id
        product = product_of(a_op.shape, b_op.shape)
        if record.bias and bias is None:
            bias = adapter.empty_strided((product.n,), (1,), a_op.dtype, device)[0]
        if record.takes_aux == "relu" and aux is None:
            shape = aux_shape("relu", product)
            aux = adapter.empty_strided(shape, contiguous_strides(shape), "uint8", device)[0]
        elif record.takes_aux == "gelu" and aux is None:
            shape = aux_shape("gelu", product)
            aux = adapter.empty_strided(shape, contiguous_strides(shape), a_op.dtype, device)[0]
            aux = aux[(slice(None),) * (len(shape) - 1) + (slice(product.n),)]  # (no Ellipsis:
            # Numba's arrays take none)
        return bias, aux

    def _plan_device(self, problem, given, layout_only, out_strides, alignment):
        a, b, c, bias, aux = problem.ops
        product = problem.product
        if product.k == 0:
            check_zero_k(problem)
        self._empty = not (product.m and product.n and all(product.batch))
        keys = [None if op is None or op.obj is not x else op.adapter.layout_key(x)
                for op, x in zip(problem.ops, given)]
        self._readers = tuple(None if key is None else op.adapter.reader(key)
                              for op, key in zip(problem.ops, keys))
        # the front's, whose key found the operands' shapes and dtypes the plan's already
        self._front_readers = tuple(None if key is None else op.adapter.reader(key, keyed=True)
                                    for op, key in zip(problem.ops, keys))
        if self._empty or product.k == 0:
            return
        if alignment is None:
            ptrs = [op.ptr for op in (a, b, c) if op is not None]
            alignment = 256 if layout_only else problems.alignment_of(
                *ptrs, itemsize=ITEMSIZE[problem.dtype])
        spec = problems.spec_of(problem, out_strides, alignment)
        self._alignment = alignment
        if c is None or problem.beta == 0:
            spec = spec._replace(c=None)
        self._lt = LtPlan(spec, a.device_id, a.adapter.package)
        self._scalars, (self._alpha_ptr, self._beta_ptr) = problems.host_scalars(
            problem.dtype, problem.alpha, problem.beta)
        self._uses_c = spec.c is not None
        # the result is the array allocated or given, with nothing beside it: execute calls
        # cuBLASLt itself, or the call shim does (on operands a, b and c of the plan's types)
        self._direct = problem.epilogue.returns == 1 and not self._adapter.immutable
        function = (small.kernel(a.device_id, spec.dtype)
                    if self._direct and small.takes(spec, 1) else None)
        if function is not None:
            self._small = small.SmallProduct(spec, function, a.device_id)
        if self._shim_takes_it() and self._fused is None:
            self._install_shim(*self._direct_call(self._alpha_ptr, self._beta_ptr),
                               self._inputs())

    def _direct_call(self, alpha, beta):
        """``(call, local, mask)`` of the product with the host scalars at addresses
        ``alpha`` and ``beta``, as one call for the call shim's launcher (see
        :meth:`_launcher`): on the small-product kernel where it takes the product, else on
        cuBLASLt (``call`` None where the product is more than one call)."""
        word = None if self._small is None else self._small.alpha_word(alpha)
        if word is not None:
            call = self._small.direct_call(word)
            if call is not None:
                return call, self._small.local, 0
        return (self._lt.direct_call(alpha, beta, self._uses_c), self._lt.resources.local,
                self._lt.mask)

    def _shim_takes_it(self):
        """Whether the product is one cuBLASLt call on the operands (a, b and c) alone,
        which the call shim makes."""
        return self._direct and self._layouts[3] is None and self._layouts[4] is None

    def _inputs(self, readers=None):
        """The call shim's operands: a, b and, where the product reads it, c (read by
        ``readers``, by default the plan's own)."""
        readers = self._readers if readers is None else readers
        return [(self._types[i], readers[i], self._bound[i])
                for i in range(3 if self._uses_c else 2)]

    @property
    def uses_c(self):
        """Whether the product reads c (beta is not 0): what :meth:`scaled` takes."""
        return self._uses_c

    @property
    def nbytes(self):
        """Device workspace bytes the plan uses per thread and stream that run it (0 on the
        CPU)."""
        return 0 if self._lt is None else self._lt.nbytes

    @property
    def held_bytes(self):
        """Device workspace bytes the plan holds now, for every thread and stream that ran
        it (0 on the CPU)."""
        return 0 if self._lt is None else self._lt.held_bytes

    def scaled(self, alpha, beta):
        """The product with scalars ``alpha`` and ``beta`` in place of the plan's:
        ``run(a, b[, c], *, bias=None, aux=None, out=None, stream=None)``, its operands
        positional (c where :attr:`uses_c`), made in C for operands of the plan's layout
        (the call shim), as :meth:`execute` is. ``alpha`` and ``beta`` are numbers the
        plan's dtype takes (checked by the caller)."""
        key = (alpha, beta)
        run = self._scaled_runs.get(key)
        if run is not None:
            return run
        values, (alpha_ptr, beta_ptr) = problems.host_scalars(self.dtype, alpha, beta)
        # (the scalars live as long as the run that reads their addresses)
        slow = functools.partial(self._execute_scaled, values, alpha_ptr, beta_ptr)
        run = slow
        if self._lt is not None and self._shim_takes_it() and "execute" in self.__dict__:
            run = self._launcher(*self._direct_call(alpha_ptr, beta_ptr), self._inputs(),
                                 slow=slow)
        if alpha != 0:  # (0.0 and -0.0 are one key; the sign shows in the zeros made)
            if len(self._scaled_runs) >= _SCALED_RUNS:
                self._scaled_runs.clear()
            self._scaled_runs[key] = run
        return run

    def front_run(self):
        """``a @ b`` (alpha 1, beta 0, no c) made in C alone for operands of the plan's
        layout, answering :data:`~accelmath._core.dispatch.MISS` for any call it does not
        make: the stateless function's front (:meth:`~accelmath._core.dispatch.Dispatcher.
        front`), whose key found the operands' shapes and dtypes the plan's already (its
        readers leave those out); None where the call shim does not make this product, or
        the plan was made for addresses aligned to fewer than 256 bytes."""
        if self._front is None:
            run = None
            # (made for addresses of 256 bytes alone: its launcher's mask then admits just the
            # operands whose call key says 256, where a plan for fewer would take them too)
            if (self._lt is not None and not self._uses_c and self._shim_takes_it()
                    and self._alignment == 256 and "execute" in self.__dict__):
                values, (alpha_ptr, beta_ptr) = problems.host_scalars(self.dtype, 1, 0)
                run = self._launcher(*self._direct_call(alpha_ptr, beta_ptr),
                                     self._inputs(self._front_readers), slow=missed)
                run = None if run is missed else (run, values)
            self._front = run or (None,)
        return self._front[0]

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
                raise self._unbound(i)
        reader = self._readers[i]
        if reader is not None and type(x) is self._types[i]:
            ptr = reader(x)
            if ptr is not None:
                return ptr
        op = self._matching(i, x)
        op.wait_ready(stream)
        return op.ptr

    def _matching(self, i, x):
        """The operand of ``x`` as operand ``i``, checked to match the plan's layout (a and
        b read as their memory and whether it is conjugated, the others as their values)."""
        if i < 2:
            op, conj = problems.read(x, _OPERANDS[i])
        else:
            op, conj = problems.read_values(x, _OPERANDS[i]), False
        if layout_of(op) != self._layouts[i] or conj != self._conj[i]:
            fields = ("shape", "strides", "dtype", "device", "package")
            expected = dict(zip(fields, self._layouts[i] or (None,) * 5))
            given = dict(zip(fields, layout_of(op)))
            for layout in (expected, given):
                layout["device"] = device_name(layout["device"])
            expected["conjugated view"], given["conjugated view"] = self._conj[i], conj
            raise mismatch(_OPERANDS[i], self.what, expected, given)
        return op

    def _unbound(self, i):
        """The error for operand ``i`` missing from a call to a plan made for a layout."""
        return InvalidArgumentError(
            f"this {self.what} was made for a layout, with no {_OPERANDS[i]} bound to it; "
            f"pass {_OPERANDS[i]}")

    def _takes_no(self, i):
        """The error for operand ``i`` given to a call of a plan made without one."""
        return InvalidArgumentError(
            f"this {self.what} takes no {_OPERANDS[i]} (it was planned without one)")

    def _pointers(self, a, b, c, bias, aux, stream):
        """The device addresses of the operands (0 for those the plan takes none of)."""
        pointer, layouts = self._pointer, self._layouts
        pa, pb = pointer(0, a, stream), pointer(1, b, stream)
        if c is None and bias is None and aux is None and layouts[2:] == (None, None, None):
            return pa, pb, 0, 0, 0
        ptrs = [pa, pb]
        for i, x in ((2, c), (3, bias), (4, aux)):
            if layouts[i] is not None:
                ptrs.append(pointer(i, x, stream))
            elif x is not None:
                raise self._takes_no(i)
            else:
                ptrs.append(0)
        return ptrs

    def execute(self, a=None, b=None, c=None, *, bias=None, aux=None, out=None, stream=None,
                epilogue_args=(), like=None):
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
        epilogue_args : sequence, optional
            The further arrays and scalars of the plan's Python epilogue, this call's.
        like : str, module or array, optional
            The kind of the results (default: the operands'): a package's name or module
            (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

        Returns
        -------
        array or tuple of arrays
            As :func:`matmul` returns them.
        """
        if like is not None:
            like = target_of(like)
            return returned_as(self.execute(a, b, c, bias=bias, aux=aux, out=out, stream=stream,
                                            epilogue_args=epilogue_args), like)
        if self._freed:
            self._check_live()
        # (not absent(epilogue_args), written out: every Python execute asks)
        if self._fused is not None or (epilogue_args is not None and (
                epilogue_args.__class__ is not tuple or epilogue_args)):
            return self._execute_fused(a, b, c, bias, aux, out, stream, epilogue_args)
        if not self._on_device:
            check_stream(stream)
            return self._execute_host(a, b, c, bias, aux, out)
        return self._execute_scaled(None, self._alpha_ptr, self._beta_ptr, a, b, c,
                                    bias=bias, aux=aux, out=out, stream=stream)

    def _execute_fused(self, a, b, c, bias, aux, out, stream, epilogue_args):
        """:meth:`execute` of a plan with a Python epilogue: the product, then the epilogue
        over it in one pass (in place where it keeps the dtype)."""
        if self._fused is None:
            raise InvalidArgumentError("epilogue_args need a plan made with a Python epilogue")
        if absent(epilogue_args):
            epilogue_args = self._epilogue_args
        if not self._on_device:
            check_stream(stream)
            product = self._execute_host(a, b, c, bias, aux, None)
        else:
            product = self._execute_scaled(None, self._alpha_ptr, self._beta_ptr, a, b, c,
                                           bias=bias, aux=aux, stream=stream)
        return self._fused(product, epilogue_args, out, stream)

    def _execute_scaled(self, values, alpha, beta, a=None, b=None, c=None, *, bias=None,
                        aux=None, out=None, stream=None):
        """:meth:`execute` on the device with the host scalars at addresses ``alpha`` and
        ``beta`` (``values``: the scalars, kept alive by the caller's reference)."""
        if self._freed:
            self._check_live()
        handle, explicit = stream_of(stream, self._current_stream)
        pa, pb, pc, pbias, paux = self._pointers(a, b, c, bias, aux, handle)
        if out is None:
            d, pd = self._allocate_on(handle) if explicit else self._allocate()
        else:
            reader = self._read_out.get(type(out))
            pd = None if reader is None else reader(out)
            if pd is None:
                pd = self._first_out(out, handle)
            d = out
        if self._direct:
            word = None if self._small is None else self._small.alpha_word(alpha)
            if word is not None:
                self._small.run(pa, pb, pd, word, handle)
            else:
                self._lt.run(pa, pb, pc if self._uses_c else 0, pd, pbias, paux, alpha, beta,
                             handle)
            return d
        return self._enqueue(d, pa, pb, pc, pd, pbias, paux, handle, explicit, None, alpha,
                             beta)

    def _enqueue(self, d, pa, pb, pc, pd, pbias, paux, handle, explicit, algo, alpha, beta):
        problem = self.problem
        epilogue = problem.epilogue
        extra, pextra = None, 0
        if epilogue.returns == 2:
            ctx = Context.on(self._adapter, self.device_id, handle, explicit, self.dtype)
            extra, pextra = outputs(ctx, problem)
        if self._lt is not None:
            self._lt.run(pa, pb, pc if self._uses_c else 0, pd,
                         pextra if epilogue.bias_gradient else pbias,
                         pextra if epilogue.makes_aux else paux, alpha, beta, handle, algo)
        elif not self._empty:  # (an inner length of 0: zeros)
            with self._adapter.stream_scope(handle, self.device_id):
                d[...] = 0
        if epilogue.returns == 1 and not self._adapter.immutable:
            return d
        ctx = Context.on(self._adapter, self.device_id, handle, explicit, self.dtype)
        return finish(ctx, problem, d, extra)

    def autotune(self, a=None, b=None, c=None, *, bias=None, aux=None, iterations=5,
                 stream=None):
        """Time the candidate algorithms on the operands (default: those the plan was made
        with) and use the fastest from now on (the heuristic's first choice stays unless
        another is more than 1% faster timed head to head with it); the choice is stored,
        so a later plan of the same product (in another process too) starts with it, and a
        choice already stored is taken without timing.

        Parameters
        ----------
        a, b, c, bias, aux : array, optional
            As for :meth:`execute`.
        iterations : int, optional
            Rounds of timing: in each, every candidate runs in turn (a few calls back to
            back, after a run that warms it up); each candidate's median time counts, so
            that a GPU clock drifting meanwhile favours none.
        stream : int or stream object, optional
            Default: the plan's ``stream``, else the operands' current stream.

        Returns
        -------
        accelmath._core.gpu.timing.Choice or None
            The choice (its ``times`` in ms where they were measured now); None on the CPU,
            for a product on the small-product kernel (see :class:`Matmul`) or where there is
            nothing to time.
        """
        self._check_live()
        iterations = length(iterations, "iterations")
        if self._lt is None or self._small is not None:
            return None
        stream = self.stream if stream is None else stream
        handle, explicit = stream_of(stream, self._current_stream)
        pa, pb, pc, pbias, paux = self._pointers(a, b, c, bias, aux, handle)
        d, pd = self._allocate_on(handle) if explicit else self._allocate()
        kept = []

        def enqueue(index):
            kept.append(self._enqueue(d, pa, pb, pc, pd, pbias, paux, handle, True, index,
                                      self._alpha_ptr, self._beta_ptr))

        choice = self._lt.autotune(enqueue, handle, iterations)
        if "execute" in self.__dict__:  # the call shim's call names the algorithm
            self._shim_calls[None] = self._direct_call(self._alpha_ptr, self._beta_ptr)[0]
        self._scaled_runs.clear()  # (their calls name the algorithm too)
        return choice

    def _execute_host(self, a, b, c, bias, aux, out):
        given = [x if x is not None else self._bound[i]
                 for i, x in enumerate((a, b, c, bias, aux))]
        for i, x in enumerate(given):
            if self._layouts[i] is None:
                if x is not None:
                    raise self._takes_no(i)
            elif x is None:
                raise self._unbound(i)
            elif i < 3:  # (a bias and an aux of any layout: the host reads their values)
                self._matching(i, x)
        problem = problems.prepare(*given, self.alpha, self.beta, self.problem.epilogue,
                                   "cpu", False)
        return cpu.run(problem, out)

    def _release(self):
        if self._lt is not None:
            self._lt.free()
            self._lt = None
        self._bound = (None,) * 5

    def __repr__(self):
        if "_freed" not in self.__dict__:  # (one whose making raised)
            return "Matmul(not made)"
        state = "freed" if self._freed else ("cuda" if self._on_device else "cpu")
        return (f"Matmul(shape={self.shape}, dtype={self.dtype}, epilogue={self.epilogue!r}, "
                f"{state})")


def _arguments(epilogue_args):
    """The further arguments of a Python epilogue, checked (the fusion layer's rule)."""
    from accelmath.fusion._elementwise import arguments

    return arguments(epilogue_args, "epilogue_args")


def _after_product(epilogue):
    """``run(product, epilogue_args, out, stream)``: Python ``epilogue`` (traced once) over a
    product in one pass, the fusion layer loaded here, once per plan, not on each execute."""
    from accelmath.fusion._elementwise import arguments, traced
    from accelmath.linalg._matmul.fused import after_product

    fn = traced(epilogue, "epilogue")

    def run(product, epilogue_args, out, stream):
        return after_product(fn, product, arguments(epilogue_args, "epilogue_args"), out,
                             stream)

    return run

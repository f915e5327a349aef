"""The stateful :class:`FFT` plan: plan once, execute many times.

A plan binds a layout (shape, strides, dtype, device) and the transform (axes, kind, norm).
On the GPU it holds a :class:`~accelmath.fft._cuda.CudaExecutor`; on the CPU it runs the CPU
backend (:mod:`accelmath.fft._cpu`) with ``workers`` threads. Lifetime, result allocation,
``out=`` checks and the execute path are the core's (:class:`accelmath._core.plan.Plan`). The
stateless functions in :mod:`accelmath.fft` are one-shot uses of cached plans.
"""

import functools

import numpy

from accelmath._core.arguments import (absent, check_execution, check_flag, check_workers,
                                       index)
from accelmath._core.dispatch import missed
from accelmath._core.layout import axis_order, check_dense, contiguous_strides
from accelmath._core.operand import wrap_named
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath._core.plan import Call, Plan, template_operand
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.fft import _normalize as norms
from accelmath.fft._cpu import host_transform
from accelmath.fft._layout import output_layout

__all__ = ["FFT"]

_KINDS = ("c2c", "r2c", "c2r")
_DIRECTIONS = {"forward": False, "inverse": True}
# The CPU computes half precision in single, as scipy.fft does.
_CPU_DTYPE = {"float16": "float32", "complex32": "complex64"}
# (refused where a plan has neither a prologue nor an epilogue, when made and when run)
_NEED_FUSION = "prologue_args and epilogue_args need a plan made with a prologue or an epilogue"


def _host_numpy_dtype(op, compute_dtype):
    """The NumPy dtype of host operand ``op`` as the CPU engine is given it (a NumPy array's
    own, byte order included), or ``compute_dtype`` where NumPy has no such dtype."""
    if isinstance(op.obj, numpy.ndarray):
        return op.obj.dtype
    try:
        return numpy.dtype(op.dtype)
    except TypeError:  # (complex32)
        return numpy.dtype(compute_dtype)


class FFT(Plan):
    """A planned FFT over some axes of a given layout, executed many times.

    Parameters
    ----------
    operand : array, optional
        A template array (NumPy, CuPy, PyTorch, JAX, or any ``__dlpack__`` /
        ``__cuda_array_interface__`` producer). The plan is bound to it and accepts later
        operands of the same shape, strides, dtype and device. Without one, the plan is
        made for the layout that ``shape``, ``dtype`` and the rest describe, and
        :meth:`execute` needs its operand every time.
    shape : tuple of int, optional
        The operands' shape, when no ``operand`` is given.
    dtype : str or dtype, optional
        The operands' dtype, when no ``operand`` is given.
    strides : tuple of int, optional
        The operands' element strides (default: C order); dense, in any axis order.
    package : {"numpy", "cupy", "torch"}, optional
        The operands' package (default: NumPy for host operands, else CuPy when installed,
        else torch).
    device : int, optional
        The GPU of the operands (default: None, host memory; 0 where ``package`` is CuPy).
    axes : sequence of int, optional
        The axes to transform (default: all). For ``"r2c"`` and ``"c2r"`` the last axis given
        is the halved one.
    kind : {"c2c", "r2c", "c2r"}, optional
        Default: ``"c2c"`` for complex operands, ``"r2c"`` for real ones.
    norm : {"backward", "ortho", "forward"}, optional
        Normalization, as in ``numpy.fft`` (default "backward").
    last_axis_size : int, optional
        For ``"c2r"``: the length of the halved axis in the output (default ``2 * (m - 1)``).
    conjugate : bool
        Conjugate the input (c2r) or the output (r2c); ``hfft``/``ihfft`` use this.
    out_strides : tuple of int, optional
        Element strides of the results: dense in some axis order (default: in the
        operand's).
    execution : {"auto", "cuda", "cpu"}
        Where to run: "auto" runs where the operand lives.
    workers : int, optional
        CPU threads for host execution (``scipy.fft``'s ``workers``).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform: ``prologue(x, *args)`` of
        each input element, ``epilogue(y, *args)`` of each result element (see
        :mod:`accelmath.fusion`); their further arrays and scalars come with each
        :meth:`execute` (``prologue_args=``, ``epilogue_args=``), so new operands never
        re-plan. The normalization folds into the epilogue. An epilogue may change the
        result's dtype (``abs(y) ** 2``: real).
    prologue_args, epilogue_args : sequence, optional
        The further arrays and scalars of each :meth:`execute` that gives none of its own
        (default: none; a call's own replace them, all of them).
    overwrite_input : bool
        For ``"c2r"`` on the GPU: the transform may overwrite its operand, as cuFFT's c2r
        transforms do, so it makes no scratch copy of it (one pass over the input less); the
        operand's contents are undefined after a call. Host plans and plans of JAX arrays
        (immutable) never overwrite it.

    Notes
    -----
    On the GPU, a plan for a real transform of at least 2**20 output points over several axes
    times its candidate cuFFT plans once, when it is made: one call over all axes, the halved
    axis alone followed by the others in place on the result, and through a scratch buffer:
    (r2c) the halved axis into it and the others from there into the result, (c2r) the
    other axes from the input into it, with no copy of the input, and the halved axis from
    there into the result; it keeps the fastest.
    :meth:`execute` on an array of the plan's package and layout costs a few attribute reads
    and the cuFFT call. Each thread that runs the plan gets its own cuFFT handles (made on its
    first call) and, per stream, its own workspace, so threads never wait for each other; a
    thread's handles are reused by the next thread once it ends.

    Examples
    --------
    >>> import numpy as np
    >>> import accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal((8, 64)) + 0j
    >>> with accelmath.fft.FFT(x, axes=(1,)) as plan:
    ...     y = plan.forward()
    ...     z = plan.inverse(y)
    >>> bool(np.allclose(z, x))
    True
    """

    what = "FFT plan"

    def __init__(self, operand=None, *, shape=None, dtype=None, strides=None, package=None,
                 device=None, axes=None, kind=None, norm=None, last_axis_size=None,
                 conjugate=False, out_strides=None, execution="auto", workers=None,
                 prologue=None, epilogue=None, prologue_args=(), epilogue_args=(),
                 overwrite_input=False):
        layout_only = operand is None
        if layout_only:
            operand = template_operand(shape, dtype, strides, package, device)
        elif (shape, dtype, strides, package, device) != (None,) * 5:
            raise InvalidArgumentError(
                "give either an operand or shape, dtype, strides, package and device")
        op = wrap_named(operand, "operand")
        if (prologue is None and epilogue is None
                and not (absent(prologue_args) and absent(epilogue_args))):
            raise InvalidArgumentError(_NEED_FUSION)
        norm = norms.check_norm(norm)
        execution = check_execution(execution)
        workers = check_workers(workers)
        axes, _ = norms.normalize_axes(op.shape, None, axes)
        if not axes:
            raise InvalidArgumentError("axes is empty: an FFT needs at least one axis")
        for axis in axes:
            if op.shape[axis] == 0:
                raise norms.data_points_error(0, f"along axis {axis}, which has length 0")
        if kind is None:
            kind = "c2c" if op.dtype.startswith("complex") else "r2c"
        if kind not in _KINDS:
            raise InvalidArgumentError(f'Invalid kind {kind!r}, should be "c2c", "r2c" or "c2r"')
        on_gpu = op.on_device if execution == "auto" else execution == "cuda"
        # half precision runs on the GPU only for packages with complex32 (torch)
        in_dtype, out_dtype = norms.transform_dtypes(kind, op.dtype,
                                                     op.adapter.complex32 or not on_gpu,
                                                     "operand")
        if op.dtype != in_dtype:
            raise UnsupportedDTypeError(
                f"a {kind} plan computes in {in_dtype}, but the operand is {op.dtype}; convert "
                f"it first (the accelmath.fft functions do)")
        conjugate = check_flag(conjugate, "conjugate")  # (2 was True here, False on the CPU)
        overwrite_input = check_flag(overwrite_input, "overwrite_input")
        if overwrite_input and kind != "c2r":
            raise InvalidArgumentError("overwrite_input applies to c2r plans only")
        if conjugate and kind == "c2c":
            raise InvalidArgumentError(
                "conjugate applies to r2c and c2r plans (hfft, ihfft), not to c2c ones")
        if last_axis_size is not None and kind != "c2r":
            raise InvalidArgumentError("last_axis_size applies to c2r plans only")
        if last_axis_size is not None:
            last_axis_size = index(last_axis_size, "last_axis_size")
        if kind == "c2r":
            # cuFFT reads last_axis_size // 2 + 1 points of the halved axis: they must exist.
            m = op.shape[axes[-1]]
            size = 2 * (m - 1) if last_axis_size is None else last_axis_size
            if size < 1 or size // 2 + 1 > m:
                raise InvalidArgumentError(
                    f"a c2r output of {size} points on axis {axes[-1]} needs {size // 2 + 1} "
                    f"input points there, but the operand has {m}")
        if not on_gpu:
            in_dtype = _CPU_DTYPE.get(in_dtype, in_dtype)
            out_dtype = _CPU_DTYPE.get(out_dtype, out_dtype)
        out_shape, dense_strides = output_layout(kind, axes, op.shape, op.strides,
                                                 last_axis_size)
        if in_dtype in ("float16", "complex32"):
            lengths = [(out_shape if kind == "c2r" else op.shape)[a] for a in axes]
            if any(n & (n - 1) for n in lengths):
                raise InvalidArgumentError(
                    f"half-precision transforms take lengths that are powers of 2 (cuFFT's "
                    f"limit), got {lengths}; convert the operand to single precision")
        out_strides = dense_strides if out_strides is None else check_dense(
            out_shape, out_strides, "out_strides")
        self.kind, self.axes, self.norm = kind, axes, norm
        self.conjugate = conjugate
        self.in_dtype = in_dtype
        self.in_shape, self.in_strides = tuple(op.shape), op.strides
        self.execution = "cuda" if on_gpu else "cpu"
        self._workers = workers
        self._executor = None
        if on_gpu and not op.on_device:
            raise InvalidArgumentError(
                'execution="cuda" needs a device operand here; the accelmath.fft functions '
                "move host data for you")
        self._bind(op, operand, out_shape, out_strides, out_dtype, on_gpu, layout_only)
        if on_gpu:
            from accelmath.fft._cuda import CudaExecutor

            n = 1
            for axis in axes:
                n *= out_shape[axis] if kind == "c2r" else op.shape[axis]
            scales = (norms.scale_factor(norm, False, n), norms.scale_factor(norm, True, n))
            # with an epilogue the transform runs unscaled and the epilogue scales
            fused_scales = tuple(1.0 if f is None else f for f in scales)
            if epilogue is not None:
                scales = (None, None)
            self._executor = executor = CudaExecutor(
                kind, axes, op.shape, op.strides, out_shape, out_strides, in_dtype, out_dtype,
                scales, conjugate, op.device_id, op.package,
                # (a JAX array is immutable: other arrays may share its buffer)
                overwrite_input=overwrite_input and not op.adapter.immutable)
            forward, inverse = (Call(executor.runner(i), executor.direct(i), i)
                                for i in (False, True))
        else:
            s = [out_shape[axis] for axis in axes] if kind == "c2r" else None
            # prepared for the operand's NumPy dtype, byte order included: the transform
            # converts float16 and non-native byte orders to what the engine computes in
            self._host_dtype = _host_numpy_dtype(op, in_dtype)
            # a result in the engine's own layout (C order), else in the plan's: made in this
            # axis order, then transposed back
            order = axis_order(self.out_strides)
            self._host_order = (None if self.out_strides == contiguous_strides(out_shape)
                                else (order, numpy.argsort(order)))
            host = host_transform(kind, tuple(op.shape), self._host_dtype, axes, s, norm,
                                  conjugate)
            # each direction's transform as a function of the input, and of it and out=
            forward, inverse = (
                Call(None, None, (host.runner(i, workers), host.writer(i, workers)))
                for i in (False, True))
        # direction -> Call; free() empties it
        self._calls = {"forward": forward, "inverse": inverse}
        if kind != "c2c":  # a real plan runs one way
            del self._calls["inverse" if kind == "r2c" else "forward"]
        self._calls[None] = inverse if kind == "c2r" else forward
        self._fusion = None
        if prologue is not None or epilogue is not None:
            from accelmath.fft._fusion.fused import Fusion  # (the fusion layer, loaded on use)

            self._fusion = Fusion(prologue, epilogue, kind, op.shape, out_shape, axes,
                                  fused_scales if on_gpu else (1.0, 1.0), prologue_args,
                                  epilogue_args)
        elif on_gpu:
            self._install_shim(self._calls[None].direct, executor.resources.local,
                               executor.align_mask)
        # per direction (forward, inverse), the execute of that direction alone, in C where
        # it can be: what a remembered stateless call runs (x, and out= or not)
        self.direction_runs = tuple(
            self._launcher(self._calls[d].direct, executor.resources.local,
                           executor.align_mask, direction=d)
            if on_gpu and d in self._calls and self._fusion is None else
            functools.partial(type(self).execute, self, direction=d)
            for d in _DIRECTIONS)
        self._fronts = {}  # direction -> front_run's launcher, made on first use

    def front_run(self, inverse):
        """The execute of one direction (``inverse``: True for the inverse) made in C alone,
        answering :data:`~accelmath._core.dispatch.MISS` for any call it does not make: the
        stateless functions' front (:meth:`~accelmath._core.dispatch.Dispatcher.fronted`),
        whose key found the operand's shape and dtype to be the plan's already (its reader
        leaves those out). None where it would not be in C (a host or fused plan, a freed
        one, no call shim, results of an immutable kind, JAX's, which the call shim does not
        allocate); made on the first call."""
        direction = "inverse" if inverse else "forward"
        found = self._fronts.get(direction, False)
        if found is False:
            call, executor = self._calls.get(direction), self._executor
            found = None
            if (call is not None and executor is not None and self._fusion is None
                    and not self._adapter.immutable):
                run = self._launcher(call.direct, executor.resources.local,
                                     executor.align_mask, slow=missed,
                                     inputs=((self._type, self._front_read, None),))
                found = None if run is missed else run
            self._fronts[direction] = found
        return found

    @property
    def workers(self):
        """CPU threads of host execution, as the plan was made (None: those
        ``scipy.fft.set_workers`` sets where it runs, else 1)."""
        return self._workers

    @property
    def stale(self):
        """True once a kernel this plan went without has compiled. On a machine whose store
        lacks one of accelmath's FFT kernels for a problem (its column kernel, its
        mixed-radix kernels), a GPU plan made while that kernel compiles (in the background,
        about a second) goes without it rather than wait; a plan made again after the
        compile would time it too. The stateless functions replace such plans on their own;
        a plan kept for many calls may be made again once this turns True. False for host
        plans, freed ones and those that went without nothing."""
        return self._executor is not None and self._executor.stale()

    @property
    def nbytes(self):
        """Device workspace bytes the plan uses per thread and stream that run it (0 on the
        CPU)."""
        return 0 if self._executor is None else self._executor.nbytes

    @property
    def held_bytes(self):
        """Device workspace bytes the plan holds now: :attr:`nbytes` for each thread and
        stream that has run it and not given them back yet (0 on the CPU)."""
        return 0 if self._executor is None else self._executor.held_bytes()

    @property
    def on_grow(self):
        """Called with no arguments each time the plan takes another workspace (a thread or
        stream running it for the first time), or None; the plan cache of the stateless
        functions sets it to re-check its byte bound."""
        return None if self._executor is None else self._executor.on_grow

    @on_grow.setter
    def on_grow(self, callback):
        if self._executor is not None:
            self._executor.on_grow = callback

    def get_input_layout(self):
        """``(shape, strides)`` of the operands this plan accepts (strides in elements)."""
        return self.in_shape, self.in_strides

    def get_output_layout(self):
        """``(shape, strides)`` of the results this plan writes (strides in elements)."""
        return self.out_shape, self.out_strides

    def execute(self, x=None, *, out=None, direction=None, stream=None, prologue_args=(),
                epilogue_args=(), like=None):
        """Run the transform.

        Parameters
        ----------
        x : array, optional
            An operand of the plan's layout (default: the template operand).
        out : array, optional
            Where to write the result (layout: :meth:`get_output_layout`); allocated in the
            operand's package when omitted.
        direction : {"forward", "inverse"}, optional
            For c2c plans (default "forward"); r2c plans are forward, c2r plans inverse.
        stream : int or stream object, optional
            The CUDA stream (default: the current stream of the operand's package). A new
            result is allocated in its order.
        prologue_args, epilogue_args : sequence, optional
            The further arrays and scalars of the plan's prologue and epilogue, this call's.
        like : str, module or array, optional
            The kind of the result (default: the operand's): a package's name or module
            (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

        Returns
        -------
        array
            ``out``, or the new result, of the operand's package (or ``like``'s).
        """
        if like is not None:
            like = target_of(like)
        try:
            call = self._calls[direction]
        except (KeyError, TypeError):
            call = self._call_for(direction)
        if self._fusion is not None:
            result = self._fusion.execute(self, call, x, out, direction, stream, prologue_args,
                                          epilogue_args)
        elif not (absent(prologue_args) and absent(epilogue_args)):
            raise InvalidArgumentError(_NEED_FUSION)
        else:
            result = self.run(x, out, stream, call)
        return result if like is None else returned_as(result, like)

    def _call_for(self, direction):
        """The call of a direction not in the plan's table: raises, naming the problem."""
        self._check_live()
        if not isinstance(direction, str) or direction not in _DIRECTIONS:
            raise InvalidArgumentError(
                f'Invalid direction {direction!r}, should be "forward" or "inverse"')
        raise InvalidArgumentError(f"direction {direction!r} does not fit a {self.kind} plan")

    def _run_host(self, x, out, call):
        a, op = self._host_input(x)
        run, write = call.option
        if op is not None and a.dtype != self._host_dtype:  # (another byte order than the
            a = a.astype(self._host_dtype)                   # plan's)
        if out is not None:
            write(a, self._host_output(out, op))
            return out
        if self._host_order is None:
            made = run(a)
        else:  # a result in the plan's layout (get_output_layout), as the GPU's are
            order, back = self._host_order
            made = numpy.empty([self.out_shape[k] for k in order], self._host_out_dtype)
            made = made.transpose(back)
            write(a, made)
        return made if op is None else op.adapter.from_numpy(made, op.obj)

    def forward(self, x=None, *, out=None, stream=None, **fusion_args):
        """Run the forward transform (c2c and r2c plans); see :meth:`execute` (``like=`` and
        the fusion arguments pass through)."""
        return self.execute(x, out=out, direction="forward", stream=stream, **fusion_args)

    def inverse(self, x=None, *, out=None, stream=None, **fusion_args):
        """Run the inverse transform (c2c and c2r plans); see :meth:`execute` (``like=`` and
        the fusion arguments pass through)."""
        return self.execute(x, out=out, direction="inverse", stream=stream, **fusion_args)

    def _release(self):
        if self._executor is not None:
            self._executor.free()
            self._executor = None
        self._calls.clear()

    def __repr__(self):
        if "_freed" not in self.__dict__:  # (one whose making raised)
            return "FFT(not made)"
        state = "freed" if self._freed else self.execution
        return (f"FFT(kind={self.kind}, axes={self.axes}, shape={self.in_shape}, "
                f"dtype={self.in_dtype}->{self.out_dtype}, norm={self.norm}, {state})")

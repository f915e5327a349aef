"""The stateful :class:`FFT` plan: plan once, execute many times.

A plan binds a layout (shape, strides, dtype, device) and the transform (axes, kind, norm).
On the GPU it holds a :class:`~accelmath.fft._cuda.CudaExecutor`; on the CPU it runs
``scipy.fft`` with ``workers`` threads. The stateless functions in :mod:`accelmath.fft` are
one-shot uses of cached plans.
"""

import weakref

import numpy

from accelmath._core import hostcall
from accelmath._core.device import ensure_context
from accelmath._core.operand import (ITEMSIZE, Operand, _device_adapter, adapter_named,
                                     check_mutable, check_same_device, device_name,
                                     wrap_operand)
from accelmath._core.stream import stream_handle
from accelmath.errors import InvalidArgumentError, StateError, UnsupportedDTypeError
from accelmath.fft import _normalize as norms
from accelmath.fft._layout import contiguous_strides, is_dense, output_layout

__all__ = ["FFT", "scipy_transform"]

_KINDS = ("c2c", "r2c", "c2r")
_DIRECTIONS = {"forward": (False, -1), "inverse": (True, 1)}
# The CPU computes half precision in single, as scipy.fft does.
_CPU_DTYPE = {"float16": "float32", "complex32": "complex64"}


def scipy_transform(kind, a, s, axes, norm, inverse, conjugate, workers):
    """The ``kind`` transform of host array ``a`` by ``scipy.fft`` (the CPU execution of the
    plans and of the functions)."""
    import scipy.fft

    if kind == "c2c":
        func = scipy.fft.ifftn if inverse else scipy.fft.fftn
        return func(a, s, axes, norm, workers=workers)
    if kind == "r2c":
        r = scipy.fft.rfftn(a, s, axes, norm, workers=workers)
        return r.conj() if conjugate else r
    return scipy.fft.irfftn(a.conj() if conjugate else a, s, axes, norm, workers=workers)


def _template(shape, dtype, strides, package, device):
    """An array of the layout the arguments describe, for a plan to be made for."""
    if shape is None or dtype is None:
        raise InvalidArgumentError("a plan needs an operand, or its shape and dtype")
    shape = tuple(norms.index(n, "shape") for n in shape)
    if any(n < 0 for n in shape):
        raise InvalidArgumentError(f"shape {shape} has a negative extent")
    try:
        dtype = numpy.dtype(dtype).name
    except TypeError:  # torch's dtypes, "complex32"
        dtype = str(dtype).replace("torch.", "")
    if dtype not in ITEMSIZE:
        raise UnsupportedDTypeError(f"unsupported dtype {dtype!r}")
    if strides is None:
        strides = contiguous_strides(shape)
    strides = tuple(norms.index(n, "strides") for n in strides)
    if len(strides) != len(shape) or not is_dense(shape, strides):
        raise InvalidArgumentError(
            f"strides {strides} do not lay out shape {shape} densely (positive element "
            "strides, no overlap, no gaps)")
    if package is None:
        package = "numpy" if device is None else _device_adapter().package
    if package not in ("numpy", "cupy", "torch"):
        raise InvalidArgumentError(
            f'package must be "numpy", "cupy" or "torch", got {package!r}; or pass an operand')
    if package == "cupy" and device is None:
        device = 0
    if device is not None:
        if package == "numpy":
            raise InvalidArgumentError("NumPy arrays live in host memory: leave device out")
        ensure_context(norms.index(device, "device"))  # (NoDeviceError without a GPU)
    return adapter_named(package).empty_strided(shape, strides, dtype, device)[0]


class FFT:
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
        The GPU of the operands (default: None, host memory; 0 where ``package`` is CuPy or
        torch).
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

    def __init__(self, operand=None, *, shape=None, dtype=None, strides=None, package=None,
                 device=None, axes=None, kind=None, norm=None, last_axis_size=None,
                 conjugate=False, out_strides=None, execution="auto", workers=None):
        layout_only = operand is None
        if layout_only:
            operand = _template(shape, dtype, strides, package, device)
        elif (shape, dtype, strides, package, device) != (None,) * 5:
            raise InvalidArgumentError(
                "give either an operand or shape, dtype, strides, package and device")
        op = wrap_operand(operand)
        norm = norms.check_norm(norm)
        execution = norms.check_execution(execution)
        workers = norms.check_workers(workers)
        axes, _ = norms.normalize_axes(op.shape, None, axes)
        if not axes:
            raise InvalidArgumentError("axes is empty: an FFT needs at least one axis")
        for axis in axes:
            if op.shape[axis] == 0:
                raise InvalidArgumentError(
                    f"axis {axis} has length 0; transform axes must not be empty")
        if kind is None:
            kind = "c2c" if op.dtype.startswith("complex") else "r2c"
        if kind not in _KINDS:
            raise InvalidArgumentError(f'Invalid kind {kind!r}, should be "c2c", "r2c" or "c2r"')
        on_gpu = op.on_device if execution == "auto" else execution == "cuda"
        # half precision runs on the GPU only for packages with complex32 (torch)
        in_dtype, out_dtype = norms.transform_dtypes(kind, op.dtype,
                                                     op.adapter.complex32 or not on_gpu)
        if op.dtype != in_dtype:
            raise UnsupportedDTypeError(
                f"a {kind} plan computes in {in_dtype}, but the operand is {op.dtype}; convert "
                f"it first (the accelmath.fft functions do)")
        if last_axis_size is not None and kind != "c2r":
            raise InvalidArgumentError("last_axis_size applies to c2r plans only")
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
        if out_strides is None:
            out_strides = dense_strides
        else:
            out_strides = tuple(out_strides)
            if len(out_strides) != len(out_shape) or not is_dense(out_shape, out_strides):
                raise InvalidArgumentError(
                    f"out_strides {out_strides} do not lay out the result shape {out_shape} "
                    "densely (positive element strides, no overlap, no gaps)")
        self.kind, self.axes, self.norm = kind, axes, norm
        self.conjugate = conjugate
        self.in_dtype, self.out_dtype = in_dtype, out_dtype
        self.in_shape, self.in_strides = tuple(op.shape), op.strides
        self.out_shape, self.out_strides = out_shape, out_strides
        self.device_id = op.device_id
        self.execution = "cuda" if on_gpu else "cpu"
        self.workers = workers
        n = 1
        for axis in axes:
            n *= out_shape[axis] if kind == "c2r" else op.shape[axis]
        self._scales = (norms.scale_factor(norm, False, n), norms.scale_factor(norm, True, n))
        self._operand = op
        self._adapter = op.adapter
        self._type = type(operand)
        self._key = (self.in_shape, op.strides, op.dtype, op.device_id)
        self._out_key = (out_shape, out_strides, out_dtype, op.device_id)
        self._executor = None
        self._read = None  # reads the pointer of operands of the plan's layout (fast path)
        self._read_out = {}  # out type -> reader of outputs of a layout already checked
        if on_gpu:
            if not op.on_device:
                raise InvalidArgumentError(
                    'execution="cuda" needs a device operand here; the accelmath.fft functions '
                    "move host data for you")
            from accelmath.fft._cuda import CudaExecutor

            self._executor = CudaExecutor(kind, axes, op.shape, op.strides, out_shape,
                                          out_strides, in_dtype, out_dtype, self._scales,
                                          conjugate, op.device_id, op.package)
            self._allocate = op.adapter.allocator(out_shape, out_strides, out_dtype,
                                                  op.device_id)
            self._current_stream = op.adapter.stream_getter(op.device_id)
            self._runners = (self._executor.runner(False), self._executor.runner(True))
            key = op.adapter.layout_key(op.obj)
            if key is not None and op.obj is operand:
                self._read = op.adapter.reader(key)
        self._default_inverse = kind == "c2r"
        self._freed = False
        if layout_only:  # the template's memory goes back; its layout stays
            self._operand = Operand(None, 0, op.shape, op.strides, op.dtype, op.device_id,
                                    op.adapter)
        if self._read is not None:
            self.execute = self._fused_execute()

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

    def _check_operand(self, x):
        """The operand of ``x``, after checking it fits the plan (raises, naming what not)."""
        op = wrap_operand(x)
        if type(x) is not self._type or (op.shape, op.strides, op.dtype,
                                         op.device_id) != self._key:
            raise InvalidArgumentError(
                f"operand {op!r} does not match the plan's layout: shape {self.in_shape}, "
                f"strides {self.in_strides}, dtype {self._key[2]}, device "
                f"{device_name(self.device_id)}, type {self._type.__qualname__}")
        return op

    def _check_out(self, out, op):
        check_mutable(out)
        out_op = wrap_operand(out)
        check_same_device(op, out_op, names=("x", "out"))
        if out_op.dtype != self.out_dtype:
            raise UnsupportedDTypeError(
                f"out has dtype {out_op.dtype}, expected {self.out_dtype}")
        if out_op.shape != self.out_shape or (
                self._executor is not None and out_op.strides != self.out_strides):
            raise InvalidArgumentError(
                f"out has shape {out_op.shape} and strides {out_op.strides}, expected shape "
                f"{self.out_shape} and strides {self.out_strides}")
        if out_op.obj is not out:
            raise InvalidArgumentError(
                "out is a lazily conjugated or negated view; pass a tensor that owns its values")
        return out_op

    def _inverse(self, direction):
        """True for the inverse transform: ``direction`` checked against the plan's kind."""
        if direction is None:
            return self.kind == "c2r"
        if not isinstance(direction, str) or direction not in _DIRECTIONS:
            raise InvalidArgumentError(
                f'Invalid direction {direction!r}, should be "forward" or "inverse"')
        inverse = _DIRECTIONS[direction][0]
        if self.kind != "c2c" and inverse != (self.kind == "c2r"):
            raise InvalidArgumentError(f"direction {direction!r} does not fit a {self.kind} plan")
        return inverse

    def execute(self, x=None, *, out=None, direction=None, stream=None):
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

        Returns
        -------
        array
            ``out``, or the new result, of the operand's package.
        """
        inverse = self._default_inverse if direction is None else self._inverse(direction)
        read = self._read
        if read is not None and type(x) is self._type:
            # the common case: an array of the plan's package and layout, read in a few
            # attribute lookups
            in_ptr = read(x)
            if in_ptr is not None:
                return self._launch(in_ptr, out, inverse, stream)
        if self._freed:
            raise StateError("this FFT plan was freed; create a new one")
        if x is None and self._operand.obj is None:
            raise InvalidArgumentError(
                "this plan was made for a layout, with no operand bound to it; pass x")
        return self._run(self._operand if x is None else self._check_operand(x), out, inverse,
                         stream)

    def _fused_execute(self):
        """This plan's :meth:`execute`: the common call (an operand of the plan's type and
        layout; ``out=`` of a layout seen before, or none) read and launched in one function,
        anything else passed on to :meth:`FFT.execute`; ``execute(x, out=out)`` made in C
        (:func:`hostcall.launcher`) where the call shim is built."""
        read, xtype, read_out = self._read, self._type, self._read_out
        allocate, allocate_on = self._allocate, self._allocate_on
        current_stream = self._current_stream
        executor = self._executor
        # direction -> (runner, then its single cuFFT call: func, fail, code, or three Nones,
        # which the C execute makes itself); free() empties it, sending every call to the
        # checks
        runs = self._runs = {}
        for direction, inverse in ((None, self._default_inverse), ("forward", False),
                                   ("inverse", True)):
            if self.kind == "c2c" or inverse == self._default_inverse:
                direct = executor.direct_call(inverse) or (None, None, None)
                runs[direction] = (self._runners[inverse], *direct)
        plan = weakref.ref(self)

        def execute(x=None, *, out=None, direction=None, stream=None):
            try:
                run = runs[direction][0]
            except (KeyError, TypeError):
                run = None
            if run is not None and type(x) is xtype:
                in_ptr = read(x)
                if in_ptr is not None:
                    explicit = stream is not None
                    stream = stream_handle(stream) if explicit else current_stream()
                    if out is None:
                        out, out_ptr = allocate_on(stream) if explicit else allocate()
                    else:
                        reader = read_out.get(type(out))
                        out_ptr = None if reader is None else reader(out)
                    if out_ptr is not None:
                        run(in_ptr, out_ptr, stream)
                        return out
            return FFT.execute(plan(), x, out=out, direction=direction, stream=stream)

        execute.__doc__ = FFT.execute.__doc__
        # the same again in C, for execute(x, out=out): the call shim's, where it is built
        return hostcall.launcher(execute, runs, xtype, read, read_out, current_stream,
                                 executor.local, executor.align_mask)

    def _run(self, op, out, inverse, stream):
        """Execute on a checked operand (the stateless functions enter here)."""
        if self._executor is None:
            return self._execute_cpu(op, out, inverse)
        op.wait_ready(stream)
        return self._launch(op.ptr, out, inverse, stream)

    def _launch(self, in_ptr, out, inverse, stream):
        """Enqueue the GPU transform of the checked operand at ``in_ptr`` into ``out``."""
        explicit = stream is not None
        stream = stream_handle(stream) if explicit else self._current_stream()
        new = out is None
        if new:
            out, out_ptr = self._allocate_on(stream) if explicit else self._allocate()
        else:
            read = self._read_out.get(type(out))
            out_ptr = None if read is None else read(out)
            if out_ptr is None:
                out_ptr = self._first_out(out, stream)
        self._runners[inverse](in_ptr, out_ptr, stream)
        if new and self._adapter.immutable:  # (JAX) handed over once the transform is queued
            return self._adapter.finish(out, stream, self.device_id)
        return out

    def _allocate_on(self, stream):
        """A new result and its pointer, allocated in the order of ``stream`` (a handle), so
        that the package's pool does not hand its memory out again while the transform on
        an explicit stream may still be writing it."""
        if stream == self._current_stream():
            return self._allocate()
        with self._adapter.stream_scope(stream, self.device_id):
            return self._allocate()

    def _first_out(self, out, stream):
        """Check an ``out`` of a type or layout not seen yet; remember it once it passes."""
        out_op = wrap_operand(out)
        if (out_op.shape, out_op.strides, out_op.dtype, out_op.device_id) != self._out_key \
                or out_op.obj is not out or out_op.adapter.immutable:
            self._check_out(out, self._operand)  # raises, naming what differs
        out_op.wait_ready(stream)
        key = out_op.adapter.layout_key(out)
        if key is not None:
            self._read_out[type(out)] = out_op.adapter.reader(key)
        return out_op.ptr

    def _execute_cpu(self, op, out, inverse):
        a = op.adapter.to_numpy(op.obj)
        if a.dtype.name != self.in_dtype:
            a = a.astype(self.in_dtype)
        s = [self.out_shape[axis] for axis in self.axes] if self.kind == "c2r" else None
        r = scipy_transform(self.kind, a, s, self.axes, self.norm, inverse, self.conjugate,
                            self.workers)
        r = r.astype(self.out_dtype, copy=False)
        if out is not None:
            out_op = self._check_out(out, op)
            out_op.adapter.to_numpy(out)[...] = r
            return out
        return op.adapter.from_numpy(r, op.obj)

    def forward(self, x=None, *, out=None, stream=None):
        """Run the forward transform (c2c and r2c plans); see :meth:`execute`."""
        return self.execute(x, out=out, direction="forward", stream=stream)

    def inverse(self, x=None, *, out=None, stream=None):
        """Run the inverse transform (c2c and c2r plans); see :meth:`execute`."""
        return self.execute(x, out=out, direction="inverse", stream=stream)

    def free(self):
        """Release the cuFFT handles and workspaces; later use raises StateError (idempotent)."""
        if self._executor is not None:
            self._executor.free()
            self._executor = None
        self._operand = None
        self._read = self._runners = None
        if "execute" in self.__dict__:
            self._runs.clear()
            del self.execute
        self._freed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        if not hasattr(self, "_freed"):  # (one whose making raised)
            return "FFT(not made)"
        state = "freed" if self._freed else self.execution
        return (f"FFT(kind={self.kind}, axes={self.axes}, shape={self.in_shape}, "
                f"dtype={self.in_dtype}->{self.out_dtype}, norm={self.norm}, {state})")

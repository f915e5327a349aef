"""GPU execution of an FFT: cuFFT handles for the layout's steps, copies, scaling.

A :class:`CudaExecutor` is built once per plan. Each thread that runs it gets its own cuFFT
handles (one per step, made with auto-allocation off) and, on each of the last few streams it
used, its own workspace (cuFFT's work area plus the scratch buffers the plan needs). So the
same plan runs on several streams and threads at once with no lock per call, and no two
transforms in flight share scratch memory. Its :meth:`execute` does no validation and no
allocation once a thread and a stream have been seen.
"""

import ctypes
import dataclasses
import functools
import logging
import threading

from accelmath._core import hostcall
from accelmath._core.gpu import modules, timing
from accelmath._core.gpu.device import block_shared_memory, ensure_context
from accelmath._core.gpu.kernels import copy_scale
from accelmath._core.gpu.memory import allocate_workspace
from accelmath._core.gpu.resources import Resources
from accelmath._core.layout import axis_order, contiguous_strides
from accelmath._core.operand import ITEMSIZE
from accelmath._core.switches import switched_off
from accelmath.bindings import cufft, driver
from accelmath.errors import CudaLibraryError, InvalidArgumentError
from accelmath.fft._kernels import columns as _columns, mixed as _mixed
from accelmath.fft._layout import plan_steps

__all__ = ["TYPED_EXEC", "CudaExecutor", "aligned"]

_log = logging.getLogger("accelmath")

# (kind, input dtype) -> (typed exec function name, takes a direction)
TYPED_EXEC = {
    ("c2c", "complex64"): ("exec_c2c", True), ("c2c", "complex128"): ("exec_z2z", True),
    ("r2c", "float32"): ("exec_r2c", False), ("r2c", "float64"): ("exec_d2z", False),
    ("c2r", "complex64"): ("exec_c2r", False), ("c2r", "complex128"): ("exec_z2d", False),
}
_ALIGN = 256
# Transforms of at least this many output points time their candidate plans.
_TUNE_POINTS = 1 << 20


def aligned(n):
    """``n`` bytes rounded up to the alignment of the buffers a plan's workspace holds."""
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _nbytes(shape, dtype):
    return ITEMSIZE[dtype] * _points(shape)


def _span(shape, strides, dtype):
    """Bytes from the first to one past the last element of a layout of positive strides."""
    last = sum((n - 1) * st for n, st in zip(shape, strides))
    return (last + 1) * ITEMSIZE[dtype]


def _points(shape):
    n = 1
    for extent in shape:
        n *= extent
    return n


def _run_calls(calls, handles, buffers, direction, stream):
    """Make the calls of a plan's steps on ``buffers`` ({"in": ptr, "out": ptr, "tmp": ptr}):
    cuFFT's (their handles set to ``stream``), or accelmath's kernels' (no handle)."""
    for (func, c_name, with_direction, src, dst, offsets), handle in zip(calls, handles):
        a, b = buffers[src], buffers[dst]
        for da, db in offsets:
            if handle is None:
                func(a + da, b + db, direction == 1, stream)
                continue
            status = (func(handle, a + da, b + db, direction) if with_direction
                      else func(handle, a + da, b + db))
            if status:
                cufft.lib.raise_status(c_name, status)


def _make_plan(step, in_dtype, out_dtype):
    """A cuFFT handle planned for one step (auto-allocation off), and its work area size."""
    complex_dtype = in_dtype if in_dtype.startswith("complex") else out_dtype
    src_type = complex_dtype if step.kind in ("c2c", "c2r") else in_dtype
    dst_type = complex_dtype if step.kind in ("c2c", "r2c") else out_dtype
    handle = ctypes.c_int()
    cufft.lib.create(ctypes.byref(handle))
    try:
        cufft.lib.set_auto_allocation(handle, 0)
        rank = len(step.n)
        arr = ctypes.c_longlong * rank
        size = ctypes.c_size_t()
        cufft.lib.xt_make_plan_many(
            handle, rank, arr(*step.n), arr(*step.inembed), step.istride, step.idist,
            cufft.DATA_TYPE[src_type], arr(*step.onembed), step.ostride, step.odist,
            cufft.DATA_TYPE[dst_type], step.batch, ctypes.byref(size),
            cufft.DATA_TYPE[complex_dtype])
    except Exception:
        cufft.lib.destroy(handle)
        raise
    return handle.value, size.value


def _thread_handles(steps, in_dtype, out_dtype, work):
    """A set of handles for another thread: the plan's cuFFT plans made again (None for the
    steps of accelmath's kernels)."""
    handles = []
    try:
        for step in steps:
            if step.engine != "cufft":
                handles.append(None)
                continue
            handle, size = _make_plan(step, in_dtype, out_dtype)
            handles.append(handle)
            if size > work:
                raise RuntimeError("cuFFT asked for a larger work area than it planned")
    except Exception:
        for handle in handles:
            if handle is not None:
                cufft.lib.destroy(handle)
        raise
    return tuple(handles)


def _bind(area_offset, area_bytes, handles, stream, workspace):
    """Point a thread's cuFFT handles at ``stream`` and at its work area in ``workspace``:
    NULL where the plan needs none (the address just past a workspace may be another array's,
    and cuFFT refuses a work area at the output's address: CUFFT_EXEC_FAILED)."""
    area = workspace + area_offset if area_bytes else None
    for handle in handles:
        if handle is not None:
            cufft.lib.set_stream(handle, stream)
            cufft.lib.set_work_area(handle, area)


class CudaExecutor:
    """Runs one planned FFT on the GPU.

    Parameters
    ----------
    kind : {"c2c", "r2c", "c2r"}
    axes : tuple of int
    in_shape, in_strides, out_shape, out_strides : tuple of int
        The operand layouts (strides in elements).
    in_dtype, out_dtype : str
        The transform's dtypes.
    scales : tuple
        The factor for (forward, inverse) execution, None where it is 1.
    conjugate : bool
        Conjugate the input (c2r) or the output (r2c) (for hfft/ihfft).
    device_id : int
    package : str
        Whose memory pool the workspaces come from.
    force_copy : bool
        Run through aligned scratch copies of the input and output (for operands whose
        addresses cuFFT cannot take).
    overwrite_input : bool
        A c2r transform may overwrite the input: no scratch copy of it is made (unless
        ``conjugate``: the copy conjugates).

    Attributes
    ----------
    resources : Resources
        The cuFFT handles of each thread and the workspaces of each stream.
    align_mask : int
        Operand addresses with any of these bits set run through scratch copies.
    """

    def __init__(self, kind, axes, in_shape, in_strides, out_shape, out_strides, in_dtype,
                 out_dtype, scales, conjugate, device_id, package, force_copy=False,
                 overwrite_input=False):
        ensure_context(device_id)
        self.device_id = device_id
        self.package = package
        self.kind, self.axes = kind, tuple(axes)
        self.in_dtype, self.out_dtype = in_dtype, out_dtype
        self._real_dtype = out_dtype if kind == "c2r" else in_dtype  # (of a real transform)
        self.in_shape, self.in_strides = in_shape, in_strides
        self.out_shape, self.out_strides = out_shape, out_strides
        self.scales = scales
        self.conjugate = conjugate
        self._lock = threading.Lock()  # guards the making of the executor of misaligned operands
        self.resources = Resources(self, cufft.lib.destroy, device_id, package)
        # the kernels this plan went without while they compiled, each one's (source,
        # options, name) as modules.compile_soon takes them (see _with_columns, _with_mixed)
        self.waiting = frozenset()

        # Where the transform reads and writes: the operands themselves, or scratch copies
        # when cuFFT would overwrite the input (c2r) or cannot express the layout.
        self.copy_in = None  # (shape, strides) of a scratch copy of the input
        self.copy_out = None  # (shape, strides) of a scratch output copied to the operand
        work_in = (in_shape, in_strides)
        if kind == "c2r" and (conjugate or not overwrite_input):
            work_in = (in_shape, contiguous_strides(in_shape, axis_order(out_strides)))
            self.copy_in = work_in
        steps = None if force_copy else plan_steps(kind, axes, *work_in, out_shape, out_strides)
        if steps is None:
            # Copy to dense scratch buffers with the transform axes fastest.
            order = [a for a in axis_order(in_strides) if a not in axes] + list(axes)
            work_in = (in_shape, contiguous_strides(in_shape, order))
            self.copy_in = work_in
            self.copy_out = (out_shape, contiguous_strides(out_shape, order))
            steps = plan_steps(kind, axes, *work_in, *self.copy_out)
        # candidates: (steps, the layout of the input's scratch copy or None)
        candidates = [(steps, self.copy_in)]
        if self.copy_out is None and self._worth_tuning(kind, axes, out_strides):
            # One joint cuFFT plan, the halved axis alone and then the others (in place on
            # the output, or through a scratch buffer): time them, keep the fastest. A c2r
            # through the scratch buffer reads its input itself, with no copy.
            options = [({"split": True}, work_in, self.copy_in)]
            if kind == "r2c" or not conjugate:  # (a conjugated c2r input needs its copy)
                options.append(({"split": True, "scratch": True}, (in_shape, in_strides), None))
            for option, layout, copy_in in options:
                more = plan_steps(kind, axes, *layout, out_shape, out_strides, **option)
                if more is not None and (more, copy_in) not in candidates:
                    candidates.append((more, copy_in))
            # the same, with accelmath's column kernel for the steps down columns, and one
            # real 2-D transform of awkward lengths by accelmath's mixed-radix kernels
            for steps_, copy_in in list(candidates):
                for ours in (self._with_columns(steps_), self._with_mixed(steps_)):
                    if ours is not None:
                        candidates.append((ours, copy_in))
        self.steps, self.copy_in, handles, work = self._fastest(candidates, kind == "c2r")
        self._offsets = self._scratch_offsets(self.copy_in, self.steps)
        self._calls = self._calls_of(self.steps)
        self.nbytes = self._offsets[3] + work  # cuFFT's work area comes last
        self.resources.adopt(handles)  # the first thread to run the plan takes them
        # (module functions: the resources must not keep the executor alive)
        self.resources.configure(
            functools.partial(_thread_handles, self.steps, in_dtype, out_dtype, work),
            functools.partial(_bind, self._offsets[3], work), self.nbytes)
        # cuFFT rejects pointers not aligned to the complex element; such operands (views
        # starting mid-element-pair) go through an executor that copies to aligned scratch.
        self.align_mask = 0 if force_copy else ITEMSIZE[
            in_dtype if in_dtype.startswith("complex") else out_dtype] - 1
        self._args = (kind, axes, in_shape, in_strides, out_shape, out_strides, in_dtype,
                      out_dtype, scales, conjugate, device_id, package)
        self._aligned = None
        self._on_grow = None

    def _with_columns(self, steps):
        """``steps`` with the column kernel for each step it fits, or None where it fits
        none, is not compiled yet, or ``ACCELMATH_COLUMNS=0``."""
        if switched_off("ACCELMATH_COLUMNS") or not _columns.available(self.device_id):
            return None
        dtype = self.in_dtype if self.in_dtype.startswith("complex") else self.out_dtype
        fit = [_columns.fits(step, dtype) for step in steps]
        if not any(fit):
            return None
        waiting = {step.n[0] for step, ok in zip(steps, fit)
                   if ok and not _columns.compiled(self.device_id, step.n[0])}
        if waiting:
            # not compiled yet (a new machine): this plan goes without it rather than wait
            # about a second for NVRTC, and it compiles in the background for the next ones
            # (the stateless functions' cache drops this plan once they end)
            for length in sorted(waiting):
                self._wait_for(_columns.code(self.device_id, length),
                               f"FFT column kernel for length {length}")
            return None
        return [dataclasses.replace(step, engine="columns") if ok else step
                for step, ok in zip(steps, fit)]

    def _with_mixed(self, steps):
        """``steps`` run by accelmath's mixed-radix kernels where they are one real 2-D
        transform that those kernels take (lengths with a prime factor above 7, on which
        cuFFT is slow: ``accelmath.fft._kernels.mixed``), else None; None too while the kernels
        compile, or with ``ACCELMATH_MIXED=0``."""
        if (len(steps) != 1 or switched_off("ACCELMATH_MIXED")
                or not _mixed.step_fits(steps[0], self._real_dtype,
                                        block_shared_memory(self.device_id))):
            return None
        code = _mixed.step_code(*steps[0].n, self._real_dtype, self.device_id)
        if not modules.is_compiled(*code):
            self._wait_for(code, f"FFT mixed-radix kernels for {steps[0].n}")
            return None
        return [dataclasses.replace(steps[0], engine="mixed")]

    def _wait_for(self, code, what):
        """Go without a kernel that is not compiled yet (a new machine) rather than wait for
        NVRTC: it compiles in the background (``code``: its source, options and name) for
        the plans made after this one, once the compiles running now have ended."""
        modules.compile_soon(*code, deferred=True)
        self.waiting |= {code}
        _log.info("%s compiling in the background", what)

    def stale(self):
        """Whether a kernel this plan went without (it was compiling when the plan was made)
        has compiled since: a plan made again would time it too. A kernel whose compile
        ended with nothing made is forgotten, so a failed compile is asked about once."""
        for code in list(self.waiting):
            if modules.compile_soon(*code).is_alive():  # (the compile's thread)
                continue
            if modules.is_compiled(*code):
                return True
            self.waiting -= {code}
        return False

    def _fastest(self, candidates, inverse):
        """``(steps, copy_in, handles, work)`` of the fastest candidate: known from the
        store, or timed now on the device where there are several."""
        planned = {}

        def measure(i):
            steps, copy_in = candidates[i]
            try:
                planned[i] = (steps, copy_in, *self._plan(steps))
                return self._time(*planned[i], inverse)
            except (CudaLibraryError, MemoryError) as exc:
                # a candidate that cannot be planned or run here (memory for its trial run,
                # a layout cuFFT refuses) loses; the others may still run
                _log.info("FFT candidate %d of %s failed: %s", i, problem, exc)
                return float("inf")

        problem = (f"cufft {self.kind} axes={self.axes} {self.in_shape}{self.in_strides}->"
                   f"{self.out_shape}{self.out_strides} {self.in_dtype}->{self.out_dtype} "
                   f"conjugate={self.conjugate}")
        labels = [repr(candidate) for candidate in candidates]
        choice = timing.choose(problem, labels, measure, self.device_id, ("cufft",))
        for i, (_, _, handles, _) in planned.items():
            if i != choice.index:
                self.resources.discard(handles)
        if choice.index not in planned:
            steps, copy_in = candidates[choice.index]
            planned[choice.index] = (steps, copy_in, *self._plan(steps))
        return planned[choice.index]

    def _tmp_bytes(self, steps):
        """Bytes of the ``"tmp"`` scratch buffer ``steps`` use (0 if none): the c2r input's
        shape, else the output's."""
        if any(step.dst == "tmp" for step in steps):
            if self.kind == "c2r":
                return aligned(_nbytes(self.in_shape, self.in_dtype))
            return aligned(_nbytes(self.out_shape, self.out_dtype))
        return 0

    def _scratch_offsets(self, copy_in, steps):
        """Byte offsets in a workspace of the input's copy, the output's copy, the
        ``"tmp"`` buffer and cuFFT's work area."""
        out_offset = aligned(_nbytes(self.in_shape, self.in_dtype)) if copy_in else 0
        tmp_offset = out_offset + (aligned(_nbytes(self.out_shape, self.out_dtype))
                                   if self.copy_out else 0)
        return 0, out_offset, tmp_offset, aligned(tmp_offset + self._tmp_bytes(steps))

    def _plan(self, steps):
        """One cuFFT handle per step (None for those of accelmath's kernels), and the largest
        work area they need."""
        handles, work = [], 0
        for step in steps:
            if step.engine != "cufft":
                handles.append(None)
                continue
            handle, size = _make_plan(step, self.in_dtype, self.out_dtype)
            handles.append(self.resources.track(handle))
            work = max(work, size)
        return tuple(handles), work

    def _calls_of(self, steps):
        """The call record of each step: (exec function, its C name, takes a direction,
        source, destination, byte offsets). The function of accelmath's kernels (the column
        kernel's, the mixed-radix ones') takes ``(src, dst, inverse, stream)``; it has no C
        name."""
        in_size, out_size = ITEMSIZE[self.in_dtype], ITEMSIZE[self.out_dtype]
        sizes = {"in": in_size, "out": out_size,
                 "tmp": in_size if self.kind == "c2r" else out_size}
        calls = []
        for step in steps:
            offsets = tuple((a * sizes[step.src], b * sizes[step.dst]) for a, b in step.offsets)
            if step.engine != "cufft":
                run = (_columns.launcher(step, self.device_id) if step.engine == "columns"
                       else _mixed.step_launcher(step, self._real_dtype, self.device_id))
                calls.append((run, None, True, step.src, step.dst, offsets))
                continue
            exec_name, with_direction = TYPED_EXEC.get((step.kind, self._step_in_dtype(step)),
                                                        ("xt_exec", True))
            func, c_name = cufft.lib.raw(exec_name)
            calls.append((hostcall.fast(func), c_name, with_direction, step.src, step.dst,
                          offsets))
        return calls

    def _worth_tuning(self, kind, axes, out_strides):
        """Time candidate plans for large multi-axis r2c/c2r transforms of positive strides
        (below that size one cuFFT call costs less host time than two)."""
        if kind == "c2c" or len(axes) < 2 or _TUNE_POINTS > _points(self.out_shape):
            return False
        return all(s >= 0 for s in (*self.in_strides, *out_strides))

    def _time(self, steps, copy_in, handles, work, inverse):
        """Device time of a candidate, run as :meth:`execute` runs it (with the copies and
        the scaling it makes) on scratch buffers, in ms."""
        calls = self._calls_of(steps)
        offsets = self._scratch_offsets(copy_in, steps)
        in_bytes = aligned(_span(self.in_shape, self.in_strides, self.in_dtype))
        out_bytes = aligned(_span(self.out_shape, self.out_strides, self.out_dtype))
        data_bytes = in_bytes + out_bytes + offsets[3]
        trial = allocate_workspace(data_bytes + work, self.device_id, 0, self.package)
        try:
            driver.lib.memset_d8(trial.ptr, 0, data_bytes)
            _bind(data_bytes, work, handles, 0, trial.ptr)
            return timing.device_time(functools.partial(
                self._enqueue, calls, copy_in, offsets, handles, trial.ptr + in_bytes + out_bytes,
                trial.ptr, trial.ptr + in_bytes, 0, inverse))
        finally:
            trial.free()

    def _step_in_dtype(self, step):
        if step.kind == "c2c":
            return self.in_dtype if self.in_dtype.startswith("complex") else self.out_dtype
        return self.in_dtype

    @property
    def on_grow(self):
        """Called with no arguments after a thread or stream takes a new workspace (here or
        in the executor of misaligned operands), or None."""
        return self._on_grow

    @on_grow.setter
    def on_grow(self, callback):
        self._on_grow = self.resources.on_grow = callback
        if self._aligned is not None:
            self._aligned.on_grow = callback

    def direct(self, inverse):
        """The :class:`~accelmath._core.hostcall.BoundCall` of the transform in this direction
        where it is one cuFFT call and nothing else, else None."""
        plain = (len(self._calls) == 1 and self.copy_in is None and self.copy_out is None
                 and len(self._calls[0][5]) == 1 and not self.conjugate
                 and self.steps[0].engine == "cufft" and self.scales[inverse] is None)
        if not plain:
            return None
        func, c_name, with_direction, _, _, _ = self._calls[0]
        fail = functools.partial(cufft.lib.raise_status, c_name)
        slots = ("handle", "in", "out") + (((1 if inverse else -1),) if with_direction else ())
        return hostcall.BoundCall(func, fail, slots)

    def runner(self, inverse):
        """A function ``run(in_ptr, out_ptr, stream)`` for one direction: :meth:`execute`, or
        where that is one cuFFT call, that call made with the least work."""
        direct = self.direct(inverse)
        if direct is None:
            return functools.partial(self.execute, inverse=inverse)
        func, fail, slots = direct
        direction = slots[3] if len(slots) == 4 else None
        resources, mask = self.resources, self.align_mask
        local = resources.local

        def run(in_ptr, out_ptr, stream):
            if (in_ptr | out_ptr) & mask:
                return self.execute(in_ptr, out_ptr, stream, inverse)
            try:  # resources.state_on, inlined
                state = local.state
            except AttributeError:
                state = resources.state_on(stream)
            if state.stream != stream:
                resources.bind(state, stream)
            status = (func(state.handles[0], in_ptr, out_ptr) if direction is None
                      else func(state.handles[0], in_ptr, out_ptr, direction))
            if status:
                fail(status)

        return run

    def execute(self, in_ptr, out_ptr, stream, inverse):
        """Enqueue the transform of ``in_ptr`` into ``out_ptr`` on ``stream``.

        ``inverse`` selects cuFFT's direction for c2c steps and the scale. This is the general
        path; :meth:`runner` gives the shortest one for plans of a single cuFFT call.
        """
        if (in_ptr | out_ptr) & self.align_mask:
            # (complex data must sit at addresses of whole elements: the copies read them so)
            if (in_ptr & (ITEMSIZE[self.in_dtype] - 1)) or (
                    out_ptr & (ITEMSIZE[self.out_dtype] - 1)):
                raise InvalidArgumentError(
                    f"an operand at address {in_ptr:#x} or {out_ptr:#x} does not start at a "
                    f"whole element of its dtype ({self.in_dtype}, {self.out_dtype}); copy it "
                    "to an array of its own")
            if self._aligned is None:
                with self._lock:
                    if self._aligned is None:
                        aligned = CudaExecutor(*self._args, force_copy=True)
                        aligned.on_grow = self._on_grow
                        self._aligned = aligned
            return self._aligned.execute(in_ptr, out_ptr, stream, inverse)
        state = self.resources.state_on(stream)
        self._enqueue(self._calls, self.copy_in, self._offsets, state.handles,
                      state.workspace, in_ptr, out_ptr, stream, inverse)

    def _enqueue(self, calls, copy_in, offsets, handles, base, in_ptr, out_ptr, stream,
                 inverse):
        """Enqueue ``calls`` and the copies and scaling around them, with the scratch
        buffers at ``offsets`` (see :meth:`_scratch_offsets`) from ``base``."""
        scale = self.scales[1 if inverse else 0]
        conj_in = self.conjugate and copy_in is not None and not self.out_dtype.startswith(
            "complex")
        device = self.device_id
        src = in_ptr
        if copy_in is not None:
            src = base + offsets[0]
            # c2r: scale (and conjugate) on the way in, not in a pass of its own.
            fold = self.copy_out is None and self.out_dtype.startswith("float")
            copy_scale(in_ptr, src, self.in_shape, self.in_strides, copy_in[1],
                       self.in_dtype, scale if fold else None, stream, device, conj=conj_in)
            if fold:
                scale = None
        dst = out_ptr if self.copy_out is None else base + offsets[1]
        buffers = {"in": src, "out": dst, "tmp": base + offsets[2]}
        _run_calls(calls, handles, buffers, 1 if inverse else -1, stream)
        if not calls:
            # every transform axis has length 1 (or no elements): the transform is a copy
            copy_scale(src, dst, self.out_shape,
                       copy_in[1] if copy_in else self.in_strides,
                       self.copy_out[1] if self.copy_out else self.out_strides,
                       self.out_dtype, None, stream, device)
        conj_out = self.conjugate and not conj_in
        if self.copy_out is not None:
            copy_scale(dst, out_ptr, self.out_shape, self.copy_out[1], self.out_strides,
                       self.out_dtype, scale, stream, device, conj=conj_out)
        elif scale is not None or conj_out:
            copy_scale(out_ptr, out_ptr, self.out_shape, self.out_strides, self.out_strides,
                       self.out_dtype, scale, stream, device, conj=conj_out)

    def held_bytes(self):
        """Device workspace bytes held now, over every thread and stream that ran the plan."""
        held = self.resources.held_bytes()
        return held + (0 if self._aligned is None else self._aligned.held_bytes())

    def free(self):
        """Destroy the cuFFT handles and return the workspaces (idempotent)."""
        self.resources.free()
        if self._aligned is not None:
            self._aligned.free()

"""SciPy's ``check_finite`` on the device (and NaN and Inf under ``check=True``) for the
operands that a call reads where they lie (the factors and right-hand sides of
``cho_solve``, ``lu_solve`` and ``solve_triangular``) or copies by routes of their own
(``svd``, the factor objects), enqueued with a call's work and waited for once that is
enqueued, so that the GPU never waits for the check. (Operands that cuSOLVER's routes copy
are checked by their copies: :func:`accelmath.linalg._device.context.clear_flags`; accelmath's
kernels of small systems check what they load: :mod:`accelmath.linalg._kernels.small`.)

:func:`prepare` plans the check of a call's operands once per layout (a remembered call
keeps the plan); its :class:`Pending` check launches, for each dense operand (its matrices
one after another, each in C or column-major order), a kernel that flags its matrices
holding a NaN or an infinity (:func:`~accelmath.linalg._kernels.auxiliary.flag_nonfinite`), and the
read back of the flags (:func:`~accelmath._core.gpu.memory.read_back_later`). A check reading
:data:`BESIDE_BYTES` or more runs on a stream beside the call's, concurrently with its work;
a smaller one runs on the call's stream after the call's work (which only reads the
operands), so that the GPU starts on that work first. :meth:`Pending.check` raises
LinAlgError naming the operand and the batch index of its first matrix flagged, before any
failure of the work is reported. Where an operand has another layout (a broadcast or
strided view), the call's operands are checked at once through their own package instead (a
read back of their own).
"""

import math
from typing import NamedTuple

import numpy

from accelmath._core.gpu.beside import fork
from accelmath._core.gpu.memory import read_back_later
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE, array_namespace
from accelmath.linalg import _checks as checks
from accelmath.linalg._kernels import auxiliary as _kernels

__all__ = ["prepare", "Plan", "enqueue", "enqueue_at", "on_device", "Pending", "check",
           "check_with_package", "BESIDE_BYTES"]

#: A check that reads at least this many bytes runs beside the call's work, on the thread's
#: side stream (:mod:`accelmath._core.gpu.beside`), concurrently with it: about 3 us of reading
#: at an H100's pace, as much as the fork and the join cost the host.
BESIDE_BYTES = 8 << 20


def prepare(operands, names):
    """The finiteness check of those of ``operands`` (each a stack of matrices: the device
    path's right-hand sides are (..., n, k)) that ``names`` names (None: none): a
    :class:`Plan` of the device check, or None where none is left to enqueue: nothing
    named, only empty operands, or operands that the flag kernel does not read (a broadcast
    or strided view), which are checked here and now through their own package."""
    if names is None:
        return None
    checked = [(i, op, name) for i, (op, name) in enumerate(zip(operands, names))
               if name is not None and op.size]
    if not checked:
        return None
    if not _kernel_reads([op for _, op, _ in checked]):
        # (all of them so, in order, so that the first bad operand is the one named)
        for _, op, name in checked:
            check_with_package(op, 2, name)
        return None
    entries, launches, total, nbytes = [], [], 0, 0
    for i, op, name in checked:
        batch = tuple(op.shape[:-2])
        elements, count = op.shape[-2] * op.shape[-1], math.prod(batch)
        blocks = _kernels.nonfinite_blocks(elements)
        entries.append((name, batch, blocks, total))
        launches.append((i, elements, count, op.dtype, 4 * total))
        total += count * blocks
        nbytes += count * elements * ITEMSIZE[op.dtype]
    return Plan(tuple(entries), tuple(launches), total, nbytes >= BESIDE_BYTES)


class Plan(NamedTuple):
    """The device check of one layout of a call's operands, as :func:`prepare` made it."""

    entries: tuple  # per operand checked: (name, batch, flags per matrix, its first flag)
    launches: tuple  # per operand checked: (its index, elements per matrix, matrices, dtype,
    #                  byte offset of its flags)
    total: int  # flags in all
    beside: bool  # run on the thread's side stream (else on the call's)

    def enqueue(self, ctx, addresses):
        """The :class:`Pending` check of the call's operands at ``addresses`` (in the order
        the plan was made for), enqueued once the call's work is (when it is joined or
        waited for), so that the GPU starts on that work first: on the call's stream, or
        beside it, on a stream ordered here after the work before the call (so that the
        check runs beside the call's work)."""
        pending = Pending(self, ctx, addresses)
        if self.beside:  # (its flags allocated first: in the pools' order, before the fork)
            pending.flags, pending._address = ctx.empty((self.total,), "int32")
            pending._side = fork(ctx.stream, ctx.device_id)
        return pending


def enqueue(ctx, operands, names):
    """The :class:`Pending` finiteness check of ``operands`` named ``names`` (see
    :func:`prepare` and :meth:`Plan.enqueue`: launched once the call's work is enqueued),
    or None where nothing is left to check."""
    plan = prepare(operands, names)
    return None if plan is None else plan.enqueue(ctx, [op.ptr for op in operands])


def enqueue_at(ctx, plan, addresses):
    """:meth:`Plan.enqueue` of ``plan`` (None: nothing to check, None returned)."""
    return None if plan is None else plan.enqueue(ctx, addresses)


def on_device(operands, names):
    """Whether :func:`enqueue` checks those of ``operands`` that ``names`` names (None:
    none) with its kernel alone, never through their package (which reads the arrays
    themselves, not only their addresses): a call so checked can be remembered."""
    return names is None or _kernel_reads(
        [op for op, name in zip(operands, names) if name is not None])


def _kernel_reads(operands):
    """Whether the flag kernel reads each of ``operands`` (a dense stack of matrices of a
    dtype it reads)."""
    return all(_dense(op) and op.dtype in _kernels.DTYPES for op in operands)


def _dense(op):
    """Whether ``op``'s matrices lie one after another, each in C or column-major order: the
    flag kernel reads each as one run of elements."""
    strides = tuple(op.strides)
    if strides == contiguous_strides(op.shape):
        return True
    m, n = op.shape[-2:]
    return strides == contiguous_strides(op.shape[:-2] + (m * n,))[:-1] + (1, m)


class Pending:
    """A finiteness check of one call (:meth:`Plan.enqueue`'s): its kernels and the read
    back of their flags, launched once (:meth:`launch`); :meth:`check` waits for the flags
    and raises. Where it runs beside the call's stream, that stream waits for it once the
    call's work is enqueued (:meth:`join`)."""

    __slots__ = ("entries", "flags", "later", "_plan", "_ctx", "_addresses", "_side",
                 "_address", "_launched")

    def __init__(self, plan, ctx, addresses):
        self.entries = plan.entries  # per operand: (name, batch, flags per matrix, first)
        self._plan, self._ctx, self._addresses = plan, ctx, addresses
        self.flags = self.later = self._side = None
        self._address, self._launched = 0, False

    def launch(self):
        """Enqueue the kernels (beside the call's stream for a plan that says so), and the
        read back of their flags (once)."""
        if self._launched:
            return
        self._launched = True
        plan, ctx = self._plan, self._ctx
        if self.flags is None:
            self.flags, self._address = ctx.empty((plan.total,), "int32")
        stream = ctx.stream if self._side is None else self._side.stream
        for i, elements, count, dtype, offset in plan.launches:
            _kernels.flag_nonfinite(self._addresses[i], elements, count, dtype,
                                    self._address + offset, stream, ctx.device_id)
        self.later = read_back_later(self._address, plan.total, numpy.int32, stream)

    def join(self):
        """Launch the check (where it is not yet), and order the call's stream after it
        where it ran beside it (once)."""
        self.launch()
        side, self._side = self._side, None
        if side is not None:
            side.join(self._ctx.stream)

    def check(self):
        """Wait for the flags and raise LinAlgError for the first operand (in the order
        given) holding a NaN or an infinity, naming its batch index."""
        self.join()
        flags = self.later.result()
        if not flags.any():
            return
        for name, batch, blocks, offset in self.entries:
            count = math.prod(batch)
            mine = flags[offset:offset + count * blocks].reshape(count, blocks)
            bad = numpy.flatnonzero(mine.any(axis=1))
            if bad.size:
                raise checks.not_finite_error(
                    name, tuple(int(i) for i in numpy.unravel_index(int(bad[0]), batch)))

    def __del__(self):
        try:  # (a check never waited for, as after an error: its flags go back in order)
            side = self._side
            if side is not None:
                side.join(self._ctx.stream)
        except Exception:
            pass


def check(pending):
    """:meth:`Pending.check` of ``pending``, where there is one."""
    if pending is not None:
        pending.check()


def check_with_package(op, core_ndim, name):
    """SciPy's ``check_finite`` for device operand ``op`` (its last ``core_ndim`` axes a
    matrix or vector) through its own package: LinAlgError naming the batch index of the
    first matrix holding a NaN or an infinity (a read back from the device)."""
    if not op.size:
        return
    values = op.adapter.computable(op.obj)
    bad = ~array_namespace(values).isfinite(values)
    if not bool(bad.any()):
        return
    batch = tuple(op.shape[:len(op.shape) - core_ndim])
    # the first matrix with any (argmax of 0/1 flags: the first 1; torch has no bool argmax)
    flags = (bad.reshape(int(numpy.prod(batch)), -1).sum(-1) > 0) * 1
    first = int(flags.argmax()) if batch else 0
    index = tuple(int(i) for i in numpy.unravel_index(first, batch)) if batch else ()
    raise checks.not_finite_error(name, index)

"""SciPy's ``check_finite`` on the device, enqueued ahead of a call's work and waited for
after it is enqueued, so that the GPU never waits for the check.

:func:`enqueue` launches, for each dense operand (its matrices one after another, each in C
or column-major order), a kernel that flags its matrices holding a NaN or an infinity
(:func:`~accelmath.linalg._kernels.flag_nonfinite`), and the read back of the flags
(:func:`~accelmath._core.memory.read_back_later`); the :class:`Pending` check it returns
waits for them once the call's work is enqueued (the GPU busy with it meanwhile), and raises
LinAlgError naming the operand and the batch index of its first matrix flagged, as the check
before the work would have. Where an operand has another layout (a broadcast or strided
view), the call's operands are checked at once through their own package instead (a read
back of their own).
"""

import math

import numpy

from accelmath._core.layout import contiguous_strides
from accelmath._core.memory import read_back_later
from accelmath.linalg import _checks as checks
from accelmath.linalg import _kernels
from accelmath.linalg._operands import namespace

__all__ = ["enqueue", "on_device", "Pending", "check", "check_with_package"]


def enqueue(ctx, operands, names):
    """Enqueue the finiteness check of ``operands`` (each a stack of matrices: the device
    path's right-hand sides are (..., n, k)) named ``names`` (None: not checked) on the
    call's stream; ``names`` None checks none. Returns a :class:`Pending` check, or None
    where nothing is left to read back."""
    if names is None:
        return None
    checked = [(op, name) for op, name in zip(operands, names)
               if name is not None and op.size]
    if not checked:
        return None
    if not _kernel_reads([op for op, _ in checked]):
        # (all of them so, in order, so that the first bad operand is the one named)
        for op, name in checked:
            check_with_package(op, 2, name)
        return None
    entries = []  # (name, batch, flags per matrix, offset of the first)
    total = 0
    for op, name in checked:
        batch = tuple(op.shape[:-2])
        blocks = _kernels.nonfinite_blocks(op.shape[-2] * op.shape[-1])
        entries.append((name, batch, blocks, total))
        total += math.prod(batch) * blocks
    flags, flags_ptr = ctx.empty((total,), "int32")
    for (op, _), (_, batch, _, offset) in zip(checked, entries):
        _kernels.flag_nonfinite(op.ptr, op.shape[-2] * op.shape[-1], math.prod(batch),
                                op.dtype, flags_ptr + 4 * offset, ctx.stream, ctx.device_id)
    return Pending(flags, read_back_later(flags_ptr, total, numpy.int32, ctx.stream), entries)


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
    """A finiteness check enqueued by :func:`enqueue`: ``flags`` (the device array, kept
    until read), their read back ``later``, and per operand checked ``(name, batch, flags
    per matrix, offset of its first flag)``."""

    __slots__ = ("flags", "later", "entries")

    def __init__(self, flags, later, entries):
        self.flags, self.later, self.entries = flags, later, entries

    def check(self):
        """Wait for the flags and raise LinAlgError for the first operand (in the order
        given) holding a NaN or an infinity, naming its batch index."""
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
    bad = ~namespace(op.obj).isfinite(op.obj)
    if not bool(bad.any()):
        return
    batch = tuple(op.shape[:len(op.shape) - core_ndim])
    # the first matrix with any (argmax of 0/1 flags: the first 1; torch has no bool argmax)
    flags = (bad.reshape(int(numpy.prod(batch)), -1).sum(-1) > 0) * 1
    first = int(flags.argmax()) if batch else 0
    index = tuple(int(i) for i in numpy.unravel_index(first, batch)) if batch else ()
    raise checks.not_finite_error(name, index)

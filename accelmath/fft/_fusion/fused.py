"""Prologues and epilogues: Python functions fused before and after a transform.

A *prologue* is applied to each element of the input before the transform, an *epilogue* to
each element of the result after it (``prologue_args`` / ``epilogue_args``: further arrays,
broadcast against the element's array, and scalars). Both are traced once
(:mod:`accelmath.fusion`) and run as one element-wise pass: a fused kernel on the GPU, NumPy
on the host. Inside them :func:`accelmath.fusion.frequency` is the element's frequency: in an
epilogue, ``fftfreq`` of the transform's length along a transformed axis (``rfftfreq`` on
the halved axis of a half spectrum); in a prologue, ``fftfreq`` of the input's own extent
(before any cut or padding to ``n``/``s``), but on a c2r input's halved axis ``rfftfreq`` of
the output's length.

The normalization folds into the epilogue: the transform runs unscaled and the epilogue
receives each element times the norm's factor, so a scaled transform with an epilogue makes
one pass after the transform, not two.
"""

import contextlib
import functools

from accelmath._core.arguments import absent
from accelmath._core.call import stream_of
from accelmath._core.gpu.stream import resolve_stream
from accelmath._core.operand import wrap_named
from accelmath._core.plan import Call
from accelmath.errors import InvalidArgumentError
from accelmath.fft import _normalize as norms
from accelmath.fft._fusion import callbacks as _callback
from accelmath.fusion._elementwise import apply, arguments, check_out, traced, types_of
from accelmath.fusion._evaluate import Axes

__all__ = ["Fusion", "check_unused", "input_context", "lengths_of", "output_context",
           "run_epilogue"]


def lengths_of(call, shape):
    """``(axes, lengths)`` of a transform call on an input of ``shape``: the transformed axes
    and each one's transform length (a c2r transform's output length on its last axis)."""
    axes, s = norms.normalize_axes(shape, call.s, call.axes, unique=False,
                                   halved=call.kind == "c2r")
    if s is None:
        s = tuple(shape[a] for a in axes)
    if call.kind == "c2r":
        s = s[:-1] + (s[-1] if call.s is not None else 2 * (shape[axes[-1]] - 1),)
    return tuple(axes), s


def input_context(kind, shape, axes, lengths):
    """What index and frequency mean for a prologue: the input's axes (a c2r input's halved
    axis holds rfftfreq of the output's length)."""
    if kind != "c2r" or not axes:
        return Axes(shape)
    periods = list(shape)
    periods[axes[-1]] = lengths[-1]
    return Axes(shape, periods, half=(axes[-1],))


@functools.lru_cache(maxsize=1024)
def output_context(kind, shape, axes, lengths):
    """What index and frequency mean for an epilogue: fftfreq of each transformed axis's
    length (rfftfreq on an r2c result's halved axis). Remembered: a stateless call with an
    epilogue asks for it on every call."""
    periods = list(shape)
    if kind != "c2r":
        for a, n in zip(axes, lengths):
            periods[a] = n
    return Axes(shape, periods, half=(axes[-1],) if kind == "r2c" and axes else ())


def check_unused(prologue, prologue_args, epilogue, epilogue_args):
    """Refuse further arguments of a prologue or an epilogue that is not there."""
    if prologue is None and not absent(prologue_args):
        raise InvalidArgumentError("prologue_args given without a prologue")
    if epilogue is None and not absent(epilogue_args):
        raise InvalidArgumentError("epilogue_args given without an epilogue")


def run_epilogue(traced_fn, y, scale, args, context, out, stream, in_place=True):
    """The epilogue ``traced_fn`` over the transform's result ``y`` (an operand) with the
    norm's factor ``scale`` and the further operands and scalars ``args``: into ``out``,
    else in place where ``in_place`` allows, else into a new array."""
    target = None
    if out is not None:
        expression = traced_fn.expression(types_of([y, 1.0, *args]))
        target = check_out(out, tuple(y.shape), expression.dtype, y)
    result = apply(traced_fn, y, (scale,), args, context, stream, out=target,
                   in_place=in_place)
    return out if out is not None else result


class Fusion:
    """An FFT plan's prologue and epilogue: traced once, run around each execute.

    ``scales`` are the norm's factors per direction (forward, inverse) that the epilogue
    applies: the plan's own transform runs unscaled where the epilogue takes them, else they
    are 1.
    """

    def __init__(self, prologue, epilogue, kind, in_shape, out_shape, axes, scales,
                 prologue_args=(), epilogue_args=()):
        self.prologue = None if prologue is None else traced(prologue, "prologue")
        self.epilogue = None if epilogue is None else traced(epilogue, "epilogue", True)
        check_unused(self.prologue, prologue_args, self.epilogue, epilogue_args)
        # the arguments of an execute that gives none: their form checked now, their values
        # with each call's
        arguments(prologue_args, "prologue_args")
        arguments(epilogue_args, "epilogue_args")
        self.prologue_args, self.epilogue_args = prologue_args, epilogue_args
        axes = tuple(axes)
        lengths = tuple((out_shape if kind == "c2r" else in_shape)[a] for a in axes)
        self.input_context = input_context(kind, tuple(in_shape), axes, lengths)
        self.output_context = output_context(kind, tuple(out_shape), axes, lengths)
        self.scales = scales
        self.problem = None  # the _callback.Problem of the plan's transform, False: none

    def _prologue(self, plan, op, prologue_args, stream):
        """The prologue of operand ``op``, written in the plan's input layout (made on the
        stream the prologue runs on): an operand the plan takes."""
        args = arguments(prologue_args, "prologue_args")
        expression = self.prologue.expression(types_of([op, *args]))
        if expression.dtype.name != op.dtype:  # (the plan's operands' dtype: it takes these)
            raise InvalidArgumentError(
                f"the prologue returns {expression.dtype} values; the plan takes {op.dtype} "
                "operands (end it with .astype(...))")
        scope = contextlib.nullcontext()
        if op.on_device:
            scope = op.adapter.stream_scope(resolve_stream(stream, op), op.device_id)
        with scope:
            array, _ = op.adapter.empty_strided(tuple(op.shape), tuple(plan.in_strides),
                                                op.dtype, op.device_id)
        target = wrap_named(array, "the prologue's result")
        apply(self.prologue, op, (), args, self.input_context, stream, out=target,
              name="prologue")
        return target

    def execute(self, plan, call, x, out, direction, stream, prologue_args, epilogue_args):
        """Run ``plan``'s transform ``call`` of ``x`` with the prologue and epilogue: as
        separate passes, or where they apply and measure faster, as cuFFT callbacks."""
        if absent(prologue_args):
            prologue_args = self.prologue_args
        if absent(epilogue_args):
            epilogue_args = self.epilogue_args
        check_unused(self.prologue, prologue_args, self.epilogue, epilogue_args)
        inverse = direction == "inverse" or (direction is None and plan.kind == "c2r")
        if self.problem is None and plan.execution == "cuda":
            self.problem = _callback.problem(
                plan.kind, plan.axes, plan.in_shape, plan.in_strides, plan.out_shape,
                plan.out_strides, plan.in_dtype, plan.out_dtype, plan.conjugate,
                plan.device_id, plan._operand.package, self.input_context,
                self.output_context) or False
        if self.problem and (out is None or out is not x):
            prepared = _callback.prepare(
                self.problem, self.prologue, arguments(prologue_args, "prologue_args"),
                self.epilogue, arguments(epilogue_args, "epilogue_args"),
                self.scales[1 if inverse else 0], inverse)
            if prepared is not None and prepared is not _callback.PENDING:
                handle, _ = stream_of(stream, plan._current_stream)
                return _callback.choose(
                    prepared,
                    lambda: self._separate(plan, call, x, out, inverse, stream, prologue_args,
                                           epilogue_args),
                    lambda: plan.run(x, out, stream, Call(prepared.run, None, None)),
                    plan.device_id, handle)
        return self._separate(plan, call, x, out, inverse, stream, prologue_args,
                              epilogue_args)

    def _separate(self, plan, call, x, out, inverse, stream, prologue_args, epilogue_args):
        """The transform with the prologue and the epilogue as passes of their own."""
        if self.prologue is not None:
            x = self._prologue(plan, plan._checked(x), prologue_args, stream)
        if self.epilogue is None:
            return plan.run(x, out, stream, call)
        y = wrap_named(plan.run(x, None, stream, call), "the transform's result")
        return run_epilogue(self.epilogue, y, self.scales[1 if inverse else 0],
                            arguments(epilogue_args, "epilogue_args"), self.output_context,
                            out, stream)

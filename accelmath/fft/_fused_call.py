"""A stateless transform with a prologue or an epilogue (see :mod:`accelmath.fft._fused`):
what the public functions run where either is given."""

import math

from accelmath._core.operand import wrap_named
from accelmath.errors import InvalidArgumentError
from accelmath.fft import _normalize as norms
from accelmath.fft._fused import epilogue_out, input_context, lengths_of, output_context
from accelmath.fft._transform import read_operand, transform
from accelmath.fusion._elementwise import apply, arguments, traced

__all__ = ["fused_call"]


def fused_call(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args):
    """A stateless transform ``call`` of ``x`` with a prologue and/or an epilogue (see the
    module docstring)."""
    op = read_operand(x)
    norm = norms.check_norm(call.norm)
    axes, lengths, _ = lengths_of(call, tuple(op.shape))
    if prologue is not None:
        args = arguments(prologue_args, "prologue_args")
        x = apply(traced(prologue, "prologue"), op, (), args,
                   input_context(call.kind, tuple(op.shape), axes, lengths), stream,
                   name="prologue")
    elif prologue_args not in ((), None):
        raise InvalidArgumentError("prologue_args given without a prologue")
    if epilogue is None:
        if epilogue_args not in ((), None):
            raise InvalidArgumentError("epilogue_args given without an epilogue")
        return transform(call, x, out, stream)
    args = arguments(epilogue_args, "epilogue_args")
    scale = norms.scale_factor(norm, call.inverse, math.prod(lengths)) or 1.0
    unscaled = call._replace(norm="forward" if call.inverse else "backward")
    y = wrap_named(transform(unscaled, x, None, stream), "the transform's result")
    # (a transform over no axes gives its input back: an epilogue must not write there)
    own = y.obj is not x and y.obj is not op.obj
    target = None if out is None else epilogue_out(out, y, traced(epilogue, "epilogue", True),
                                                 args)
    result = apply(traced(epilogue, "epilogue", True), y, (scale,), args,
                    output_context(call.kind, tuple(y.shape), axes, lengths), stream,
                    out=target, in_place=own)
    return out if out is not None else result

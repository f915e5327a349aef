"""A stateless transform with a prologue or an epilogue (see :mod:`accelmath.fft._fused`):
what the public functions run where either is given."""

import math
from typing import NamedTuple

from accelmath._core.operand import wrap_named
from accelmath.fft import _normalize as norms
from accelmath.fft._fused import (check_unused, input_context, lengths_of, output_context,
                                  run_epilogue)
from accelmath.fft._transform import read_operand, transform
from accelmath.fusion._elementwise import apply, arguments, traced

__all__ = ["fused_call"]


class _Geometry(NamedTuple):
    """What a fused call of one transform record on inputs of one shape needs besides its
    arrays, made once: the unscaled record, the norm's factor, the prologue's index and
    frequency context, and the transform's kind, axes and lengths (for the epilogue's)."""

    unscaled: object
    scale: float
    input_context: object
    kind: str
    axes: tuple
    lengths: tuple


_geometries = {}  # (call, input shape) -> _Geometry, at most _LIMIT
_LIMIT = 1024


def _geometry(call, shape):
    key = (call, shape)
    try:
        found = _geometries.get(key)
    except TypeError:  # (an unhashable norm or axes: checked below, and refused)
        found, key = None, None
    if found is None:
        norm = norms.check_norm(call.norm)
        axes, lengths = lengths_of(call, shape)
        scale = norms.scale_factor(norm, call.inverse, math.prod(lengths)) or 1.0
        found = _Geometry(call._replace(norm="forward" if call.inverse else "backward"),
                          scale, input_context(call.kind, shape, axes, lengths), call.kind,
                          axes, lengths)
        if key is not None:
            if len(_geometries) >= _LIMIT:
                _geometries.clear()
            _geometries[key] = found
    return found


def fused_call(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args):
    """A stateless transform ``call`` of ``x`` with a prologue and/or an epilogue (see the
    module docstring)."""
    check_unused(prologue, prologue_args, epilogue, epilogue_args)
    op = read_operand(x)
    geometry = _geometry(call, tuple(op.shape))
    if prologue is not None:
        args = arguments(prologue_args, "prologue_args")
        x = apply(traced(prologue, "prologue"), op, (), args, geometry.input_context, stream,
                  name="prologue")
    if epilogue is None:
        return transform(call, x, out, stream)
    y = wrap_named(transform(geometry.unscaled, x, None, stream), "the transform's result")
    # (a transform over no axes gives its input back: an epilogue must not write there)
    own = y.obj is not x and y.obj is not op.obj
    context = output_context(geometry.kind, tuple(y.shape), geometry.axes, geometry.lengths)
    return run_epilogue(traced(epilogue, "epilogue", True), y, geometry.scale,
                        arguments(epilogue_args, "epilogue_args"), context, out, stream,
                        in_place=own)

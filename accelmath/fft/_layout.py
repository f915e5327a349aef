"""Express a strided multi-axis FFT as cuFFT advanced-layout calls (pure, CPU-testable).

cuFFT transforms up to three nested axes at once over one batch dimension:
element ``(b, i_0, ..., i_{r-1})`` sits at ``b * dist + stride * (i_{r-1} + embed[r-1] * (i_{r-2}
+ ...))``. :func:`plan_steps` splits the transform axes of an arbitrary strided layout into such
groups ("steps", run one after the other, the later ones in place on the output), turns the
remaining axes into the batch dimension plus, when they cannot be merged, a short loop of
pointer offsets, and returns None when the layout cannot be expressed without a copy.
"""

from dataclasses import dataclass
from itertools import product

from accelmath._core.gpu.kernels import merge_dims
from accelmath._core.layout import axis_order, contiguous_strides

__all__ = ["Step", "plan_steps", "scratch_layout", "output_layout", "MAX_LOOP"]

MAX_LOOP = 16  # more calls than this per step, and a copy to a simple layout is cheaper


@dataclass(frozen=True)
class Step:
    """One cuFFT call pattern: a rank <= 3 transform over one batch, possibly looped.

    ``n`` are the real-side lengths (cuFFT's convention); ``offsets`` are element offsets
    ``(source, destination)`` added to the base pointers, one cuFFT call each; ``src`` and
    ``dst`` name the buffers a step reads and writes: ``"in"`` (the plan's input, or for c2r
    its scratch copy), ``"out"``, or ``"tmp"`` (a dense scratch buffer laid out as
    :func:`scratch_layout` says, see ``plan_steps(scratch=True)``). ``engine`` is what runs
    it: ``"cufft"``, or ``"columns"`` for accelmath's column kernel
    (``accelmath.fft._kernels.columns``, which the executor may choose for c2c steps down
    columns).
    """

    kind: str
    n: tuple
    inembed: tuple
    istride: int
    idist: int
    onembed: tuple
    ostride: int
    odist: int
    batch: int
    offsets: tuple = ((0, 0),)
    src: str = "in"
    dst: str = "out"
    engine: str = "cufft"


def _nested(axes, strides, lengths):
    """The embeds of ``axes`` (slowest first) if they nest in this layout, else None."""
    embed = [lengths[axes[0]]]
    for outer, inner in zip(axes, axes[1:]):
        so, si = strides[outer], strides[inner]
        if si <= 0 or so % si or so // si < lengths[inner]:
            return None
        embed.append(so // si)
    if strides[axes[-1]] <= 0:
        return None
    return tuple(embed)


def _batch(axes, shape, istrides, ostrides, max_loop=MAX_LOOP):
    """Merge batch axes into (extent, istride, ostride) groups; pick one as cuFFT's batch and
    loop over the others. Returns (batch, idist, odist, offsets) or None."""
    groups = merge_dims(sorted(
        ((shape[a], istrides[a], ostrides[a]) for a in axes if shape[a] != 1),
        key=lambda d: -abs(d[1])))
    if not groups:
        return 1, 1, 1, ((0, 0),)
    main = max(range(len(groups)), key=lambda k: groups[k][0])
    extent, idist, odist = groups.pop(main)
    loops = 1
    for g in groups:
        loops *= g[0]
    if (max_loop is not None and loops > max_loop) or idist <= 0 or odist <= 0:
        return None
    offsets = tuple(
        (sum(i * g[1] for i, g in zip(idx, groups)), sum(i * g[2] for i, g in zip(idx, groups)))
        for idx in product(*(range(g[0]) for g in groups)))
    return extent, idist, odist, offsets


def _dense_with_axes_fastest(axes, shape, strides):
    """True for the layout the executor copies to when plan_steps gives up: dense, the other
    axes in their order in memory, then ``axes`` fastest in the order given (axes of length 1
    are ignored: their strides do not matter)."""
    others = sorted((a for a in range(len(shape)) if a not in axes), key=lambda a: -strides[a])
    step = 1
    for axis in reversed(others + list(axes)):
        if shape[axis] != 1:
            if strides[axis] != step:
                return False
            step *= shape[axis]
    return True


def _groups(axes, strides, halved, split):
    """Split transform axes, sorted slowest first by ``strides``, into runs of at most three;
    the halved axis (r2c/c2r) ends its run, and with ``split`` it is a run of its own."""
    order = sorted(axes, key=lambda a: -strides[a])
    runs, run = [], []
    for axis in order:
        if split and axis == halved and run:
            runs.append(run)
            run = []
        run.append(axis)
        if len(run) == 3 or axis == halved:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


def plan_steps(kind, axes, in_shape, in_strides, out_shape, out_strides, split=False,
               scratch=False):
    """cuFFT steps for transforming ``axes`` of the given layouts, or None if a copy is needed.

    Parameters
    ----------
    kind : {"c2c", "r2c", "c2r"}
        The transform; for r2c/c2r the last of ``axes`` is the halved one.
    axes : tuple of int
        Transformed axes, non-negative, distinct.
    in_shape, in_strides, out_shape, out_strides : tuple of int
        The layouts, strides in elements. For c2r without ``scratch``, the input layout is
        the scratch copy the plan makes (cuFFT overwrites a c2r input), which may be
        transformed in place.
    split : bool
        Give the halved axis of an r2c/c2r a call of its own (the other axes become c2c
        calls), as PyTorch does: for some sizes cuFFT runs that faster than one joint plan.
        Without it, such steps are still returned for layouts that no joint call can write
        (a transposed r2c output, as torch.fft returns).
    scratch : bool
        For transforms of several steps, through a dense scratch buffer (``"tmp"``, laid out
        as :func:`scratch_layout` says). r2c: the first step writes it and the second reads
        it and writes the output, rather than working in place there; for some output
        layouts (torch's transposed one) cuFFT runs that several times faster. Without it,
        such steps are still returned for r2c layouts that no steps in place can write.
        c2r: the c2c steps read the input itself (which they leave intact) into the scratch
        buffer and the c2r step reads that, so the input needs no scratch copy; only with
        ``scratch``.

    Returns
    -------
    list of Step or None
        No steps where there is nothing to transform: every transformed axis of length 1,
        or no elements at all (an empty batch).
    """
    if 0 in in_shape or 0 in out_shape:
        return []
    # Where the steps asked for cannot write the layout, wider ones may: the halved axis
    # alone, then (r2c) through the scratch buffer. Only then does the executor copy.
    options = [(split, scratch)]
    if kind != "c2c":
        options += [(True, scratch), (True, True)] if kind == "r2c" else [(True, scratch)]
    for split, scratch in dict.fromkeys(options):
        steps = _steps(kind, axes, in_shape, in_strides, out_shape, out_strides, split, scratch)
        if steps is not None:
            return steps
    return None


def scratch_layout(kind, axes, in_shape, in_strides, out_shape, out_strides):
    """``(shape, strides)`` of the ``"tmp"`` buffer of ``scratch`` steps, dense. r2c: the
    output's shape in the input's axis order; c2r: the input's shape with the halved axis
    fastest (where the c2r step reads it best), the others in the output's order."""
    if kind == "c2r":
        order = [a for a in axis_order(out_strides) if a != axes[-1]]
        return in_shape, contiguous_strides(in_shape, [*order, axes[-1]])
    return out_shape, contiguous_strides(out_shape, axis_order(in_strides))


def _steps(kind, axes, in_shape, in_strides, out_shape, out_strides, split, scratch=False):
    halved = axes[-1] if kind != "c2c" else None
    active = [a for a in axes if a == halved or in_shape[a] != 1 or out_shape[a] != 1]
    if not active:
        return []
    # A run that holds the halved axis is the r2c/c2r call; the others are c2c calls, run on
    # the output after an r2c, and on the scratch input before a c2r.
    runs = _groups(active, in_strides, halved, split)
    real_lengths = {a: (out_shape[a] if kind == "c2r" else in_shape[a]) for a in active}
    layouts = {"in": (in_shape, in_strides), "out": (out_shape, out_strides)}
    if scratch:
        if kind == "c2c" or len(runs) < 2:
            return None
        layouts["tmp"] = scratch_layout(kind, axes, in_shape, in_strides, out_shape, out_strides)
    if kind == "r2c":
        runs.sort(key=lambda run: halved not in run)
    elif kind == "c2r":
        runs.sort(key=lambda run: halved in run)
    # More than three axes and a batch can need many calls per step even in the executor's
    # dense fallback layout; a copy cannot help there, so loop rather than give up.
    max_loop = None if (_dense_with_axes_fastest(axes, in_shape, in_strides) and
                        _dense_with_axes_fastest(axes, out_shape, out_strides)) else MAX_LOOP
    steps = []
    for index, run in enumerate(runs):
        step_kind = kind if halved in run else "c2c"
        if kind == "c2r" and scratch:
            # input -> scratch, then in place there; the c2r call reads it
            src = "in" if index == 0 else "tmp"
            dst = "out" if step_kind == "c2r" else "tmp"
        elif kind == "c2r":
            # c2c runs go in place on the scratch input, then the c2r call writes the output.
            src, dst = "in", ("out" if step_kind == "c2r" else "in")
        elif scratch and index < 2:
            # input -> scratch, scratch -> output
            src, dst = ("in", "tmp") if index == 0 else ("tmp", "out")
        else:
            # the first call reads the input, the later ones work in place on the output.
            src, dst = ("in" if index == 0 else "out"), "out"
        src_shape, src_strides = layouts[src]
        dst_shape, dst_strides = layouts[dst]
        inembed = _nested(run, src_strides, src_shape)
        onembed = _nested(run, dst_strides, dst_shape)
        if inembed is None or onembed is None:
            return None
        others = [a for a in range(len(in_shape)) if a not in run]
        batch = _batch(others, src_shape, src_strides, dst_strides, max_loop)
        if batch is None:
            return None
        real_side = 0 if step_kind == "r2c" else 1 if step_kind == "c2r" else None
        if real_side is not None and any(pair[real_side] % 2 for pair in batch[3]):
            return None  # cuFFT takes real data aligned as its complex element: even offsets
        n = tuple(real_lengths[a] if a == halved else src_shape[a] for a in run)
        steps.append(Step(step_kind, n, inembed, src_strides[run[-1]], batch[1], onembed,
                          dst_strides[run[-1]], batch[2], batch[0], batch[3], src, dst))
    return steps


def output_layout(kind, axes, shape, strides, last_axis_size=None):
    """The output shape of a ``kind`` transform and its strides (dense, in the input's axis
    order, so that a transposed input needs no copy)."""
    out_shape = list(shape)
    if kind == "r2c":
        out_shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    elif kind == "c2r":
        out_shape[axes[-1]] = last_axis_size or 2 * (shape[axes[-1]] - 1)
    return tuple(out_shape), contiguous_strides(out_shape, axis_order(strides))

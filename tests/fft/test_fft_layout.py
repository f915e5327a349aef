"""plan_steps, checked without a GPU: a NumPy simulator runs its Steps as cuFFT would.

cuFFT's advanced layout puts element ``(b, i_0, ..., i_{r-1})`` of a call at
``base + b * dist + stride * (i_{r-1} + embed[r-1] * (i_{r-2} + ... + embed[1] * i_0))``; the
simulator gathers every call's input from a flat buffer that way, transforms it with numpy.fft
(unnormalized, as cuFFT), and scatters the result. Buffers are the flat memory of real NumPy
views (any axis order, steps, flips), and the result read back through the output view must
equal numpy.fft's transform of the input view. As in ``_cuda.CudaExecutor``: a c2r plan reads
a dense scratch copy of its input (in the output's axis order) whose c2c steps run in place,
unless its steps go through the scratch buffer (``scratch=True``, the input read as it is);
and when plan_steps returns None the executor copies to dense buffers with the transform axes
fastest, for which plan_steps must then succeed.
"""

import numpy as np
import pytest

from accelmath._core.layout import contiguous_strides, is_dense
from accelmath.fft._layout import MAX_LOOP, Step, output_layout, plan_steps, scratch_layout

REAL = {"c2c": np.complex128, "r2c": np.float64, "c2r": np.complex128}
RESULT = {"c2c": np.complex128, "r2c": np.complex128, "c2r": np.float64}


# --- the simulator -----------------------------------------------------------------------

class Buffer:
    """Flat memory with a base element (where element 0 of the array it holds lies)."""

    def __init__(self, flat, base):
        self.flat, self.base = flat, base

    @classmethod
    def of_view(cls, view, parent):
        base = (view.__array_interface__["data"][0]
                - parent.__array_interface__["data"][0]) // view.itemsize
        return cls(parent.reshape(-1).copy(), base)

    def read(self, shape, strides):
        """The array of ``shape`` at element ``strides`` from the base."""
        return self.flat[self.base + _offsets(shape, strides)]


def _offsets(shape, strides):
    grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    return sum((g * s for g, s in zip(grid, strides)), np.zeros(shape, np.int64))


def _logical(step):
    """(input shape, output shape) of one transform of ``step`` (cuFFT: n is real-side)."""
    half = (*step.n[:-1], step.n[-1] // 2 + 1)
    return {"c2c": (step.n, step.n), "r2c": (step.n, half), "c2r": (half, step.n)}[step.kind]


def _addresses(shape, embed, stride, dist, batch, start):
    """Flat addresses, shape (batch, prod(shape)), of one cuFFT call's elements."""
    assert stride > 0 and (batch == 1 or dist > 0), "cuFFT needs positive strides"
    for k in range(1, len(shape)):
        assert embed[k] >= shape[k], f"embed {embed} cannot hold {shape}"
    index = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    linear = index[0]
    for k in range(1, len(shape)):
        linear = linear * embed[k] + index[k]
    return start + np.arange(batch, dtype=np.int64)[:, None] * dist + stride * linear[None, :]


def simulate(steps, buffers, inverse):
    """Run ``steps`` on ``buffers`` ({"in": Buffer, "out": Buffer}) as cuFFT would."""
    for step in steps:
        assert isinstance(step, Step) and 1 <= len(step.n) <= 3 and step.batch >= 1
        src, dst = buffers[step.src], buffers[step.dst]
        in_shape, out_shape = _logical(step)
        axes = tuple(range(1, len(step.n) + 1))
        written = []
        for src_offset, dst_offset in step.offsets:
            a = _addresses(in_shape, step.inembed, step.istride, step.idist, step.batch,
                           src.base + src_offset)
            b = _addresses(out_shape, step.onembed, step.ostride, step.odist, step.batch,
                           dst.base + dst_offset)
            assert a.min() >= 0 and a.max() < src.flat.size, "read out of bounds"
            assert b.min() >= 0 and b.max() < dst.flat.size, "write out of bounds"
            assert np.unique(b).size == b.size, "one call writes an element twice"
            data = src.flat[a].reshape(step.batch, *in_shape)
            if step.kind == "r2c":
                result = np.fft.rfftn(data, axes=axes)
            elif step.kind == "c2r":
                result = np.fft.irfftn(data, s=step.n, axes=axes, norm="forward")
                src.flat[a] = np.nan  # a c2r call may overwrite its input
            elif inverse:
                result = np.fft.ifftn(data, axes=axes, norm="forward")
            else:
                result = np.fft.fftn(data, axes=axes)
            dst.flat[b.reshape(-1)] = result.reshape(-1)
            written.append(b.reshape(-1))
        written = np.concatenate(written)
        assert np.unique(written).size == written.size, "two calls of a step write one element"


def _axis_order(strides):
    # as accelmath.fft._cuda._axis_order: slowest first, stable for ties
    return sorted(range(len(strides)), key=lambda a: -abs(strides[a]))


def execute(kind, axes, x, out_view, out_parent, inverse=False, split=False, scratch=False):
    """Transform array view ``x`` into ``out_view`` as CudaExecutor does; return the result
    read back through ``out_view``'s layout, and the steps used."""
    x_view, x_parent = x
    in_shape, in_strides = x_view.shape, _strides(x_view)
    out_shape, out_strides = out_view.shape, _strides(out_view)
    buffers = {"in": Buffer.of_view(x_view, x_parent), "out": Buffer.of_view(out_view, out_parent)}
    buffers["out"].flat[:] = np.nan
    work_in, copy_out = (in_shape, in_strides), None
    if kind == "c2r" and not scratch:
        work_in = (in_shape, contiguous_strides(in_shape, _axis_order(out_strides)))
    steps = plan_steps(kind, axes, *work_in, out_shape, out_strides, split=split,
                       scratch=scratch)
    if scratch:
        tmp_shape, _ = scratch_layout(kind, axes, in_shape, in_strides, out_shape, out_strides)
        buffers["tmp"] = Buffer(np.full(max(1, int(np.prod(tmp_shape))), np.nan,
                                        REAL["c2c"] if kind == "c2r" else RESULT[kind]), 0)
    if steps is None:
        order = [a for a in _axis_order(in_strides) if a not in axes] + list(axes)
        work_in = (in_shape, contiguous_strides(in_shape, order))
        copy_out = (out_shape, contiguous_strides(out_shape, order))
        steps = plan_steps(kind, axes, *work_in, *copy_out)
        assert steps is not None, "plan_steps fails on the executor's dense fallback layout"
    if work_in[1] != in_strides:  # the executor's scratch copy of the input
        buffers["in"] = _dense(x_view, *work_in)
    keep = kind == "c2r" and scratch  # the steps read the input itself, which must stay
    original = buffers["in"].flat.copy() if keep else None
    target = buffers["out"] if copy_out is None else _dense(np.zeros(out_shape, RESULT[kind]),
                                                            *copy_out)
    buffers["out"] = target
    if not steps:  # every transform axis has length 1: the executor copies
        _write(target, out_shape, copy_out[1] if copy_out else out_strides,
               buffers["in"].read(*work_in))
    simulate(steps, buffers, inverse)
    if keep:
        np.testing.assert_array_equal(buffers["in"].flat, original, "the input was written")
    result = target.read(out_shape, copy_out[1] if copy_out else out_strides)
    return result, steps


def _strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def _dense(values, shape, strides):
    size = 1
    for extent in shape:
        size *= max(extent, 1)
    buffer = Buffer(np.full(size, np.nan, values.dtype), 0)
    _write(buffer, shape, strides, values)
    return buffer


def _write(buffer, shape, strides, values):
    buffer.flat[buffer.base + _offsets(shape, strides)] = values


def reference(kind, axes, x, out_shape, inverse=False):
    if kind == "r2c":
        return np.fft.rfftn(x, axes=axes)
    if kind == "c2r":
        return np.fft.irfftn(x, s=[out_shape[a] for a in axes], axes=axes, norm="forward")
    return np.fft.ifftn(x, axes=axes, norm="forward") if inverse else np.fft.fftn(x, axes=axes)


# --- random layouts ----------------------------------------------------------------------

def random_view(rng, shape, dtype, style="random"):
    """A view of ``shape`` into a larger C-contiguous parent: returns (view, parent).

    ``style``: "c" (contiguous), "f" (Fortran order), or "random" (axis order, steps, flips
    and gaps all random)."""
    ndim = len(shape)
    if style == "c":
        order, steps, flips = list(range(ndim)), [1] * ndim, [False] * ndim
    elif style == "f":
        order, steps, flips = list(range(ndim))[::-1], [1] * ndim, [False] * ndim
    else:
        order = list(rng.permutation(ndim))
        steps = [int(v) for v in rng.choice([1, 1, 1, 2, 3], ndim)]
        flips = [bool(v) for v in rng.random(ndim) < 0.2]
    # the parent holds the axes in ``order``, slowest first, each with room for its steps
    parent_shape = [shape[a] * steps[a] + int(rng.integers(0, 2)) if style == "random"
                    else shape[a] * steps[a] for a in order]
    parent = np.zeros(parent_shape, dtype)
    index = []
    for a in order:
        step = steps[a]
        if flips[a] and shape[a] > 0:
            index.append(slice((shape[a] - 1) * step, None, -step) if shape[a] > 1
                         else slice(0, 1))
        else:
            index.append(slice(0, shape[a] * step, step))
    view = parent[tuple(index)].transpose(np.argsort(order))
    assert view.shape == tuple(shape)
    values = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    view[...] = values
    return view, parent


def random_case(rng, kind, ndim, naxes, style, out_style):
    shape = [int(v) for v in rng.choice([1, 2, 3, 4, 5, 6, 7, 8], ndim)]
    axes = tuple(int(a) for a in rng.permutation(ndim)[:naxes])
    last_axis_size = None
    if kind == "c2r":
        last_axis_size = int(rng.integers(1, 9))
        shape[axes[-1]] = last_axis_size // 2 + 1
    x = random_view(rng, tuple(shape), REAL[kind], style)
    out_shape, default_strides = output_layout(kind, axes, x[0].shape, _strides(x[0]),
                                               last_axis_size)
    if out_style == "default":
        parent = np.zeros(max(1, int(np.prod(out_shape))), RESULT[kind])
        strides = np.array(default_strides) * parent.itemsize
        out_view = np.lib.stride_tricks.as_strided(parent, out_shape, strides)
        out = (out_view, parent)
    else:
        out = random_view(rng, out_shape, RESULT[kind], out_style)
    return axes, x, out


def check(kind, axes, x, out, inverse=False, split=False, scratch=False):
    inverse = inverse or kind == "c2r"  # a c2r plan runs its c2c steps inverse
    result, steps = execute(kind, axes, x, *out, inverse=inverse, split=split, scratch=scratch)
    expected = reference(kind, axes, x[0], out[0].shape, inverse)
    assert result.shape == expected.shape
    error = np.linalg.norm(result - expected)
    assert error <= 1e-10 * max(np.linalg.norm(expected), 1), (
        f"{kind} axes={axes} in={x[0].shape}/{_strides(x[0])} out={_strides(out[0])}: "
        f"steps {steps}, error {error}")
    return steps


# --- tests -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
@pytest.mark.parametrize("style", ["c", "f"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_dense_layouts_need_one_call(kind, style, ndim):
    rng = np.random.default_rng([ndim, len(style), len(kind)])
    shape = (6, 5, 4)[:ndim]
    # the halved axis (the last of axes) must be the fastest to share a call with the others
    axes = tuple(range(ndim)) if style == "c" else tuple(reversed(range(ndim)))
    x = random_view(rng, shape, REAL[kind], style)
    out_shape, out_strides = output_layout(kind, axes, shape, _strides(x[0]), None)
    out = random_view(rng, out_shape, RESULT[kind], style)
    steps = check(kind, axes, x, out)
    assert len(steps) == 1 and steps[0].offsets == ((0, 0),)


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
@pytest.mark.parametrize("seed", range(40))
def test_random_layouts(kind, seed):
    rng = np.random.default_rng([seed, len(kind), ord(kind[0])])
    ndim = int(rng.integers(1, 5))
    naxes = int(rng.integers(1, ndim + 1))
    style = str(rng.choice(["c", "f", "random", "random"]))
    out_style = str(rng.choice(["default", "default", "c", "random"]))
    axes, x, out = random_case(rng, kind, ndim, naxes, style, out_style)
    check(kind, axes, x, out, inverse=bool(rng.integers(2)) and kind == "c2c")


@pytest.mark.parametrize("kind", ["r2c", "c2r"])
@pytest.mark.parametrize("seed", range(30))
def test_split_halved_axis(kind, seed):
    """The candidate with the halved axis in a call of its own computes the same transform."""
    rng = np.random.default_rng([seed, 7, ord(kind[0])])
    ndim = int(rng.integers(2, 6))
    naxes = int(rng.integers(2, ndim + 1))
    style = str(rng.choice(["c", "f", "random"]))
    axes, x, out = random_case(rng, kind, ndim, naxes, style, "default")
    steps = check(kind, axes, x, out, split=True)
    work_in = (x[0].shape, _strides(x[0]))
    if kind == "c2r":
        work_in = (work_in[0], contiguous_strides(work_in[0], _axis_order(_strides(out[0]))))
    if plan_steps(kind, axes, *work_in, out[0].shape, _strides(out[0]), split=True):
        assert [len(s.n) for s in steps if s.kind == kind] == [1]


@pytest.mark.parametrize("kind", ["r2c", "c2r"])
@pytest.mark.parametrize("seed", range(30))
def test_through_scratch(kind, seed):
    """The candidates through a dense scratch buffer. r2c: the first step writes it, the
    second reads it into the output. c2r: the c2c steps read the input (left intact, with no
    copy) into it, the c2r step reads it into the output."""
    rng = np.random.default_rng([seed, 11 if kind == "r2c" else 12])
    ndim = int(rng.integers(2, 5))
    naxes = int(rng.integers(2, ndim + 1))
    style = str(rng.choice(["c", "f", "random"]))
    out_style = str(rng.choice(["default", "c", "f", "random"]))
    axes, x, out = random_case(rng, kind, ndim, naxes, style, out_style)
    layouts = (x[0].shape, _strides(x[0]), out[0].shape, _strides(out[0]))
    steps = plan_steps(kind, axes, *layouts, scratch=True)
    if steps is None:
        return  # the executor copies
    if kind == "r2c":
        default = plan_steps(kind, axes, *layouts)
        if any(step.dst == "tmp" for step in default):
            assert default == steps  # no steps in place can write this layout
    steps = check(kind, axes, x, out, scratch=True)
    if kind == "r2c":
        assert (steps[0].src, steps[0].dst) == ("in", "tmp")
        assert (steps[1].src, steps[1].dst) == ("tmp", "out")
        assert all((s.src, s.dst) == ("out", "out") for s in steps[2:])
    else:
        assert (steps[0].kind, steps[0].src, steps[0].dst) == ("c2c", "in", "tmp")
        assert all((s.src, s.dst) == ("tmp", "tmp") for s in steps[1:-1])
        assert (steps[-1].kind, steps[-1].src, steps[-1].dst) == ("c2r", "tmp", "out")


def test_scratch_layout_and_refusals():
    # torch's layout of rfft2 over (4096, 4096): transposed; the rows go to a dense buffer
    steps = plan_steps("r2c", (0, 1), (64, 64), (64, 1), (64, 33), (1, 64), split=True,
                       scratch=True)
    assert [(s.kind, s.n, s.src, s.dst) for s in steps] == [
        ("r2c", (64,), "in", "tmp"), ("c2c", (64,), "tmp", "out")]
    assert (steps[0].ostride, steps[0].odist) == (1, 33)
    assert (steps[1].istride, steps[1].idist, steps[1].ostride, steps[1].odist) == (33, 1, 1, 64)
    assert scratch_layout("r2c", (0, 1), (64, 64), (64, 1), (64, 33), (1, 64)) == (
        (64, 33), (33, 1))
    assert scratch_layout("r2c", (0, 1), (64, 64), (1, 64), (64, 33), (33, 1)) == (
        (64, 33), (1, 64))
    # its inverse into a C-order image: the columns, read in place, go to a C-order buffer,
    # whose rows the c2r step reads
    steps = plan_steps("c2r", (0, 1), (64, 33), (1, 64), (64, 64), (64, 1), split=True,
                       scratch=True)
    assert [(s.kind, s.n, s.src, s.dst) for s in steps] == [
        ("c2c", (64,), "in", "tmp"), ("c2r", (64,), "tmp", "out")]
    assert (steps[0].istride, steps[0].idist, steps[0].ostride, steps[0].odist) == (1, 64, 33, 1)
    assert (steps[1].istride, steps[1].idist, steps[1].ostride, steps[1].odist) == (1, 33, 1, 64)
    assert scratch_layout("c2r", (0, 1), (64, 33), (1, 64), (64, 64), (64, 1)) == (
        (64, 33), (33, 1))
    # one step, or a c2c transform: no scratch candidate
    assert plan_steps("r2c", (1,), (4, 8), (8, 1), (4, 5), (5, 1), scratch=True) is None
    assert plan_steps("c2r", (1,), (4, 5), (5, 1), (4, 8), (8, 1), scratch=True) is None
    assert plan_steps("c2c", (0, 1), (4, 8), (8, 1), (4, 8), (8, 1), split=True,
                      scratch=True) is None


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("naxes", [4, 5])
def test_four_and_five_axes_split_into_steps(kind, seed, naxes):
    rng = np.random.default_rng([seed, naxes, ord(kind[0])])
    ndim = naxes + int(rng.integers(0, 2))
    style = str(rng.choice(["c", "f", "random"]))
    axes, x, out = random_case(rng, kind, ndim, naxes, style, "default")
    steps = check(kind, axes, x, out)
    assert len(steps) >= 2 or any(x[0].shape[a] == 1 for a in axes)


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
def test_sliced_and_transposed_views(kind):
    rng = np.random.default_rng(7)
    parent = np.zeros((9, 14, 20), REAL[kind])
    parent[...] = rng.standard_normal(parent.shape)
    if kind == "c2r":
        view = parent[::2, 1:13:3, 2:18:2]  # (5, 4, 8): 8 points -> 14-point outputs
        axes, last = (0, 2), 14
    else:
        view = parent[1:8:2, ::-3, 3:17:2].transpose(2, 0, 1)  # (7, 4, 5), negative strides
        axes, last = (2, 0), None
    out_shape, out_strides = output_layout(kind, axes, view.shape, _strides(view), last)
    out_parent = np.zeros(int(np.prod(out_shape)), RESULT[kind])
    out_view = np.lib.stride_tricks.as_strided(
        out_parent, out_shape, np.array(out_strides) * out_parent.itemsize)
    check(kind, axes, (view, parent), (out_view, out_parent))


def test_batch_axes_merge_into_one_call():
    # a (4, 6, 8) C array, FFT over axis 2: axes 0 and 1 merge into a batch of 24
    x = random_view(np.random.default_rng(0), (4, 6, 8), np.complex128, "c")
    steps = plan_steps("c2c", (2,), (4, 6, 8), _strides(x[0]), (4, 6, 8), (48, 8, 1))
    assert steps == [Step("c2c", (8,), (8,), 1, 8, (8,), 1, 8, 24)]


def test_unmergeable_batch_axes_loop():
    # FFT over the middle axis: the outer and inner axes cannot merge, the shorter one loops
    rng = np.random.default_rng(1)
    x = random_view(rng, (3, 8, 10), np.complex128, "c")
    out = random_view(rng, (3, 8, 10), np.complex128, "c")
    steps = check("c2c", (1,), x, out)
    assert len(steps) == 1 and len(steps[0].offsets) == 3 and steps[0].batch == 10


def test_real_data_loops_only_at_even_offsets():
    # r2c over axis 1 of a C (48, 40, 5) array: the batch axes 0 and 2 cannot merge, and the
    # loop over axis 2 would start the real input at odd elements, which cuFFT cannot read
    shape, out_shape = (48, 40, 5), (48, 21, 5)
    steps = plan_steps("r2c", (1,), shape, (200, 5, 1), out_shape, (1, 48, 1008))
    assert steps is None
    # every other element of the inner axis: the loop starts at even offsets
    steps = plan_steps("r2c", (1,), (48, 40, 4), (320, 8, 2), (48, 21, 4), (1, 48, 1008))
    assert steps is not None and all(a % 2 == 0 for a, _ in steps[0].offsets)
    # c2r: the real output is the side that must start at even offsets
    steps = plan_steps("c2r", (1,), (48, 21, 5), (1, 48, 1008), shape, (200, 5, 1))
    assert steps is None


def test_too_many_loops_gives_none():
    shape = (MAX_LOOP + 1, 4, MAX_LOOP + 1)
    strides = contiguous_strides(shape)
    assert plan_steps("c2c", (1,), shape, strides, shape, strides) is None
    # ... and the executor's fallback (transform axes fastest) is then one call
    x = random_view(np.random.default_rng(2), shape, np.complex128, "c")
    out = random_view(np.random.default_rng(3), shape, np.complex128, "c")
    check("c2c", (1,), x, out)


def test_negative_stride_on_a_transform_axis_gives_none():
    shape, strides = (4, 8), (8, -1)
    assert plan_steps("c2c", (1,), shape, strides, shape, (8, 1)) is None
    assert plan_steps("r2c", (0, 1), shape, (8, 1), (4, 5), (5, -1)) is None


def test_axes_of_length_one_are_no_transform():
    assert plan_steps("c2c", (0, 2), (1, 5, 1), (5, 1, 1), (1, 5, 1), (5, 1, 1)) == []
    x = random_view(np.random.default_rng(4), (1, 5, 1), np.complex128, "random")
    out = random_view(np.random.default_rng(5), (1, 5, 1), np.complex128, "random")
    check("c2c", (0, 2), x, out)


@pytest.mark.parametrize("last_axis_size", [1, 2, 7, 8])
def test_c2r_halved_axis_of_length_one_or_two(last_axis_size):
    rng = np.random.default_rng(last_axis_size)
    shape = (3, last_axis_size // 2 + 1)
    x = random_view(rng, shape, np.complex128, "random")
    out = random_view(rng, (3, last_axis_size), np.float64, "random")
    check("c2r", (0, 1), x, out)


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
@pytest.mark.parametrize("seed", range(12))
def test_random_layouts_with_long_batches(kind, seed):
    # batch axes longer than MAX_LOOP between and around the transform axes
    rng = np.random.default_rng([seed, 99, ord(kind[0])])
    ndim = int(rng.integers(3, 6))
    axes, x, out = random_case(rng, kind, ndim, int(rng.integers(1, 3)), "random", "default")
    shape = list(x[0].shape)
    for axis in range(ndim):
        if axis not in axes and rng.random() < 0.5:
            shape[axis] = int(rng.integers(MAX_LOOP - 2, MAX_LOOP + 5))
    last = 2 * shape[axes[-1]] - 1 - int(rng.integers(2)) if kind == "c2r" else None
    x = random_view(rng, tuple(shape), REAL[kind], str(rng.choice(["c", "f", "random"])))
    out_shape, out_strides = output_layout(kind, axes, x[0].shape, _strides(x[0]), last)
    out = random_view(rng, out_shape, RESULT[kind], str(rng.choice(["c", "random"])))
    for step in check(kind, axes, x, out):
        assert len(step.offsets) <= MAX_LOOP


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
def test_four_axes_and_a_long_batch(kind):
    # Dense, transform axes fastest: the executor's fallback layout. No copy can help, so
    # plan_steps must loop (here 20 calls) rather than return None.
    rng = np.random.default_rng(11)
    shape = (20, 3, 3, 3, 21 if kind == "c2r" else 40)
    axes = (1, 2, 3, 4)
    x = random_view(rng, shape, REAL[kind], "c")
    out_shape, _ = output_layout(kind, axes, shape, _strides(x[0]), None)
    out = random_view(rng, out_shape, RESULT[kind], "c")
    steps = check(kind, axes, x, out)
    assert max(len(step.offsets) for step in steps) == 20


def test_c2r_input_longer_than_needed():
    # 6 complex points on the halved axis, 8 real outputs: cuFFT reads the first 5 of each row
    rng = np.random.default_rng(12)
    x = random_view(rng, (4, 6), np.complex128, "random")
    out = random_view(rng, (4, 8), np.float64, "c")
    check("c2r", (0, 1), x, out)


def test_is_dense():
    assert is_dense((16, 20), (20, 1)) and is_dense((16, 20), (1, 16))
    assert is_dense((3, 1, 4), (4, 99, 1)) and is_dense((2, 0, 3), (3, 3, 1))
    assert not is_dense((16, 20), (16, 1))  # overlapping
    assert not is_dense((16, 20), (40, 2))  # gaps
    assert not is_dense((16, 20), (-20, 1))


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
def test_nothing_to_transform_in_an_empty_batch(kind):
    out_last = {"c2c": 8, "r2c": 5, "c2r": 14}[kind]
    assert plan_steps(kind, (1,), (0, 8), (8, 1), (0, out_last), (out_last, 1)) == []

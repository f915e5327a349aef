"""spectral_filter: irfftn(fn(rfftn(x))) on the CPU against NumPy, the fused column pass's
code (generated and compiled with NVRTC, no GPU needed), and on the GPU the fused pass (forced,
and as the timed choice) against the CPU path in float64 on fresh random data."""

import numpy as np
import pytest
from closeness import assert_close
from device_arrays import on_device, to_host

import accelmath.fft as F
from accelmath.errors import InvalidArgumentError, TraceError
from accelmath.fft._kernels import columns as _columns
from accelmath.fft._fusion import filter as _filter
from accelmath.fusion import frequency, index, trace
from accelmath.fusion._cuda import element_source, element_struct


def _rng():
    return np.random.default_rng()


def _gaussian(y, width):
    return y * np.exp(-(frequency(-2) ** 2 + frequency(-1) ** 2) / width)


def _times(y, k, s):
    return y * k * s


def _low_rows(y):
    return np.where(index(-2) < 5, y, 0)


def _reference(x, fn, args, axes):
    """NumPy's own transforms, fn evaluated on NumPy arrays of the frequencies."""
    axes = tuple(a % x.ndim for a in axes) if axes is not None else tuple(range(x.ndim))
    y = np.fft.rfftn(x.astype(np.float64), axes=axes)
    return np.fft.irfftn(fn(y, *args), s=[x.shape[a] for a in axes], axes=axes)


# -- the CPU path ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axes", [((16, 12), None), ((3, 16, 12), (-2, -1)),
                                         ((8, 6, 10), None), ((9, 7), (0,)),
                                         ((4, 6, 5), (0, 2))])
def test_a_filter_is_the_inverse_of_fn_of_the_forward_transform(shape, axes):
    rng = _rng()
    x = rng.standard_normal(shape)
    k = rng.standard_normal(np.fft.rfftn(x, axes=axes).shape[-1])
    got = F.spectral_filter(x, _times, (k, 0.5), axes=axes)
    assert got.shape == x.shape and got.dtype == np.float64
    assert_close(got, _reference(x, lambda y, k, s: y * k * s, (k, 0.5), axes), 1e-12)


def test_fn_reads_frequencies_and_indices_of_the_half_spectrum():
    x = _rng().standard_normal((3, 16, 12))
    f0, f1 = np.fft.fftfreq(16)[:, None], np.fft.rfftfreq(12)[None, :]
    got = F.spectral_filter(x, _gaussian, (0.02,), axes=(-2, -1))
    assert_close(got, _reference(x, lambda y: y * np.exp(-(f0 ** 2 + f1 ** 2) / 0.02), (),
                                 (-2, -1)), 1e-12)
    rows = np.arange(16)[:, None]
    got = F.spectral_filter(x, _low_rows, axes=(-2, -1))
    assert_close(got, _reference(x, lambda y: np.where(rows < 5, y, 0), (), (-2, -1)), 1e-12)


def test_a_float32_image_stays_float32_with_float32_arguments():
    x = _rng().standard_normal((16, 16)).astype(np.float32)
    k = np.ones((16, 9), np.complex64)
    got = F.spectral_filter(x, _times, (k, np.float32(1)))
    assert got.dtype == np.float32
    assert_close(got, x, 1e-5)


def test_bad_calls_are_refused_naming_what_is_wrong():
    x = np.zeros((8, 8))
    with pytest.raises(InvalidArgumentError, match="fn="):
        F.spectral_filter(x, 3)
    with pytest.raises(InvalidArgumentError, match="broadcast"):
        F.spectral_filter(x, _times, (np.ones((8, 8)), 1.0))
    with pytest.raises(InvalidArgumentError, match="axis"):
        F.spectral_filter(x, _times, (1.0, 1.0), axes=(0, 5))
    with pytest.raises(TraceError):
        F.spectral_filter(x, lambda y: y if y else 0)


# -- the fused pass's code ------------------------------------------------------------------


def test_clear_cache_drops_the_c2r_plans_of_the_fused_passes():
    # (they live with the traced functions, outside the plan cache that clear_cache empties;
    # clear_cache reaches them through the filter module, loaded here)
    fused = object.__new__(_filter._Fused)
    fused.inverse = {"type": "a c2r plan"}
    _filter._made.add(fused)
    F.clear_cache()
    assert fused.inverse == {}

def test_the_element_struct_matches_the_function_it_is_passed_to():
    expression = trace(_times, np.complex64, np.float32, 2.0)
    text = element_source(expression, 3, 1)
    assert "struct Element { const float *in1; double s2; Dims d; };" in text
    struct = element_struct(expression, 3)
    assert [name for name, _ in struct._fields_] == ["in1", "s2", "d"]
    flat = element_source(trace(_times, np.complex128, np.float32, 2.0), 2, None, "complex64")
    assert "AM c64 accelmath_element(c128 element, long long flat_index, const Element &e)" in flat


class _Thread:
    def __init__(self):
        self.alive = True

    def is_alive(self):
        return self.alive


@pytest.mark.parametrize("stored", [(), (16,)])
def test_a_problem_compiles_its_widths_once_and_polls_their_threads(monkeypatch, stored):
    compiled, started = set(stored), {}
    asked = []

    def is_compiled(device_id, length, source, width):
        asked.append(width)
        return width in compiled

    def compile_soon(device_id, length, source, width):
        return started.setdefault(width, _Thread())

    monkeypatch.setattr(_columns, "compiled", is_compiled)
    monkeypatch.setattr(_columns, "compile_soon", compile_soon)
    expression = trace(_times, np.complex64, np.complex64, 2.0)
    fused = _filter._Fused(expression, (4096, 2049), 0, (4096, 4096), "source", ("key",), 0)
    if stored:  # (one width in the store: used, and no other compiled for it)
        assert fused.ready == (16,) and not fused.pending and not started
        return
    assert fused.ready == () and set(fused.pending) == {16, 8} == set(started)
    asked.clear()
    fused.poll()
    assert not asked and fused.ready == ()  # (compiling: a look at the threads only)
    compiled.add(8)
    started[8].alive = started[16].alive = False  # (8 compiled, 16 failed)
    fused.poll()
    assert fused.ready == (8,) and not fused.pending


@pytest.mark.parametrize("length", [_columns.LENGTHS[0], 4096, _columns.LENGTHS[-1]])
@pytest.mark.parametrize("fn, types, ndim, axis", [
    (_times, (np.complex64, np.complex64, 2.0), 2, 0),
    (_gaussian, (np.complex64, 0.5), 3, 1),
    (_low_rows, (np.complex64,), 3, 0)])
def test_the_fused_pass_compiles(length, fn, types, ndim, axis, monkeypatch, nvrtc):
    from accelmath._core.gpu.modules import CompileOptions, compile_cuda

    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    source = _columns.round_trip_source(element_source(trace(fn, *types), ndim, axis))
    options = CompileOptions(arch=(9, 0), extra=_columns.options(length))
    assert compile_cuda(source, options, "round_trip.cu")[:4] == b"\x7fELF"


# -- on the GPU -----------------------------------------------------------------------------

class _Runs(list):
    """The lengths of the fused passes run, and their ``widths``."""


@pytest.fixture
def fused_only(monkeypatch):
    """spectral_filter with its fused pass chosen and its kernels compiled before the call;
    the number of fused passes run."""
    runs = _Runs()
    launch = _columns.round_trip

    def counted(*args):
        runs.append(args[1])  # (the length)
        widths.append(args[2])
        return launch(*args)

    widths = []

    monkeypatch.setattr(_columns, "round_trip", counted)
    monkeypatch.setattr(_filter, "fastest", lambda key, describe, candidates, *rest: 0)
    original = _filter._fused_pass

    def compiled_first(op, traced_fn, values, axes):
        found = original(op, traced_fn, values, axes)
        if (found is None or found.pending) and op.dtype == "float32":
            from accelmath._core.gpu import modules
            modules.wait_for_compiles()
            found = original(op, traced_fn, values, axes)
        return found

    monkeypatch.setattr(_filter, "_fused_pass", compiled_first)
    runs.widths = widths
    return runs


GPU_CASES = [
    ((512, 512), None, _times, "k"),
    ((1024, 999), None, _times, "k"),  # (500 columns: a cluster's last ones idle)
    ((3, 512, 256), (-2, -1), _gaussian, 0.01),
    ((512, 16, 34), None, _times, "k"),  # (3-D: the columns span two axes)
    ((2048, 40), None, _low_rows, None),
    ((4096, 4096), None, _times, "k"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
@pytest.mark.parametrize("shape, axes, fn, extra", GPU_CASES)
def test_the_fused_pass_matches_float64(package, shape, axes, fn, extra, fused_only, request):
    xp = request.getfixturevalue("cp" if package == "cupy" else "torch_cuda")
    rng = _rng()
    x = rng.standard_normal(shape).astype(np.float32)
    if extra == "k":
        # (the spectrum of a real array: the product's DC and Nyquist columns stay what a
        # c2r transform takes; where they are not, C2R transforms differ by design)
        k = np.fft.rfftn(rng.standard_normal(shape), axes=axes).astype(np.complex64)
        k /= np.abs(k).max()
        args, host_args = (on_device(xp, k), 0.5), (k, 0.5)
    elif extra is None:
        args = host_args = ()
    else:
        args = host_args = (extra,)
    got = F.spectral_filter(on_device(xp, x), fn, args, axes=axes)
    assert fused_only, "the fused pass did not run"
    assert type(got) is type(on_device(xp, x)) and tuple(got.shape) == shape
    expected = F.spectral_filter(x.astype(np.float64), fn, host_args, axes=axes)
    assert_close(to_host(got), expected, 1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("length", _columns.LENGTHS)
def test_every_length_of_the_column_kernel(length, fused_only, cp):
    rng = _rng()
    x = rng.standard_normal((length, 48)).astype(np.float32)
    k = rng.standard_normal(25).astype(np.float32)
    got = F.spectral_filter(cp.asarray(x), _times, (cp.asarray(k), 2.0))
    assert fused_only == [length]
    assert_close(got.get(), _reference(x, lambda y, k, s: y * k * s, (k, 2.0), None), 1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("length", [2048, 4096])
def test_every_width_of_the_round_trip(length, fused_only, cp, monkeypatch):
    rng = _rng()
    x = rng.standard_normal((length, 70)).astype(np.float32)
    expected = _reference(x, lambda y: y * 3, (), None)
    for chosen, width in enumerate(_columns.widths(length)):
        monkeypatch.setattr(_filter, "fastest", lambda *args, i=chosen: i)
        got = F.spectral_filter(cp.asarray(x), lambda y: y * 3)
        assert fused_only.widths[-1] == width
        assert_close(got.get(), expected, 1e-5)


@pytest.mark.gpu
def test_the_timed_choice_gives_the_same_result_either_way(torch_cuda):
    rng = _rng()
    x = rng.standard_normal((2048, 2048)).astype(np.float32)
    t = torch_cuda.from_numpy(x).cuda()
    expected = _reference(x, lambda y: y * np.exp(-(np.fft.fftfreq(2048)[:, None] ** 2
                                                    + np.fft.rfftfreq(2048) ** 2) / 0.01),
                          (), None)
    for _ in range(3):  # (the kernel may still compile on the first: the other way runs)
        assert_close(F.spectral_filter(t, _gaussian, (0.01,)).cpu().numpy(), expected, 1e-5)


@pytest.mark.gpu
def test_a_float64_image_or_other_axes_take_the_separate_passes(fused_only, cp):
    rng = _rng()
    x = rng.standard_normal((512, 64))
    got = F.spectral_filter(cp.asarray(x), _times, (2.0, 0.5))
    assert got.dtype == cp.float64 and not fused_only
    assert_close(got.get(), x, 1e-12)
    x = x.astype(np.float32)
    got = F.spectral_filter(cp.asarray(x), _times, (2.0, 0.5), axes=(-1, -2))
    assert not fused_only
    assert_close(got.get(), x, 1e-5)


def _two_arrays(y, k, h):
    return y * k + h


@pytest.mark.parametrize("length", [1024, 4096, _columns.LENGTHS[-1]])
def test_a_round_trip_reading_two_arrays_ahead_compiles(length, monkeypatch, nvrtc):
    """An element of two further arrays (one float16) read ahead of each group's pass: the
    ``Loaded`` values, their loads and the element of them compile at every width."""
    from accelmath._core.gpu.modules import CompileOptions, compile_cuda

    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    expression = trace(_two_arrays, np.complex64, np.complex64, np.float16)
    element = element_source(expression, 2, 0)
    assert "struct Loaded { c64 a1; unsigned short a2; };" in element
    assert "AM Loaded accelmath_load(long long b, long long row, long long col" in element
    assert "h2f(l.a2)" in element
    source = _columns.round_trip_source(element)
    for width in _columns.widths(length):
        options = CompileOptions(arch=(9, 0), extra=_columns.options(length, width))
        assert compile_cuda(source, options, "round_trip.cu")[:4] == b"\x7fELF"


@pytest.mark.parametrize("length", [2048, 4096])
def test_the_narrow_round_trip_compiles(length, monkeypatch, nvrtc):
    from accelmath._core.gpu.modules import CompileOptions, compile_cuda

    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    assert _columns.widths(length) == (16, 8)
    source = _columns.round_trip_source(element_source(trace(_low_rows, np.complex64), 2, 0))
    options = CompileOptions(arch=(9, 0), extra=_columns.options(length, 8))
    assert compile_cuda(source, options, "round_trip.cu")[:4] == b"\x7fELF"

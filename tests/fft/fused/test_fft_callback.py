"""Prologues and epilogues as cuFFT LTO callbacks: the callbacks' code (generated and compiled
to LTO-IR with NVRTC, no GPU needed), which transforms take them, and on the GPU the callback
way (forced, and as the timed choice) against the CPU path in float64 on fresh random data."""

import ctypes

import numpy as np
import pytest
from closeness import assert_close
from device_arrays import on_device, to_host

import accelmath.fft as F
from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.errors import InvalidArgumentError
from accelmath.fft._fusion import callbacks as _callback
from accelmath.fusion import frequency, index, trace
from accelmath.fusion._callback import LOAD, STORE, callback_name, callback_source, table_struct

DTYPES = ("complex64", "complex128", "float32", "float64")


def _rng():
    return np.random.default_rng()


def _times(y, k, s):
    return y * k * s


def _shifted(y, k, s):
    return np.where(index(-1) < 3, y * k, y * s) + frequency(-1)


def _half(y):
    return y * 0.5


# -- the code, on the CPU -------------------------------------------------------------------

@pytest.mark.parametrize("role", [LOAD, STORE])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [_times, _shifted])
def test_every_callback_compiles_to_lto_ir(nvrtc, role, dtype, fn):
    expression = trace(fn, np.dtype(dtype), np.dtype(dtype), 2.0)
    source = callback_source(expression, 2, role, dtype)
    name = callback_name(role, dtype)
    assert "__device__ " in source and f" {name}(void *data, unsigned long long offset" in source
    assert 'extern "C"' not in source  # (cuFFT fails to plan an extern "C" callback)
    image = compile_cuda(source, CompileOptions(arch=(9, 0), lto=True), "callback.cu")
    assert len(image) > 0


def test_the_callback_names_are_cuffts_types():
    assert callback_name(LOAD, "complex64") == "cufftJITCallbackLoadComplex"
    assert callback_name(STORE, "float64") == "cufftJITCallbackStoreDoubleReal"
    with pytest.raises(InvalidArgumentError, match="no cuFFT"):
        callback_name(LOAD, "float16")


def test_a_callback_keeps_its_elements_dtype():
    with pytest.raises(InvalidArgumentError, match="computes complex64 from complex64"):
        callback_source(trace(lambda y: abs(y), np.complex64), 2, STORE, "complex64")


def test_the_table_struct_matches_the_source():
    expression = trace(_times, np.complex64, np.float32, 2.0)
    source = callback_source(expression, 3, LOAD, "complex64")
    assert "struct Table { Element e; const c64 *src; double post; };" in source
    assert "struct Element { const float *in1; double s2; Dims d; };" in source
    table = table_struct(expression, 3)
    assert [name for name, _ in table._fields_] == ["e", "src", "post"]
    assert [name for name, _ in table._fields_[0][1]._fields_] == ["in1", "s2", "d"]
    # Element: 8 (in1) + 8 (s2) + Dims(3 shape, 2x3 strides, 3 periods: 8 bytes each; 3 ints)
    assert ctypes.sizeof(table) == 16 + 12 * 8 + 3 * 4 + 4 + 8 + 8


def _problem(kind, in_shape, axes, in_dtype="complex64", out_dtype="complex64", **changes):
    ndim = len(in_shape)
    out_shape = list(in_shape)
    if kind == "r2c":
        out_shape[axes[-1]] = in_shape[axes[-1]] // 2 + 1
    elif kind == "c2r":
        out_shape[axes[-1]] = 2 * (in_shape[axes[-1]] - 1)
    args = dict(kind=kind, axes=axes, in_shape=in_shape,
                in_strides=tuple(int(np.prod(in_shape[a + 1:])) for a in range(ndim)),
                out_shape=tuple(out_shape),
                out_strides=tuple(int(np.prod(out_shape[a + 1:])) for a in range(ndim)),
                in_dtype=in_dtype, out_dtype=out_dtype, conjugate=False, device_id=0,
                package="cupy", in_context=None, out_context=None)
    args.update(changes)
    return _callback.problem(**args)


def test_callbacks_apply_to_one_plan_over_the_last_axes_in_c_order(monkeypatch):
    assert _problem("c2c", (4, 64), (1,)) is None  # (small: bound by host time)
    monkeypatch.setattr(_callback, "MIN_POINTS", 0)
    assert _problem("c2c", (4, 64), (1,)) is not None
    assert _problem("r2c", (8, 16, 16), (1, 2), "float32") is not None
    assert _problem("c2r", (16, 9), (0, 1), "complex128", "float64") is not None
    assert _problem("c2c", (4, 64), (0,)) is None  # (not the last axes)
    assert _problem("c2c", (2, 2, 4, 4), (0, 1, 2, 3)) is None  # (rank 4)
    assert _problem("c2c", (4, 64), (1,), in_strides=(1, 4)) is None  # (Fortran order)
    assert _problem("c2c", (4, 64), (1,), conjugate=True) is None
    assert _problem("c2c", (4, 64), (1,), "complex32", "complex32") is None
    assert _problem("c2c", (1, 64), (1,), in_strides=(7, 1)) is not None  # (one row: any)


class _Op:
    """An operand as the callback way reads it: its layout, address and dtype."""

    adapter = None

    def __init__(self, shape, strides, ptr=0, dtype="complex64"):
        self.shape, self.strides, self.ptr, self.dtype = shape, strides, ptr, dtype
        self.itemsize = np.dtype(dtype).itemsize


@pytest.mark.parametrize("shape, strides, span", [
    ((64,), (1,), 64), ((4, 64), (64, 1), 256), ((1, 64), (64, 1), 64),
    ((4, 1), (1, 1), None), ((64, 4), (1, 64), None), ((64,), (2,), None)])
def test_the_flat_form_takes_arrays_dense_over_their_trailing_axes(shape, strides, span):
    assert _callback._dense_span(_Op(shape, strides), (3, 4, 64)) == span


@pytest.mark.parametrize("k, flat", [(_Op((64,), (1,), 4096), True),
                                     (_Op((4, 1), (1, 1), 4096), False)])
def test_a_table_holds_a_calls_operands_in_the_form_of_its_source(k, flat):
    from accelmath.fusion._evaluate import Axes

    expression = trace(_times, np.complex64, np.complex64, 2.0)
    side = _callback.Side(STORE, expression, (4, 64), Axes((4, 64)), "complex64", flat)
    spans = _callback._spans((k, 0.5), (4, 64))
    assert (spans is not None) == flat
    table = side.table((k, 0.5), spans, 8192, 0.25)
    assert (table.e.in1, table.e.s2, table.src, table.post) == (4096, 0.5, 8192, 0.25)
    assert list(table.e.d.shape) == [4, 64]
    assert list(table.e.d.strides[1]) == ([64, 0] if flat else [1, 0])
    assert ("% (unsigned int)e.d.strides[1][0]" in side.source) == flat


def test_two_callbacks_of_one_plan_keep_their_own_functions():
    expression = trace(_times, np.complex64, np.complex64, 2.0)
    source = callback_source(expression, 2, LOAD, "complex64")
    assert source.count("namespace {") == 1  # (accelmath_element and its structs: internal)


# -- on the GPU -----------------------------------------------------------------------------

@pytest.fixture
def callbacks_only(monkeypatch):
    """The callback way chosen, its plans made before the call; the number of its runs."""
    runs = []
    run = _callback.CallbackPlan.run

    def counted(self, *args):
        runs.append(self)
        return run(self, *args)

    monkeypatch.setattr(_callback.CallbackPlan, "run", counted)
    monkeypatch.setattr(_callback, "background", False)
    monkeypatch.setattr(_callback, "MIN_POINTS", 0)
    monkeypatch.setattr(_callback, "fastest", lambda key, describe, ways, *rest: 1)
    F.clear_cache()
    yield runs
    F.clear_cache()


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
@pytest.mark.parametrize("dtype, tol", [("complex64", 2e-5), ("complex128", 1e-12)])
@pytest.mark.parametrize("shape, axes", [((4, 4096), (-1,)), ((3, 48, 40), (-2, -1)),
                                         ((6, 8, 10), None)])
def test_an_epilogue_as_a_store_callback_matches_float64(package, dtype, tol, shape, axes,
                                                         callbacks_only, request):
    xp = request.getfixturevalue("cp" if package == "cupy" else "torch_cuda")
    rng = _rng()
    x = _complex(rng, shape, dtype)
    for k in (_complex(rng, shape[-1:], dtype), _complex(rng, shape[-2:-1] + (1,), dtype)):
        # (a row: the flat form; a column, broadcast along the last axis: the strided one)
        got = F.fftn(on_device(xp, x), axes=axes, norm="ortho", epilogue=_times,
                     epilogue_args=(on_device(xp, k), 0.5))
        expected = np.fft.fftn(x.astype(np.complex128), axes=axes, norm="ortho") * k * 0.5
        assert_close(to_host(got), expected, tol)
    assert len(callbacks_only) == 2, "the callback way did not run"


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
@pytest.mark.parametrize("dtype, tol", [("float32", 2e-5), ("float64", 1e-12)])
def test_real_transforms_take_callbacks_both_ways(package, dtype, tol, callbacks_only,
                                                  request):
    xp = request.getfixturevalue("cp" if package == "cupy" else "torch_cuda")
    rng = _rng()
    x = rng.standard_normal((5, 64, 48)).astype(dtype)
    y = F.rfft2(on_device(xp, x), epilogue=_shifted, epilogue_args=(1.5, -2.0))
    f = np.fft.rfftfreq(48)
    spectrum = np.fft.rfft2(x.astype(np.float64))
    assert_close(to_host(y), np.where(np.arange(25) < 3, spectrum * 1.5, spectrum * -2.0) + f, tol)
    # c2r: the input is read by the load callback, never overwritten; a prologue
    k = np.fft.rfft2(rng.standard_normal((64, 48))).astype(to_host(y).dtype)
    spectrum_in = to_host(y).copy()
    z = F.irfft2(y, s=(64, 48), prologue=lambda v, k: v * k, prologue_args=(on_device(xp, k),))
    assert_close(to_host(y), spectrum_in, 0)
    assert_close(to_host(z), np.fft.irfft2(spectrum_in.astype(np.complex128) * k, s=(64, 48)),
                 tol * 10)
    # c2r with an epilogue alone: the identity load callback
    w = F.irfft2(y, s=(64, 48), epilogue=_half)
    assert_close(to_host(w), np.fft.irfft2(spectrum_in.astype(np.complex128), s=(64, 48)) * 0.5,
                 tol * 10)
    assert len(callbacks_only) == 3


@pytest.mark.gpu
def test_a_plan_takes_new_operands_and_scalars_without_a_new_callback_plan(cp,
                                                                          callbacks_only):
    rng = _rng()
    x = _complex(rng, (2, 1024), np.complex64)
    plan = F.FFT(cp.asarray(x), axes=(-1,), prologue=lambda v, s: v * s,
                 epilogue=lambda y, k: y * k)
    for scale in (1.0, -3.0, 0.25):
        k = _complex(rng, (2, 1024), np.complex64)
        got = plan.execute(prologue_args=(scale,), epilogue_args=(cp.asarray(k),))
        expected = np.fft.fft(x.astype(np.complex128) * scale, axis=-1) * k
        assert_close(got.get(), expected, 2e-5)
        inverse = plan.inverse(cp.asarray(x), prologue_args=(scale,),
                               epilogue_args=(cp.asarray(k),))
        assert_close(inverse.get(), np.fft.ifft(x.astype(np.complex128) * scale, axis=-1) * k,
                     2e-5)
    assert len(callbacks_only) == 6 and len(set(map(id, callbacks_only))) == 1


@pytest.mark.gpu
def test_the_timed_choice_gives_the_same_result_either_way(cp, monkeypatch):
    monkeypatch.setattr(_callback, "background", False)
    monkeypatch.setattr(_callback, "MIN_POINTS", 0)
    F.clear_cache()
    rng = _rng()
    x = _complex(rng, (4, 1 << 16), np.complex64)
    k = _complex(rng, (1 << 16,), np.complex64)
    for _ in range(3):
        got = F.fft(cp.asarray(x), epilogue=lambda y, k: y * k, epilogue_args=(cp.asarray(k),))
        assert_close(got.get(), np.fft.fft(x.astype(np.complex128)) * k, 2e-5)
    F.clear_cache()


@pytest.mark.gpu
@pytest.mark.parametrize("role", ["prologue", "epilogue"])
def test_a_call_timed_to_the_callback_way_keeps_taking_it(cp, monkeypatch, role):
    # the timing runs the separate way too: that run must not remember the call as separate
    runs, chosen = [], {}
    run = _callback.CallbackPlan.run

    def counted(self, *args):
        runs.append(self)
        return run(self, *args)

    def timed(key, describe, ways, *rest):  # (both ways run once, as the timing runs them)
        if key not in chosen:
            for way in ways.values():
                way()
            chosen[key] = 1
        return chosen[key]

    monkeypatch.setattr(_callback.CallbackPlan, "run", counted)
    monkeypatch.setattr(_callback, "background", False)
    monkeypatch.setattr(_callback, "MIN_POINTS", 0)
    monkeypatch.setattr(_callback, "fastest", timed)
    F.clear_cache()
    rng = _rng()
    x = _complex(rng, (2, 256), np.complex64)
    for _ in range(3):
        k = _complex(rng, (256,), np.complex64)
        got = F.fft(cp.asarray(x), **{role: _times, f"{role}_args": (cp.asarray(k), 2.0)})
        product = x.astype(np.complex128) * k * 2.0
        expected = (np.fft.fft(product) if role == "prologue"
                    else np.fft.fft(x.astype(np.complex128)) * k * 2.0)
        assert_close(got.get(), expected, 2e-5)
    assert len(runs) == 4  # (the timing's and the first call's, then one a call)
    F.clear_cache()


@pytest.mark.gpu
def test_transforms_that_callbacks_do_not_fit_run_the_separate_passes(cp, callbacks_only):
    rng = _rng()
    x = _complex(rng, (64, 8), np.complex64)
    got = F.fft(cp.asarray(x), axis=0, epilogue=_half)  # (not the last axis)
    assert_close(got.get(), np.fft.fft(x.astype(np.complex128), axis=0) * 0.5, 2e-5)
    got = F.fft(cp.asarray(x), n=16, epilogue=_half)  # (padded)
    assert_close(got.get(), np.fft.fft(x.astype(np.complex128), n=16) * 0.5, 2e-5)
    got = F.fft(cp.asarray(x), epilogue=lambda y: abs(y))  # (a real result)
    assert_close(got.get(), np.abs(np.fft.fft(x.astype(np.complex128))), 2e-5)
    assert not callbacks_only

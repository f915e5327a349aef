"""FFT plans with accelmath's mixed-radix kernels (``fft._kernels.mixed``) as a candidate for real
2-D transforms of awkward lengths, r2c and c2r: which steps they take (CPU), a plan's staleness
after a kernel it went without has compiled (CPU, the compiles faked), and on the GPU their results
against NumPy where the plan chooses them, a plan made on a new machine going without them until
they compile, and a subtractor's plans made again then."""

import functools
import threading
from types import SimpleNamespace

import numpy as np
import pytest
from closeness import assert_close
from fft_candidates import prefer_engine

import accelmath.fft as afft
from accelmath._core.gpu import modules
from accelmath._core.layout import contiguous_strides
from accelmath.fft._kernels import mixed as _mixed
from accelmath.fft._cuda import CudaExecutor
from accelmath.fft._layout import plan_steps

HOPPER_SHARED = 227 * 1024


def _step(shape, kind="r2c"):
    """The one step of a joint cuFFT plan of a real transform over the last two axes of
    C-ordered arrays, the real ones of ``shape``."""
    half = (*shape[:-1], shape[-1] // 2 + 1)
    source, result = (shape, half) if kind == "r2c" else (half, shape)
    axes = (len(shape) - 2, len(shape) - 1)
    steps = plan_steps(kind, axes, source, contiguous_strides(source), result,
                       contiguous_strides(result))
    assert len(steps) == 1
    return steps[0]


@pytest.mark.parametrize("shape,dtype,fits", [
    ((4088, 4088), "float64", True),
    ((7, 4088, 4088), "float64", True),      # a batch of planes one after another
    ((3, 1022, 1095), "float32", True),      # an odd width
    ((4096, 4096), "float64", False),        # cuFFT's own lengths
    ((4088, 4088), "float16", False),
    ((4088, 12300), "float64", False),       # rows longer than a block holds
    ((2, 131 * 2, 512), "float64", False),   # a prime factor above MAX_PRIME
])
@pytest.mark.parametrize("kind", ["r2c", "c2r"])
def test_the_steps_the_kernels_take(shape, dtype, fits, kind):
    assert _mixed.step_fits(_step(shape, kind), dtype, HOPPER_SHARED) is fits


def test_steps_the_kernels_do_not_take():
    step = _step((4088, 4088))
    assert not _mixed.step_fits(step, "float64", 48 * 1024)  # (too little shared memory)
    for change in ({"kind": "c2c"}, {"kind": "c2r"}, {"istride": 2}, {"onembed": (4088, 2048)},
                   {"n": (4088,), "inembed": (4088,), "onembed": (2045,)},
                   {"batch": 2, "idist": 4088 * 4090}):
        changed = SimpleNamespace(**{**vars(step), **change})
        assert not _mixed.step_fits(changed, "float64", HOPPER_SHARED), change


def test_a_stale_plan_is_one_whose_kernel_compiled_since(monkeypatch):
    """A kernel still compiling leaves the plan fresh; one compiled makes it stale; one whose
    compile ended with nothing is forgotten, asked about once."""
    gate = threading.Event()
    compiling = threading.Thread(target=gate.wait, daemon=True)
    compiling.start()
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    threads = {"compiling": compiling, "compiled": ended, "failed": ended}
    asked = []
    monkeypatch.setattr(modules, "compile_soon", lambda name: threads[name])
    monkeypatch.setattr(modules, "is_compiled",
                        lambda name: asked.append(name) or name == "compiled")
    try:
        executor = SimpleNamespace(waiting=frozenset({("compiling",), ("failed",)}))
        assert not CudaExecutor.stale(executor) and not CudaExecutor.stale(executor)
        assert executor.waiting == {("compiling",)} and asked == ["failed"]
        executor.waiting |= {("compiled",)}
        assert CudaExecutor.stale(executor)
    finally:
        gate.set()


def test_host_plans_are_never_stale():
    with afft.FFT(np.zeros((8, 8))) as plan:
        assert not plan.stale
    assert not plan.stale


def _compile_first(cp, shape, dtype):
    code = _mixed.step_code(*shape[-2:], dtype, cp.cuda.Device().id)
    modules.compile_soon(*code).join()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(3, 1022, 1022), (2044, 2044), (3, 1022, 1095),
                                   (2, 584, 2044)])
@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-13), ("float32", 2e-6)])
@pytest.mark.parametrize("kind", ["r2c", "c2r"])
def test_plans_that_choose_the_kernels(monkeypatch, shape, dtype, rtol, kind):
    cp = pytest.importorskip("cupy")
    _compile_first(cp, shape, dtype)
    timed = prefer_engine(monkeypatch, "mixed")
    rng = np.random.default_rng()
    if kind == "r2c":
        host = rng.standard_normal(shape).astype(dtype)
        expected = np.fft.rfft2(host.astype(np.float64))
        options = {}
    else:  # (a spectrum of no real array: the imaginary parts NumPy leaves out, left out)
        half = (*shape[:-1], shape[-1] // 2 + 1)
        host = (rng.standard_normal(half) + 1j * rng.standard_normal(half)).astype(
            np.result_type(dtype, np.complex64))
        expected = np.fft.irfft2(host.astype(np.complex128), s=shape[-2:])
        options = {"kind": "c2r", "last_axis_size": shape[-1]}
    x = cp.asarray(host)
    with afft.FFT(x, axes=(-2, -1), **options) as plan:
        assert [step.engine for step in plan._executor.steps] == ["mixed"]
        assert any(step.engine == "cufft" for steps in timed for step in steps)
        for _ in range(2):
            assert_close(cp.asnumpy(plan.execute()), expected, rtol)
        out = cp.empty_like(plan.execute())
        with cp.cuda.Stream():
            plan.execute(x, out=out)
            cp.cuda.get_current_stream().synchronize()
        assert_close(cp.asnumpy(out), expected, rtol)
        assert np.array_equal(cp.asnumpy(x), host)  # (a c2r reads a copy of its input)
    function = afft.rfft2 if kind == "r2c" else functools.partial(afft.irfft2, s=shape[-2:])
    assert_close(cp.asnumpy(function(x)), expected, rtol)


@pytest.mark.gpu
def test_a_c2r_free_to_overwrite_its_input(monkeypatch):
    cp = pytest.importorskip("cupy")
    _compile_first(cp, (1022, 1022), "float64")
    prefer_engine(monkeypatch, "mixed")
    host = np.fft.rfft2(np.random.default_rng().standard_normal((3, 1022, 1022)))
    x = cp.asarray(host)
    with afft.FFT(x, axes=(1, 2), kind="c2r", last_axis_size=1022, norm="ortho",
                  overwrite_input=True) as plan:
        assert plan._executor.copy_in is None
        assert [step.engine for step in plan._executor.steps] == ["mixed"]
        assert_close(cp.asnumpy(plan.execute()),
                     np.fft.irfft2(host, s=(1022, 1022), norm="ortho"), 1e-13)


@pytest.mark.gpu
def test_switched_off(monkeypatch):
    cp = pytest.importorskip("cupy")
    _compile_first(cp, (1022, 1022), "float64")
    timed = prefer_engine(monkeypatch, "mixed")
    monkeypatch.setenv("ACCELMATH_MIXED", "0")
    with afft.FFT(cp.zeros((3, 1022, 1022)), axes=(1, 2)) as plan:
        assert len(timed) > 1
        assert all(step.engine == "cufft" for steps in timed for step in steps)
        assert not plan.stale


def _new_machine(monkeypatch, tmp_path):
    """accelmath as on a new machine: an empty store, nothing compiled in this process."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    monkeypatch.delenv("ACCELMATH_MIXED", raising=False)
    monkeypatch.setattr(modules, "_soon", {})
    monkeypatch.setattr(modules, "_done", {})
    return cp


@pytest.mark.gpu
def test_a_plan_made_while_the_kernels_compile_goes_stale(monkeypatch, tmp_path):
    """With an empty store a plan goes without the kernels and they compile in the
    background; once they have, the plan is stale, and one made again has them among its
    candidates."""
    cp = _new_machine(monkeypatch, tmp_path)
    code = _mixed.step_code(1022, 1022, "float64", cp.cuda.Device().id)
    assert not modules.is_compiled(*code)
    x = cp.zeros((3, 1022, 1022))
    with afft.FFT(x, axes=(1, 2)) as plan:
        assert all(step.engine == "cufft" for step in plan._executor.steps)
        modules.compile_soon(*code).join()  # (the thread the plan started)
        assert plan.stale
        timed = prefer_engine(monkeypatch, "mixed")
        with afft.FFT(x, axes=(1, 2)) as again:
            assert not again.stale
            assert [step.engine for step in again._executor.steps] == ["mixed"]
            assert any(step.engine == "cufft" for steps in timed for step in steps)
    assert not plan.stale  # (freed)


@pytest.mark.gpu
def test_a_first_subtractor_makes_its_plans_again_once_the_kernels_compile(monkeypatch,
                                                                           tmp_path):
    from accelmath import subtraction

    cp = _new_machine(monkeypatch, tmp_path)
    pair = subtraction.synthetic_pair(1022, seed=5, stars=300, like=cp.empty(1))
    subtractor = subtraction.Subtractor(pair.reference.shape, like=pair.reference)
    spectra = subtractor._engine[1]
    first = spectra._forward
    code = _mixed.step_code(1022, 1022, "float64", cp.cuda.Device().id)
    modules.compile_soon(*code).join()
    expected = subtractor.subtract(pair.reference, pair.science, mask=pair.mask)
    assert spectra._forward is first  # (not before the first pair: they were just made)
    subtractor.subtract(pair.reference, pair.science, mask=pair.mask)
    assert spectra._forward is not first and not first.stale  # (made again, and freed)
    assert not spectra._forward.stale
    if spectra.direct:  # (the inverse plan: made only for the Fourier form)
        assert spectra._inverse is None
    else:
        assert not spectra._inverse.stale
    again = subtractor.subtract(pair.reference, pair.science, mask=pair.mask)
    assert_close(cp.asnumpy(again.difference), cp.asnumpy(expected.difference), 1e-12)
    subtractor.free()

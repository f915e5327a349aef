"""accelmath's column FFT kernel: its configurations, the steps it takes, its code (compiled
with NVRTC, no GPU needed) and, on a GPU, its results against numpy.fft in float64."""

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from closeness import assert_close
from fft_candidates import prefer_engine

import accelmath.fft as afft
from accelmath._core.gpu import modules
from accelmath.fft._kernels import columns as _columns
from accelmath.fft._layout import Step, plan_steps

N = 4096
H = N // 2 + 1


@pytest.mark.parametrize("length", _columns.LENGTHS)
def test_configurations_cover_the_transform(length):
    width, threads = _columns._config(length)
    m = length // 8
    rows = threads // width
    assert threads % 32 == 0 and (m // 8) % rows == 0 and (m // 8) // rows == 4
    assert m * width * 8 <= 64 * 1024 and width * 8 >= 32
    # a 32-point transform a thread, then ones of `rows` points, 32 / rows a thread
    assert m == 32 * rows and rows in (2, 4, 8, 16, 32)


@pytest.mark.parametrize("length", _columns.LENGTHS)
def test_the_kernel_compiles(length, monkeypatch, nvrtc):
    from accelmath._core.gpu.modules import CompileOptions, compile_cuda

    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # compile here, not from an earlier run's store
    options = CompileOptions(arch=(9, 0), extra=_columns.options(length))
    assert compile_cuda(_columns.SOURCE, options, "columns.cu")[:4] == b"\x7fELF"


def test_which_steps_it_fits():
    rows, columns = plan_steps("r2c", (0, 1), (N, N), (N, 1), (N, H), (H, 1), split=True)
    assert _columns.fits(columns, "complex64")
    assert not _columns.fits(columns, "complex128")
    assert not _columns.fits(rows, "complex64")
    # torch's transposed layout: the columns are contiguous
    steps = plan_steps("r2c", (0, 1), (N, N), (N, 1), (N, H), (1, N), split=True)
    assert not any(_columns.fits(step, "complex64") for step in steps)
    # a length it has no code for; rows narrower than the batch; two row pitches
    assert not _columns.fits(Step("c2c", (4088,), (4088,), H, 1, (4088,), H, 1, H), "complex64")
    assert not _columns.fits(Step("c2c", (N,), (N,), 100, 1, (N,), 100, 1, H), "complex64")
    assert not _columns.fits(Step("c2c", (N,), (N,), H + 1, 1, (N,), H, 1, H), "complex64")


def _cupy_on_hopper():
    cp = pytest.importorskip("cupy")
    if not _columns.available(cp.cuda.Device().id):
        pytest.skip("the column kernel needs compute capability 9.0")
    return cp


@pytest.mark.gpu
@pytest.mark.parametrize("length", _columns.LENGTHS)
@pytest.mark.parametrize("ncols,pitch", [(37, 37), (16, 40), (21, 50)])
@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("inverse", [False, True])
def test_kernel_against_numpy(length, ncols, pitch, in_place, inverse):
    cp = _cupy_on_hopper()
    rng = np.random.default_rng()
    host = rng.standard_normal((length, pitch)) + 1j * rng.standard_normal((length, pitch))
    src = cp.asarray(host.astype(np.complex64))
    dst = src if in_place else cp.full((length, pitch), np.nan, np.complex64)
    step = Step("c2c", (length,), (length,), pitch, 1, (length,), pitch, 1, ncols)
    assert _columns.fits(step, "complex64")
    stream = cp.cuda.get_current_stream()
    _columns.launcher(step, src.device.id)(src.data.ptr, dst.data.ptr, inverse, stream.ptr)
    stream.synchronize()
    data = host[:, :ncols].astype(np.complex64).astype(np.complex128)
    ref = np.fft.ifft(data, axis=0) * length if inverse else np.fft.fft(data, axis=0)
    got = cp.asnumpy(dst)
    assert_close(got[:, :ncols], ref, 2e-6)
    # nothing written past the columns
    untouched = got[:, ncols:]
    assert (np.array_equal(untouched, host[:, ncols:].astype(np.complex64)) if in_place
            else np.isnan(untouched).all())


def _prefer_columns(monkeypatch):
    """Make the executor choose a candidate with the column kernel whenever it has one."""
    timed = prefer_engine(monkeypatch, "columns")
    # compiled first, as a warm store has them: a plan does not wait for a compile
    device_id = pytest.importorskip("cupy").cuda.Device().id
    for thread in [_columns.compile_soon(device_id, n) for n in _columns.LENGTHS]:
        thread.join()
    return timed


@pytest.mark.gpu
@pytest.mark.parametrize("shape,axes", [((N, N), (0, 1)), ((3, 1024, 1024), (1, 2)),
                                        ((2048, 1500), (0, 1)), ((512, 6, 3000), (0, 2))])
def test_plans_that_choose_the_kernel(monkeypatch, shape, axes):
    """rfftn and irfftn plans whose c2c steps run on the kernel, against numpy.fft."""
    cp = _cupy_on_hopper()
    timed = _prefer_columns(monkeypatch)
    host = np.random.default_rng().standard_normal(shape).astype(np.float32)
    ref = np.fft.rfftn(host.astype(np.float64), axes=axes)
    with afft.FFT(cp.asarray(host), axes=axes) as fwd:
        assert any(step.engine == "columns" for step in fwd._executor.steps)
        assert len(timed) > 1
        for _ in range(2):
            spec = fwd.execute()
            assert_close(cp.asnumpy(spec), ref, 1e-6)
    before = cp.asnumpy(spec)
    with afft.FFT(spec, axes=axes, kind="c2r", last_axis_size=shape[axes[-1]]) as inv:
        assert any(step.engine == "columns" for step in inv._executor.steps)
        for _ in range(2):
            assert_close(cp.asnumpy(inv.execute()), host.astype(np.float64), 1e-6)
    assert np.array_equal(cp.asnumpy(spec), before)  # the input left intact


@pytest.mark.gpu
def test_switched_off(monkeypatch):
    cp = _cupy_on_hopper()
    timed = _prefer_columns(monkeypatch)
    monkeypatch.setenv("ACCELMATH_COLUMNS", "0")
    with afft.FFT(cp.zeros((N, N), np.float32)) as plan:
        assert len(timed) > 1
        assert not any(step.engine == "columns" for steps in timed for step in steps)
        assert all(step.engine == "cufft" for step in plan._executor.steps)


def _new_machine(monkeypatch, tmp_path):
    """CuPy on a Hopper GPU, and accelmath as on a new machine: an empty store, nothing
    compiled, set up or watched in this process. Returns cupy and the device id."""
    cp = _cupy_on_hopper()
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    monkeypatch.delenv("ACCELMATH_COLUMNS", raising=False)
    monkeypatch.setattr(modules, "_soon", {})
    monkeypatch.setattr(modules, "_done", {})
    monkeypatch.setattr(_columns, "_ready", set())
    return cp, cp.cuda.Device().id


@pytest.mark.gpu
def test_a_plan_does_not_wait_for_the_kernel_to_compile(monkeypatch, tmp_path):
    """With an empty store a plan goes without the kernel and compiles it in the background;
    the plans made after it time it."""
    cp, device_id = _new_machine(monkeypatch, tmp_path)
    assert not _columns.compiled(device_id, N)
    with afft.FFT(cp.zeros((N, N), np.float32)) as plan:
        assert all(step.engine == "cufft" for step in plan._executor.steps)
    _columns.compile_soon(device_id, N).join()  # (the thread the plan started)
    assert _columns.compiled(device_id, N)  # (and kept in the store)
    monkeypatch.setattr(modules, "_done", {})
    assert _columns.compiled(device_id, N)
    monkeypatch.setattr(modules, "_soon", {})  # (the store goes off next: compiled again)
    timed = _prefer_columns(monkeypatch)
    with afft.FFT(cp.zeros((N, N), np.float32)) as plan:
        assert any(step.engine == "columns" for step in plan._executor.steps)
        assert any(step.engine == "columns" for steps in timed for step in steps)


def test_a_cached_plan_made_without_the_kernel_goes_once_its_compiles_end(monkeypatch):
    from accelmath._core.dispatch import Dispatcher
    from accelmath.fft import _transform

    dispatcher = Dispatcher()
    monkeypatch.setattr(_transform, "dispatcher", dispatcher)
    gate = threading.Event()
    compiled = {1: True, 2: False}

    def compile_two():
        gate.wait()
        compiled[2] = True

    threads = {1: threading.Thread(target=lambda: None),  # (ended before the plan was cached)
               2: threading.Thread(target=compile_two, daemon=True)}
    for thread in threads.values():
        thread.start()
    # (a kernel's code: its source, options and name; here one word)
    monkeypatch.setattr(modules, "compile_soon", lambda n: threads[n])
    monkeypatch.setattr(modules, "is_compiled", lambda n: compiled[n])
    plan = SimpleNamespace(nbytes=0, _executor=SimpleNamespace(
        device_id=0, waiting=frozenset({(1,), (2,)})))
    other = SimpleNamespace(nbytes=0, _executor=None)
    assert _transform._went_without(plan) and not _transform._went_without(other)
    dispatcher.plan(0, "plan", lambda: plan, call=("call", "plan"))
    dispatcher.plan(0, "other", lambda: other, call=("call", "other"))
    _transform._drop_when_compiled(plan)
    time.sleep(0.05)
    assert dispatcher.recall(("call", "plan")) is plan  # (still compiling: kept)
    gate.set()
    deadline = time.monotonic() + 10
    while dispatcher.recall(("call", "plan")) is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dispatcher.recall(("call", "plan")) is None
    assert dispatcher.recall(("call", "other")) is other


def test_a_cached_plan_stays_where_its_compile_failed(monkeypatch):
    from accelmath._core.dispatch import Dispatcher
    from accelmath.fft import _transform

    dispatcher = Dispatcher()
    monkeypatch.setattr(_transform, "dispatcher", dispatcher)
    failed = threading.Thread(target=lambda: None)  # (ended, its kernel not compiled)
    failed.start()
    monkeypatch.setattr(modules, "compile_soon", lambda *code: failed)
    monkeypatch.setattr(modules, "is_compiled", lambda *code: False)
    plan = SimpleNamespace(nbytes=0, _executor=SimpleNamespace(
        device_id=0, waiting=frozenset({("source", "options", "name")})))
    dispatcher.plan(0, "plan", lambda: plan, call=("call", "plan"))
    _transform._drop_when_compiled(plan)
    _transform.wait_for_drops()
    assert dispatcher.recall(("call", "plan")) is plan  # (planning again gains nothing)


@pytest.mark.gpu
def test_stateless_plans_made_without_the_kernel_go_once_it_is_compiled(monkeypatch, tmp_path):
    """A stateless transform planned while the kernel compiles goes without it; once the
    compile ends the cache drops that plan, and the next call plans with the kernel."""
    from accelmath.fft import _transform

    cp, device_id = _new_machine(monkeypatch, tmp_path)
    # (the compile waits for the first checks: a compile that ends before the plan is made
    # drops it at once)
    gate, compile_quietly = threading.Event(), modules._compile_quietly
    monkeypatch.setattr(modules, "_compile_quietly",
                        lambda *args: gate.wait(60) and compile_quietly(*args))
    _transform.dispatcher.clear_cache()
    x = cp.zeros((N, N), np.float32)
    try:
        afft.rfft2(x)
        cache = _transform.dispatcher.cache(device_id)

        def plans():
            return [plan for plan, _ in list(cache._entries.values())]

        assert any(_transform._went_without(plan) for plan in plans())
        gate.set()
        _columns.compile_soon(device_id, N).join()  # (the thread the plan started)
        deadline = time.monotonic() + 10
        while (any(_transform._went_without(plan) for plan in plans())
               and time.monotonic() < deadline):
            time.sleep(0.01)
        assert not any(_transform._went_without(plan) for plan in plans())
        _prefer_columns(monkeypatch)
        afft.rfft2(x)
        assert any(step.engine == "columns" for plan in plans()
                   for step in plan._executor.steps)
    finally:
        gate.set()
        _transform.dispatcher.clear_cache()

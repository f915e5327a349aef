"""The subtract stage done directly on the GPU (:mod:`accelmath.subtraction._direct`): its
source compiles without a GPU for every configuration it takes, and on the GPU the difference
image equals the Fourier form's on fresh pairs, with a mask and without, for both
convolution directions, several kernel and background orders, and images that do not divide
into its tiles."""

import pytest
from closeness import assert_close
from device_arrays import on_device, to_host

from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.subtraction import Subtractor, _direct, _spectra, synthetic_pair
from accelmath.subtraction._model import terms


@pytest.mark.parametrize("half_width, order", [(9, 2), (4, 1), (12, 2), (6, 3)])
def test_the_source_compiles_without_a_gpu(nvrtc, half_width, order):
    kernel = _direct._kernel(half_width, terms(order),
                             _direct.rows_per_thread(half_width, (4088, 4088)))
    image = compile_cuda(kernel.source, CompileOptions(arch=(9, 0), extra=kernel.options),
                         "direct.cu")
    assert len(image) > 0


def test_the_coefficients_pass_in_the_order_the_kernel_reads_them():
    import ctypes

    import numpy as np

    kernels = np.arange(2 * 5 * 5, dtype=np.float64).reshape(2, 5, 5)
    taps = _direct._taps(kernels.transpose(0, 2, 1).copy().transpose(0, 2, 1))  # (any order)
    assert ctypes.sizeof(taps) == kernels.size * 8
    assert list(taps.k) == kernels.ravel().tolist()  # (k[t][a][b], as SOURCE reads it)
    assert type(_direct._taps(kernels)) is type(taps)  # (one struct type per size)


def test_the_configurations_it_takes():
    assert _direct.applies(9, terms(2), (4088, 4088))
    assert _direct.applies(9, terms(2), (80, 80))
    assert not _direct.applies(9, terms(2), (60, 4088))  # (a tile and its halo wrap twice)
    assert not _direct.applies(9, terms(6), (4088, 4088))  # (coefficients over 32 KB)
    assert not _direct.applies(40, terms(0), (4088, 4088))  # (the halo over shared memory)
    # the most rows per thread whose tile fits: shared memory, then the image
    assert _direct.rows_per_thread(9, (4088, 4088)) == 48
    assert _direct.rows_per_thread(12, (4088, 4088)) == 40
    assert _direct.rows_per_thread(9, (90, 4088)) == 40
    assert _direct.rows_per_thread(9, (80, 80)) == 32


@pytest.fixture(params=["cp", "torch_cuda"])
def package(request):
    return request.getfixturevalue(request.param)


@pytest.mark.gpu
@pytest.mark.parametrize("shape, options", [
    ((256, 240), dict(half_width=9, kernel_order=2, background_order=0)),
    ((200, 333), dict(half_width=4, kernel_order=1, background_order=2, constant_ratio=False)),
    ((130, 97), dict(half_width=6, kernel_order=3, background_order=1, convolve="science"))])
@pytest.mark.parametrize("masked", [True, False])
def test_the_direct_difference_equals_the_fourier_form(package, shape, options, masked,
                                                      monkeypatch):
    made = synthetic_pair(shape, stars=200)
    reference, science, mask = (on_device(package, a)
                                for a in (made.reference, made.science, made.mask))
    mask = mask if masked else None  # (without one, the Fourier form reuses the spectra)
    subtractor = Subtractor(shape, like=reference, **options)
    configuration = subtractor.configuration
    _direct.prepare(0, configuration.half_width, configuration.kernel_terms, shape, wait=True)
    runs = []
    direct = _direct.direct_difference
    monkeypatch.setattr(_direct, "direct_difference", lambda *a, **k: runs.append(1) or
                        direct(*a, **k))
    got = subtractor.subtract(reference, science, mask=mask)
    assert runs == [1], "the direct form did not run"
    monkeypatch.setattr(_spectra.Spectra, "direct_ready", lambda self: False)
    expected = subtractor.subtract(reference, science, mask=mask)
    assert runs == [1]
    assert_close(to_host(got.difference), to_host(expected.difference), 1e-12)
    assert_close(to_host(got.coefficients), to_host(expected.coefficients), 0)
    subtractor.free()


@pytest.mark.gpu
def test_a_subtractor_makes_its_inverse_plan_only_for_the_fourier_form(cp):
    """Where the direct kernel takes the configuration, the inverse transform's plan is not
    made with the subtractor, nor by a pair on the direct kernel; the Fourier form makes it
    when first needed."""
    shape = (150, 170)
    made = synthetic_pair(shape, stars=150)
    reference, science, mask = (cp.asarray(a) for a in (made.reference, made.science,
                                                        made.mask))
    subtractor = Subtractor(shape, like=reference)
    spectra = subtractor._engine[1]
    assert spectra.direct and spectra._inverse is None
    # (compiled now: a cold compile may take longer than a first pair waits for it)
    configuration = subtractor.configuration
    _direct.prepare(0, configuration.half_width, configuration.kernel_terms, shape, wait=True)
    direct = subtractor.subtract(reference, science, mask=mask)
    assert spectra._inverse is None
    spectra.direct_ready = lambda: False
    fourier = subtractor.subtract(reference, science, mask=mask)
    assert spectra._inverse is not None
    assert_close(cp.asnumpy(direct.difference), cp.asnumpy(fourier.difference), 1e-12)
    subtractor.free()


def test_a_spectra_without_the_direct_kernel_makes_its_inverse_plan_at_once():
    import numpy as np

    subtractor = Subtractor((64, 72), like=np.zeros(1))
    spectra = subtractor._engine[1]
    assert not spectra.direct and spectra._inverse is not None  # (the CPU: no direct kernel)
    subtractor.free()


def test_a_first_pair_waits_a_bounded_time_for_the_direct_kernel(monkeypatch):
    """The subtract stage waits for the direct kernel's compile at most DIRECT_WAIT_S, once;
    meanwhile the Fourier form runs."""
    import threading
    import time
    import types

    release = threading.Event()
    compiling = threading.Thread(target=release.wait)
    compiling.start()
    state = {"ready": False}
    monkeypatch.setattr(_direct, "ready", lambda *args: state["ready"])
    monkeypatch.setattr(_direct, "prepare", lambda *args: compiling)
    monkeypatch.setattr(_spectra, "DIRECT_WAIT_S", 0.05)
    spectra = _spectra.Spectra.__new__(_spectra.Spectra)
    spectra.direct, spectra._waited, spectra.kernel_terms = True, False, ((0, 0),)
    spectra.kind = types.SimpleNamespace(ordinal=0)
    spectra.configuration = types.SimpleNamespace(half_width=4, shape=(64, 64))
    try:
        start = time.perf_counter()
        assert not spectra.direct_ready()
        assert 0.05 <= time.perf_counter() - start < 1
        start = time.perf_counter()
        assert not spectra.direct_ready()  # (waited once)
        assert time.perf_counter() - start < 0.04
        state["ready"] = True
        assert spectra.direct_ready()
    finally:
        release.set()
        compiling.join()

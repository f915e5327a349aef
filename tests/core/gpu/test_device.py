"""Device and library queries: safe without a GPU, right with one."""

import ctypes
import importlib.metadata

import pytest

from accelmath._core.gpu import device
from accelmath.errors import InvalidArgumentError, NoDeviceError


def _has_distribution(name):
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _driver_directly():
    """``(device count, driver version)`` asked of the driver through plain ctypes, not
    through accelmath: ``(0, None)`` without one."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0, None
    version = ctypes.c_int()
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return 0, None
    count = ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0, (version.value // 1000, version.value % 1000 // 10)
    return count.value, (version.value // 1000, version.value % 1000 // 10)


def test_gpu_available_agrees_with_the_driver():
    count, _ = _driver_directly()
    assert device.gpu_available() is (count > 0)
    assert device.gpu_available() is (count > 0)  # (cached)
    reason = device.gpu_unavailable_reason()
    assert (reason is None) == (count > 0)
    if count == 0:
        assert isinstance(reason, str) and reason


def test_devices_are_the_driver_s():
    count, _ = _driver_directly()
    found = device.devices()
    assert [gpu["index"] for gpu in found] == list(range(count))


def test_driver_version_is_the_driver_s():
    assert device.driver_version() == _driver_directly()[1]


def test_library_info_has_every_library():
    info = device.library_info()
    assert list(info) == ["cufft", "cublas", "cublasLt", "cusolver", "nvrtc", "nvJitLink"]
    for name, entry in info.items():
        assert set(entry) == {"path", "version", "error"}, name
        if entry["path"] is None:
            assert entry["error"].startswith("not found: "), name
        if entry["version"] is None:
            assert isinstance(entry["error"], str), name


@pytest.mark.skipif(not _has_distribution("nvidia-cufft-cu12"), reason="the CUDA 12 wheels are not installed")
def test_library_info_reports_the_cuda12_wheels():
    info = device.library_info()
    sonames = {"cufft": "libcufft.so.11", "cublas": "libcublas.so.12", "cublasLt": "libcublasLt.so.12",
               "cusolver": "libcusolver.so.11", "nvrtc": "libnvrtc.so.12", "nvJitLink": "libnvJitLink.so.12"}
    for name, soname in sonames.items():
        assert info[name]["path"] is not None and info[name]["path"].endswith(soname), info[name]
    assert info["cufft"]["version"] // 1000 == 11  # cufftGetVersion: 11401 is cuFFT 11.4.1
    assert info["nvrtc"]["version"][0] == 12
    assert info["nvJitLink"]["version"][0] == 12


def test_library_info_reports_a_missing_library(monkeypatch):
    from accelmath.bindings import _loader
    from accelmath.errors import LibraryNotFoundError

    def fail(name):
        raise LibraryNotFoundError(name, "hidden by the test")

    monkeypatch.setattr(_loader, "load_library", fail)
    info = device.library_info()
    for entry in info.values():
        assert entry == {"path": None, "version": None, "error": "not found: hidden by the test"}


@pytest.mark.skipif(device.gpu_available(), reason="a GPU is present")
def test_gpu_queries_without_a_gpu_raise_no_device_error():
    with pytest.raises(NoDeviceError, match="no CUDA GPU is usable"):
        device.ensure_context(0)
    with pytest.raises(NoDeviceError, match="no CUDA GPU is usable"):
        device.compute_capability(0)
    assert device.devices() == []


@pytest.mark.gpu
def test_devices_on_a_gpu():
    found = device.devices()
    assert found, "gpu_available() is True but devices() is empty"
    for gpu in found:
        assert gpu["compute_capability"] >= (7, 0)
        assert gpu["compute_capability"] == device.compute_capability(gpu["index"])
        assert gpu["total_memory"] > 2**30
        assert gpu["multiprocessor_count"] > 0
        assert gpu["name"]
    assert device.driver_version() >= (12, 0)


@pytest.mark.gpu
def test_ensure_context_makes_the_primary_context_current():
    import ctypes

    from accelmath.bindings.driver import lib

    context = device.ensure_context(0)
    assert context
    assert device.ensure_context(0) == context  # already current: kept
    current = ctypes.c_void_p()
    lib.ctx_get_current(ctypes.byref(current))
    assert current.value == context


@pytest.mark.gpu
def test_ensure_context_rejects_a_bad_device_id():
    with pytest.raises(InvalidArgumentError, match="device_id=-1"):
        device.ensure_context(-1)
    with pytest.raises(InvalidArgumentError, match="is not a device of this machine"):
        device.compute_capability(len(device.devices()))


@pytest.mark.gpu
def test_ensure_context_on_a_new_thread_uses_the_primary_context():
    import threading

    main_context = device.ensure_context(0)
    results = []
    thread = threading.Thread(target=lambda: results.append(device.ensure_context(0)))
    thread.start()
    thread.join()
    assert results == [main_context]

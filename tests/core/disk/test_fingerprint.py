"""Fingerprints: what an autotune decision depends on besides the problem."""

import pytest

from accelmath._core.disk import fingerprint


def test_fingerprint_without_a_gpu(monkeypatch):
    from accelmath._core.gpu import device

    if device.gpu_available():
        pytest.skip("a GPU is present")
    monkeypatch.setattr(fingerprint, "_fingerprints", {})
    text = fingerprint.fingerprint(0, ("nvrtc", "no-such-library"))
    assert text.startswith("gpu=none; sm=none; driver=")
    assert text.endswith("; no-such-library=unknown")
    nvrtc = device.library_info()["nvrtc"]["version"]
    if nvrtc is not None:
        assert "; nvrtc={}.{};".format(*nvrtc) in text


def test_fingerprint_names_the_gpu_driver_and_versions(monkeypatch):
    from accelmath._core.gpu import device

    monkeypatch.setattr(fingerprint, "_fingerprints", {})
    monkeypatch.setattr(device, "devices", lambda: [
        {"index": 0, "name": "GPU A", "compute_capability": (8, 0)},
        {"index": 1, "name": "GPU B", "compute_capability": (9, 0)}])
    monkeypatch.setattr(device, "driver_version", lambda: (12, 4))
    monkeypatch.setattr("accelmath.bindings.cufft.version", lambda: 11401)
    assert fingerprint.fingerprint(1, ["cufft"]) == "gpu=GPU B; sm=9.0; driver=12.4; cufft=11401"
    assert fingerprint.fingerprint(0) == "gpu=GPU A; sm=8.0; driver=12.4"


def test_fingerprint_is_computed_once_and_never_raises(monkeypatch):
    from accelmath._core.gpu import device

    calls = []

    def broken():
        calls.append(1)
        raise RuntimeError("a broken driver")

    def failing_version():
        raise OSError("cannot load")

    monkeypatch.setattr(fingerprint, "_fingerprints", {})
    monkeypatch.setattr(device, "devices", broken)
    monkeypatch.setattr(device, "driver_version", lambda: None)
    monkeypatch.setattr("accelmath.bindings.cufft.version", failing_version)
    first = fingerprint.fingerprint(0, ("cufft",))
    assert first == "gpu=none; sm=none; driver=none; cufft=unavailable"
    assert fingerprint.fingerprint(0, ("cufft",)) is first and len(calls) == 1

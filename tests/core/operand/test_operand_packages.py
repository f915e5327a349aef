"""Which adapter reads each array package (accelmath._core.operand.packages): one per
package, made on first use; unknown and missing packages refused by name."""

import pytest

from accelmath._core.operand import packages
from accelmath.errors import UnsupportedOperandError


def test_one_adapter_per_package():
    first = packages.adapter_named("numpy")
    assert first is packages.adapter_named("numpy") and first.package == "numpy"
    assert packages.ADAPTERS["jaxlib"] == packages.ADAPTERS["jax"]  # (jax.Array's module)


def test_unknown_and_missing_packages_are_refused(monkeypatch):
    with pytest.raises(UnsupportedOperandError, match="no adapter for the array package 'xp'"):
        packages.adapter_named("xp")

    class Missing:
        def __init__(self):
            raise ImportError("gone")

    monkeypatch.setitem(packages.ADAPTERS, "gone", ("numpy_arrays", "Missing"))
    monkeypatch.setattr(packages.importlib.import_module(f"{packages.__package__}.numpy_arrays"),
                        "Missing", Missing, raising=False)
    with pytest.raises(UnsupportedOperandError, match="package 'gone' is not installed"):
        packages.adapter_named("gone")


def test_the_device_adapter_is_cupy_else_torch_else_numba_else_refused(monkeypatch):
    pytest.importorskip("torch")
    installed = set()
    real = packages.importlib.import_module

    def import_module(name, package=None):
        if name in ("cupy", "torch", "numba") and name not in installed:
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(packages.importlib, "import_module", import_module)
    monkeypatch.setattr(packages, "_device_adapter_cache", [])
    with pytest.raises(UnsupportedOperandError, match="needs CuPy, PyTorch or Numba"):
        packages.device_adapter()
    installed.add("torch")
    assert packages.device_adapter().package == "torch"

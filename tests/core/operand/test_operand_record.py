"""The Operand record, wrap_operand's dispatch by type, and the checks shared by domains."""

import ast
import importlib
from pathlib import Path

import numpy as np
import pytest

import accelmath._core.operand as operand_package
from accelmath._core.operand import (ITEMSIZE, Adapter, Operand, adapter_for, adapter_named,
                                     check_mutable, check_same_device, device_adapter,
                                     device_name, wrap_operand)
from accelmath._core.operand.record import ACCEPTED_KINDS
from accelmath.errors import (DeviceMismatchError, InvalidArgumentError,
                              UnsupportedOperandError)

REPO = Path(__file__).resolve().parents[3]


def _names_imported_from_the_package():
    """Every name some module of the repository imports from accelmath._core.operand."""
    names = set()
    for folder in ("accelmath", "tests", "benchmarks", "examples"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module == "accelmath._core.operand":
                    names |= {alias.name for alias in node.names}
    return sorted(names)


def test_every_name_importers_use_resolves():
    names = _names_imported_from_the_package()
    assert "wrap_operand" in names  # (the search itself works)
    missing = [name for name in names if not hasattr(operand_package, name)]
    assert not missing


def test_all_resolves_and_is_documented():
    for name in operand_package.__all__:
        obj = getattr(operand_package, name)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"


def test_no_domain_semantics_in_the_package():
    # _core names no library's semantics: the FFT layouts of array packages live in fft/
    folder = Path(operand_package.__file__).parent
    for path in folder.glob("*.py"):
        assert "fft" not in path.read_text().lower(), f"{path.name} mentions FFTs"


def test_modules_stay_small():
    folder = Path(operand_package.__file__).parent
    for path in folder.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 300, path.name


def test_operand_properties():
    adapter = adapter_named("numpy")
    op = Operand(None, 0, (4, 3), (6, 2), "complex64", 1, adapter)
    assert op.package == "numpy" and op.on_device and op.itemsize == 8 and op.size == 12
    assert op.keepalive is None and op.ready is None
    assert repr(op) == ("Operand(numpy, shape=(4, 3), strides=(6, 2), dtype=complex64, "
                        "device=cuda:1)")
    host = Operand(None, 0, (0, 5), (5, 1), "float32", None, adapter)
    assert not host.on_device and host.size == 0 and host.itemsize == 4


def test_itemsize_table():
    for name, size in ITEMSIZE.items():
        if name not in ("bfloat16", "complex32"):
            assert np.dtype(name).itemsize == size
    assert ITEMSIZE["bfloat16"] == 2 and ITEMSIZE["complex32"] == 4


def test_device_name():
    assert device_name(None) == "cpu"
    assert device_name(0) == "cuda:0"


def test_wait_ready_without_a_stream_to_wait_for():
    op = wrap_operand(np.zeros(3))
    op.wait_ready(None)  # nothing to wait for: no device work, no error
    assert op.ready is None


def test_an_operand_stands_for_itself():
    op = wrap_operand(np.zeros((2, 3)))
    assert wrap_operand(op) is op
    assert isinstance(adapter_for(op), Adapter)


def test_adapter_for_finds_one_adapter_per_type():
    a, b = np.zeros(3), np.ones((2, 2), np.float32)
    assert adapter_for(a) is adapter_for(b) is adapter_named("numpy")
    assert adapter_named("numpy") is adapter_named("numpy")


@pytest.mark.parametrize("x", [object(), "text", {"a": 1}, None, b"bytes", {1, 2}])
def test_objects_that_are_no_arrays(x):
    name = f"{type(x).__module__}.{type(x).__qualname__}"
    with pytest.raises(UnsupportedOperandError) as info:
        wrap_operand(x)
    message = str(info.value)
    assert f"unsupported operand of type {name}" in message
    assert ACCEPTED_KINDS in message and "memoryview, an object with __array__" in message
    with pytest.raises(UnsupportedOperandError, match="unsupported operand of type"):
        adapter_for(x)


def test_adapter_named_unknown_package():
    with pytest.raises(UnsupportedOperandError, match="'nosuchpackage'.*numpy, cupy, torch"):
        adapter_named("nosuchpackage")


def test_adapter_named_package_not_installed(monkeypatch):
    from accelmath._core.operand import packages

    def missing():
        raise ImportError("No module named 'cupy'")

    fake = type("FakeCupyAdapter", (), {"__init__": lambda self: missing()})
    monkeypatch.delitem(packages._adapters, "cupy", raising=False)
    module = importlib.import_module("accelmath._core.operand.cupy_arrays")
    monkeypatch.setattr(module, "CupyAdapter", fake)
    with pytest.raises(UnsupportedOperandError, match="package 'cupy' is not installed"):
        adapter_named("cupy")


def test_device_adapter_prefers_cupy_then_torch(monkeypatch):
    pytest.importorskip("torch")
    from accelmath._core.operand import packages

    real = importlib.import_module

    def without_cupy(name, *args):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real(name, *args)

    monkeypatch.setattr(packages, "_device_adapter_cache", [])
    monkeypatch.setattr(packages.importlib, "import_module", without_cupy)
    assert device_adapter().package == "torch"
    assert device_adapter() is adapter_named("torch")


def test_check_same_device():
    a = Operand(None, 0, (3,), (1,), "float64", None, adapter_named("numpy"))
    b = Operand(None, 8, (3,), (1,), "float64", 0, adapter_named("numpy"))
    check_same_device(a, a)
    with pytest.raises(DeviceMismatchError,
                       match="out is on cuda:0 but x is on cpu; all operands must be on one"):
        check_same_device(a, b, names=("x", "out"))
    with pytest.raises(DeviceMismatchError, match="operand 1 is on cuda:0 but operand 0"):
        check_same_device(a, b)


def test_check_mutable():
    check_mutable(np.zeros(3))
    with pytest.raises(UnsupportedOperandError,
                       match="unsupported operand of type builtins.list for out:.*array-like"):
        check_mutable([0.0, 0.0])
    with pytest.raises(UnsupportedOperandError, match="builtins.float for result"):
        check_mutable(1.0, name="result")
    with pytest.raises(UnsupportedOperandError, match="builtins.str"):
        check_mutable("text")


def test_check_mutable_refuses_immutable_packages():
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(InvalidArgumentError,
                       match="out is a jax array, which cannot be written in place"):
        check_mutable(jnp.zeros(3))

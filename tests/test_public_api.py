"""Every public name resolves and is documented; `import accelmath` stays light."""

import importlib
import inspect
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import accelmath

REPO = Path(__file__).resolve().parents[1]


def _modules():
    """Every Python module of the package: the public ones, the private ones (each holds an
    ``__all__`` and documents what it exports), and the bindings."""
    names = ["accelmath"]
    for module in pkgutil.walk_packages(accelmath.__path__, "accelmath."):
        if module.name.endswith("._hostcall"):  # the call shim: a C extension
            continue
        names.append(module.name)
    return names


MODULES = _modules()


def _public_objects(module):
    """Functions, classes and their methods that ``module`` defines or exports, by name."""
    names = set(module.__all__)
    names |= {name for name, obj in vars(module).items()
              if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
              and obj.__module__ == module.__name__}
    for name in sorted(names):
        obj = getattr(module, name, None)  # a missing name fails test_all_resolves
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield name, obj
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            for attribute, member in vars(obj).items():
                if not attribute.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                    yield f"{name}.{attribute}", member


@pytest.mark.parametrize("module_name", MODULES)
def test_all_resolves(module_name):
    module = importlib.import_module(module_name)
    assert isinstance(module.__all__, list | tuple), f"{module_name}.__all__ is not a list"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ names what it lacks: {missing}"


@pytest.mark.parametrize("module_name", MODULES)
def test_public_names_are_documented(module_name):
    module = importlib.import_module(module_name)
    assert inspect.getdoc(module), f"{module_name} has no docstring"
    # (an override may take the documentation of the method it overrides)
    undocumented = [name for name, obj in _public_objects(module) if not inspect.getdoc(obj)]
    assert not undocumented, f"{module_name}: no docstring for {undocumented}"


def test_import_is_light():
    # A fresh interpreter: importing accelmath, and the binding modules, loads no CUDA library
    # and imports no array package.
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import accelmath
        heavy = sorted(m for m in ("cupy", "torch", "jax") if m in sys.modules)
        assert not heavy, f"import accelmath imported {heavy}"
        import accelmath.bindings, accelmath._core.gpu.device, accelmath._core.disk.store, accelmath._core.gpu.modules
        for module in pkgutil.iter_modules(accelmath.bindings.__path__, "accelmath.bindings."):
            try:
                importlib.import_module(module.name)
            except ImportError:
                pass
        from accelmath.bindings import _loader
        assert not _loader._loaded, f"importing loaded {sorted(_loader._loaded)}"
        heavy = sorted(m for m in ("cupy", "torch", "jax") if m in sys.modules)
        assert not heavy, f"importing the bindings imported {heavy}"
        try:
            maps = open("/proc/self/maps").read()
        except OSError:
            maps = ""
        mapped = [lib for lib in ("libcuda.so", "libcufft", "libcublas", "libcusolver", "libnvrtc",
                                  "libnvJitLink") if lib in maps]
        assert not mapped, f"importing mapped {mapped}"
        print("light")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "light"


def test_device_queries_at_the_top():
    from accelmath._core.gpu import device

    for name in ("gpu_available", "gpu_unavailable_reason", "devices", "driver_version",
                 "library_info"):
        assert getattr(accelmath, name) is getattr(device, name)
        assert name in dir(accelmath)
    available = accelmath.gpu_available()
    assert (accelmath.gpu_unavailable_reason() is None) == available
    assert (len(accelmath.devices()) > 0) == available
    with pytest.raises(AttributeError, match="no attribute 'gpu'"):
        accelmath.gpu

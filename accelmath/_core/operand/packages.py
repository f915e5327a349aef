"""Which adapter reads each array package: one per package, made on first use.

The adapter modules import the base class, which asks this module for the device adapter;
so the table names them, and they are imported when a package is first seen.
"""

import importlib

from accelmath.errors import UnsupportedOperandError

__all__ = ["ADAPTERS", "adapter_named", "array_namespace", "device_adapter"]

# package (the top-level module of its array type) -> (module in accelmath._core.operand,
# adapter class)
ADAPTERS = {
    "numpy": ("numpy_arrays", "NumpyAdapter"),
    "cupy": ("cupy_arrays", "CupyAdapter"),
    "torch": ("torch_tensors", "TorchAdapter"),
    "jax": ("jax_arrays", "JaxAdapter"),
    "jaxlib": ("jax_arrays", "JaxAdapter"),
    "numba": ("numba_arrays", "NumbaAdapter"),
    "numba_cuda": ("numba_arrays", "NumbaAdapter"),  # (numba-cuda's own module path)
}

# the packages that allocate device results for those that cannot, the first installed one
_DEVICE_PACKAGES = ("cupy", "torch", "numba")

_adapters = {}
_device_adapter_cache = []


def adapter_named(package):
    """The adapter of an array package of :data:`ADAPTERS` (one per package).

    Raises
    ------
    UnsupportedOperandError
        If the package is not installed, or is not one of :data:`ADAPTERS`.

    Examples
    --------
    >>> from accelmath._core.operand import adapter_named
    >>> adapter_named("numpy").package
    'numpy'
    """
    adapter = _adapters.get(package)
    if adapter is None:
        if package not in ADAPTERS:
            raise UnsupportedOperandError(
                f"no adapter for the array package {package!r}; accelmath has adapters for "
                f"{', '.join(ADAPTERS)}")
        module, name = ADAPTERS[package]
        cls = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        try:
            adapter = _adapters[package] = cls()
        except ImportError:
            raise UnsupportedOperandError(f"package {package!r} is not installed") from None
    return adapter


def device_adapter():
    """The adapter that allocates device results for the packages that cannot (CuPy when
    installed, else PyTorch, else Numba).

    Raises
    ------
    UnsupportedOperandError
        If none of them is installed.
    """
    if not _device_adapter_cache:
        for package in _DEVICE_PACKAGES:
            try:
                importlib.import_module(package)
                adapter = adapter_named(package)
            except (ImportError, UnsupportedOperandError):  # (numba without numba.cuda)
                continue
            _device_adapter_cache.append(adapter)
            break
        else:
            raise UnsupportedOperandError(
                "allocating a device result for this operand needs CuPy, PyTorch or Numba "
                "(numba-cuda) installed")
    return _device_adapter_cache[0]


def array_namespace(x):
    """The array module of array ``x``: numpy, cupy, torch or jax.numpy (its package's
    top-level module; JAX's arrays come from ``jaxlib``).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand import array_namespace
    >>> array_namespace(np.zeros(2)).__name__
    'numpy'
    """
    package = type(x).__module__.partition(".")[0]
    return importlib.import_module("jax.numpy" if package in ("jax", "jaxlib") else package)

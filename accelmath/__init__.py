"""accelmath: NVIDIA's math libraries (cuFFT, cuBLAS/cuBLASLt, cuSOLVER) as first-class Python.

Any array in (NumPy, CuPy, PyTorch, JAX, or anything with ``__dlpack__`` or
``__cuda_array_interface__``), the same kind out. Subpackages load on first use, and importing
accelmath loads no CUDA library and no array package.
"""

import importlib

from accelmath import errors
from accelmath._version import __version__

__all__ = ["__version__", "errors", "Resource", "fft", "linalg", "fusion", "subtraction",
           "gpu_available", "gpu_unavailable_reason", "devices", "driver_version",
           "library_info"]

_SUBMODULES = ("fft", "linalg", "fusion", "subtraction")
# what this machine offers (accelmath._core.gpu.device), imported on first use: the driver is
# probed when one of them is called, never at import
_DEVICE_QUERIES = ("gpu_available", "gpu_unavailable_reason", "devices", "driver_version",
                   "library_info")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"accelmath.{name}")
    if name in _DEVICE_QUERIES:
        return getattr(importlib.import_module("accelmath._core.gpu.device"), name)
    if name == "Resource":  # (the base of objects that hold device resources)
        return importlib.import_module("accelmath._core.lifetime").Resource
    raise AttributeError(f"module 'accelmath' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_DEVICE_QUERIES) | {"Resource"})

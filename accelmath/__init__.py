"""accelmath: NVIDIA's math libraries (cuFFT, cuBLAS/cuBLASLt, cuSOLVER) as first-class Python.

Any array in (NumPy, CuPy, PyTorch, JAX, or anything with ``__dlpack__`` or
``__cuda_array_interface__``), the same kind out. Subpackages load on first use, and importing
accelmath loads no CUDA library and no array package.
"""

import importlib

from accelmath import errors
from accelmath._version import __version__

__all__ = ["__version__", "errors", "fft", "linalg", "fusion", "subtraction"]

_SUBMODULES = ("fft", "linalg", "fusion", "subtraction")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"accelmath.{name}")
    raise AttributeError(f"module 'accelmath' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))

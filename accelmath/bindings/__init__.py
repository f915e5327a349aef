"""Thin ctypes bindings to the CUDA libraries, one module per library.

Modules: :mod:`~accelmath.bindings.cufft`, :mod:`~accelmath.bindings.cublas`,
:mod:`~accelmath.bindings.cublaslt`, :mod:`~accelmath.bindings.cusolver`,
:mod:`~accelmath.bindings.nvrtc`, :mod:`~accelmath.bindings.nvjitlink` and
:mod:`~accelmath.bindings.driver`. Importing a module loads nothing; a library is loaded on
the first call of one of its functions.
"""

MODULES = ("cufft", "cublas", "cublaslt", "cusolver", "nvrtc", "nvjitlink", "driver")

#: The CUDA libraries accelmath uses, by cuda-pathfinder name, and the module of this package
#: whose ``version()`` reports each.
LIBRARIES = {
    "cufft": "cufft",
    "cublas": "cublas",
    "cublasLt": "cublaslt",
    "cusolver": "cusolver",
    "nvrtc": "nvrtc",
    "nvJitLink": "nvjitlink",
}

__all__ = ["MODULES", "LIBRARIES"]

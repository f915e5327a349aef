"""Thin ctypes bindings to the CUDA libraries, one module per library.

Modules: :mod:`~accelmath.bindings.cufft`, :mod:`~accelmath.bindings.cublas`,
:mod:`~accelmath.bindings.cublaslt`, :mod:`~accelmath.bindings.cusolver`,
:mod:`~accelmath.bindings.nvrtc`, :mod:`~accelmath.bindings.nvjitlink` and
:mod:`~accelmath.bindings.driver`. Importing a module loads nothing; a library is loaded on
the first call of one of its functions.
"""

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

#: The binding modules of this package: one per library, and the driver's.
MODULES = (*LIBRARIES.values(), "driver")

__all__ = ["MODULES", "LIBRARIES"]

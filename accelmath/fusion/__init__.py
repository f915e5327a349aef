"""accelmath.fusion: kernels of your own, launched on any package's arrays.

:class:`RawKernel` compiles a CUDA C++ kernel once per device (NVRTC; the result kept in the
on-disk store, so a new process loads it) and launches it on CuPy, PyTorch, JAX or any
``__cuda_array_interface__`` / ``__dlpack__`` arrays, on the caller's stream. Tracing
ordinary Python functions into fused kernels, cuFFT callbacks and cuBLASLt epilogues is to
come.
"""

from accelmath.fusion._raw import RawKernel

__all__ = ["RawKernel"]

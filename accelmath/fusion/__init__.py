"""accelmath.fusion: ordinary Python functions fused into one pass over arrays, and kernels of
your own.

:func:`elementwise` traces a function of elements (operators, NumPy ufuncs, ``numpy.where``,
:func:`relu`, :func:`gelu`, :func:`sigmoid`, :func:`index`, :func:`frequency`) once into an
:class:`Expression` and runs it as one CUDA kernel on device arrays (compiled with NVRTC, kept
in the on-disk store) or through NumPy on host arrays, on arrays of any package. The same
expressions are the prologues and epilogues the FFT functions and ``matmul`` take.

:class:`RawKernel` compiles a CUDA C++ kernel once per device and launches it on CuPy,
PyTorch, JAX or any ``__cuda_array_interface__`` / ``__dlpack__`` arrays, on the caller's
stream.
"""

from accelmath.fusion._elementwise import Elementwise, elementwise
from accelmath.fusion._graph import Expression
from accelmath.fusion._raw import RawKernel
from accelmath.fusion._trace import frequency, gelu, index, relu, sigmoid, trace

__all__ = ["Elementwise", "Expression", "RawKernel", "elementwise", "frequency", "gelu",
           "index", "relu", "sigmoid", "trace"]

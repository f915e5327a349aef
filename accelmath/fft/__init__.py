"""FFTs on any array: NumPy-compatible functions, stateful plans, a plan cache.

Functions (``fft``, ``rfft2``, ``irfftn``, ..., and scipy.fft's ``hfft2``, ``hfftn``,
``ihfft2``, ``ihfftn``) take the arguments of ``numpy.fft`` plus keyword-only ``out``,
``stream``, ``execution`` and ``workers``; device arrays run through cuFFT with cached plans,
host arrays on the CPU (SciPy's FFT engine; for CPU tensors ``torch.fft``, or SciPy's engine
where that measured faster). :class:`FFT` plans
once and executes many times. Every function and :class:`FFT` take a ``prologue`` and an
``epilogue``: Python functions fused before and after the transform (:mod:`accelmath.fusion`).
:func:`convolve`, :func:`correlate` and :class:`Convolver` are ``scipy.signal``'s FFT
convolution and correlation; :func:`spectral_filter` is ``irfftn(fn(rfftn(x)))``, on a GPU in
one pass over the spectrum. :mod:`accelmath.fft.scipy_backend` plugs accelmath into
``scipy.fft.set_backend`` and ``scipy.fft.set_global_backend``.
"""

from accelmath._core.gpu import warmup as _warmup
from accelmath.fft import scipy_backend  # tiny: scipy.fft calls routed to the functions above
from accelmath.fft._convolve import Convolver, convolve, correlate
from accelmath.fft._functions import fft, hfft, ifft, ihfft, irfft, rfft
from accelmath.fft._functions_nd import fft2, fftn, ifft2, ifftn, irfft2, irfftn, rfft2, rfftn
from accelmath.fft._fusion import spectral_filter
from accelmath.fft._helper import fftfreq, fftshift, ifftshift, rfftfreq
from accelmath.fft._plan import FFT
from accelmath.fft._scipy_functions import hfft2, hfftn, ihfft2, ihfftn
from accelmath.fft._transform import cache_info, clear_cache, set_cache_limits

# the first device transform's modules and libraries, loaded in the background
_warmup.start("fft", _warmup.device_path(("accelmath.fft._cuda",), ("driver", "cufft")))

__all__ = ["FFT", "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift", "cache_info", "clear_cache",
           "set_cache_limits", "scipy_backend", "convolve", "correlate", "Convolver",
           "spectral_filter"]

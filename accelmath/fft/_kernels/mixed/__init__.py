"""accelmath's own mixed-radix FFT kernels, for the lengths cuFFT is slow on: their CUDA source
and schedule (:mod:`.source`) and their launches (:mod:`.kernels`)."""

from accelmath.fft._kernels.mixed.kernels import Filter, step_code, step_fits, step_launcher
from accelmath.fft._kernels.mixed.source import (
    MAX_LENGTH, MAX_PRIME, SHARED_CONSTANTS, THREADS, awkward, filter_source, fits, radices,
    reference, row_length, shared_bytes, stages)

__all__ = ["Filter", "MAX_LENGTH", "MAX_PRIME", "SHARED_CONSTANTS", "THREADS", "awkward",
           "filter_source", "fits", "radices", "reference", "row_length", "shared_bytes",
           "stages", "step_code", "step_fits", "step_launcher"]

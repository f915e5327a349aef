"""accelmath's own FFT kernels, for the transforms cuFFT is slow on: the column kernel
(:mod:`.columns`, complex64 transforms down the columns of a row-major matrix) and the
mixed-radix kernels (:mod:`.mixed`, lengths of small primes other than 2)."""

__all__ = []

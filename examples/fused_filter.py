"""Element-wise work fused around FFTs: a Gaussian low-pass filter computed where it is
applied (no filter array in memory), a power spectrum in one pass after the transform, and a
convolution with scipy.signal's semantics whose spectrum product rides on the inverse
transform.

It runs on NumPy arrays (the CPU path), and on CuPy arrays and PyTorch CUDA tensors where they
and a GPU are present; every result is checked against NumPy and SciPy in float64.

    python examples/fused_filter.py
"""

import numpy as np
import scipy.signal

import accelmath.fft as afft
from accelmath.fusion import frequency

rng = np.random.default_rng(0)
image = rng.standard_normal((512, 512))
psf = np.outer(np.hanning(9), np.hanning(9))
psf /= psf.sum()
WIDTH = 0.05  # the filter's width, in cycles per pixel


def low_pass(y, width):
    """A Gaussian in frequency, computed for each element of the spectrum."""
    return y * np.exp(-(frequency(0) ** 2 + frequency(1) ** 2) / (2 * width ** 2))


def references():
    ky, kx = np.fft.fftfreq(512)[:, None], np.fft.rfftfreq(512)[None, :]
    gauss = np.exp(-(ky ** 2 + kx ** 2) / (2 * WIDTH ** 2))
    return {"filtered": np.fft.irfft2(np.fft.rfft2(image) * gauss, s=image.shape),
            "power": np.abs(np.fft.rfft2(image, norm="ortho")) ** 2,
            "convolved": scipy.signal.fftconvolve(image, psf, mode="same")}


def run(name, to_device, to_numpy):
    x, kernel = to_device(image), to_device(psf)
    results = {
        "filtered": afft.irfft2(afft.rfft2(x), s=image.shape, prologue=low_pass,
                                prologue_args=(WIDTH,)),
        "power": afft.rfft2(x, norm="ortho", epilogue=lambda y: abs(y) ** 2),
        "convolved": afft.convolve(x, kernel, mode="same"),
    }
    expected = references()
    for key, value in results.items():
        got = to_numpy(value)
        error = float(np.linalg.norm(got - expected[key]) / np.linalg.norm(expected[key]))
        print(f"{name:>6}: {key:>9} matches NumPy/SciPy to a relative error of {error:.1e}")
        assert got.shape == expected[key].shape and error < 1e-10


run("numpy", np.asarray, np.asarray)
try:
    import cupy

    cupy.cuda.runtime.getDeviceCount()
    run("cupy", cupy.asarray, cupy.asnumpy)
except Exception as exc:  # no CuPy, or no GPU
    print(f"  cupy: skipped ({type(exc).__name__})")
try:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA")
    run("torch", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy())
except Exception as exc:  # no torch, or no GPU
    print(f" torch: skipped ({type(exc).__name__})")

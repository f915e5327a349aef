"""Image subtraction (the SFFT method) with ``accelmath.subtraction``: one pair, then a
pipeline's loop.

1. ``subtract(reference, science, mask=...)`` subtracts one aligned pair: it plans, solves
   and frees in one call, and returns the difference image in the images' own kind with the
   kernel coefficients, the photometric ratio, the background and per-stage timings.
2. ``Subtractor(shape, like=...)`` keeps its FFT plans, DFT matrices and buffers from pair to
   pair, as a pipeline's loop over many pairs of one size wants: after the first pair, each
   costs the arithmetic alone.

Both run on CuPy arrays and on PyTorch CUDA tensors (4088 x 4088, PHROSTY's configuration:
w = 9, DK = 2, DB = 0, constant ratio) when they and a GPU are present, and on NumPy arrays
(512 x 512) through the CPU path when there is no GPU. Each pair is synthetic, with a known
ratio; every loop result is checked against the one-call result of the same pair.

    python examples/image_subtraction.py
"""

import time

import numpy as np

from accelmath.subtraction import Subtractor, subtract, synthetic_pair

PAIRS = 4
CONFIGURATION = dict(half_width=9, kernel_order=2, background_order=0, constant_ratio=True)


def one_pair(name, like, size, to_numpy):
    """Subtract one pair with the one-call function."""
    pair = synthetic_pair(size, seed=1, like=like)
    result = subtract(pair.reference, pair.science, mask=pair.mask, timings=True,
                      **CONFIGURATION)
    difference = to_numpy(result.difference)
    stages = ", ".join(f"{stage} {seconds * 1e3:.1f}" for stage, seconds in
                       result.timings.items())
    print(f"{name:>6}: one pair of {size}^2: ratio {result.ratio:.4f} (injected "
          f"{pair.ratio}), difference rms {difference.std():.2f}; stages ms: {stages}")
    assert abs(result.ratio - pair.ratio) < 0.01


def loop(name, like, size, to_numpy, synchronize):
    """Subtract PAIRS pairs with one Subtractor, each checked against a one-call result."""
    pairs = [synthetic_pair(size, seed=seed, like=like) for seed in range(2, 2 + PAIRS)]
    results, times = [], []
    with Subtractor(size, like=like, **CONFIGURATION) as subtractor:
        for pair in pairs:
            start = time.perf_counter()
            results.append(subtractor.subtract(pair.reference, pair.science, mask=pair.mask))
            synchronize()
            times.append(time.perf_counter() - start)
    for pair, result in zip(pairs, results):
        alone = subtract(pair.reference, pair.science, mask=pair.mask, **CONFIGURATION)
        expected = to_numpy(alone.difference)
        error = np.abs(to_numpy(result.difference) - expected).max() / np.abs(expected).max()
        assert error < 1e-9 and abs(result.ratio - alone.ratio) < 1e-9, error
    warm = ", ".join(f"{t * 1e3:.1f}" for t in times[1:])
    print(f"{name:>6}: {PAIRS} pairs with one Subtractor: first {times[0] * 1e3:.1f} ms, then "
          f"{warm} ms; each equal to its one-call result")


def cupy_kind():
    """(module, to_numpy, synchronize) for CuPy, or None (printed) without CuPy or a GPU."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()  # raises without a GPU
    except Exception as exc:  # ImportError, or CuPy without a usable GPU
        print(f"  cupy: skipped ({type(exc).__name__}: {exc})")
        return None
    return cupy, cupy.asnumpy, cupy.cuda.get_current_stream().synchronize


def torch_kind():
    """(module, to_numpy, synchronize) for torch, or None (printed) without CUDA torch."""
    try:
        import torch
    except ImportError as exc:
        print(f" torch: skipped (ImportError: {exc})")
        return None
    if not torch.cuda.is_available():
        print(" torch: skipped (PyTorch sees no CUDA GPU)")
        return None
    return torch, lambda t: t.cpu().numpy(), torch.cuda.synchronize


def main():
    ran_on_gpu = False
    for name, found in (("cupy", cupy_kind()), ("torch", torch_kind())):
        if found is not None:
            module, to_numpy, synchronize = found
            one_pair(name, module, 4088, to_numpy)
            loop(name, module, 4088, to_numpy, synchronize)
            ran_on_gpu = True
    if not ran_on_gpu:
        print("no GPU: the same on NumPy arrays, through the CPU path")
        one_pair("numpy", np, 512, np.asarray)
        loop("numpy", np, 512, np.asarray, lambda: None)


if __name__ == "__main__":
    main()

"""Plan once, execute many times: a stateful ``accelmath.fft.FFT`` in a tight loop.

A batch of 16 complex64 images of 256 x 256 is planned once; each iteration then transforms
new data into one preallocated output, so a call costs no planning and no allocation. The loop
runs on CuPy arrays and on PyTorch CUDA tensors when they and a GPU are present, and on NumPy
arrays (the CPU path, through scipy.fft) when there is no GPU.

    python examples/plan_reuse.py
"""

import time

import numpy as np

import accelmath.fft

SHAPE, AXES, CALLS = (16, 256, 256), (1, 2), 100
rng = np.random.default_rng(0)
host = [(rng.standard_normal(SHAPE) + 1j * rng.standard_normal(SHAPE)).astype(np.complex64)
        for _ in range(4)]


def plan_loop(name, inputs, out, to_numpy, synchronize, calls=CALLS):
    """Plan on ``inputs[0]``, run ``calls`` times into ``out``, check, print the time."""
    with accelmath.fft.FFT(inputs[0], axes=AXES) as plan:
        plan.forward(inputs[0], out=out)  # the first call allocates the stream's workspace
        synchronize()
        start = time.perf_counter()
        for i in range(calls):
            plan.forward(inputs[i % len(inputs)], out=out)
        synchronize()
        per_call = (time.perf_counter() - start) / calls
    reference = np.fft.fft2(host[(calls - 1) % len(host)].astype(np.complex128), axes=AXES)
    error = np.linalg.norm(to_numpy(out) - reference) / np.linalg.norm(reference)
    print(f"{name:>6}: {per_call * 1e6:10.1f} us per call of {SHAPE} complex64 "
          f"(relative error {error:.1e})")
    assert error < 1e-5


def main():
    ran_on_gpu = False
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()  # raises without a GPU
        plan_loop("cupy", [cupy.asarray(x) for x in host], cupy.empty(SHAPE, cupy.complex64),
                  cupy.asnumpy, cupy.cuda.get_current_stream().synchronize)
        ran_on_gpu = True
    except Exception as exc:  # ImportError, or CuPy without a usable GPU
        print(f"  cupy: skipped ({type(exc).__name__}: {exc})")
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA GPU")
        plan_loop("torch", [torch.from_numpy(x).cuda() for x in host],
                  torch.empty(SHAPE, dtype=torch.complex64, device="cuda"),
                  lambda t: t.cpu().numpy(), torch.cuda.synchronize)
        ran_on_gpu = True
    except Exception as exc:
        print(f" torch: skipped ({type(exc).__name__}: {exc})")
    if not ran_on_gpu:
        print("no GPU: the same loop on NumPy arrays, through the CPU path (scipy.fft)")
        plan_loop("numpy", host, np.empty(SHAPE, np.complex64), np.asarray, lambda: None,
                  calls=10)


if __name__ == "__main__":
    main()

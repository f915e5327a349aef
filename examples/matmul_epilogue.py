"""A dense layer ``relu(x @ w + b)`` as one matrix product, with cuBLASLt's ``relu_bias``
epilogue: ``accelmath.linalg.matmul`` adds the bias and applies the ReLU as the product is
written, instead of two more passes over the result.

1. One call, checked against the array package's own ``relu(x @ w + b)``.
2. A stateful ``accelmath.linalg.Matmul``: planned once, autotuned once (the fastest of
   cuBLASLt's candidates, measured on these operands and remembered on disk for the next
   process), then run in a loop on new batches of ``x`` with ``execute(a=x)``.

It runs on CuPy arrays and on PyTorch CUDA tensors when they and a GPU are present, and on NumPy
arrays (the CPU path) when there is no GPU.

    python examples/matmul_epilogue.py
"""

import time

import numpy as np

import accelmath.linalg

BATCH, IN, OUT, STEPS = 512, 1024, 256, 20
rng = np.random.default_rng(0)
w_host = (rng.standard_normal((IN, OUT)) / np.sqrt(IN)).astype(np.float32)
b_host = rng.standard_normal(OUT).astype(np.float32)
x_host = [rng.standard_normal((BATCH, IN)).astype(np.float32) for _ in range(4)]


def largest_difference(ours, theirs, to_numpy):
    """max |ours - theirs| / max |theirs|, in float64 NumPy."""
    ours, theirs = to_numpy(ours).astype(np.float64), to_numpy(theirs).astype(np.float64)
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


def run(name, package):
    """The layer on ``package``'s arrays: one call, then a planned, autotuned loop."""
    to_device, to_numpy, relu, synchronize = package
    w, b = to_device(w_host), to_device(b_host)
    xs = [to_device(x) for x in x_host]

    # 1. one call: the bias runs along the result's last axis, as in x @ w + b
    y = accelmath.linalg.matmul(xs[0], w, epilogue="relu_bias", bias=b)
    difference = largest_difference(y, relu(xs[0] @ w + b), to_numpy)
    print(f"{name:>6}: matmul(x, w, epilogue='relu_bias', bias=b) matches relu(x @ w + b) "
          f"of {name} to {difference:.1e}")
    assert difference < 1e-5

    # 2. plan once, autotune once, then execute on new batches: no planning in the loop
    with accelmath.linalg.Matmul(xs[0], w, epilogue="relu_bias", bias=b) as layer:
        layer.autotune(iterations=5)
        tuned = (f"autotuned: candidate {layer.algorithm} of {layer.candidates}"
                 if layer.candidates else "nothing to autotune on the CPU")
        layer.execute(a=xs[0])  # a first call, out of the timing
        synchronize()
        start = time.perf_counter()
        outputs = [layer.execute(a=xs[i % len(xs)]) for i in range(STEPS)]
        synchronize()
        per_call = (time.perf_counter() - start) / STEPS
    difference = max(largest_difference(y, relu(xs[i % len(xs)] @ w + b), to_numpy)
                     for i, y in enumerate(outputs))
    print(f"{name:>6}: Matmul planned once ({tuned}), execute(a=x) on {STEPS} batches of "
          f"{BATCH} x {IN} float32: {per_call * 1e6:.1f} us per call, every result matches "
          f"relu(x @ w + b) to {difference:.1e}")
    assert difference < 1e-5


def cupy_package():
    """(to_device, to_numpy, relu, synchronize) for CuPy, or None (printed) without CuPy or a
    GPU."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()  # raises without a GPU
    except Exception as exc:  # ImportError, or CuPy without a usable GPU
        print(f"  cupy: skipped ({type(exc).__name__}: {exc})")
        return None
    return (cupy.asarray, cupy.asnumpy, lambda z: cupy.maximum(z, 0),
            cupy.cuda.get_current_stream().synchronize)


def torch_package():
    """(to_device, to_numpy, relu, synchronize) for torch, or None (printed) without CUDA
    torch."""
    try:
        import torch
    except ImportError as exc:
        print(f" torch: skipped (ImportError: {exc})")
        return None
    if not torch.cuda.is_available():
        print(" torch: skipped (PyTorch sees no CUDA GPU)")
        return None
    return (lambda x: torch.from_numpy(x).cuda(), lambda t: t.cpu().numpy(), torch.relu,
            torch.cuda.synchronize)


def main():
    ran_on_gpu = False
    for name, package in (("cupy", cupy_package()), ("torch", torch_package())):
        if package is not None:
            run(name, package)
            ran_on_gpu = True
    if not ran_on_gpu:
        print("no GPU: the same on NumPy arrays, through the CPU path")
        run("numpy", (np.asarray, np.asarray, lambda z: np.maximum(z, 0), lambda: None))


if __name__ == "__main__":
    main()

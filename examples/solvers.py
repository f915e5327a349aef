"""Dense solvers with ``accelmath.linalg``: factor once, solve many; and a batch of small systems.

1. Image subtraction ends each pass in a 2162 x 2162 symmetric positive definite float64 system
   (normal equations). ``accelmath.linalg.Cholesky(a)`` factors it once; each ``solve(b)`` then
   costs two triangular solves, with no planning and no new workspace. ``refactor(a_new)``
   takes the next pass's matrix of the same layout without planning again.
2. 10000 systems of 8 x 8 solved in one call: ``accelmath.linalg.solve`` over the leading
   (batch) dimension, which picks accelmath's own small-matrix kernels where they are faster.

Both run on CuPy arrays and on PyTorch CUDA tensors when they and a GPU are present, and on
NumPy arrays (the CPU path, through NumPy/SciPy LAPACK) when there is no GPU. Every result is
checked against NumPy in float64.

    python examples/solvers.py
"""

import time

import numpy as np

import accelmath.linalg

N, RHS, BATCH, SMALL = 2162, 20, 10000, 8
rng = np.random.default_rng(0)


def spd(n, shift=0.1):
    """A symmetric positive definite matrix, like the normal equations M M^T."""
    m = rng.standard_normal((n, n))
    return m @ m.T / n + shift * np.eye(n)


a_host, a_next = spd(N), spd(N)
rhs_host = [rng.standard_normal(N) for _ in range(RHS)]
small_a = rng.standard_normal((BATCH, SMALL, SMALL)) + SMALL * np.eye(SMALL)
small_b = rng.standard_normal((BATCH, SMALL, 1))


def residual(a, x, b):
    """The largest ‖A x − b‖ / (‖A‖ ‖x‖) over the systems, in float64 NumPy."""
    if x.ndim == 1:  # one system, one right-hand side
        a, x, b = a[None], x[None, :, None], b[None, :, None]
    r = np.linalg.norm(a @ x - b, axis=(1, 2))
    return float(np.max(r / (np.linalg.norm(a, axis=(1, 2)) * np.linalg.norm(x, axis=(1, 2)))))


def factor_once(name, to_device, to_numpy, synchronize):
    """Factor the system once, solve for RHS right-hand sides, then refactor and solve again."""
    a, rhs = to_device(a_host), [to_device(b) for b in rhs_host]
    with accelmath.linalg.Cholesky(a) as chol:
        solutions = [chol.solve(rhs[0])]  # a first call, out of the timing
        synchronize()
        start = time.perf_counter()
        solutions += [chol.solve(b) for b in rhs[1:]]
        synchronize()
        per_solve = (time.perf_counter() - start) / (RHS - 1)
        error = max(residual(a_host, to_numpy(x), b) for x, b in zip(solutions, rhs_host))
        chol.refactor(to_device(a_next))  # the next pass: same layout, no new plan
        error = max(error, residual(a_next, to_numpy(chol.solve(rhs[0])), rhs_host[0]))
    print(f"{name:>6}: Cholesky of {N}^2 float64 once, {per_solve * 1e3:.3f} ms per solve "
          f"(largest residual {error:.1e})")
    assert error < 1e-12


def small_batch(name, to_device, to_numpy, synchronize):
    """Solve BATCH systems of SMALL x SMALL in one call."""
    a, b = to_device(small_a), to_device(small_b)
    accelmath.linalg.solve(a, b)  # a first call, out of the timing
    synchronize()
    start = time.perf_counter()
    x = accelmath.linalg.solve(a, b)
    synchronize()
    elapsed = time.perf_counter() - start
    error = residual(small_a, to_numpy(x), small_b)
    print(f"{name:>6}: {BATCH} systems of {SMALL} x {SMALL} float64 in {elapsed * 1e3:.3f} ms "
          f"(largest residual {error:.1e})")
    assert error < 1e-12


def run(name, to_device, to_numpy, synchronize):
    factor_once(name, to_device, to_numpy, synchronize)
    small_batch(name, to_device, to_numpy, synchronize)


def cupy_functions():
    """(to_device, to_numpy, synchronize) for CuPy, or None (printed) without CuPy or a GPU."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()  # raises without a GPU
    except Exception as exc:  # ImportError, or CuPy without a usable GPU
        print(f"  cupy: skipped ({type(exc).__name__}: {exc})")
        return None
    return cupy.asarray, cupy.asnumpy, cupy.cuda.get_current_stream().synchronize


def torch_functions():
    """(to_device, to_numpy, synchronize) for torch, or None (printed) without CUDA torch."""
    try:
        import torch
    except ImportError as exc:
        print(f" torch: skipped (ImportError: {exc})")
        return None
    if not torch.cuda.is_available():
        print(" torch: skipped (PyTorch sees no CUDA GPU)")
        return None
    return (lambda x: torch.from_numpy(x).cuda(), lambda t: t.cpu().numpy(),
            torch.cuda.synchronize)


def main():
    ran_on_gpu = False
    for name, functions in (("cupy", cupy_functions()), ("torch", torch_functions())):
        if functions is not None:
            run(name, *functions)
            ran_on_gpu = True
    if not ran_on_gpu:
        print("no GPU: the same on NumPy arrays, through the CPU path (NumPy/SciPy LAPACK)")
        run("numpy", np.asarray, np.asarray, lambda: None)


if __name__ == "__main__":
    main()

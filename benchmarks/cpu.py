"""Host cost per call of accelmath.fft on the CPU, beside scipy.fft, numpy.fft and torch.fft.

Small transforms of host arrays in one process: a complex128 fft of length 256, a complex128
64x64 fft2 and a float64 rfft of length 4096, through scipy.fft, numpy.fft, accelmath's
stateless function and an accelmath ``FFT`` plan's ``execute(x)`` and ``execute(x, out=out)``;
then the same transform of a torch CPU tensor through torch.fft and through accelmath. Host
time per call (``_common.host_times_us``: the best of 15 loops, the cases taking turns loop by
loop). Runs with or without a GPU: ``python benchmarks/cpu.py``; writes
``benchmarks/results/cpu-<device>.{json,md}`` (the GPU's name, or the CPU's without one).
"""

import sys

import numpy as np
import scipy.fft
from _common import environment, host_times_us, write

import accelmath.fft as afft

# (name, shape, dtype, accelmath/scipy/numpy/torch function name, axes)
CASES = [("fft c128 256", (256,), "complex128", "fft", (-1,)),
         ("fft2 c128 64x64", (64, 64), "complex128", "fft2", (-2, -1)),
         ("rfft f64 4096", (4096,), "float64", "rfft", (-1,))]
CALLS = {"fft": 2000, "fft2": 1000, "rfft": 1000}
TARGETS = {"stateless / scipy.fft": 1.3, "execute(x) / stateless": 1.0,
           "execute(x, out=) / stateless": 1.0, "accelmath, torch / torch.fft": 1.3}


def _input(shape, dtype):
    rng = np.random.default_rng()
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def measure(name, shape, dtype, func, axes):
    """One row: the host time of each way to the transform, in us, and the ratios."""
    x = _input(shape, dtype)
    plan = afft.FFT(x, axes=axes)
    out = plan.execute(x)
    ours, scipys, numpys = getattr(afft, func), getattr(scipy.fft, func), getattr(np.fft, func)
    cases = {"scipy.fft": lambda: scipys(x),
             "numpy.fft": lambda: numpys(x),
             "accelmath stateless": lambda: ours(x),
             "accelmath FFT.execute(x)": lambda: plan.execute(x),
             "accelmath FFT.execute(x, out=)": lambda: plan.execute(x, out=out)}
    ref = numpys(x)
    for case, fn in cases.items():
        assert np.allclose(fn(), ref), (name, case)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t = torch.from_numpy(x)
        torchs = getattr(torch.fft, func)
        cases["torch.fft"] = lambda: torchs(t)
        cases["accelmath stateless, torch"] = lambda: ours(t)
        for case in ("torch.fft", "accelmath stateless, torch"):
            result = cases[case]()
            assert isinstance(result, torch.Tensor) and np.allclose(result.numpy(), ref), (name,
                                                                                         case)
    row = {"case": name, **host_times_us(cases, CALLS[func], repeats=15)}
    plan.free()
    stateless = row["accelmath stateless"]
    row["stateless / scipy.fft"] = stateless / row["scipy.fft"]
    row["execute(x) / stateless"] = row["accelmath FFT.execute(x)"] / stateless
    row["execute(x, out=) / stateless"] = row["accelmath FFT.execute(x, out=)"] / stateless
    if torch is not None:
        row["accelmath, torch / torch.fft"] = row["accelmath stateless, torch"] / row["torch.fft"]
    return row


def main():
    env = environment()
    rows = []
    for case in CASES:
        rows.append(measure(*case))
        print(rows[-1], flush=True)
    try:
        import torch

        threads = f"torch.fft with {torch.get_num_threads()} threads; "
    except ImportError:
        threads = "torch is not installed; "
    targets = ", ".join(f"{ratio} at most {limit}" for ratio, limit in TARGETS.items())
    columns = ["case", "scipy.fft", "numpy.fft", "accelmath stateless",
               "accelmath FFT.execute(x)", "accelmath FFT.execute(x, out=)", "torch.fft",
               "accelmath stateless, torch", *TARGETS]
    print(write("cpu", env, rows, columns,
                f"Host time per call on the CPU ({env['cpu']}, {env['cpu_count']} logical "
                "cores), microseconds: the mean over a loop of calls (fft: 2000, fft2 and "
                "rfft: 1000), the best of 15 loops, the cases taking turns loop by loop. "
                "Host arrays (NumPy), and torch CPU tensors in the torch columns; "
                f"scipy.fft and accelmath with one worker, {threads}forward transforms, "
                f"default norm. Targets: {targets}."))
    return 0


if __name__ == "__main__":
    sys.exit(main())

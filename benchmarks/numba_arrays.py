"""Numba device arrays against CuPy arrays through the same calls, in one process: a plan's
``forward(x, out=)`` and the stateless ``fftn(x)``, host time per call (us; the mean over a
loop of calls, the best of 7 loops, taking turns), on a 64-point complex64 transform (where
the host cost is all there is) and a 16 x 256 x 256 complex64 batch. Target: the plan's call
on Numba arrays at most 1.2x the same call on CuPy arrays (the stateless row, which allocates
its result with Numba, has none). Every result is checked against NumPy in float64, each row
by its own call's results.

Run on a GPU machine with CuPy and numba-cuda: ``python3 benchmarks/numba_arrays.py``; writes
``benchmarks/results/numba_arrays-<device>.{json,md}``.
"""

import sys

import numpy as np
from _common import environment, host_times_us, write

TARGET = 1.2
NEEDS_GPU = True


def _check(got, expected):
    error = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
    return error <= 1e-5, error


def main():
    import cupy as cp
    from numba import cuda

    import accelmath.fft

    env = environment()
    rows = []
    for shape, axes in (((64,), (-1,)), ((16, 256, 256), (1, 2))):
        rng = np.random.default_rng()
        x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
        expected = np.fft.fftn(x.astype(np.complex128), axes=axes)
        arrays = {"cupy": (cp.asarray(x), cp.empty(shape, np.complex64)),
                  "numba": (cuda.to_device(x), cuda.device_array(shape, np.complex64))}
        plans = {name: accelmath.fft.FFT(arrays[name][0], axes=axes) for name in arrays}
        cases, checks = {}, {"plan": [], "fftn": []}
        for name, (dx, out) in arrays.items():
            plan = plans[name]
            cases[f"plan, {name}"] = (lambda p=plan, d=dx, o=out: p.forward(d, out=o))
            cases[f"fftn, {name}"] = (lambda d=dx: accelmath.fft.fftn(d, axes=axes))
            plan.forward(dx, out=out)
            got = out.get() if name == "cupy" else out.copy_to_host()
            checks["plan"].append((name,) + _check(got, expected))
            fresh = accelmath.fft.fftn(dx, axes=axes)
            got = fresh.get() if name == "cupy" else fresh.copy_to_host()
            checks["fftn"].append((name,) + _check(got, expected))
        times = host_times_us(cases, sync=cuda.synchronize)
        for plan in plans.values():
            plan.free()
        for call in ("plan", "fftn"):
            ratio = times[f"{call}, numba"] / times[f"{call}, cupy"]
            rows.append({
                "case": f"{'x'.join(map(str, shape))} complex64 "
                        + ("plan.forward(x, out=)" if call == "plan" else "fftn(x)"),
                "unit": "host us", "cupy": times[f"{call}, cupy"],
                "numba": times[f"{call}, numba"], "numba / cupy": ratio,
                "check": "ok" if all(ok for _, ok, _ in checks[call]) else "WRONG: " + ", ".join(
                    f"{name} {error:.1e}" for name, ok, error in checks[call] if not ok)})
            if call == "plan":
                rows[-1].update(target=f"<= {TARGET}", met="met" if ratio <= TARGET else "missed")
            print(rows[-1], flush=True)
    print(write("numba_arrays", env, rows, ["case", "unit", "cupy", "numba", "numba / cupy",
                                             "target", "met", "check"]))
    return 0 if all(row["check"] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Host cost per call of accelmath.linalg on NumPy arrays, beside the same NumPy/SciPy call.

Small problems (8 x 8: what a call costs beyond LAPACK's work) and large ones (where no copy
or conversion NumPy or SciPy would not make may show): ``matmul`` against ``a @ b``,
``solve``, ``inv``, ``cholesky`` and ``eigh`` against ``numpy.linalg``'s, ``cho_factor`` +
``cho_solve`` against ``scipy.linalg``'s. Each row times the two calls in turns, loop by loop
(``_common.host_times_us``: the mean over a loop, the best of the loops), on fresh random
data checked against the peer's result first. Runs anywhere: ``python
benchmarks/linalg_cpu.py``; writes ``benchmarks/results/linalg-cpu-<device>.{json,md}``.
"""

import sys

import numpy as np
import scipy.linalg
from _common import environment, host_times_us, write

from accelmath import linalg

# the most accelmath / peer may be: small problems, large ones
SMALL, LARGE = 1.3, 1.02


def _spd(rng, n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _cases(rng):
    """(name, size target, accelmath call, peer's call, calls per loop)."""
    small, large = _spd(rng, 8), _spd(rng, 500)
    b8, b500 = rng.standard_normal((8, 8)), rng.standard_normal((500, 8))
    m256 = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
    batch, rhs = _spd(rng, 8, (10000,)), rng.standard_normal((10000, 8, 1))
    return [
        ("matmul 8 x 8", SMALL, lambda: linalg.matmul(small, b8), lambda: small @ b8, 5000),
        ("solve 8 x 8", SMALL, lambda: linalg.solve(small, b8),
         lambda: np.linalg.solve(small, b8), 3000),
        ("inv 8 x 8", SMALL, lambda: linalg.inv(small), lambda: np.linalg.inv(small), 3000),
        ("cholesky 8 x 8", SMALL, lambda: linalg.cholesky(small),
         lambda: np.linalg.cholesky(small), 3000),
        ("cholesky 500", LARGE, lambda: linalg.cholesky(large),
         lambda: np.linalg.cholesky(large), 20),
        ("cho_factor + cho_solve 500 (b 500 x 8)", LARGE,
         lambda: linalg.cho_solve(linalg.cho_factor(large), b500),
         lambda: scipy.linalg.cho_solve(scipy.linalg.cho_factor(large), b500), 20),
        ("matmul 256", LARGE, lambda: linalg.matmul(*m256), lambda: m256[0] @ m256[1], 50),
        ("eigh 500", LARGE, lambda: linalg.eigh(large), lambda: np.linalg.eigh(large), 3),
        ("solve 10000 x 8 x 8", LARGE, lambda: linalg.solve(batch, rhs),
         lambda: np.linalg.solve(batch, rhs), 5),
    ]


def _check(ours, theirs, name):
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for x, y in zip(ours, theirs):
        scale = max(np.abs(y).max(), 1.0)
        if not np.allclose(x, y, rtol=1e-8, atol=1e-10 * scale):
            raise AssertionError(f"{name}: accelmath's result differs from the peer's")


def main():
    env = environment()
    rng = np.random.default_rng()
    rows = []
    for name, most, ours, theirs, calls in _cases(rng):
        if name.startswith("eigh"):  # (eigenvectors: signs may differ; eigenvalues compared)
            _check(ours()[0], theirs()[0], name)
        else:
            _check(ours(), theirs(), name)
        times = host_times_us({"accelmath": ours, "NumPy/SciPy": theirs}, calls, repeats=9)
        ratio = times["accelmath"] / times["NumPy/SciPy"]
        rows.append({"case": name, **times, "ratio": ratio, "target": f"<= {most}",
                     "met": "met" if ratio <= most else "missed"})
        print(rows[-1], flush=True)
    print(write("linalg-cpu", env, rows,
                ["case", "accelmath", "NumPy/SciPy", "ratio", "target", "met"],
                f"Host time per call on the CPU ({env['cpu']}, {env['cpu_count']} logical "
                "cores), microseconds, float64 NumPy arrays: the mean over a loop of calls, the "
                "best of 9 loops, accelmath's call and the peer's taking turns loop by loop. "
                "The peer is the same call of NumPy (a @ b, numpy.linalg) or SciPy "
                "(scipy.linalg.cho_factor and cho_solve). accelmath checks its operands for "
                "NaN and infinity (check=True, its default), which NumPy does not. Targets: "
                f"at most {SMALL} for the 8 x 8 problems, {LARGE} for the large ones."))
    return 0


if __name__ == "__main__":
    sys.exit(main())

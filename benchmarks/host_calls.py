"""Host time per call of small stateless calls and plan executions, for two or more versions
of accelmath side by side: what a change costs the calls that run in tight loops.

Each version is a source tree (``--trees OLD NEW``, default: this checkout alone); each runs in
processes of its own (``PYTHONPATH`` the tree), the trees taking turns over ``--rounds``
rounds, and each case's figure is the best round's (a round: the mean over a loop of calls,
the best of 7 loops, as ``_common.host_times_us``; a batch of systems, which takes
milliseconds, a hundredth of the calls). Cases: small FFTs, an 8 x 8 solve,
``lu_solve`` and ``cho_solve`` (one system and a batch of 1000), a 64^3 matmul, on CuPy
arrays and on torch tensors, each on the current stream, without a synchronize per call
(a call that reads a flag back waits for its own work).

Run on a GPU machine: ``python benchmarks/host_calls.py --trees /tmp/old .``; writes
``benchmarks/results/host-calls-<device>.{json,md}``. Without a GPU it says so and exits.
"""

import argparse
import json
import os
import subprocess
import sys

from _common import environment, host_times_us, no_gpu, write

HERE = os.path.dirname(os.path.abspath(__file__))


def _cases(xp, name):
    """{case: fn} of the small calls on package ``xp`` (cupy or torch)."""
    import numpy as np

    import accelmath.fft as afft
    from accelmath import linalg

    rng = np.random.default_rng(0)
    if name == "cupy":
        put = xp.asarray
    else:
        def put(a):
            return xp.from_numpy(np.ascontiguousarray(a)).cuda()
    x256 = put((rng.standard_normal(256) + 1j * rng.standard_normal(256)).astype("complex64"))
    img = put(rng.standard_normal((64, 64)).astype("float32"))
    a8 = rng.standard_normal((8, 8)) + 8 * np.eye(8)
    b8 = put(rng.standard_normal((8, 1)))
    a8d, a8s = put(a8), put(a8 @ a8.T)
    batch = rng.standard_normal((1000, 8, 8)) + 8 * np.eye(8)
    batch_b = put(rng.standard_normal((1000, 8, 1)))
    lu1 = linalg.lu_factor(put(a8))
    lub = linalg.lu_factor(put(batch))
    cho1 = linalg.cho_factor(a8s)
    m64 = put(rng.standard_normal((64, 64)).astype("float32"))
    plan = afft.FFT(x256)
    out = plan.execute(x256)
    return {
        f"{name} fft c64 256": lambda: afft.fft(x256),
        f"{name} FFT.execute(x, out=) c64 256": lambda: plan.execute(x256, out=out),
        f"{name} rfft2 f32 64x64": lambda: afft.rfft2(img),
        f"{name} solve f64 8x8": lambda: linalg.solve(a8d, b8),
        f"{name} lu_solve f64 8x8": lambda: linalg.lu_solve(lu1, b8),
        f"{name} lu_solve f64 1000 x 8x8": lambda: linalg.lu_solve(lub, batch_b),
        f"{name} cho_solve f64 8x8": lambda: linalg.cho_solve(cho1, b8),
        f"{name} matmul f32 64^3": lambda: linalg.matmul(m64, m64),
    }


def _counts(cases, calls):
    """Calls per loop of each case: ``calls``, a hundredth of it for a batch of systems
    (milliseconds a call)."""
    return {case: max(calls // 100, 3) if " 1000 x " in case else calls for case in cases}


def child(calls):
    """Time every case of this tree, ``calls`` calls a loop; print ``{case: us}`` as JSON."""
    times = {}
    try:
        import cupy

        cases = _cases(cupy, "cupy")
        times.update(host_times_us(cases, _counts(cases, calls),
                                   sync=cupy.cuda.Device().synchronize))
    except ImportError:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            cases = _cases(torch, "torch")
            times.update(host_times_us(cases, _counts(cases, calls),
                                       sync=torch.cuda.synchronize))
    except ImportError:
        pass
    print(json.dumps(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=[os.path.dirname(HERE)],
                        help="source trees of accelmath to compare (default: this checkout)")
    parser.add_argument("--labels", nargs="+", help="a name per tree (default: its folder's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500, help="calls per timed loop")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.calls)
    if no_gpu("host_calls"):
        return 0
    best = {tree: {} for tree in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [os.path.abspath(tree), HERE, os.environ.get("PYTHONPATH", "")])}
            result = subprocess.run([sys.executable, __file__, "--child", "--calls", str(args.calls)], env=env,
                                    capture_output=True, text=True, check=True)
            for case, us in json.loads(result.stdout.splitlines()[-1]).items():
                best[tree][case] = min(best[tree].get(case, float("inf")), us)
    labels = args.labels or [os.path.basename(os.path.abspath(tree)) for tree in args.trees]
    rows = []
    for case in best[args.trees[0]]:
        row = {"case": case}
        for label, tree in zip(labels, args.trees):
            row[f"{label} us"] = best[tree].get(case)
        if len(args.trees) > 1 and row.get(f"{labels[-1]} us") and row[f"{labels[0]} us"]:
            row["last / first"] = row[f"{labels[-1]} us"] / row[f"{labels[0]} us"]
        rows.append(row)
    columns = ["case", *[f"{label} us" for label in labels]] + (
        ["last / first"] if len(args.trees) > 1 else [])
    print(write("host-calls", environment(), rows, columns,
                notes=f"Host us per call ({args.calls} calls a loop), best of {args.rounds} rounds of processes that take "
                      f"turns; trees: {', '.join(map(os.path.abspath, args.trees))}."))
    return 0


if __name__ == "__main__":
    sys.exit(main())

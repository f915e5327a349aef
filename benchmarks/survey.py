"""A survey's pairs as FITS files: the manifest form (``subtract_files``, as ``accelmath
subtract --pairs`` runs it) against its parts, and Dask over the same files.

Synthetic star-field pairs (``accelmath.subtraction.synthetic_pair``) are written as float32
FITS files (reference, science, and a uint8 mask of bad pixels) on local disk, and subtracted
with PHROSTY's configuration (half_width=9, kernel_order=2, background_order=0,
constant_ratio=True); each difference is written as float32 FITS. Rows (ms per pair, the
median over the pairs after a warm-up pass over all of them):

- the parts, one after the other in this process: ``read_pair`` (to the GPU), the pure
  subtraction (a warm ``Subtractor``, the images already on the device, synchronized), and
  ``write_difference``; then the manifest form in this process over the same files, per pair
  (target: at most 1.2 x the parts' sum);
- Dask with one worker on one GPU (``local_cluster(gpus=1)``): the manifest's wall time per
  pair, the pair's own time on the worker (its ``Outcome.seconds``: read, subtract, write),
  and the dispatch overhead per pair two ways: the one less the other (the run's fixed costs,
  its submission, first task and last result, spread over its pairs), and steady, the mean
  time between two results arriving less the second pair's own time (target: steady at most
  2 ms);
- Dask with 2 and 4 workers where the GPUs are present: pairs per second and the efficiency
  against one worker, ``rate(N) / (N rate(1))`` (target 0.95).

Each written difference is checked against a direct subtraction of the same files (its ratio
to 1e-9, its image to 1e-5 of its norm). Run: ``python3 benchmarks/survey.py`` (``--pairs 16
--size 4088`` on a GPU machine; ``--size 512 --pairs 4`` without one, on CPU workers).
Writes ``benchmarks/results/survey-<device>.{json,md}``.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
from _common import environment, write

NEEDS_GPU = False  # without one, CPU workers at a small size
CONFIGURATION = {"half_width": 9, "kernel_order": 2, "background_order": 0,
                 "constant_ratio": True}
GPU_DEFAULTS = {"pairs": 16, "size": 4088}
CPU_DEFAULTS = {"pairs": 4, "size": 512}


def array_kind():
    """Where the subtraction runs here: the first GPU's package, else NumPy."""
    from accelmath.subtraction._runs.cluster import _gpu_kind
    from accelmath.subtraction._ops import kind_of

    return _gpu_kind() or kind_of(None)


def write_files(folder, count, size, fits, kind):
    """``count`` pairs of FITS files in ``folder`` and their manifest's path. The pairs are
    made where ``kind`` says (on the GPU where there is one: a 4088^2 pair takes seconds on
    the host)."""
    from accelmath.subtraction import synthetic_pair

    rows = ["reference,science,mask"]
    for k in range(count):
        pair = synthetic_pair(size, seed=k, like=kind.module)
        names = [f"p{k}-ref.fits", f"p{k}-sci.fits", f"p{k}-mask.fits"]
        for name, data in zip(names, (kind.to_numpy(pair.reference).astype(np.float32),
                                      kind.to_numpy(pair.science).astype(np.float32),
                                      (~kind.to_numpy(pair.mask)).astype(np.uint8))):
            fits.PrimaryHDU(data).writeto(os.path.join(folder, name), overwrite=True)
        rows.append(",".join(names))
    path = os.path.join(folder, "pairs.csv")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
    return path


def parts(pairs, kind):
    """Per pair (ms): read, pure subtraction, write, each the median over the pairs."""
    from accelmath.subtraction import Subtractor, read_pair, write_difference

    like = kind.module
    times = {"read": [], "subtract": [], "write": []}
    subtractor = None
    for rounds in range(2):  # (the first pass warms up)
        for pair in pairs:
            start = time.perf_counter()
            read = read_pair(pair.reference, pair.science, pair.mask, like=like)
            kind.synchronize()
            read_done = time.perf_counter()
            if subtractor is None:
                subtractor = Subtractor(tuple(read.reference.shape), like=read.reference,
                                        **CONFIGURATION)
            result = subtractor.subtract(read.reference, read.science, mask=read.mask)
            kind.synchronize()
            subtract_done = time.perf_counter()
            write_difference(pair.output, result.difference, read.header, result,
                             overwrite=True)
            end = time.perf_counter()
            if rounds:
                times["read"].append(read_done - start)
                times["subtract"].append(subtract_done - read_done)
                times["write"].append(end - subtract_done)
    subtractor.free()
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def timed_manifest(pairs, **where):
    """Per pair (ms) of ``subtract_files(pairs, **where)`` after a warm-up pass over them,
    the outcomes (each must be written), and the steady overhead per pair (ms): the mean,
    over the outcomes after the first, of the time since the one before arrived less the
    pair's own time (``Outcome.seconds``); None for one pair."""
    from accelmath.subtraction import subtract_files

    subtract_files(pairs, configuration=CONFIGURATION, overwrite=True, **where)
    arrivals = []
    start = time.perf_counter()
    outcomes = subtract_files(pairs, configuration=CONFIGURATION, overwrite=True,
                              progress=lambda o: arrivals.append((time.perf_counter(), o)),
                              **where)
    wall = time.perf_counter() - start
    failed = [o for o in outcomes if o.status != "written"]
    if failed:
        raise RuntimeError(f"{failed[0].pair.science}: {failed[0].error}")
    gaps = [(t - before) - o.seconds for (before, _), (t, o) in zip(arrivals, arrivals[1:])]
    steady = statistics.mean(gaps) * 1e3 if gaps else None
    return wall / len(pairs) * 1e3, outcomes, steady


def manifest_in_process(pairs, gpus):
    """:func:`timed_manifest` in this process (the first GPU, or the CPU)."""
    return timed_manifest(pairs, gpus=[0] if gpus else None)


def on_dask(pairs, workers, on_gpu):
    """:func:`timed_manifest` on a local cluster of ``workers`` (one per GPU, or CPU
    workers)."""
    import distributed

    from accelmath.subtraction import local_cluster

    where = {"gpus": workers} if on_gpu else {"workers": workers}
    with local_cluster(**where) as cluster, distributed.Client(cluster) as client:
        return timed_manifest(pairs, client=client)


def direct(pairs):
    """``(ratio, difference)`` of each pair by a direct subtraction of its files on the host:
    the oracle of :func:`check`, made once for every run over the same files."""
    from accelmath.subtraction import read_pair, subtract

    results = []
    for pair in pairs:
        read = read_pair(pair.reference, pair.science, pair.mask)
        result = subtract(read.reference, read.science, mask=read.mask, **CONFIGURATION)
        results.append((result.ratio, np.asarray(result.difference, np.float64)))
    return results


def check(pairs, outcomes, expected, fits):
    """Each written difference against its pair's direct subtraction (``expected``, of
    :func:`direct`); the worst errors."""
    worst_ratio = worst_image = 0.0
    for pair, outcome, (ratio, difference) in zip(pairs, outcomes, expected):
        with fits.open(pair.output) as hdus:
            written = hdus[0].data.astype(np.float64)
        worst_ratio = max(worst_ratio, abs(outcome.ratio - ratio) / abs(ratio))
        worst_image = max(worst_image, float(np.linalg.norm(written - difference)
                                             / np.linalg.norm(difference)))
    return worst_ratio, worst_image


def verdict(errors):
    """"ok" where the worst errors of :func:`check` are within the tolerances."""
    return "ok" if errors[0] <= 1e-9 and errors[1] <= 1e-5 else "WRONG"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int)
    parser.add_argument("--size", type=int)
    parser.add_argument("--folder", help="where the files go, made where missing (default: a "
                        "new temporary one, removed at the end)")
    options = parser.parse_args()
    from astropy.io import fits

    from accelmath.subtraction import read_manifest

    from accelmath.subtraction._gpu import gpu_count

    gpus = gpu_count()
    defaults = GPU_DEFAULTS if gpus else CPU_DEFAULTS
    count, size = options.pairs or defaults["pairs"], options.size or defaults["size"]
    folder = options.folder or tempfile.mkdtemp(prefix="accelmath-bench-survey-")
    os.makedirs(folder, exist_ok=True)
    env = environment()
    rows, notes = [], []
    try:
        kind = array_kind()
        manifest = write_files(folder, count, size, fits, kind)
        pairs = read_manifest(manifest, os.path.join(folder, "out"))
        os.makedirs(os.path.join(folder, "out"), exist_ok=True)
        expected = direct(pairs)
        split = parts(pairs, kind)
        in_process, outcomes, _ = manifest_in_process(pairs, gpus)
        errors = check(pairs, outcomes, expected, fits)
        base = sum(split.values())
        rows.append({"case": f"{count} pairs of {size}^2 float32 FITS, one "
                             f"{'GPU' if gpus else 'CPU'}, ms per pair",
                     "read": split["read"], "subtract": split["subtract"],
                     "write": split["write"], "parts' sum": base,
                     "manifest (in process)": in_process, "manifest / parts": in_process / base,
                     "target": "<= 1.2", "met": "met" if in_process <= 1.2 * base else "missed",
                     "check": verdict(errors),
                     "errors": f"ratio {errors[0]:.1e}, image {errors[1]:.1e}"})
        print(rows[-1], flush=True)
        try:
            import distributed  # noqa: F401
        except ImportError:
            notes.append("Dask rows: dask.distributed is not installed")
        else:
            one, outcomes, steady = on_dask(pairs, 1, gpus > 0)
            errors = check(pairs, outcomes, expected, fits)
            task = statistics.mean(o.seconds for o in outcomes) * 1e3
            rows.append({"case": "Dask, one worker: dispatch per pair, ms",
                         "manifest (in process)": in_process, "one worker": one,
                         "on the worker": task, "dispatch": one - task,
                         "dispatch, steady": steady, "target": "<= 2",
                         "met": "met" if steady is not None and steady <= 2 else "missed",
                         "check": verdict(errors)})
            print(rows[-1], flush=True)
            for workers in (2, 4):
                if workers > (gpus or (os.cpu_count() or 1) // 2):
                    notes.append(f"{workers} workers: fewer {'GPUs' if gpus else 'cores'} here")
                    continue
                many, outcomes, _ = on_dask(pairs, workers, gpus > 0)
                errors = check(pairs, outcomes, expected, fits)
                efficiency = one / (workers * many)
                rows.append({"case": f"Dask, {workers} workers: efficiency against one",
                             "one worker": one, f"{workers} workers": many,
                             "pairs/s": 1e3 / many, "efficiency": efficiency,
                             "target": ">= 0.95", "met": "met" if efficiency >= 0.95 else
                             "missed", "check": verdict(errors)})
                print(rows[-1], flush=True)
    finally:
        if not options.folder:
            shutil.rmtree(folder, ignore_errors=True)
    columns = ["case", "read", "subtract", "write", "parts' sum", "manifest (in process)",
               "manifest / parts", "one worker", "on the worker", "dispatch", "dispatch, steady",
               "2 workers", "4 workers",
               "pairs/s", "efficiency", "target", "met", "check", "errors"]
    print(write("survey", env, rows, columns, notes="; ".join(notes)))
    return 0 if all(row.get("check") == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

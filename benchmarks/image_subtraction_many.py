"""Many image pairs through accelmath's Dask path, on 1, 2 and 4 GPU workers, beside a plain loop.

Synthetic star-field pairs (``accelmath.subtraction.synthetic_pair``, float64) are made on the
workers themselves, on their GPUs (each task is a callable: no image crosses the network, as
in a pipeline that reads its images on the worker), and subtracted with PHROSTY's configuration
(half_width=9, kernel_order=2, background_order=0, constant_ratio=True) by
``accelmath.subtraction.subtract_many`` on a local cluster of one worker per GPU
(``local_cluster(gpus=N)``). Each worker's ``reduce`` sends back a checksum of its difference
image (the float64 sum and sum of squares, 16 sampled pixels, the photometric ratio) and its
GPU's memory right after the pair (the CuPy pool's bytes, or torch's reserved bytes, and the
device's used bytes from ``cudaMemGetInfo``, which include the CUDA context).

For each worker count: a warm-up call of two pairs per worker (other seeds; plans made,
kernels compiled, not in the throughput), then the timed call over all pairs: pairs per
second, scaling efficiency ``rate(N) / (N rate(1))`` (target 0.9), peak memory per GPU. The
same pairs run through a plain loop (one ``Subtractor`` in one process on the first GPU, pairs
made the same way) in a separate process, so that the timed processes hold nothing else on
their GPUs; its checksums are what every worker's must equal (to 1e-9 of the difference image's
rms; the one-call ``subtract`` is checked against the loop on the first pair).

Run: ``python3 benchmarks/image_subtraction_many.py`` (``--workers 1,2,4 --pairs 64 --size
4088`` on a GPU machine; worker counts above the GPUs present are left out, and one worker
always runs first, the base of the efficiencies). Without a GPU, CPU
workers at ``--size 256 --pairs 8 --workers 1,2``. Writes
``benchmarks/results/image_subtraction_many-<device>.{json,md}``.
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np
from _common import environment, write

NEEDS_GPU = False  # without one, CPU workers at a small size
CONFIGURATION = {"half_width": 9, "kernel_order": 2, "background_order": 0,
                 "constant_ratio": True}
SAMPLES = 16        # pixels sampled per difference image for the checksum
TOLERANCE = 1e-9    # of the difference image's rms (a ratio: of the ratio)
TARGET = 0.9        # scaling efficiency against one worker
WARMUP = 2          # pairs per worker before the timed call
GPU_DEFAULTS = {"workers": "1,2,4", "pairs": 64, "size": 4088}
CPU_DEFAULTS = {"workers": "1,2", "pairs": 8, "size": 256}


# --- what runs on a worker (pickled by value with this script) -------------------------------

def array_package():
    """CuPy (else torch with CUDA) where this process sees a GPU; None on the CPU."""
    from accelmath.subtraction._gpu import gpu_available, gpu_package

    return gpu_package() if gpu_available() else None


def make_pair(size, seed):
    """A synthetic pair made where this process computes (its GPU, else the CPU)."""
    from accelmath.subtraction import synthetic_pair

    return synthetic_pair(size, seed=seed, like=array_package())


class MadePair:
    """A task's pair: made on the worker that runs it."""

    def __init__(self, size, seed):
        self.size, self.seed = size, seed

    def __call__(self):
        return make_pair(self.size, self.seed)


def memory():
    """This process's device memory now (GPU), or its peak resident memory (CPU), in bytes."""
    record = {"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "pid": os.getpid()}
    package = array_package()
    if package is None:
        record["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    elif package.__name__ == "cupy":
        free, total = package.cuda.runtime.memGetInfo()
        record.update(pool=package.get_default_memory_pool().total_bytes(), used=total - free)
    else:
        free, total = package.cuda.mem_get_info()
        record.update(pool=package.cuda.max_memory_reserved(), used=total - free)
    return record


def checksum(result):
    """What a worker sends back for one pair: float64 sums, sampled pixels, the ratio, and its
    memory right after (the pools keep what the subtraction took at its peak)."""
    d = result.difference
    rows, cols = d.shape
    positions = np.random.default_rng(rows * 7919 + cols).integers(
        0, (rows, cols), size=(SAMPLES, 2))
    return {"sum": float(d.sum()), "squares": float((d * d).sum()),
            "samples": [float(d[int(r), int(c)]) for r, c in positions],
            "ratio": float(result.ratio), "pixels": rows * cols, "memory": memory()}


# --- the plain loop, in its own process ------------------------------------------------------

def plain_loop(pairs, size):
    """One Subtractor, the pairs made and subtracted one after the other: checksums and time."""
    from accelmath.subtraction import Subtractor, subtract

    first = make_pair(size, pairs)
    subtractor = Subtractor(first.reference.shape, like=first.reference, **CONFIGURATION)
    start = time.perf_counter()
    for seed in range(pairs, pairs + WARMUP):
        pair = make_pair(size, seed)
        checksum(subtractor.subtract(pair.reference, pair.science, mask=pair.mask))
    warmup = time.perf_counter() - start
    sums = []
    start = time.perf_counter()
    for seed in range(pairs):
        pair = make_pair(size, seed)
        sums.append(checksum(subtractor.subtract(pair.reference, pair.science, mask=pair.mask)))
    seconds = time.perf_counter() - start
    pair = make_pair(size, 0)
    one_call = checksum(subtract(pair.reference, pair.science, mask=pair.mask, **CONFIGURATION))
    return {"seconds": seconds, "warmup": warmup, "checksums": sums,
            "one_call": deviation(one_call, sums[0])}


def run_plain_loop(pairs, size, gpu):
    """The plain loop in a fresh process on GPU ``gpu`` (None: the CPU)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu or "")
    if gpu is None:
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--plain-loop",
                           "--pairs", str(pairs), "--size", str(size)],
                          env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the plain loop failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the Dask path ---------------------------------------------------------------------------

def run_dask(workers, pairs, size, gpus):
    """``subtract_many`` on a local cluster of ``workers`` workers (GPU ones if ``gpus``)."""
    from distributed import Client

    from accelmath.subtraction import local_cluster, subtract_many

    options = {"gpus": workers} if gpus else {"gpus": 0, "workers": workers}
    started = time.perf_counter()
    with local_cluster(**options) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        up = time.perf_counter() - started
        start = time.perf_counter()
        subtract_many([MadePair(size, seed) for seed in range(pairs, pairs + WARMUP * workers)],
                      client=client, reduce=checksum, **CONFIGURATION)
        warmup = time.perf_counter() - start
        start = time.perf_counter()
        sums = subtract_many([MadePair(size, seed) for seed in range(pairs)], client=client,
                             reduce=checksum, **CONFIGURATION)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "warmup": warmup, "start": up, "checksums": sums}


# --- the comparison and the table ------------------------------------------------------------

def deviation(ours, expected):
    """How far a checksum is from the expected one: in units of the expected difference
    image's rms (sum, samples), relative (sum of squares, ratio)."""
    rms = math.sqrt(expected["squares"] / expected["pixels"]) or 1.0
    return max(abs(ours["sum"] - expected["sum"]) / (rms * expected["pixels"]),
               abs(ours["squares"] - expected["squares"]) / (expected["squares"] or 1.0),
               max(abs(a - b) for a, b in zip(ours["samples"], expected["samples"])) / rms,
               abs(ours["ratio"] - expected["ratio"]) / abs(expected["ratio"]))


def memory_per_device(sums):
    """Peak memory per GPU (or CPU worker), in GB, and the number of pairs each did."""
    peaks = {}
    for record in (s["memory"] for s in sums):
        name = record["gpu"] or f"pid {record['pid']}"
        peak = peaks.setdefault(name, {"pairs": 0})
        peak["pairs"] += 1
        for key in ("pool", "used", "rss"):
            if key in record:
                peak[key] = max(peak.get(key, 0), record[key] / 1e9)
    return dict(sorted(peaks.items()))


def row(path, workers, pairs, size, measured, loop, rate_one):
    rate = pairs / measured["seconds"]
    peaks = memory_per_device(measured["checksums"])
    worst = max(deviation(ours, expected)
                for ours, expected in zip(measured["checksums"], loop["checksums"]))
    equal = sum(deviation(ours, expected) <= TOLERANCE
                for ours, expected in zip(measured["checksums"], loop["checksums"]))

    def per_device(key):
        values = [f"{p[key]:.2f}" for p in peaks.values() if key in p]
        return ", ".join(values) or None

    result = {"path": path, "workers": workers, "pairs": pairs, "size": size,
              "seconds": measured["seconds"], "pairs/s": rate,
              "ms/pair": 1e3 * measured["seconds"] / pairs,
              "warm-up s": measured["warmup"], "cluster start s": measured.get("start"),
              "peak pool GB": per_device("pool"), "peak used GB": per_device("used"),
              "peak rss GB": per_device("rss"),
              "pairs per worker": ", ".join(str(p["pairs"]) for p in peaks.values()),
              "equal": f"{equal}/{pairs}", "max deviation": worst}
    if rate_one is not None:
        efficiency = rate / (workers * rate_one)
        result.update(efficiency=efficiency,
                      target="met" if efficiency >= TARGET else "missed")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", help="worker counts, comma-separated (default 1,2,4 on "
                        "GPUs, 1,2 on the CPU; 1 always runs)")
    parser.add_argument("--pairs", type=int, help="pairs per run (default 64; 8 on the CPU)")
    parser.add_argument("--size", type=int, help="image side (default 4088; 256 on the CPU)")
    parser.add_argument("--cpu", action="store_true", help="CPU workers even where GPUs are")
    parser.add_argument("--plain-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_loop:
        print(json.dumps(plain_loop(args.pairs, args.size)))
        return

    env = environment()
    from accelmath.subtraction import _gpu

    gpu_count = 0 if args.cpu else _gpu.gpu_count()
    if not gpu_count:
        env["device"] = env["cpu"]
    defaults = GPU_DEFAULTS if gpu_count else CPU_DEFAULTS
    pairs = args.pairs or defaults["pairs"]
    size = args.size or defaults["size"]
    asked = [int(n) for n in (args.workers or defaults["workers"]).split(",")]
    limit = gpu_count or os.cpu_count() or 1
    # (one worker always runs first: the efficiency of the others is against it)
    counts = [1] + [n for n in asked if 1 < n <= limit]
    left_out = [n for n in asked if n > limit]
    kind = "GPU" if gpu_count else "CPU"
    print(f"{pairs} pairs of {size}^2 float64 on {env['device']}; {kind} workers {counts}"
          + (f" ({left_out} left out: {limit} {kind}s here)" if left_out else ""), flush=True)

    first_gpu = None
    if gpu_count:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        first_gpu = visible.split(",")[0].strip() if visible else "0"
    loop = run_plain_loop(pairs, size, first_gpu)
    print(f"plain loop: {loop['seconds']:.2f} s ({pairs / loop['seconds']:.2f} pairs/s)",
          flush=True)
    rows = [row(f"plain loop, 1 {kind}", 1, pairs, size, loop, loop, None)]
    rate_one = None
    for workers in counts:
        measured = run_dask(workers, pairs, size, bool(gpu_count))
        if workers == 1:
            rate_one = pairs / measured["seconds"]
        rows.append(row(f"Dask, {workers} {kind} worker{'s' * (workers > 1)}", workers, pairs,
                        size, measured, loop, rate_one))
        rows[-1]["x loop"] = loop["seconds"] / measured["seconds"]
        print(f"Dask, {workers} workers: {measured['seconds']:.2f} s "
              f"({rows[-1]['pairs/s']:.2f} pairs/s, efficiency {rows[-1]['efficiency']:.2f}, "
              f"equal {rows[-1]['equal']})", flush=True)

    columns = ["path", "workers", "pairs", "size", "seconds", "pairs/s", "ms/pair", "efficiency",
               "target", "x loop", "warm-up s", "cluster start s",
               "peak pool GB" if gpu_count else "peak rss GB", "peak used GB",
               "pairs per worker", "equal", "max deviation"]
    if gpu_count:
        cluster = ("local_cluster(gpus=N), one worker process per GPU (CUDA_VISIBLE_DEVICES)")
        memory_note = ("Peak memory per GPU (one value per worker): the CuPy pool (or torch's "
                       "reserved bytes) and the device's used bytes (context included), "
                       "sampled after each pair. ")
    else:
        cluster = "local_cluster(gpus=0, workers=N), N CPU worker processes of one thread"
        memory_note = "Peak resident memory per worker process. "
    notes = (f"{gpu_count or os.cpu_count()} {kind}s on the machine. "
             f"{pairs} synthetic {size}^2 float64 pairs, made on the workers "
             f"({'on their GPUs' if gpu_count else 'on the CPU'}); configuration "
             + ", ".join(f"{k}={v}" for k, v in CONFIGURATION.items())
             + f". Dask rows: accelmath.subtraction.subtract_many on {cluster}, after a "
             f"warm-up call of {WARMUP} pairs per worker; seconds of the timed call (all "
             "pairs, results gathered). The plain loop: one Subtractor in a fresh process, "
             f"after {WARMUP} warm-up pairs. efficiency = rate(N) / (N rate(1)), target "
             f"{TARGET}. x loop = rate / the plain loop's rate (at one worker, 1 - x loop is "
             "the Dask path's overhead). " + memory_note
             + f"equal: pairs whose checksum (sum, sum of squares, {SAMPLES} pixels, ratio) "
             f"equals the plain loop's to {TOLERANCE:g} of the difference image's rms; the "
             f"plain loop's first pair equals the one-call subtract to {loop['one_call']:.1e}.")
    if left_out:
        notes += f" Worker counts {left_out} left out: {limit} {kind}s on this machine."
    print(write("image_subtraction_many", env, rows, columns, notes))


if __name__ == "__main__":
    main()

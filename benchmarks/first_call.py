"""What a new process pays before its first result: the first rfft2, then the first irfft2.

Each run is a fresh Python process (``sys.executable``) that imports its packages, puts a
float32 4096x4096 image on the GPU and synchronizes, and only then times its first
``rfft2`` of the image and its first ``irfft2`` of the spectrum, each followed by a device
synchronize: neither the imports, nor the CUDA context, nor the data are in those times. The
import time of each package is recorded beside them, for information.

The cases: ``torch.fft`` on a CUDA tensor, ``cupy.fft`` on a CuPy array, and
``accelmath.fft`` on the same CuPy array and on the torch tensor, each with two states of
accelmath's on-disk store: empty (``ACCELMATH_CACHE_DIR`` a new empty directory for that
process) and warm (the directory the first empty run filled). accelmath's modules are
byte-compiled first, as an installed package's are. Each case runs 3 times, the
cases taking turns, after one round whose times are dropped (it brings the libraries into the
file-system cache, as on any machine in use); the median and the min are reported.

Run on a GPU machine: ``python benchmarks/first_call.py``; writes
``benchmarks/results/first-call-<device>.{json,md}``. Without a GPU it says so and exits.
"""

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import byte_compile, environment, no_gpu, write

SHAPE = (4096, 4096)
REPEATS = 3
TARGET_WARM_OVER_TORCH = 3.0
TARGET_EMPTY_MS = 300.0
# case name -> (the array's package, the FFT library called)
CASES = {"torch.fft": ("torch", "torch"),
         "cupy.fft": ("cupy", "cupy"),
         "accelmath.fft, CuPy array": ("cupy", "accelmath"),
         "accelmath.fft, torch tensor": ("torch", "accelmath")}
RESULT = "first-call result: "


def child(case):
    """In a fresh process: import, make the image on the device, time the first calls; print
    the times (ms) as one JSON line."""
    package, library = CASES[case]
    imports = {}

    def timed_import(name, *modules):
        start = time.perf_counter()
        for module in modules:
            __import__(module)
        imports[name] = (time.perf_counter() - start) * 1e3
        return sys.modules[modules[0]]

    np = timed_import("numpy", "numpy")
    if package == "torch":
        torch = timed_import("torch", "torch")
        sync, fft = torch.cuda.synchronize, torch.fft
        to_host = lambda a: a.cpu().numpy()  # noqa: E731
    else:
        cupy = timed_import("cupy", "cupy", "cupy.fft")
        sync, fft = cupy.cuda.runtime.deviceSynchronize, cupy.fft
        to_host = cupy.asnumpy
    if library == "accelmath":
        timed_import("accelmath.fft", "accelmath.fft")
        fft = sys.modules["accelmath.fft"]
    image = np.random.default_rng(0).standard_normal(SHAPE, dtype=np.float32)
    x = torch.from_numpy(image).cuda() if package == "torch" else cupy.asarray(image)
    sync()

    start = time.perf_counter()
    spectrum = fft.rfft2(x)
    sync()
    rfft2_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    back = fft.irfft2(spectrum, s=SHAPE)
    sync()
    irfft2_ms = (time.perf_counter() - start) * 1e3

    error = np.linalg.norm(to_host(back) - image) / np.linalg.norm(image)
    if not error < 1e-5:
        raise AssertionError(f"{case}: irfft2(rfft2(x)) differs from x by {error:.3g}")
    print(RESULT + json.dumps({"rfft2 ms": rfft2_ms, "irfft2 ms": irfft2_ms,
                               "imports ms": imports}), flush=True)


def run_child(case, store):
    """Run ``case`` in a fresh process, with accelmath's store in directory ``store`` (or
    None); return its times, or ``{"error": ...}``."""
    env = dict(os.environ)
    if store is not None:
        env["ACCELMATH_CACHE_DIR"] = store
        env.pop("ACCELMATH_CACHE", None)  # the disk store on
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", case],
                              env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 300 s"}
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    print(f"{case}: failed\n{proc.stderr[-3000:]}", file=sys.stderr, flush=True)
    return {"error": tail[0]}


def store_size(directory):
    """Files and bytes under ``directory``."""
    files = [os.path.join(d, f) for d, _, names in os.walk(directory) for f in names]
    return len(files), sum(os.path.getsize(f) for f in files)


def summarize(case, store, runs):
    """One row of the table from the runs of a case: median and min of each time."""
    row = {"case": case, "store": store or "-"}
    good = [r for r in runs if "error" not in r]
    if len(good) < len(runs):
        row["error"] = next(r["error"] for r in runs if "error" in r)
    if good:
        for call in ("rfft2", "irfft2"):
            times = [r[f"{call} ms"] for r in good]
            row[f"first {call} median ms"] = statistics.median(times)
            row[f"first {call} min ms"] = min(times)
        for name in good[0]["imports ms"]:
            row[f"import {name} ms"] = statistics.median(r["imports ms"][name] for r in good)
    row["runs"] = runs
    return row


def main():
    # imported here, not at the top: the fresh processes time their own import of accelmath
    if no_gpu("first_call"):
        return 0
    installed = {name for name in ("torch", "cupy") if importlib.util.find_spec(name)}
    runs = [(case, store) for case, (package, library) in CASES.items() if package in installed
            for store in ((None,) if library != "accelmath" else ("empty", "warm"))]
    if not runs:
        print("first_call: neither torch nor CuPy is installed; nothing to measure.")
        return 0
    env = environment()
    byte_compile("accelmath")
    scratch = tempfile.mkdtemp(prefix="accelmath-first-call-")
    warm_dirs, sizes, results = {}, {}, {run: [] for run in runs}
    try:
        for round_ in range(REPEATS + 1):  # round 0: dropped
            for case, store in runs:
                directory = None
                if store == "empty":
                    directory = tempfile.mkdtemp(dir=scratch)
                    warm_dirs.setdefault(case, directory)
                elif store == "warm":
                    directory = warm_dirs[case]
                result = run_child(case, directory)
                if store == "empty":
                    sizes.setdefault(case, store_size(directory))
                if round_:
                    results[case, store].append(result)
                print(f"round {round_}: {case}, store {store or '-'}: {result}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    rows = [summarize(case, store, results[case, store]) for case, store in runs]
    torch_ms = next((r.get("first rfft2 median ms") for r in rows if r["case"] == "torch.fft"),
                    None)
    for row in rows:
        ms = row.get("first rfft2 median ms")
        if ms is None:
            continue
        if torch_ms:
            row["rfft2 / torch.fft"] = ms / torch_ms
        if row["store"] == "empty":
            row["store files"], row["store kB"] = sizes[row["case"]][0], sizes[row["case"]][1] / 1e3
            row["target met"] = "yes" if ms <= TARGET_EMPTY_MS else "no"
        elif row["store"] == "warm" and torch_ms:
            row["target met"] = "yes" if ms <= TARGET_WARM_OVER_TORCH * torch_ms else "no"
    columns = ["case", "store", "first rfft2 median ms", "first rfft2 min ms",
               "first irfft2 median ms", "first irfft2 min ms", "rfft2 / torch.fft",
               "target met", "import numpy ms", "import torch ms", "import cupy ms",
               "import accelmath.fft ms", "store files", "store kB", "error"]
    columns = [c for c in columns if any(c in row for row in rows)]
    notes = (
        f"Milliseconds in a fresh process: its first rfft2 of a float32 {SHAPE[0]}x{SHAPE[1]} "
        "image already on the GPU, then its first irfft2 of the spectrum, each timed with a "
        "device synchronize after it (not the imports, the CUDA context or the data). "
        f"Median and min of {REPEATS} processes per case, the cases taking turns, after a "
        "round whose times are dropped. Store: accelmath's on-disk store "
        "(ACCELMATH_CACHE_DIR), a new empty directory for each empty run, and for the warm "
        "runs the directory the first empty run filled (its size is in the store columns). "
        "accelmath loads its CUDA libraries at its first call (lazy imports); torch and CuPy "
        "load cuFFT when imported. Import times (medians, for information): numpy, then the "
        "array package (cupy with cupy.fft), then accelmath.fft. "
        f"Targets: with a warm store, the first rfft2 at most {TARGET_WARM_OVER_TORCH:g}x "
        f"torch.fft's; with an empty store, at most {TARGET_EMPTY_MS / 1e3:g} s.")
    print(write("first-call", env, rows, columns, notes))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        sys.exit(main())

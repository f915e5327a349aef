"""accelmath's image subtraction beside the published SFFT code, on the same pairs.

The published code is ``sfft-romansnpit`` (the Roman fork of SFFT that PHROSTY runs). Both
subtract the same synthetic star-field pair (``accelmath.subtraction.synthetic_pair``, a fixed
seed) in float64 with PHROSTY's configuration: kernel half-width 9, kernel polynomial order 2,
background order 0, a constant photometric ratio, the reference convolved (the published
``ForceConv='REF'``). The published code takes the masked images (pixels outside the pair's mask
set to 0, made before any timing) where accelmath takes the mask itself.

On a GPU (CuPy arrays; the published CuPy backend), at 1024^2, 2048^2 and 4088^2:

- warm: wall time of one subtraction, the device synchronized after it, the median of
  ``--repeats`` calls after two untimed ones. accelmath: ``Subtractor.subtract`` of a
  subtractor made for the shape, after one subtractor before it whose background compiles
  were waited for (the store may be empty). Published: its GPU entry
  ``PureCupy_Customized_Packet.PCCP`` (it remakes its configuration on every call, as PHROSTY
  calls it) and, beside it, ``GeneralSFFTSubtract_PureCupy.GSS`` with the configuration made
  once ("core"); the speed-up is over the faster of the two.
- first call in a fresh process: a child process (this script with ``--child``) loads the
  pair, puts it on the device, synchronizes, and only then times its first subtraction and a
  device synchronize (imports, the CUDA context and the data are not in it; both packages
  byte-compiled first, as installed packages are). accelmath: the
  one-call ``subtraction.subtract``; published: ``PCCP``. Each first with empty stores of
  compiled code (``ACCELMATH_CACHE_DIR``, ``CUPY_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` new
  directories, as on a new machine), then with the stores that run filled.
- peak GPU memory, in the warm-store child, above the pair's own arrays: "pool peak", the
  growth of the CuPy memory pool's held bytes over the first call (the pool only grows, so
  this is the most it held); "live peak", the most bytes in use by arrays during a second
  call, tracked by a ``cupy.cuda.MemoryHook`` on every allocation and release from the pool;
  "outside pool", the device memory taken during the first call (``cudaMemGetInfo``) beyond
  the pool's growth (library work areas and handles allocated directly, loaded code).
- agreement: the photometric ratios (accelmath's ``result.ratio``; the published solution's
  constant kernel coefficient ``a_{00,00}`` divided by N0*N1, as its solution reader does)
  against each other and against the injected ratio; the two difference images, the largest
  absolute difference over the largest absolute value of the published difference image, and
  the same over the largest absolute value of the science image; the kernel coefficients and
  the background, likewise.

Without a GPU (or with ``--device cpu``): the published NumPy backend (numba and pyFFTW)
beside accelmath's CPU path (NumPy arrays), at 1024^2, the same checks, no memory figures.
The published code has no CPU entry that takes arrays (``Customized_Packet.CP`` reads FITS
files), so it runs what ``CP`` runs between its reads and writes: the configuration
``SingleSFFTConfigure.SSC(..., BACKEND_4SUBTRACT='Numpy')`` (numba compiles its functions for
the image size, or loads them from its cache) then ``GeneralSFFTSubtract.GSS``. Its first call
in a fresh process is both (with empty stores, then warm ones, as on the GPU); its warm
time is ``GSS`` with the configuration made once (a configuration per call would compile per
call). One untimed call before the timed ones.

If the published code is not installed the script says so and runs accelmath alone.

Run: ``python benchmarks/image_subtraction.py`` (``--sizes 1024 2048``, ``--only accelmath``
or ``--only published``, ``--repeats N``, ``--device cpu``, ``--no-first-call``). Writes
``benchmarks/results/image-subtraction-<device>.{json,md}``.
"""

import argparse
import contextlib
import importlib.metadata
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from _common import byte_compile, environment, live_bytes_hook, settle, write

GPU_SIZES = (1024, 2048, 4088)
CPU_SIZES = (1024,)
SEED = 2026
# PHROSTY's configuration, in accelmath's words and in the published code's
CONFIGURATION = {"half_width": 9, "kernel_order": 2, "background_order": 0,
                 "constant_ratio": True}
PUBLISHED_CONFIGURATION = {"GKerHW": 9, "KerPolyOrder": 2, "BGPolyOrder": 0,
                           "ConstPhotRatio": True}
PUBLISHED = "sfft-romansnpit"
LIBRARIES = ("accelmath", "published")
RESULT = "image-subtraction result: "
CHILD_TIMEOUT_S = 300
# the on-disk caches of compiled code that a first call may fill or find: variable -> folder
STORES = {"ACCELMATH_CACHE_DIR": "accelmath", "CUPY_CACHE_DIR": "cupy",
          "NUMBA_CACHE_DIR": "numba"}
# the targets: warm speed-up over the published code, first call (s) with an empty and
# a warm store, peak GPU memory (GB) at 4088^2; on the CPU, the speed-up at 1024^2
TARGET_GPU_SPEEDUP = 7.0
TARGET_FIRST_EMPTY_S = 2.0
TARGET_FIRST_WARM_S = 0.3
TARGET_MEMORY_GB = 4.0
TARGET_CPU_SPEEDUP = 5.0
GB = 1e9


# --- the packages ------------------------------------------------------------------------------

def published_problem():
    """Why the published code cannot run here, as a phrase, or None when it can."""
    try:
        import sfft  # noqa: F401  (its package imports its whole tree: astropy, sep, ...)
    except Exception as exc:  # an ImportError, or a needed package that fails on import
        return f"not installed ({type(exc).__name__}: {exc})"
    return None


def published_version():
    try:
        return importlib.metadata.version(PUBLISHED)
    except importlib.metadata.PackageNotFoundError:
        return None


def gpu_problem():
    """Why the GPU cases cannot run here, or None."""
    from accelmath._core.gpu import device

    if not device.gpu_available():
        return f"no usable GPU ({device.gpu_unavailable_reason()})"
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy is not usable ({type(exc).__name__}: {exc})"
    return None


class Space:
    """Where the pair lives: NumPy on the CPU, CuPy on the GPU."""

    def __init__(self, device):
        self.device = device
        if device == "gpu":
            import cupy

            self.xp = self.like = cupy
        else:
            self.xp, self.like = np, None

    def sync(self):
        if self.device == "gpu":
            self.xp.cuda.Device().synchronize()

    def to_numpy(self, x):
        return self.xp.asnumpy(x) if self.device == "gpu" else np.asarray(x)

    def from_numpy(self, x):
        return self.xp.asarray(x)


# --- the two subtractions ----------------------------------------------------------------------

class Accelmath:
    """accelmath's subtraction of one pair: a ``Subtractor`` for the warm calls, the one-call
    ``subtract`` for a new process's first call."""

    def __init__(self, space, reference, science, mask):
        from accelmath import subtraction

        self.subtraction, self.space = subtraction, space
        self.reference, self.science, self.mask = reference, science, mask
        self.subtractor = None

    def first(self):
        return self.subtraction.subtract(self.reference, self.science, mask=self.mask,
                                         **CONFIGURATION)

    def warm(self):
        if self.subtractor is None:
            self.subtractor = self.subtraction.Subtractor(
                tuple(self.reference.shape), **CONFIGURATION, like=self.space.like)
        return self.subtractor.subtract(self.reference, self.science, mask=self.mask)

    def timed(self):
        """A warm call with the per-stage timings."""
        return self.subtractor.subtract(self.reference, self.science, mask=self.mask,
                                        timings=True)

    def free(self):
        if self.subtractor is not None:
            self.subtractor.free()
            self.subtractor = None

    @staticmethod
    def outcome(result, space):
        """(difference as NumPy, ratio, coefficients c[ij, a, b], background d_pq)."""
        return (space.to_numpy(result.difference), float(result.ratio),
                np.asarray(space.to_numpy(result.coefficients), dtype=np.float64),
                np.asarray(result.background, dtype=np.float64).ravel())


class Published:
    """The published code's subtraction of one pair, with the reference convolved.

    On the GPU, ``first`` and ``warm`` call its entry ``PCCP``; ``core`` calls ``GSS`` with the
    configuration made once. On the CPU there is no entry that takes arrays (``CP`` reads FITS
    files), so ``first`` and ``warm`` run what ``CP`` runs between its reads and writes: the
    configuration (numba compiles its functions, or loads them from its cache) and ``GSS``.
    """

    def __init__(self, space, reference, science, mask):
        xp = space.xp
        self.space = space
        self.reference, self.science = reference, science
        # its inputs: the masked images, pixels outside the mask set to 0
        self.masked_reference = xp.ascontiguousarray(xp.where(mask, reference, 0.0))
        self.masked_science = xp.ascontiguousarray(xp.where(mask, science, 0.0))
        self.configuration = None

    def _configure(self):
        from sfft.sfftcore.SFFTConfigure import SingleSFFTConfigure

        n0, n1 = self.reference.shape
        options = ({"BACKEND_4SUBTRACT": "Cupy"} if self.space.device == "gpu" else
                   {"BACKEND_4SUBTRACT": "Numpy", "NUM_CPU_THREADS_4SUBTRACT": os.cpu_count(),
                    "NUMBA_CACHE": True})
        return SingleSFFTConfigure.SSC(
            NX=n0, NY=n1, KerHW=PUBLISHED_CONFIGURATION["GKerHW"],
            KerPolyOrder=PUBLISHED_CONFIGURATION["KerPolyOrder"],
            BGPolyOrder=PUBLISHED_CONFIGURATION["BGPolyOrder"],
            ConstPhotRatio=PUBLISHED_CONFIGURATION["ConstPhotRatio"], VERBOSE_LEVEL=0,
            **options)

    def _subtract(self, configuration):
        if self.space.device == "gpu":
            from sfft.sfftcore.SFFTSubtract import GeneralSFFTSubtract_PureCupy

            solution, difference, _ = GeneralSFFTSubtract_PureCupy.GSS(
                PixA_I_GPU=self.reference, PixA_J_GPU=self.science,
                PixA_mI_GPU=self.masked_reference, PixA_mJ_GPU=self.masked_science,
                SFFTConfig=configuration, VERBOSE_LEVEL=0)
        else:
            from sfft.sfftcore.SFFTSubtract import GeneralSFFTSubtract

            solution, difference, _ = GeneralSFFTSubtract.GSS(
                PixA_I=self.reference, PixA_J=self.science, PixA_mI=self.masked_reference,
                PixA_mJ=self.masked_science, SFFTConfig=configuration,
                BACKEND_4SUBTRACT="Numpy", NUM_CPU_THREADS_4SUBTRACT=os.cpu_count(),
                VERBOSE_LEVEL=0)
        return solution, difference

    def first(self):
        # its quietest level still prints a line or two: kept out of the output
        with contextlib.redirect_stdout(io.StringIO()):
            if self.space.device == "gpu":
                from sfft.PureCupyCustomizedPacket import PureCupy_Customized_Packet

                return PureCupy_Customized_Packet.PCCP(
                    self.reference, self.science, self.masked_reference,
                    self.masked_science, ForceConv="REF", VERBOSE_LEVEL=0,
                    **PUBLISHED_CONFIGURATION)
            return self._subtract(self._configure())

    def warm(self):
        # on the CPU its configuration compiles (numba) on every call: a loop keeps it
        return self.first() if self.space.device == "gpu" else self.core()

    def core(self):
        with contextlib.redirect_stdout(io.StringIO()):
            if self.configuration is None:
                self.configuration = self._configure()
            return self._subtract(self.configuration)

    def free(self):
        self.configuration = None

    @staticmethod
    def outcome(result, space):
        """(difference as NumPy, ratio, coefficients c[ij, a, b], background d_pq), in
        accelmath's normalization: the published kernel coefficients are N0*N1 times the
        natural ones (its solution reader divides them)."""
        solution, difference = result
        difference = space.to_numpy(difference)
        solution = np.asarray(space.to_numpy(solution), dtype=np.float64)
        w = PUBLISHED_CONFIGURATION["GKerHW"]
        order, side = PUBLISHED_CONFIGURATION["KerPolyOrder"], 2 * w + 1
        terms = (order + 1) * (order + 2) // 2
        background_terms = len(solution) - terms * side * side
        coefficients = solution[:terms * side * side].reshape(terms, side, side)
        coefficients = coefficients / difference.size
        return (difference, float(coefficients[0, w, w]), coefficients,
                solution[terms * side * side:][:background_terms])


MAKERS = {"accelmath": Accelmath, "published": Published}


# --- measurements ------------------------------------------------------------------------------

def warm_seconds(call, space, repeats):
    """Median wall time of ``call`` with the device synchronized, after untimed calls (two on
    the GPU, one on the CPU); returns (seconds, the last result)."""
    result = None
    for _ in range(2 if space.device == "gpu" else 1):
        result = call()
    space.sync()
    times = []
    for _ in range(repeats):
        del result
        start = time.perf_counter()
        result = call()
        space.sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def agreement(ours, theirs, science_scale):
    """accelmath's outcome against the published one: relative differences."""
    d_ours, r_ours, c_ours, b_ours = ours
    d_theirs, r_theirs, c_theirs, b_theirs = theirs
    gap = float(np.max(np.abs(d_ours - d_theirs)))
    row = {"difference vs published": gap / float(np.max(np.abs(d_theirs))),
           "difference vs published (science scale)": gap / science_scale,
           "ratio vs published": abs(r_ours - r_theirs) / abs(r_theirs)}
    if c_ours.shape == c_theirs.shape:
        row["coefficients vs published"] = (float(np.max(np.abs(c_ours - c_theirs)))
                                            / float(np.max(np.abs(c_theirs))))
    if b_ours.shape == b_theirs.shape:
        row["background vs published"] = float(np.max(np.abs(b_ours - b_theirs))
                                               / max(float(np.max(np.abs(b_theirs))), 1e-300))
    return row


# --- the child process: one first call -----------------------------------------------------------

def child(library, device, data):
    """In a fresh process: load the pair, put it on the device, time the first subtraction;
    on the GPU measure the memory, then print the figures as one JSON line."""
    start = time.perf_counter()
    space = Space(device)
    if library == "accelmath":
        import accelmath.subtraction  # noqa: F401
    else:
        import sfft  # noqa: F401
    imports_s = time.perf_counter() - start
    arrays = [space.from_numpy(np.load(os.path.join(data, f"{name}.npy")))
              for name in ("reference", "science", "mask")]
    runner = MAKERS[library](space, *arrays)
    space.sync()
    out = {"imports_s": imports_s}
    if device == "gpu":
        cupy = space.xp
        pool = cupy.get_default_memory_pool()
        held, used = pool.total_bytes(), pool.used_bytes()
        free_before = cupy.cuda.runtime.memGetInfo()[0]
    start = time.perf_counter()
    result = runner.first()
    space.sync()
    out["first_s"] = time.perf_counter() - start
    if device == "gpu":
        pool_growth = pool.total_bytes() - held
        out["pool_peak_gb"] = pool_growth / GB
        out["outside_pool_gb"] = (free_before - cupy.cuda.runtime.memGetInfo()[0]
                                  - pool_growth) / GB
        del result
        hook = live_bytes_hook(cupy)
        in_use = pool.used_bytes()
        try:
            with hook:  # (the peak is reached inside the call: its result may go at once)
                runner.first()
                space.sync()
            out["live_peak_gb"] = (in_use - used + hook.peak) / GB
        except Exception as exc:  # a CuPy without memory hooks: the figure stays empty
            out["live_peak_error"] = f"{type(exc).__name__}: {exc}"
    print(RESULT + json.dumps(out), flush=True)
    return 0


def run_child(library, device, data, environment_overrides):
    env = dict(os.environ, **environment_overrides)
    command = [sys.executable, os.path.abspath(__file__), "--child", library,
               "--device", device, "--data", data]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT_S} s"}
    for line in done.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    lines = (done.stderr or done.stdout).strip().splitlines()
    return {"error": lines[-1] if lines else f"exit status {done.returncode}"}


# --- the parent: one size ------------------------------------------------------------------------

def first_calls(library, device, data, scratch):
    """The first call in fresh processes: with empty stores, then with the ones it filled.
    The stores are all the on-disk caches of compiled code either code can use (accelmath's,
    CuPy's kernel cache, numba's), so that "empty" is a new machine's first run for both."""
    store = tempfile.mkdtemp(prefix=f"{library}-store-", dir=scratch)
    stores = {variable: os.path.join(store, name) for variable, name in STORES.items()}
    empty = run_child(library, device, data, stores)
    warm = run_child(library, device, data, stores)
    row = {"first call s (empty store)": empty.get("first_s"),
           "first call s (warm store)": warm.get("first_s"),
           "import s": warm.get("imports_s")}
    for key in ("pool_peak_gb", "live_peak_gb", "outside_pool_gb"):
        if key in warm:
            row[key.replace("_gb", " GB").replace("_", " ")] = warm[key]
    errors = [f"{name}: {r['error']}" for name, r in (("empty", empty), ("warm", warm))
              if "error" in r]
    if errors:
        row["error"] = "; ".join(errors)
    return row


def one_size(size, space, libraries, repeats, first_call, scratch):
    from accelmath import subtraction

    pair = subtraction.synthetic_pair(size, seed=SEED, like=space.like)
    reference, science, mask = pair.reference, pair.science, pair.mask
    data = tempfile.mkdtemp(prefix=f"pair-{size}-", dir=scratch)
    for name, array in (("reference", reference), ("science", science), ("mask", mask)):
        np.save(os.path.join(data, f"{name}.npy"), space.to_numpy(array))
    science_scale = float(np.max(np.abs(space.to_numpy(science))))
    injected = float(pair.ratio)
    rows, outcomes = {}, {}
    for library in libraries:
        row = {"size": size, "code": library}
        if library == "accelmath" and space.device == "gpu":
            # On a machine whose store is empty, accelmath compiles its kernels in the
            # background while the first pairs go without them (the subtract stage in its
            # Fourier form until the direct kernel is compiled): one subtractor first, its
            # kernels waited for, so that the warm figure is what a long-running process gets
            # whatever the store held (the first-call rows time the first call itself).
            first = MAKERS[library](space, reference, science, mask)
            settle(first.warm)
            first.free()
            del first
        runner = MAKERS[library](space, reference, science, mask)
        try:
            seconds, result = warm_seconds(runner.warm, space, repeats)
            row["warm ms"] = seconds * 1e3
            if library == "published" and space.device == "gpu":
                core, _ = warm_seconds(runner.core, space, repeats)
                row["warm core ms"] = core * 1e3
            if library == "accelmath":
                row["stages ms"] = {k: v * 1e3 for k, v in runner.timed().timings.items()}
            outcomes[library] = runner.outcome(result, space)
            del result
            row["ratio"] = outcomes[library][1]
            row["ratio - injected"] = outcomes[library][1] - injected
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            runner.free()
        if space.device == "gpu":
            space.xp.get_default_memory_pool().free_all_blocks()
        if first_call:
            firsts = first_calls(library, space.device, data, scratch)
            if "error" in firsts and "error" in row:
                firsts["error"] = row["error"] + "; " + firsts["error"]
            row.update(firsts)
        rows[library] = row
        print(f"{size}: {library}: " + ", ".join(
            f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
            for k, v in row.items() if k not in ("size", "code", "stages ms")), flush=True)
    if len(outcomes) == 2:
        rows["accelmath"].update(agreement(outcomes["accelmath"], outcomes["published"],
                                           science_scale))
        ours = rows["accelmath"].get("warm ms")
        theirs = [rows["published"].get(k) for k in ("warm ms", "warm core ms")]
        theirs = min((t for t in theirs if t), default=None)  # its faster way
        if ours and theirs:
            rows["accelmath"]["speed-up (warm)"] = theirs / ours
    for row in rows.values():
        row["injected ratio"] = injected
    shutil.rmtree(data, ignore_errors=True)
    return list(rows.values())


def targets(rows, device):
    """The targets, read off the accelmath rows: a list of phrases."""
    notes = []
    for row in rows:
        if row["code"] != "accelmath":
            continue
        speedup = row.get("speed-up (warm)")
        if device == "cpu":
            if speedup is not None:
                notes.append(f"{row['size']}^2 CPU speed-up {speedup:.1f}x "
                             f"(target {TARGET_CPU_SPEEDUP:g}x): "
                             + ("met" if speedup >= TARGET_CPU_SPEEDUP else "NOT met"))
            continue
        if row["size"] != max(GPU_SIZES):
            continue
        checks = [("warm speed-up", speedup, TARGET_GPU_SPEEDUP, "x", True),
                  ("first call, empty store", row.get("first call s (empty store)"),
                   TARGET_FIRST_EMPTY_S, " s", False),
                  ("first call, warm store", row.get("first call s (warm store)"),
                   TARGET_FIRST_WARM_S, " s", False),
                  ("pool peak", row.get("pool peak GB"), TARGET_MEMORY_GB, " GB", False)]
        for name, value, limit, unit, at_least in checks:
            if value is None:
                continue
            met = value >= limit if at_least else value <= limit
            bound = "at least" if at_least else "at most"
            notes.append(f"{name} {value:.3g}{unit} (target {bound} {limit:g}{unit}): "
                         + ("met" if met else "NOT met"))
    for row in rows:
        for key in ("difference vs published", "ratio vs published"):
            if key in row:
                notes.append(f"{row['size']}^2 {key} {row[key]:.2e} (target 1e-6): "
                             + ("met" if row[key] <= 1e-6 else "NOT met"))
    return notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", help="image sides (default: "
                        f"{' '.join(map(str, GPU_SIZES))} on a GPU, "
                        f"{' '.join(map(str, CPU_SIZES))} on the CPU)")
    parser.add_argument("--only", choices=LIBRARIES, help="run one of the two codes alone")
    parser.add_argument("--repeats", type=int, help="timed warm calls per case (default 7 on a "
                        "GPU, 2 on the CPU)")
    parser.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    parser.add_argument("--no-first-call", action="store_true",
                        help="skip the fresh processes (first calls and memory)")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.device, args.data)

    problem = gpu_problem()
    if args.device == "gpu" and problem:
        print(f"--device gpu: {problem}")
        return 1
    device = "cpu" if args.device == "cpu" or problem else "gpu"
    if device == "cpu" and args.device == "auto":
        print(f"{problem}: running the CPU cases")
    sizes = args.sizes or (GPU_SIZES if device == "gpu" else CPU_SIZES)
    repeats = args.repeats or (7 if device == "gpu" else 2)
    libraries = [args.only] if args.only else list(LIBRARIES)
    missing = published_problem() if "published" in libraries else None
    if missing:
        print(f"{PUBLISHED}: {missing}; running accelmath alone")
        libraries = [name for name in libraries if name != "published"]
        if not libraries:
            return 1

    scratch = tempfile.mkdtemp(prefix="image-subtraction-")
    # the parent's own published runs keep their compiled code out of the user's caches
    os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(scratch, "cupy-parent"))
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(scratch, "numba-parent"))
    env = environment()
    # the machine's load when the run began (others' work slows the CPU cases)
    env["load_average"] = [round(x, 2) for x in os.getloadavg()]
    env["versions"][PUBLISHED] = published_version() if not missing else f"({missing})"
    space = Space(device)
    if not args.no_first_call:
        byte_compile("accelmath", *(["sfft"] if "published" in libraries else []))
    rows = []
    try:
        for size in sizes:
            rows.extend(one_size(size, space, libraries, repeats, not args.no_first_call,
                                 scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    notes = targets(rows, device)
    for note in notes:
        print(note)
    columns = ["size", "code", "warm ms", "warm core ms", "speed-up (warm)",
               "first call s (empty store)", "first call s (warm store)", "pool peak GB",
               "live peak GB", "outside pool GB", "ratio", "injected ratio",
               "difference vs published", "ratio vs published", "coefficients vs published",
               "error"]
    where = ("CuPy arrays on the GPU; published: its CuPy backend (warm: PCCP, its entry, "
             "which remakes its configuration per call; core: GSS with the configuration made "
             "once)" if device == "gpu" else
             f"NumPy arrays on the CPU ({env['cpu']}, {env['cpu_count']} logical cores, "
             f"load average {env['load_average'][0]} at the start); "
             "published: its NumPy backend (numba, pyFFTW), configuration and GSS")
    print(write("image-subtraction", env, rows, columns,
                f"One synthetic star-field pair per size (seed {SEED}), float64, PHROSTY's "
                "configuration (w = 9, DK = 2, DB = 0, constant ratio, reference convolved); "
                f"{where}. Warm: wall ms per subtraction with the device synchronized, the "
                f"median of {repeats}. First call: a fresh process, after imports and data, "
                "with empty then warm stores of compiled code (ACCELMATH_CACHE_DIR, "
                "CUPY_CACHE_DIR, NUMBA_CACHE_DIR). Memory (GPU, warm-store process, above "
                "the pair): pool peak = the CuPy pool's growth over the first call; live peak "
                "= most bytes in use during a second call (a CuPy memory hook); outside pool = "
                "device memory taken beyond the pool (cudaMemGetInfo). Differences: max |ours "
                "- published| over max |published difference image|; ratios relative. "
                + " ".join(notes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

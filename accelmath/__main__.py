"""The ``accelmath`` command line.

``accelmath info`` reports this installation: accelmath and Python, the GPUs and the driver,
the CUDA libraries found, the array packages installed, and the on-disk store. It works, and
says so plainly, on a machine without a GPU or without the CUDA wheels.

``accelmath cache`` (or ``accelmath cache info``) says where the store is and what it holds;
``accelmath cache clear`` empties it.

``accelmath demo`` subtracts a synthetic star-field pair (image subtraction, the SFFT method) on
the GPU or the CPU, checks the result, prints per-stage timings and writes a figure.

``accelmath subtract`` subtracts FITS images: one pair (``REF.fits SCI.fits -o DIFF.fits``) or
a CSV manifest of many (``--pairs pairs.csv --out-dir DIR``), on every GPU of the machine or
over a Dask scheduler.

``accelmath bench`` runs a clone's benchmarks that this machine can run, plots their results
and prints the summary table.

Examples
--------
.. code-block:: console

   $ accelmath info
   $ python -m accelmath info
   $ accelmath cache clear
   $ accelmath demo --size 1024 --device cpu
   $ accelmath subtract ref.fits sci.fits -o diff.fits --mask mask.fits
   $ accelmath bench --list
"""

import argparse
import importlib.metadata
import os
import platform
import re
import sys

__all__ = ["cache_lines", "info_lines", "main"]

# What `info` lists, and the distributions that provide it (first installed wins).
# Detected through package metadata, so nothing is imported.
ARRAY_PACKAGES = {
    "numpy": ("numpy",),
    "scipy": ("scipy",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
    "torch": ("torch",),
    "jax": ("jax",),
    "cuda-pathfinder": ("cuda-pathfinder",),
}


def _distribution_version(candidates):
    """``(distribution, version)`` of the first installed candidate, or ``None``."""
    for distribution in candidates:
        try:
            return distribution, importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


# How the libraries' integer versions encode major.minor.patch: cuBLAS's 120903 is 12.9.3
# (major times 10000), cuFFT's 11401 is 11.4.1 and cuSOLVER's 11705 is 11.7.5 (times 1000).
_VERSION_BASE = {"cublas": 10000, "cublasLt": 10000, "cufft": 1000, "cusolver": 1000}


def _format_version(name, version):
    if isinstance(version, (tuple, list)):
        return ".".join(str(part) for part in version)
    base = _VERSION_BASE.get(name)
    if base is None or not isinstance(version, int):
        return str(version)
    return f"{version // base}.{version % base // 100}.{version % 100}"


def _gpu_lines(device):
    found = device.devices()
    if not found:
        return [f"GPU: none found ({device.gpu_unavailable_reason()})"]
    lines = []
    for gpu in found:
        major, minor = gpu["compute_capability"]
        lines.append(f"GPU {gpu['index']}: {gpu['name']}, compute capability {major}.{minor}, "
                     f"{gpu['total_memory'] / 2**30:.1f} GiB, "
                     f"{gpu['multiprocessor_count']} multiprocessors")
    return lines


# What `info` advises where a CUDA library is missing: commands that work from a clone (no
# package index serves accelmath, so `pip install "accelmath[cu12]"` finds nothing).
INSTALL_ADVICE = (
    "  To install the CUDA libraries, from a clone of accelmath: pip install \".[cu12]\" "
    "(CUDA 12 driver) or pip install \".[cu13]\" (CUDA 13 driver).",
    "  Where a CUDA build of torch or CuPy already brought them (their nvidia-* wheels), "
    "nothing extra is needed: they are found there.",
)
_PATHFINDER_MISS = re.compile(r'^Failure finding "(?P<files>[^"]+)"')


def _missing_reason(name, error):
    """The reason ``library_info`` gives for a missing library, said once and on one line.

    cuda-pathfinder's message repeats itself (``Failure finding "libX.so.12": No such file:
    libX.so.12, No such file: libX.so.12``) and ends in a newline; it names the file it
    looked for, which for a library that needs another (cuBLAS needs cuBLASLt) is the other.

    Examples
    --------
    >>> from accelmath.__main__ import _missing_reason
    >>> _missing_reason("cufft", 'not found: Failure finding "libcufft.so.11": No such '
    ...                 'file: libcufft.so.11, No such file: libcufft.so.11\\n')
    'looked for libcufft.so.11'
    >>> _missing_reason("cublas", 'not found: Failure finding "libcublasLt.so.12": No such '
    ...                 'file: libcublasLt.so.12, No such file: libcublasLt.so.12\\n')
    'needs libcublasLt.so.12, not found'
    >>> _missing_reason("cufft", "not found: cuda-pathfinder is not installed")
    'cuda-pathfinder is not installed'
    """
    reason = " ".join(error.split())  # (one line)
    reason = reason.removeprefix("not found: ")
    found = _PATHFINDER_MISS.match(reason)
    if found is None:
        parts = reason.split(", ")
        return ", ".join(part for index, part in enumerate(parts) if part not in parts[:index])
    files = found.group("files")
    if f"lib{name}.".lower() in files.lower():
        return f"looked for {files}"
    return f"needs {files}, not found"


def _library_lines(libraries):
    """One line per library: its version and the file it was loaded from, or that it was not
    found and why; a reason that every missing library shares said once; then how to install
    the missing ones."""
    lines = ["CUDA libraries:"]
    missing = {name: _missing_reason(name, entry["error"] or "")
               for name, entry in libraries.items() if entry["path"] is None}
    shared = len(set(missing.values())) == 1 and len(missing) > 1
    for name, entry in libraries.items():
        if name in missing:
            lines.append(f"  {name:<10} not found" + ("" if shared else f" ({missing[name]})"))
        elif entry["version"] is None:
            lines.append(f"  {name:<10} found at {entry['path']} ({entry['error']})")
        else:
            version = _format_version(name, entry["version"])
            lines.append(f"  {name:<10} {version:<8} found at {entry['path']}")
    if shared:
        lines.append(f"  (none found: {next(iter(missing.values()))})")
    if missing:
        lines += INSTALL_ADVICE
    return lines


def _summary_lines(device, libraries):
    """What runs on this machine, in plain words."""
    lines = ["What runs here:",
             "  host arrays (NumPy, CPU torch and JAX, lists): yes, on the CPU"]
    if not device.gpu_available():
        why = "no usable GPU (see GPU below)"
    elif libraries["cufft"]["path"] is None:
        why = "cuFFT is not installed (see CUDA libraries below)"
    else:
        why = None
    lines.append("  device arrays (CuPy, CUDA torch, GPU JAX): "
                 + ("yes, on the GPU" if why is None else f"no: {why}"))
    return lines


def _package_lines():
    lines = ["Array packages:"]
    for label, candidates in ARRAY_PACKAGES.items():
        found = _distribution_version(candidates)
        if found is None:
            lines.append(f"  {label:<16} not installed")
        else:
            distribution, version = found
            source = f" ({distribution})" if distribution != label else ""
            lines.append(f"  {label:<16} {version}{source}")
    return lines


def info_lines():
    """The report of ``accelmath info``, as a list of lines.

    Examples
    --------
    >>> from accelmath.__main__ import info_lines
    >>> info_lines()[0].startswith("accelmath ")
    True
    """
    from accelmath import __version__
    from accelmath._core import hostcall
    from accelmath._core.gpu import device

    version = device.driver_version()
    driver = (f"CUDA driver: supports CUDA {version[0]}.{version[1]}" if version
              else "CUDA driver: none (libcuda.so.1 cannot be loaded; it comes with the NVIDIA "
                   "display driver)")
    libraries = device.library_info()
    return [
        f"accelmath {__version__}",
        f"Python {platform.python_version()} ({sys.executable})",
        f"Platform: {platform.platform()}",
        "",
        *_summary_lines(device, libraries),
        "",
        *_gpu_lines(device),
        driver,
        "",
        *_library_lines(libraries),
        "",
        *_package_lines(),
        "",
        *cache_lines(),
        f"Library calls: {hostcall.status()}",
    ]


def cache_lines():
    """Where the on-disk store is, whether it is on, and what it holds, or the problem that
    keeps it from being used: the store's lines of ``accelmath info`` and ``accelmath cache``.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from accelmath.__main__ import cache_lines
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE="0"):
    ...     cache_lines()[1]
    'Store: off (ACCELMATH_CACHE=0)'
    """
    from accelmath._core.disk import store, upkeep

    try:
        directory = str(store.cache_dir())
    except RuntimeError as exc:  # no home directory, and no ACCELMATH_CACHE_DIR
        directory = f"unknown ({exc})"
    if store.relative_origin() is not None:
        directory += (f" (ACCELMATH_CACHE_DIR={store.relative_origin()!r}, relative: taken "
                      f"against the working directory at start)")
    if not store.enabled():
        state = f"off (ACCELMATH_CACHE={os.environ.get('ACCELMATH_CACHE')})"
    else:
        write_problem = _store_problem(store)
        problem = None if write_problem is None else _store_problem(store, writing=False)
        if problem is None:
            entries, nbytes = upkeep.size()
            state = f"on, {entries} entr{'y' if entries == 1 else 'ies'}, {nbytes / 1e6:.1f} MB"
            if write_problem is not None:  # (read, never written: no new entry is kept)
                state += f"; read only: {write_problem}"
        else:
            state = f"not usable: {problem}"
    return [f"Cache directory: {directory}", f"Store: {state}"]


def _info(args):
    print("\n".join(info_lines()))
    return 0


def _cache_info(args):
    print("\n".join(cache_lines()))
    return 0


def _store_problem(store, writing=True):
    """The problem that keeps the enabled ``store`` from being used (read alone, where not
    ``writing``), or None; the caller prints it, so it is not warned about too."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return store.problem(writing)


def _cache_clear(args):
    from accelmath._core.disk import store, upkeep
    from accelmath.errors import StateError

    if not store.enabled():
        print(cache_lines()[1].replace("Store: ", "Nothing to clear: the store is ", 1))
        return 0
    # (a store this user may not write in is cleared as far as it can be: what it could not
    # remove is said below)
    problem = _store_problem(store, writing=False)
    if problem is not None:
        print(f"accelmath cache clear: the store is not usable: {problem}", file=sys.stderr)
        return 1
    try:
        cleared = upkeep.clear()
    except StateError as exc:
        print(f"accelmath cache clear: {exc}", file=sys.stderr)
        return 1
    for path in cleared.files:
        print(f"removed {path}")
    print(f"Removed {cleared.entries} entr{'y' if cleared.entries == 1 else 'ies'} "
          f"({cleared.bytes / 1e6:.1f} MB) from {store.cache_dir()}")
    for path, why in cleared.left:
        print(f"accelmath cache clear: {path} could not be cleared: {why}", file=sys.stderr)
    return 1 if cleared.left else 0


def _demo(args):
    from accelmath.errors import AccelmathError
    from accelmath.subtraction._demo import run_demo

    try:
        report = run_demo(size=args.size, device=args.device, output=args.output,
                          seed=args.seed)
    except (AccelmathError, OSError) as exc:
        print(f"accelmath demo: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"accelmath demo: images of {args.size} x {args.size} pixels do not fit in this "
              "machine's memory; pass a smaller --size", file=sys.stderr)
        return 1
    return 1 if report.failures else 0


def _bench(args):
    from accelmath._benchmarks import bench

    return bench(folder=args.benchmarks, only=_names(args.only), skip=_names(args.skip),
                 list_only=args.list, run_scripts=not args.no_run)


def _names(values):
    """Benchmark names from repeated, comma-separated options."""
    return tuple(name for value in values or () for name in value.split(",") if name)


def _positive(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def _add_demo(commands):
    demo = commands.add_parser(
        "demo", help="subtract a synthetic star-field pair, check it and draw it",
        description="Image subtraction (the SFFT method, PHROSTY's configuration: kernel "
                    "half-width 9, kernel order 2, background order 0, constant photometric "
                    "ratio, float64) of a synthetic star-field pair with an injected transient. "
                    "Prints the injected and recovered photometric ratio, the residual noise "
                    "against the expected, the transient's detection, per-stage timings and "
                    "the wall time, and draws a figure (reference, science and difference "
                    "with colour bars, the transient circled with its S/N, a zoom on it, the "
                    "residual's histogram against the expected noise) into a PNG file, "
                    "accelmath-demo.png by default. Prints the seed, so that any run can be "
                    "repeated with --seed. Exits with status 1 when a check "
                    "fails (the recovered ratio, the residual noise, the transient found; the "
                    "report's last line says which) or the device cannot run.")
    demo.add_argument("--size", type=_positive, metavar="N",
                      help="image side in pixels (default: 4088 on a GPU, 1024 on the CPU)")
    demo.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                      help="where to run: cuda (CuPy, else torch with CUDA), cpu (NumPy), or "
                           "auto, the GPU where one is usable, else the CPU (default: auto)")
    demo.add_argument("--output", metavar="FILE",
                      help="the PNG file to write the figure to; an existing folder for "
                           "accelmath-demo.png inside it (default: accelmath-demo.png in the "
                           "working directory)")
    demo.add_argument("--seed", type=int, metavar="SEED",
                      help="random seed of the synthetic pair (default: a fresh one, printed "
                           "in the report so that the run can be repeated)")
    demo.set_defaults(run=_demo)


def _add_bench(commands):
    bench = commands.add_parser(
        "bench", help="run the benchmarks this machine can run, plot them, print the summary",
        description="Run the benchmarks of a clone's benchmarks/ folder that this machine can "
                    "run (CPU-only machines run the CPU ones), each in its own process; they "
                    "write benchmarks/results/<name>-<device>.json and .md. Then draw a PNG "
                    "plot beside each result file (needs matplotlib: pip install \".[bench]\") "
                    "and print the summary table: per case, accelmath beside the best peer.")
    bench.add_argument("--benchmarks", metavar="DIR",
                       help="the benchmarks folder (default: benchmarks/ beside the package "
                            "source, in a clone)")
    bench.add_argument("--only", action="append", metavar="NAMES",
                       help="run only these benchmarks (comma-separated; repeatable)")
    bench.add_argument("--skip", action="append", metavar="NAMES",
                       help="do not run these benchmarks (comma-separated; repeatable)")
    bench.add_argument("--list", action="store_true",
                       help="list the benchmarks and whether they run here, and stop")
    bench.add_argument("--no-run", action="store_true",
                       help="run nothing: plot and summarize the result files already there")
    bench.set_defaults(run=_bench)


def _parser():
    from accelmath import __version__

    parser = argparse.ArgumentParser(
        prog="accelmath",
        description="NVIDIA's math libraries (cuFFT, cuBLAS/cuBLASLt, cuSOLVER) as first-class Python.")
    parser.add_argument("--version", action="version", version=f"accelmath {__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", required=True,
                                     metavar="COMMAND")
    info = commands.add_parser(
        "info", help="report the GPUs, driver, CUDA libraries, array packages and cache",
        description="Report the GPUs, the driver, the CUDA libraries, the array packages and "
                    "the on-disk cache. Works without a GPU.")
    info.set_defaults(run=_info)
    cache = commands.add_parser(
        "cache", help="show or clear the on-disk store of compiled code and autotune choices",
        description="Show where the on-disk store of compiled code and autotune choices is "
                    "and what it holds (the default), or empty it.")
    cache.set_defaults(run=_cache_info)
    actions = cache.add_subparsers(title="actions", dest="action", metavar="ACTION")
    actions.add_parser("info", help="where the store is and what it holds (the default)",
                       description="Show where the store is and what it holds."
                       ).set_defaults(run=_cache_info)
    actions.add_parser("clear", help="remove every entry of the store",
                       description="Remove every entry of the store: compiled kernels are "
                                   "compiled again, autotune choices timed again."
                       ).set_defaults(run=_cache_clear)
    _add_demo(commands)
    from accelmath.subtraction._runs.command import add_subtract

    add_subtract(commands)
    _add_bench(commands)
    return parser


def main(argv=None):
    """Run the ``accelmath`` command line and return its exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments, without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success. A usage error exits through :class:`SystemExit` with status 2, as
        :mod:`argparse` does.

    Examples
    --------
    >>> from accelmath.__main__ import main
    >>> main(["info"])  # doctest: +SKIP
    0
    """
    for stream in (sys.stdout, sys.stderr):  # (a path of undecodable bytes is printed too)
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # (its reader left: `accelmath bench --list | head`)
        sys.stdout = open(os.devnull, "w")  # (no second error as Python flushes at exit)
        return 1


if __name__ == "__main__":
    sys.exit(main())

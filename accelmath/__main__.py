"""The ``accelmath`` command line.

``accelmath info`` reports this installation: accelmath and Python, the GPUs and the driver,
the CUDA libraries found, the array packages installed, and the on-disk cache. It works, and
says so plainly, on a machine without a GPU or without the CUDA wheels.

Examples
--------
.. code-block:: console

   $ accelmath info
   $ python -m accelmath info
"""

import argparse
import importlib.metadata
import platform
import sys

__all__ = ["info_lines", "main"]

# What `info` lists, and the distributions that provide it (first installed wins).
# Detected through package metadata, so nothing is imported.
ARRAY_PACKAGES = {
    "numpy": ("numpy",),
    "scipy": ("scipy",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
    "torch": ("torch",),
    "jax": ("jax",),
    "cuda-core": ("cuda-core",),
    "cuda-bindings": ("cuda-bindings",),
    "cuda-pathfinder": ("cuda-pathfinder",),
}

INSTALL_HINT = "install them with `pip install accelmath[cu12]` (CUDA 12) or `accelmath[cu13]` (CUDA 13)"


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


def _library_lines(device):
    libraries = device.library_info()
    lines = ["CUDA libraries:"]
    for name, entry in libraries.items():
        if entry["path"] is None:
            lines.append(f"  {name:<10} {entry['error']}")
        elif entry["version"] is None:
            lines.append(f"  {name:<10} {entry['path']} ({entry['error']})")
        else:
            lines.append(f"  {name:<10} {_format_version(name, entry['version'])}  {entry['path']}")
    if any(entry["path"] is None for entry in libraries.values()):
        lines.append(f"  ({INSTALL_HINT})")
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
    from accelmath._core import device, hostcall, wisdom

    version = device.driver_version()
    driver = (f"CUDA driver: supports CUDA {version[0]}.{version[1]}" if version
              else "CUDA driver: none (libcuda.so.1 cannot be loaded; it comes with the NVIDIA "
                   "display driver)")
    state = "enabled" if wisdom.disk_cache_enabled() else "disabled by ACCELMATH_CACHE"
    return [
        f"accelmath {__version__}",
        f"Python {platform.python_version()} ({sys.executable})",
        f"Platform: {platform.platform()}",
        "",
        *_gpu_lines(device),
        driver,
        "",
        *_library_lines(device),
        "",
        *_package_lines(),
        "",
        f"Cache directory: {wisdom.cache_dir()} (disk cache {state})",
        f"Library calls: {hostcall.status()}",
    ]


def _info(args):
    print("\n".join(info_lines()))
    return 0


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
    args = _parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

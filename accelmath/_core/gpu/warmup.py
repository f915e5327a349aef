"""Work a domain starts at its import, on a thread of its own: importing its device path and
loading its CUDA libraries, so that the caller's first call finds them ready.

torch and CuPy load their CUDA libraries when they are imported; accelmath's import stays
light (a host-only user loads nothing) and starts this work in the background instead, only
where a GPU array package (CuPy, torch, JAX) is already imported. ``ACCELMATH_WARMUP=0``
turns it off. A failure here is logged and left for the first call to report. The
bindings load a library with the interpreter lock released (``dlopen`` as a ctypes foreign
call), so the caller's own Python work goes on meanwhile; a library cuda-pathfinder looks up
for the first time (no path remembered in the store yet) is loaded by it, with the lock held.
"""

import importlib
import logging
import sys
import threading

from accelmath._core.switches import switched_off

__all__ = ["GPU_PACKAGES", "device_path", "load_everything", "start"]

_log = logging.getLogger("accelmath")

#: the packages whose presence means device arrays are coming
GPU_PACKAGES = ("cupy", "torch", "jax")


def load_everything(library):
    """Load a binding's library and bind each function it declares that this version has."""
    for name in library.functions:
        try:
            getattr(library, name)
        except Exception:  # a function of another CUDA version: bound (and reported) on use
            pass


def device_path(modules, bindings):
    """A task that imports ``modules`` (a domain's device path) and loads the library of each
    of ``bindings`` (module names under ``accelmath.bindings``) with its functions."""

    def load():
        for module in modules:
            importlib.import_module(module)
        for binding in bindings:
            load_everything(importlib.import_module(f"accelmath.bindings.{binding}").lib)

    return load


def start(name, *tasks):
    """Run ``tasks`` (callables of no arguments), in order, on a thread named
    ``accelmath-warmup-<name>``, where a GPU array package is imported and the switch is on.
    The thread is not a daemon: a process that ends meanwhile waits for it (a library must
    not be unloaded while it loads).

    Returns
    -------
    threading.Thread or None
        The thread, or None where nothing was started.

    Examples
    --------
    >>> import os
    >>> from accelmath._core.gpu import warmup
    >>> os.environ["ACCELMATH_WARMUP"] = "0"
    >>> warmup.start("example", print) is None
    True
    >>> del os.environ["ACCELMATH_WARMUP"]
    """
    if switched_off("ACCELMATH_WARMUP") or not any(p in sys.modules for p in GPU_PACKAGES):
        return None
    thread = threading.Thread(target=_run, args=(name, tasks), name=f"accelmath-warmup-{name}")
    thread.start()
    return thread


def _run(name, tasks):
    for task in tasks:
        try:
            task()
        except Exception as exc:  # the first call meets it again, and says so
            _log.debug("warm-up of %s: %s: %s", name, type(exc).__name__, exc)
            return

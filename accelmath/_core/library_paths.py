"""Where each CUDA library was found, kept in the store: a new process loads the file it
found before instead of importing cuda-pathfinder again (tens of milliseconds of its first
call).

The memo is keyed by the library's name, the Python environment (``sys.prefix``) and the
variables that change where cuda-pathfinder looks (``CUDA_HOME``, ``CUDA_PATH``,
``CONDA_PREFIX``, ``LD_LIBRARY_PATH``); a remembered file that no longer loads is looked up
again by the loader. ``ACCELMATH_CACHE=0`` turns it off with the rest of the store.
"""

import json
import os
import sys

from accelmath._core import store
from accelmath.bindings import _loader

__all__ = ["install", "key"]

NAMESPACE = "library-paths"
_SEARCH_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "LD_LIBRARY_PATH")


def key(name):
    """The store key of library ``name`` in this environment."""
    return json.dumps([name, sys.prefix, [os.environ.get(v) for v in _SEARCH_VARIABLES]])


def _recall(name):
    entry = store.load_json(NAMESPACE, key(name))
    path = entry.get("path") if isinstance(entry, dict) else None
    return path if isinstance(path, str) and os.path.isfile(path) else None


def _keep(name, path):
    store.save_json(NAMESPACE, key(name), {"path": path})


def install():
    """Hand the loader this memo (done once, when the core is imported)."""
    _loader.remember_paths(_recall, _keep)

"""Where each CUDA library was found, kept in the store: a new process loads the file it
found before instead of importing cuda-pathfinder again (about 45 ms of its import and first
lookups).

The memo is keyed by the library's name, the Python environment (``sys.prefix``) and the
variables that change where cuda-pathfinder looks (``CUDA_HOME``, ``CUDA_PATH``,
``CONDA_PREFIX``, ``LD_LIBRARY_PATH``). A remembered path is a file that a later process
loads and runs, so it is checked again before each use (:func:`distrust`): a file of that
library's name, in a place that a lookup searches, a regular file that only its owner (this
user or root) can write, in a directory that only its owner can write, and the same file
(device, inode, size, modification time) as the one found. Anything else, or a file that no
longer loads, is looked up again. ``ACCELMATH_CACHE=0`` turns the memo off with the rest of
the store.
"""

import json
import logging
import os
import site
import stat
import sys

from accelmath._core.disk import store
from accelmath.bindings import _loader

__all__ = ["distrust", "install", "key"]

NAMESPACE = "library-paths"
_SEARCH_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "LD_LIBRARY_PATH")
_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/opt")  # where the loader's own search looks
_log = logging.getLogger("accelmath.store")


def key(name):
    """The store key of library ``name`` in this environment."""
    return json.dumps([name, sys.prefix, [os.environ.get(v) for v in _SEARCH_VARIABLES]])


def distrust(name, path, identity):
    """Why the remembered ``path`` of library ``name`` is not loaded, as a phrase; ``None``
    where it may be. ``identity`` is what :func:`_identity` said of the file when it was
    found."""
    if not isinstance(path, str) or "\0" in path:
        return "not a path"
    if not os.path.isabs(path):
        return "not an absolute path"
    if not _named_like(name, os.path.basename(path)):
        return f"not a file of {name}"
    real = os.path.realpath(path)  # (not strict: it raises for a NUL byte alone, refused above)
    if not any(os.path.commonpath([real, root]) == root for root in _search_roots()):
        return "not in a place that a lookup searches"
    try:
        status = os.stat(real)
        directory = os.stat(os.path.dirname(real))
    except OSError as exc:
        return store._reason(exc)
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file"
    if os.name == "posix":
        for what, found in (("the file", status), ("its directory", directory)):
            if found.st_uid not in (0, os.geteuid()):
                return f"{what} belongs to another user (uid {found.st_uid})"
            if found.st_mode & 0o022:
                return f"{what} can be written by its group or by others"
    if identity != _identity(status):
        return "not the file that was found (replaced or changed since)"
    return None


def _named_like(name, basename):
    if os.name == "nt":
        return basename.lower().startswith(name.lower()) and basename.lower().endswith(".dll")
    return basename.startswith(f"lib{name}.so")


def _search_roots():
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *_SYSTEM}
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except AttributeError:  # a virtualenv's old site module
        pass
    for variable in _SEARCH_VARIABLES:
        roots.update(filter(None, (os.environ.get(variable) or "").split(os.pathsep)))
    return {os.path.realpath(root) for root in roots if os.path.isabs(root)}


def _identity(status):
    return [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns]


def _recall(name):
    entry = store.load_json(NAMESPACE, key(name))
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return None
    if "file" not in entry:  # kept by an accelmath that did not check: looked up again
        return None
    path = entry["path"]
    why = distrust(name, path, entry.get("file"))
    if why is not None:
        _log.warning("not loading %s from %s, which the store remembers: %s; looking it up "
                     "again", name, path, why)
        return None
    # the file checked, by its real path: a link on the way (to which the check's answer does
    # not hold once it points elsewhere) is not followed again
    return os.path.realpath(path)


def _keep(name, path):
    try:
        identity = _identity(os.stat(os.path.realpath(path)))
    except OSError:
        return
    store.save_json(NAMESPACE, key(name), {"path": path, "file": identity})


def install():
    """Hand the loader this memo (done once, when the core is imported)."""
    _loader.remember_paths(_recall, _keep)

"""The store's upkeep: how much it holds (:func:`size`) and removing what it wrote
(:func:`clear`, ``accelmath cache clear``), over the files of its own names in its private
namespace directories (see :mod:`accelmath._core.disk.store`); no link is followed.
"""

import os
import re
import time
from typing import NamedTuple

from accelmath._core.disk import private_files, store_format
from accelmath._core.disk.private_files import Unreadable
from accelmath._core.disk.store import (_ENTRY, MARKER, NAMESPACES, _log, _marked,
                                        _namespace_directory, _reason, _usable_root)
from accelmath.errors import StateError

__all__ = ["Cleared", "Usage", "clear", "size"]

_TEMPORARY = re.compile(r"[0-9a-f]{64}\.[a-z0-9_]{8}\.tmp")  # private_files.write_atomically
_WRITE_SECONDS = 60  # a temporary file older than this is left over from an interrupted write
_HEAD_LIMIT = 1 << 16  # bytes read of a file to recognize the store's header (clear)


class Usage(NamedTuple):
    """What the store holds (:func:`size`)."""

    entries: int
    bytes: int


class Cleared(NamedTuple):
    """What :func:`clear` removed: entries, their bytes, and every file removed (entries and
    temporary files that interrupted writes left)."""

    entries: int
    bytes: int
    files: tuple
    #: What could not be listed or removed: ``(path, why)`` pairs (the store's own files may
    #: remain there).
    left: tuple = ()


def size():
    """How many entries the store holds, and their bytes on disk.

    Returns
    -------
    Usage
        ``(entries, bytes)``; ``(0, 0)`` where the store is off or unusable.
    """
    entries = total = 0
    unlisted = []
    for _, path, status in _own_files(unlisted):
        if _ENTRY.fullmatch(path.name):
            entries, total = entries + 1, total + status.st_size
    for directory, why in unlisted:
        _log.warning("could not list the store directory %s: %s", directory, why)
    return Usage(entries, total)


def clear():
    """Remove every entry of the store, and the temporary files that interrupted writes left.

    Only what the store wrote goes: in its namespaces' directories, files of its own names
    whose header is its own; symbolic links are never followed, and other files stay.

    Returns
    -------
    Cleared
        The entries removed, their bytes, every file removed, and what could not be cleared
        (``left``: path and why).

    Raises
    ------
    StateError
        If the directory does not carry the store's marker (:data:`MARKER`): it may be
        another program's, and nothing is removed.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core.disk import store, upkeep
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
    ...     store.save("nvrtc", "k", b"12345")
    ...     upkeep.clear().entries, upkeep.size().entries
    (1, 0)
    """
    root = _usable_root(create=False)
    if root is None or not any(os.path.lexists(root / name) for name in NAMESPACES):
        return Cleared(0, 0, ())  # (nothing of the store's: nothing to refuse either)
    if not _marked(root):
        raise StateError(
            f"'{root}' does not carry accelmath's store marker ({MARKER}), so it may not be "
            f"the store's: nothing was removed. Point ACCELMATH_CACHE_DIR at accelmath's "
            f"own directory, or remove this one yourself if it is the store of an older "
            f"accelmath.")
    entries = total = 0
    removed, left = [], []
    now = time.time()
    for namespace, path, status in _own_files(left):
        entry = _ENTRY.fullmatch(path.name) is not None
        # A recent temporary file may be a write in progress in another process.
        if not entry and now - status.st_mtime < _WRITE_SECONDS:
            continue
        try:
            head = private_files.read_file(path, _HEAD_LIMIT, head=True) or b""
            if not store_format.written_by_store(head, namespace, path.name, not entry):
                continue
            path.unlink()
        except (OSError, Unreadable) as exc:  # (said by the caller, from left)
            left.append((path, str(exc)))
            continue
        removed.append(path)
        if entry:
            entries, total = entries + 1, total + status.st_size
    _log.debug("store cleared: %d entries, %d bytes", entries, total)
    return Cleared(entries, total, tuple(removed), tuple(left))


def _own_files(unlisted):
    """``(namespace, path, lstat)`` of each file in a private namespace directory of a
    private root whose name is an entry's or a temporary file's; no link is followed. A
    directory that cannot be listed (but for one removed meanwhile) is appended to
    ``unlisted`` with why."""
    root = _usable_root(create=False)
    if root is None:
        return
    for namespace in NAMESPACES:
        directory = _namespace_directory(namespace, create=False)
        if directory is None:
            continue
        try:
            with os.scandir(directory) as found:
                items = [(item.name, item.stat(follow_symlinks=False)) for item in found
                         if _ENTRY.fullmatch(item.name) or _TEMPORARY.fullmatch(item.name)]
        except OSError as exc:  # removed meanwhile, or not readable (said by the caller)
            if not isinstance(exc, FileNotFoundError):
                unlisted.append((directory, _reason(exc)))
            continue
        for name, status in items:
            path = directory / name
            why = private_files.owned_regular(path, status)
            if why is None:
                yield namespace, path, status
            else:
                _log.warning("ignoring %s in the store: %s", path, why)

"""The on-disk store: compiled code by content hash, and autotune decisions keyed by the GPU,
the driver and the library versions, so that the next process starts compiled and tuned.

Where: ``$ACCELMATH_CACHE_DIR``, else the user cache directory (:func:`cache_dir`).
``ACCELMATH_CACHE=0`` turns the store off. Both are read at each call, so a change of the
environment takes effect at once; a relative ``ACCELMATH_CACHE_DIR`` is taken against the
working directory of the moment the process first saw it (at import), never a later one.

Trust: whoever can write in the store can make the next process load their code (library
paths, cubins), so the store is used only where it is private. Its directories are made
``0700`` and its entries ``0600`` whatever the umask, and a directory (the root or a
namespace) that another user owns or that its group or others can write is neither read nor
written: the library runs without the store and one warning per directory names it and the
fix. An entry's file is read without following a link, without blocking and up to a limit,
and only where it is a regular file of this user's (:mod:`accelmath._core.disk.private_files`).

What: entries in the namespaces of :data:`NAMESPACES` (one directory each), bytes through
:func:`load` and :func:`save`, small JSON values through :func:`load_json` and
:func:`save_json`. A key is any string; the entry's file is named by the key's SHA-256. Each
file begins with a header (format version, namespace, the whole key, payload length and
SHA-256), so that an entry that is truncated, corrupted, written in another format, or that
holds another key is detected: it is ignored, one log line of the ``accelmath.store`` logger
names its file, and the next save of the key replaces it. Hits and misses are logged at DEBUG.
The root carries a marker file (:data:`MARKER`), written with the first entry; ``clear``
(:mod:`~accelmath._core.disk.upkeep`) refuses a directory without it, and removes only files
of the store's own names and header.

How: an entry is written to a temporary file in its own directory, then renamed over the old
one (``os.replace``), so that readers and concurrent writers, threads or processes, see a whole
entry or none, never a mixture.

Failures: the store never raises into its caller because of the file system. Where the
directory cannot be used (it cannot be created, it is a file, it is read-only, it is not
private, the home directory is unknown...) :func:`load` returns ``None``, :func:`save` does
nothing, and one warning per directory and process (:mod:`warnings` and the log) names the
problem. A read-only store that already holds entries is still read.

Examples
--------
>>> import os, tempfile
>>> from unittest import mock
>>> from accelmath._core.disk import store
>>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
...     store.save("nvrtc", "the answer", b"42")
...     store.load("nvrtc", "the answer")
...     store.load("nvrtc", "another question") is None
...     store.save_json("timing", "best algorithm", {"algorithm": 3})
...     store.load_json("timing", "best algorithm")
b'42'
True
{'algorithm': 3}
"""

import contextlib
import json
import logging
import os
import re
import sys
import threading
import warnings
from pathlib import Path

from accelmath._core.callers import outside_stacklevel
from accelmath._core.disk import private_files, store_format
from accelmath._core.disk.private_files import Unreadable
from accelmath._core.disk.store_format import FORMAT, BadEntry
from accelmath._core.switches import switched_off
from accelmath.errors import InvalidArgumentError

__all__ = ["FORMAT", "MARKER", "NAMESPACES", "cache_dir", "enabled", "load", "load_json",
           "location", "problem", "save", "save_json"]

NAMESPACES = {  # every namespace of the store, and what it holds
    "library-paths": "where each CUDA library was found",
    "nvrtc": "code compiled by NVRTC",
    "nvjitlink": "code linked by nvJitLink",
    "timing": "autotune decisions",
    "algorithms": "a library's algorithm candidates for a problem",
    "layouts": "the strides of array packages' results",
}
MARKER = ".accelmath-store"  # the file that makes a directory the store's root
_MARKER_TEXT = b"accelmath on-disk store; `accelmath cache clear` empties it\n"
_ENTRY = re.compile(r"[0-9a-f]{64}\.entry")
_ENTRY_LIMIT = 1 << 28  # bytes of an entry's file (compiled code is a few MB at most)
_FIX = ("Set ACCELMATH_CACHE_DIR to a private directory of your own (it is made 0700 if "
        "missing), or ACCELMATH_CACHE=0 to turn the store off.")

_log = logging.getLogger("accelmath.store")
_lock = threading.Lock()
_warned = {}          # directory -> the problem reported for it in this process
_absolute = {}        # a relative ACCELMATH_CACHE_DIR -> the directory it named when first seen


def cache_dir():
    """The directory of the on-disk store (not created here), always absolute.

    Returns
    -------
    pathlib.Path
        ``$ACCELMATH_CACHE_DIR`` when set and not blank (blanks around it taken off; a
        relative one taken against the working directory when the process first saw it);
        otherwise the user cache directory:
        ``$XDG_CACHE_HOME/accelmath`` or ``~/.cache/accelmath`` on Linux,
        ``~/Library/Caches/accelmath`` on macOS, ``%LOCALAPPDATA%\\accelmath\\Cache`` on
        Windows.

    Raises
    ------
    RuntimeError
        If neither ``ACCELMATH_CACHE_DIR`` is set nor the home directory is known (the
        store's own functions report this as a warning instead).

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from accelmath._core.disk.store import cache_dir
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR="/tmp/accelmath-cache"):
    ...     str(cache_dir())
    '/tmp/accelmath-cache'
    """
    explicit = _explicit_dir()
    if explicit:
        return _made_absolute(explicit)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
        return Path(base) / "accelmath" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "accelmath"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG specification says to ignore a relative path.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "accelmath"


def relative_origin():
    """The relative ``ACCELMATH_CACHE_DIR`` that :func:`cache_dir` made absolute, or ``None``
    where it is absolute or unset (for reports)."""
    explicit = _explicit_dir()
    return explicit if explicit in _absolute else None


def _explicit_dir():
    """``ACCELMATH_CACHE_DIR``, blanks around it taken off (a slip of the keyboard, not the
    name of a folder); empty where unset."""
    return (os.environ.get("ACCELMATH_CACHE_DIR") or "").strip()


def _made_absolute(text):
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    with _lock:
        if text not in _absolute:
            _absolute[text] = Path(os.path.abspath(path))
        return _absolute[text]


def enabled():
    """Whether the store is switched on: ``False`` when ``ACCELMATH_CACHE`` is ``0``
    (or ``false``, ``off``, ``no``). A store that is on may still be unusable: see
    :func:`problem`.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from accelmath._core.disk import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE="0"):
    ...     store.enabled()
    False
    """
    return not switched_off("ACCELMATH_CACHE")


def location():
    """The store's directory, created (private) if needed, or ``None`` where the store is off
    or cannot be used (then a warning names the problem, once).

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core.disk import store
    >>> directory = tempfile.mkdtemp()
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=directory):
    ...     str(store.location()) == directory
    True
    """
    root = _usable_root(create=True)
    return None if root in _warned else root  # (a read-only store is read, not written)


def problem(writing=True):
    """Why the store, switched on, cannot be used, as a sentence; ``None`` where it can be
    used (or will be, once its directory is made at the first save) or is switched off.
    Creates nothing. ``writing=False`` asks about reading alone: a store this user may not
    write in is still read.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core.disk import store
    >>> blocker = tempfile.mkstemp()[1]  # a file: no directory can be made under it
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=os.path.join(blocker, "store")):
    ...     store.problem()
    "cannot create '.../store': '...' is not a directory"
    """
    root, reason = _named_root()
    if root is None:
        return reason
    if writing and root in _warned:  # (a write that failed; reading asks the checks below)
        return _warned[root]
    try:
        why = private_files.distrust(root)
    except (FileNotFoundError, NotADirectoryError):
        parent = _nearest_existing(root)
        if parent == root:
            return f"'{root}' is not a directory"
        if not parent.is_dir():
            return f"cannot create '{root}': '{parent}' is not a directory"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"cannot create '{root}': no permission to write in '{parent}'"
        return None
    except OSError as exc:
        return f"cannot read '{root}': {_reason(exc)}"
    if why is not None:
        return _untrusted(why)
    if writing and not os.access(root, os.W_OK | os.X_OK):
        return f"cannot write in '{root}': no permission"
    return None


def load(namespace, key):
    """The bytes saved under ``key`` in ``namespace``, or ``None`` (not saved, store off or
    unusable, or the entry damaged: then logged as a warning).

    Parameters
    ----------
    namespace : str
        One of :data:`NAMESPACES`: one directory of the store.
    key : str
        Anything that identifies the entry; all of it is compared, not only its hash.

    Raises
    ------
    InvalidArgumentError
        If ``namespace`` or ``key`` is not as described (a mistake of the caller; the file
        system never makes this raise).
    """
    name = _entry_name(namespace, key)
    directory = _namespace_directory(namespace, create=False)
    path = None if directory is None else directory / name
    try:
        blob = None if path is None else private_files.read_file(path, _ENTRY_LIMIT)
        if blob is None:
            _log.debug("store miss: %s %r", namespace, key)
            return None
        payload = store_format.decode(blob, namespace, key)
    except (Unreadable, BadEntry) as exc:
        _log.warning("ignoring the store entry %s (%s %r): %s; the next save replaces it",
                     path, namespace, key, exc)
        return None
    _log.debug("store hit: %s %r (%d bytes)", namespace, key, len(payload))
    return payload


def save(namespace, key, data):
    """Keep ``data`` under ``key`` in ``namespace``, replacing what was there.

    Nothing happens where the store is off; where it cannot be used, a warning names the
    problem once and nothing is saved.

    Parameters
    ----------
    namespace, key : str
        As for :func:`load`.
    data : bytes-like
        ``bytes``, ``bytearray`` or ``memoryview``.

    Raises
    ------
    InvalidArgumentError
        If an argument is not as described (a mistake of the caller; the file system never
        makes this raise).

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core.disk import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
    ...     store.save("nvrtc", "k", bytearray(b"v"))
    ...     store.load("nvrtc", "k")
    b'v'
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(
            f"data must be bytes, bytearray or memoryview, got {type(data).__name__}")
    name = _entry_name(namespace, key)
    payload = bytes(data)
    blob = store_format.encode(namespace, key, payload)
    if len(blob) > _ENTRY_LIMIT:
        _log.warning("not saving the store entry %s %r: %d bytes, more than the %d an entry "
                     "may hold", namespace, key, len(blob), _ENTRY_LIMIT)
        return
    directory = _namespace_directory(namespace, create=True)
    if directory is None:
        return
    try:
        private_files.write_atomically(directory / name, blob)
    except IsADirectoryError:  # (a folder in the entry's place: that entry alone, left there)
        _log.warning("not saving the store entry %s %r: a directory is in its place (%s)",
                     namespace, key, directory / name)
        return
    except OSError as exc:  # read-only, disk full...
        _report(directory.parent, f"cannot write in '{directory.parent}': {_reason(exc)}")
        return
    _log.debug("store save: %s %r (%d bytes)", namespace, key, len(payload))


def load_json(namespace, key):
    """The value saved by :func:`save_json` under ``key``, or ``None`` as for :func:`load`
    (also where the entry is not JSON, larger than 1 MiB or nested more than 32 deep)."""
    payload = load(namespace, key)
    if payload is None:
        return None
    try:
        return store_format.decode_json(payload)
    except BadEntry as exc:  # saved by save(), not here
        _log.warning("ignoring the store entry %s %r: %s; the next save replaces it",
                     namespace, key, exc)
        return None


def save_json(namespace, key, value):
    """Keep ``value`` (made of dicts, lists, strings, numbers, booleans and ``None``) under
    ``key``, as JSON.

    Raises
    ------
    InvalidArgumentError
        If ``value`` cannot be written as JSON, or the namespace or key is not as for
        :func:`load`.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core.disk import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
    ...     store.save_json("timing", "choice", {"algorithm": 3, "workspace": 1024})
    ...     store.load_json("timing", "choice")["algorithm"]
    3
    """
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"value {value!r} cannot be kept as JSON: {exc}") from None
    save(namespace, key, text.encode())


def _entry_name(namespace, key):
    """The file name of an entry; raises where the namespace or key is not as described."""
    if not isinstance(namespace, str) or namespace not in NAMESPACES:
        raise InvalidArgumentError(
            f"namespace={namespace!r} is not one of the store's: expected one of "
            f"{', '.join(map(repr, NAMESPACES))}")
    if not isinstance(key, str):
        raise InvalidArgumentError(f"key must be a str, got {type(key).__name__}")
    return store_format.file_stem(key) + ".entry"


def _named_root():
    """``(directory, None)``; ``(None, reason)`` where no directory can be named;
    ``(None, None)`` where the store is off."""
    if not enabled():
        return None, None
    try:
        return cache_dir(), None
    except Exception as exc:  # Path.home() with no home directory: RuntimeError, KeyError
        return None, f"no cache directory: {exc}"


def _usable_root(create):
    """The store's root where it is private (made first where ``create``), else None: off,
    not made yet (``create`` false), or unusable (then reported once)."""
    root, reason = _named_root()
    if root is None:
        if reason is not None:
            _report(None, reason)
        return None
    try:
        if create:
            private_files.make_directory(root)
        why = private_files.distrust(root)
    except (FileNotFoundError, NotADirectoryError) as exc:
        if os.path.lexists(root) and not os.path.isdir(root):
            _report(root, f"'{root}' is not a directory")
        elif create or isinstance(exc, NotADirectoryError):
            _report(root, f"cannot {'create' if create else 'read'} '{root}': {_reason(exc)}")
        return None
    except OSError as exc:  # a parent without permission, a file in the way...
        _report(root, f"cannot {'create' if create else 'read'} '{root}': {_reason(exc)}")
        return None
    if why is not None:
        _report(root, _untrusted(why))
        return None
    if create and not _marked(root):
        try:
            private_files.write_atomically(root / MARKER, _MARKER_TEXT)
        except OSError as exc:
            _report(root, f"cannot write in '{root}': {_reason(exc)}")
            return None
    return root


def _namespace_directory(namespace, create):
    """The private directory of ``namespace`` (made first where ``create``), or None."""
    root = _usable_root(create)
    if root is None:
        return None
    directory = root / namespace
    try:
        if create:  # (where something is there already, distrust says what)
            private_files.make_directory(directory)
        why = private_files.distrust(directory, follow=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _report(directory, f"cannot {'create' if create else 'read'} '{directory}': "
                           f"{_reason(exc)}")
        return None
    if why is not None:
        _report(directory, _untrusted(why))
        return None
    return directory


def _untrusted(why):
    return (f"{why}, so another user could plant code in it; the store uses only "
            f"directories of your own that only you can write (chmod 700)")


def _nearest_existing(path):
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def _marked(root):
    try:
        return private_files.read_file(root / MARKER, len(_MARKER_TEXT)) == _MARKER_TEXT
    except Unreadable:
        return False


def _reason(exc):
    """An OSError as a phrase: its system message, without the file name repeated."""
    return exc.strerror or str(exc)


def _report(directory, reason):
    """Warn, once per directory and process, that the store cannot be used there."""
    with _lock:
        if directory in _warned:
            return
        _warned[directory] = reason
    message = (f"accelmath's on-disk store is not used ({reason}): compiled code and "
               f"autotune decisions are not kept across processes. {_FIX}")
    _log.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=outside_stacklevel())


# A relative ACCELMATH_CACHE_DIR names the directory it names now, at import, for good.
with contextlib.suppress(Exception):
    cache_dir()

"""The on-disk store: compiled code by content hash, and autotune decisions keyed by the GPU,
the driver and the library versions, so that the next process starts compiled and tuned.

Where: ``$ACCELMATH_CACHE_DIR``, else the user cache directory (:func:`cache_dir`).
``ACCELMATH_CACHE=0`` turns the store off. Both are read at each call, so a change of the
environment takes effect at once.

What: entries in namespaces (one directory each, such as ``"nvrtc"`` or ``"timing"``),
bytes through :func:`load` and :func:`save`, small JSON values through :func:`load_json` and
:func:`save_json`. A key is any string; the entry's file is named by the key's SHA-256. Each
file begins with a header (format version, namespace, the whole key, payload length and
SHA-256), so that an entry that is truncated, corrupted, written in another format, or that
holds another key (a hash collision, a file put there by something else) is detected: it is
ignored, a warning goes to the ``accelmath.store`` logger, and the next save of the key
replaces it. Hits and misses are logged at DEBUG.

How: an entry is written to a temporary file in its own directory, then renamed over the old
one (``os.replace``), so that readers and concurrent writers, threads or processes, see a whole
entry or none, never a mixture.

Failures: the store never raises into its caller because of the file system. Where the
directory cannot be used (it cannot be created, it is a file, it is read-only, the home
directory is unknown...) :func:`load` returns ``None``, :func:`save` does nothing, and one
warning per directory and process (:mod:`warnings` and the log) names the problem. A read-only
store that already holds entries is still read.

Examples
--------
>>> import os, tempfile
>>> from unittest import mock
>>> from accelmath._core import store
>>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
...     store.save("demo", "the answer", b"42")
...     store.load("demo", "the answer")
...     store.load("demo", "another question") is None
...     store.save_json("demo", "best algorithm", {"algorithm": 3})
...     store.load_json("demo", "best algorithm")
...     store.size().entries
b'42'
True
{'algorithm': 3}
2
"""

import contextlib
import dataclasses
import hashlib
import importlib
import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import NamedTuple

from accelmath._core.switches import switched_off
from accelmath.errors import InvalidArgumentError

__all__ = ["FORMAT", "Usage", "cache_dir", "clear", "enabled", "fingerprint", "load",
           "load_json", "location", "problem", "save", "save_json", "size"]

FORMAT = 1  # the entry format; an entry of another format is stale and is not read
_MAGIC = b"accelmath-store\n"
_SUFFIX = ".entry"
_TEMPORARY = ".tmp"
_WRITE_SECONDS = 60  # a temporary file older than this is left over from an interrupted write
_NAMESPACE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

_log = logging.getLogger("accelmath.store")
_lock = threading.Lock()
_warned = set()       # directories whose problem was already reported in this process
_fingerprints = {}    # (device_id, libraries) -> fingerprint, once per process


class Usage(NamedTuple):
    """What the store holds (:func:`size`) or what was removed from it (:func:`clear`)."""

    entries: int
    bytes: int


@dataclasses.dataclass(frozen=True)
class _Header:
    """The header line at the start of each entry's file, after the magic line."""

    format: int
    namespace: str
    key: str
    length: int
    sha256: str

    def encode(self):
        return _MAGIC + json.dumps(dataclasses.asdict(self)).encode() + b"\n"


class _BadEntry(Exception):
    """An entry's file that cannot be trusted; the message says why."""


def cache_dir():
    """The directory of the on-disk store (not created here).

    Returns
    -------
    pathlib.Path
        ``$ACCELMATH_CACHE_DIR`` when set and not empty; otherwise the user cache directory:
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
    >>> from accelmath._core.store import cache_dir
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR="/tmp/accelmath-cache"):
    ...     str(cache_dir())
    '/tmp/accelmath-cache'
    """
    explicit = os.environ.get("ACCELMATH_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
        return Path(base) / "accelmath" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "accelmath"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG specification says to ignore a relative path.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "accelmath"


def enabled():
    """Whether the store is switched on: ``False`` when ``ACCELMATH_CACHE`` is ``0``
    (or ``false``, ``off``, ``no``). A store that is on may still be unusable: see
    :func:`problem`.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from accelmath._core import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE="0"):
    ...     store.enabled()
    False
    """
    return not switched_off("ACCELMATH_CACHE")


def location():
    """The store's directory, created if needed, or ``None`` where the store is off or
    cannot be used (then a warning names the problem, once).

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core import store
    >>> directory = tempfile.mkdtemp()
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=directory):
    ...     str(store.location()) == directory
    True
    """
    root, reason = _diagnose()
    if reason is not None:
        _report(root, reason)
        return None
    return root


def problem():
    """Why the store, switched on, cannot be used, as a sentence; ``None`` where it can be
    used or is switched off. Creates the directory if needed, and tries a write in it.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core import store
    >>> blocker = tempfile.mkstemp()[1]  # a file: no directory can be made under it
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=os.path.join(blocker, "store")):
    ...     store.problem()
    "cannot create '.../store': Not a directory"
    """
    return _diagnose()[1]


def load(namespace, key):
    """The bytes saved under ``key`` in ``namespace``, or ``None`` (not saved, store off or
    unusable, or the entry damaged: then logged as a warning).

    Parameters
    ----------
    namespace : str
        A plain name (letters, digits, ``_``, ``.``, ``-``): one directory of the store.
    key : str
        Anything that identifies the entry; all of it is compared, not only its hash.

    Raises
    ------
    InvalidArgumentError
        If ``namespace`` or ``key`` is not as described (a mistake of the caller; the file
        system never makes this raise).
    """
    path = _entry_path(namespace, key)
    if path is None:
        return None
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        _log.debug("store miss: %s %r", namespace, key)
        return None
    except OSError as exc:  # a file in place of the directory, no permission to read...
        _report(path.parents[1], f"cannot read '{path.parents[1]}': {_reason(exc)}")
        return None
    try:
        payload = _decode(blob, namespace, key)
    except _BadEntry as exc:
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
    >>> from accelmath._core import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
    ...     store.save("demo", "k", bytearray(b"v"))
    ...     store.load("demo", "k")
    b'v'
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(
            f"data must be bytes, bytearray or memoryview, got {type(data).__name__}")
    path = _entry_path(namespace, key)
    if path is None:
        return
    payload = bytes(data)
    header = _Header(FORMAT, namespace, key, len(payload), hashlib.sha256(payload).hexdigest())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, header.encode() + payload)
    except OSError as exc:  # read-only, a file in place of the directory, disk full...
        _report(path.parents[1], f"cannot write in '{path.parents[1]}': {_reason(exc)}")
        return
    _log.debug("store save: %s %r (%d bytes)", namespace, key, len(payload))


def load_json(namespace, key):
    """The value saved by :func:`save_json` under ``key``, or ``None`` as for :func:`load`."""
    payload = load(namespace, key)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError as exc:  # whole and unchanged, but not JSON: saved by save(), not here
        _log.warning("ignoring the store entry %s %r: not JSON (%s); the next save replaces it",
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
    >>> from accelmath._core import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
    ...     store.save_json("demo", "choice", {"algorithm": 3, "workspace": 1024})
    ...     store.load_json("demo", "choice")["algorithm"]
    3
    """
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"value {value!r} cannot be kept as JSON: {exc}") from None
    save(namespace, key, text.encode())


def size():
    """How many entries the store holds, and their bytes on disk.

    Returns
    -------
    Usage
        ``(entries, bytes)``; ``(0, 0)`` where the store is off or unusable.
    """
    entries = total = 0
    for path in _files(_SUFFIX):
        with contextlib.suppress(OSError):  # removed meanwhile by another process
            total += path.stat().st_size
            entries += 1
    return Usage(entries, total)


def clear():
    """Remove every entry of the store (and temporary files that interrupted writes left).

    Files that are not the store's, such as other directories' contents, are kept.

    Returns
    -------
    Usage
        The entries removed and their bytes.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from accelmath._core import store
    >>> with mock.patch.dict(os.environ, ACCELMATH_CACHE_DIR=tempfile.mkdtemp()):
    ...     store.save("demo", "k", b"12345")
    ...     store.clear().entries, store.size().entries
    (1, 0)
    """
    entries = total = 0
    now = time.time()
    for path in [*_files(_SUFFIX), *_files(_TEMPORARY)]:
        try:
            stat = path.stat()
            # A recent temporary file may be a write in progress in another process.
            if path.suffix == _TEMPORARY and now - stat.st_mtime < _WRITE_SECONDS:
                continue
            nbytes = stat.st_size
            path.unlink()
        except OSError as exc:
            _log.warning("could not remove the store file %s: %s", path, _reason(exc))
            continue
        if path.suffix == _SUFFIX:
            entries, total = entries + 1, total + nbytes
    _log.debug("store cleared: %d entries, %d bytes", entries, total)
    return Usage(entries, total)


def fingerprint(device_id, libraries=()):
    """What an autotune decision depends on besides the problem: the GPU's name and compute
    capability, the driver, and the versions of ``libraries``, as one string to put in a key.

    Computed once per process and arguments; never raises (what cannot be read is written
    as ``none`` or ``unavailable``).

    Parameters
    ----------
    device_id : int
        The device ordinal.
    libraries : sequence of str
        Library names of :data:`accelmath.bindings.LIBRARIES`.

    Examples
    --------
    >>> from accelmath._core.store import fingerprint
    >>> text = fingerprint(0, ("nvrtc",))
    >>> text.startswith("gpu=") and "; nvrtc=" in text
    True
    """
    key = (device_id, tuple(libraries))
    found = _fingerprints.get(key)
    if found is None:
        found = _fingerprints[key] = _make_fingerprint(device_id, key[1])
    return found


def _make_fingerprint(device_id, libraries):
    from accelmath._core import device

    gpu, capability = "none", "none"
    try:
        for found in device.devices():
            if found["index"] == device_id:
                gpu = found["name"]
                capability = "{}.{}".format(*found["compute_capability"])
    except Exception:  # a driver too broken to answer: the fingerprint must not raise
        pass
    driver = device.driver_version()
    parts = [f"gpu={gpu}", f"sm={capability}",
             "driver=" + ("none" if driver is None else "{}.{}".format(*driver))]
    for name in libraries:
        parts.append(f"{name}={_library_version(name)}")
    return "; ".join(parts)


def _library_version(name):
    from accelmath.bindings import LIBRARIES

    module_name = LIBRARIES.get(name)
    if module_name is None:
        return "unknown"
    try:
        version = importlib.import_module(f"accelmath.bindings.{module_name}").version()
    except Exception:  # not installed, or a failing query: the fingerprint must not raise
        return "unavailable"
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def _entry_path(namespace, key):
    """The file of an entry, or None where the store is off or its directory is unknown."""
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise InvalidArgumentError(
            f"namespace={namespace!r} is not a plain name: expected letters, digits, '_', "
            f"'.' and '-', not starting with '.' or '-'")
    if not isinstance(key, str):
        raise InvalidArgumentError(f"key must be a str, got {type(key).__name__}")
    root = _root()
    if root is None:
        return None
    return root / namespace / (hashlib.sha256(key.encode()).hexdigest() + _SUFFIX)


def _named_root():
    """``(directory, None)``; ``(None, reason)`` where no directory can be named;
    ``(None, None)`` where the store is off."""
    if not enabled():
        return None, None
    try:
        return cache_dir(), None
    except Exception as exc:  # Path.home() with no home directory: RuntimeError, KeyError
        return None, f"no cache directory: {exc}"


def _root():
    """The store's directory, or None where it is off or cannot be named (then reported)."""
    root, reason = _named_root()
    if reason is not None:
        _report(None, reason)
    return root


def _diagnose():
    """``(directory, None)`` where the store can be used; ``(directory or None, reason)``
    where it cannot; ``(None, None)`` where it is off."""
    root, reason = _named_root()
    if root is None:
        return None, reason
    if root.exists() and not root.is_dir():
        return root, f"'{root}' is not a directory"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return root, f"cannot create '{root}': {_reason(exc)}"
    try:
        fd, probe = tempfile.mkstemp(dir=root, prefix=".probe-", suffix=_TEMPORARY)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return root, f"cannot write in '{root}': {_reason(exc)}"
    return root, None


def _files(suffix):
    """The store's files ending in ``suffix``, in every namespace."""
    root = _root()
    if root is None:
        return []
    try:
        namespaces = [p for p in root.iterdir() if p.is_dir()]
    except OSError:  # missing (nothing stored yet), not a directory, or not readable
        return []
    found = []
    for directory in namespaces:
        with contextlib.suppress(OSError):
            found += [p for p in directory.iterdir() if p.name.endswith(suffix)]
    return found


def _decode(blob, namespace, key):
    """The payload of an entry's file, checked against its header; raises _BadEntry."""
    if not blob.startswith(_MAGIC):
        if _MAGIC.startswith(blob):
            raise _BadEntry(f"truncated: {len(blob)} bytes, not even a header")
        raise _BadEntry("not an accelmath store entry")
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        raise _BadEntry("truncated in its header")
    try:
        fields = json.loads(blob[len(_MAGIC):end])
    except ValueError:
        raise _BadEntry("corrupted header") from None
    if not isinstance(fields, dict):
        raise _BadEntry("corrupted header")
    if fields.get("format") != FORMAT:
        raise _BadEntry(f"stale: format {fields.get('format')!r}, this accelmath reads "
                        f"format {FORMAT}")
    try:
        header = _Header(**fields)
    except TypeError:
        raise _BadEntry("corrupted header") from None
    if (header.namespace, header.key) != (namespace, key):
        raise _BadEntry(f"holds another entry ({header.namespace} {header.key!r})")
    payload = blob[end + 1:]
    if len(payload) != header.length:
        raise _BadEntry(f"truncated: {len(payload)} of {header.length} bytes")
    if hashlib.sha256(payload).hexdigest() != header.sha256:
        raise _BadEntry("corrupted: its checksum does not match")
    return payload


def _write_atomically(path, blob):
    """Write ``blob`` to ``path`` through a temporary file in the same directory."""
    # No fsync: after a crash an entry may be cut short, which _decode detects; syncing
    # every entry would cost more than recompiling the rare damaged one.
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".",
                                     suffix=_TEMPORARY)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(blob)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _reason(exc):
    """An OSError as a phrase: its system message, without the file name repeated."""
    return exc.strerror or str(exc)


def _report(root, reason):
    """Warn, once per directory and process, that the store cannot be used."""
    with _lock:
        if root in _warned:
            return
        _warned.add(root)
    message = (f"accelmath's on-disk store is not used ({reason}): compiled code and "
               f"autotune decisions are not kept across processes. Set ACCELMATH_CACHE_DIR "
               f"to a writable directory, or ACCELMATH_CACHE=0 to turn the store off.")
    _log.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=_outside())


def _outside():
    """The ``stacklevel`` that points a warning of :func:`_report`'s at the first caller
    outside the package (whichever of its functions reached the store)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            package + os.sep):
        frame, level = frame.f_back, level + 1
    return level

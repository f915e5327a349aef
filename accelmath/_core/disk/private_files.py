"""Files that only this user could have written: private directories, and reads that never
block, never follow a link and never read without bound.

The on-disk store keeps compiled code and library paths that a later process loads and runs;
whoever can write there can make that process run their code. So a directory is trusted only
when it is private (:func:`distrust`: owned by this user, not writable by its group or by
others), directories are made ``0700`` and files ``0600`` whatever the umask, and a file is
read only when it is a regular file of this user's, opened without following a symbolic link
and without blocking (a FIFO), up to a size limit (:func:`read_file`).

On Windows, where POSIX owners and modes do not apply, the checks of owner and mode are
skipped; the rest holds.

Examples
--------
>>> import os, tempfile
>>> from accelmath._core.disk import private_files
>>> directory = os.path.join(tempfile.mkdtemp(), "a", "b")
>>> private_files.make_directory(directory)
>>> private_files.distrust(directory) is None
True
>>> with open(os.path.join(directory, "entry"), "wb") as file:
...     _ = file.write(b"payload")
>>> private_files.read_file(os.path.join(directory, "entry"), limit=100)
b'payload'
"""

import contextlib
import errno
import os
import stat
import tempfile

__all__ = ["DIRECTORY_MODE", "Unreadable", "distrust", "make_directory", "owned_regular",
           "read_file", "write_atomically"]

DIRECTORY_MODE = 0o700
_POSIX = os.name == "posix"
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


class Unreadable(Exception):
    """A file that exists but is not read; the message says why, in a phrase."""


def distrust(path, follow=True):
    """Why the directory ``path`` is not private, as a phrase; ``None`` where it is.

    Private: a directory (a symbolic link to one only where ``follow`` is true, and the link
    this user's or the system's, whose owner alone can point it elsewhere), owned by this
    user, not writable by its group or by others.

    Raises
    ------
    OSError
        Where ``path`` cannot be examined (missing, a parent without permission), and
        ``NotADirectoryError`` where it is not a directory.
    """
    status = os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(status.st_mode):
        return f"'{path}' is a symbolic link"
    if follow and _POSIX:
        link = os.lstat(path)
        if stat.S_ISLNK(link.st_mode) and link.st_uid not in (0, os.geteuid()):
            return (f"'{path}' is a symbolic link that another user owns (uid {link.st_uid}), "
                    "who can point it elsewhere")
    if not stat.S_ISDIR(status.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", os.fspath(path))
    return _foreign(path, status)


def owned_regular(path, status):
    """Why the file of ``status`` (an ``lstat``) is not a regular file of this user's that
    others cannot write, as a phrase; ``None`` where it is."""
    if not stat.S_ISREG(status.st_mode):
        return f"'{path}' is not a regular file"
    return _foreign(path, status)


def _foreign(path, status):
    if not _POSIX:
        return None
    if status.st_uid != os.geteuid():
        return f"'{path}' belongs to another user (uid {status.st_uid}, not {os.geteuid()})"
    if status.st_mode & 0o022:
        return (f"'{path}' can be written by its group or by others "
                f"(mode {stat.S_IMODE(status.st_mode):04o})")
    return None


def make_directory(path):
    """Make directory ``path`` and its missing parents, each ``0700`` whatever the umask;
    a directory that exists is left as it is. Where one cannot be made, the parents this
    call made are removed again (while empty).

    Raises
    ------
    OSError
        Where a directory cannot be made (a file in the way, no permission, a name too
        long...).
    """
    path = os.fspath(path)
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent in (path, ""):  # (the root, or the working directory of a relative path)
            break
        path = parent
    made = []
    try:
        for directory in reversed(missing):
            try:
                os.mkdir(directory, DIRECTORY_MODE)
            except FileExistsError:
                continue  # made meanwhile by another process: not ours to change
            made.append(directory)
            os.chmod(directory, DIRECTORY_MODE)  # a umask such as 0o200 takes bits off
    except OSError:
        for directory in reversed(made):
            try:
                os.rmdir(directory)  # (only where still empty: another process's files stay)
            except OSError:
                break
        raise


def read_file(path, limit, head=False):
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Opened without following a symbolic link and without blocking, and read only where it is
    a regular file of this user's that others cannot write, of at most ``limit`` bytes (or,
    where ``head`` is true, of any size, its first ``limit`` bytes read).

    Returns
    -------
    bytes or None
        ``None`` where there is no such file.

    Raises
    ------
    Unreadable
        Where the file exists but is not read (a link, a FIFO, a device, another user's, too
        large, an error of the file system); the message says why.
    """
    try:
        descriptor = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable("a symbolic link") from None
        raise Unreadable(exc.strerror or str(exc)) from None
    try:
        status = os.fstat(descriptor)
        why = owned_regular(path, status)
        if why is not None:
            raise Unreadable(why.replace(f"'{path}' ", "", 1))
        if status.st_size > limit and not head:
            raise Unreadable(f"{status.st_size} bytes, more than the {limit} an entry may hold")
        chunks, left = [], limit + (not head)
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    finally:
        os.close(descriptor)
    blob = b"".join(chunks)
    if len(blob) > limit:  # grew while it was read
        raise Unreadable(f"more than the {limit} bytes an entry may hold")
    return blob


def write_atomically(path, blob):
    """Write ``blob`` to the file ``path`` through a temporary file (``0600``, named
    ``<stem>.<8 characters>.tmp``) in the same directory, renamed over it: readers see the
    whole file or none. Raises OSError."""
    # No fsync: after a crash a file may be cut short, which its reader must detect (the
    # store checks each entry whole); syncing every write would cost more.
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name.split(".")[0] + ".",
                                     suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(blob)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise

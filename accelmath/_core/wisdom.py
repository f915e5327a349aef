"""The on-disk store of autotune choices and compiled code: where it lives, and whether it is on.

``$ACCELMATH_CACHE_DIR`` names the directory; without it, the user cache directory is used
(``$XDG_CACHE_HOME/accelmath``, by default ``~/.cache/accelmath``, on Linux).
``ACCELMATH_CACHE=0`` turns the disk store off. Both are read at each call, so a change of the
environment takes effect at once.
"""

import os
import sys
from pathlib import Path

__all__ = ["cache_dir", "disk_cache_enabled", "switched_off"]

_OFF = ("0", "false", "off", "no")


def cache_dir():
    """The directory of the on-disk store (not created here).

    Returns
    -------
    pathlib.Path
        ``$ACCELMATH_CACHE_DIR`` when set and not empty; otherwise the user cache directory:
        ``$XDG_CACHE_HOME/accelmath`` or ``~/.cache/accelmath`` on Linux,
        ``~/Library/Caches/accelmath`` on macOS, ``%LOCALAPPDATA%\\accelmath\\Cache`` on
        Windows.

    Examples
    --------
    >>> import os
    >>> from accelmath._core.wisdom import cache_dir
    >>> os.environ["ACCELMATH_CACHE_DIR"] = "/tmp/accelmath-cache"
    >>> str(cache_dir())
    '/tmp/accelmath-cache'
    >>> del os.environ["ACCELMATH_CACHE_DIR"]
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


def disk_cache_enabled():
    """Whether the on-disk store is used: ``False`` when ``ACCELMATH_CACHE`` is ``0``.

    ``false``, ``off`` and ``no`` (any case) also turn it off; any other value, or none,
    leaves it on.

    Examples
    --------
    >>> import os
    >>> from accelmath._core.wisdom import disk_cache_enabled
    >>> os.environ["ACCELMATH_CACHE"] = "0"
    >>> disk_cache_enabled()
    False
    >>> del os.environ["ACCELMATH_CACHE"]
    """
    return not switched_off("ACCELMATH_CACHE")


def switched_off(variable):
    """Whether the environment variable ``variable`` is ``0``, ``false``, ``off`` or ``no``
    (any case): how accelmath's switches are turned off.

    Examples
    --------
    >>> import os
    >>> from accelmath._core.wisdom import switched_off
    >>> switched_off("ACCELMATH_NO_SUCH_SWITCH")
    False
    """
    return os.environ.get(variable, "1").strip().lower() in _OFF

"""accelmath's on/off switches in the environment (``ACCELMATH_CACHE``, ``ACCELMATH_HOSTCALL``,
``ACCELMATH_COLUMNS``...), read at each call so that a change takes effect at once."""

import os

__all__ = ["switched_off"]

_OFF = ("0", "false", "off", "no")


def switched_off(variable):
    """Whether the environment variable ``variable`` is ``0``, ``false``, ``off`` or ``no``
    (any case): how accelmath's switches are turned off. Unset, or any other value: on.

    Examples
    --------
    >>> from accelmath._core.switches import switched_off
    >>> switched_off("ACCELMATH_NO_SUCH_SWITCH")
    False
    """
    return os.environ.get(variable, "1").strip().lower() in _OFF

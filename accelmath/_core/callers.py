"""Where accelmath's warnings point: at the first caller outside the package, however many of
its frames (a front's, a public function's, a check's) lie between."""

import os
import sys

__all__ = ["outside_stacklevel"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def outside_stacklevel():
    """The ``stacklevel`` that makes a ``warnings.warn`` of the function calling this point
    at the first frame outside accelmath (its caller's caller, and so on).

    Examples
    --------
    >>> import warnings
    >>> from accelmath._core.callers import outside_stacklevel
    >>> def warn():  # (a function outside accelmath: the level of its own frame)
    ...     return outside_stacklevel()
    >>> warn()
    1
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE):
        frame, level = frame.f_back, level + 1
    return level

"""Pure checks of the arguments every domain shares: integers, lengths, axes, execution, workers.

No device access and no domain's semantics: each check returns the normalized value or raises
:class:`~accelmath.errors.InvalidArgumentError` with a message that quotes the value and says
what is allowed. Each message is written here once.
"""

import operator
import os

import numpy

from accelmath.errors import ArgumentTypeError, AxisError, InvalidArgumentError

__all__ = ["absent", "EXECUTIONS", "check_execution", "check_workers", "index", "length", "count",
           "normalize_axis", "check_flag"]

EXECUTIONS = ("auto", "cuda", "cpu")


def absent(args):
    """Whether the further arguments ``args`` of a fused function (a prologue's, an
    epilogue's) are none: the default ``()``, or None (an array, or a scalar, even 0, is an
    argument)."""
    return args is None or args.__class__ is tuple and not args


def index(value, what):
    """``value`` as an int (anything with ``__index__`` but a bool), or InvalidArgumentError
    naming ``what``.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.arguments import index
    >>> index(np.int64(3), "n")
    3
    """
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{what} must be an integer, got {value!r}") from None


def length(n, what="n"):
    """A length ``n``: an integer of at least 1, or InvalidArgumentError naming ``what``."""
    n = index(n, what)
    if n < 1:
        raise InvalidArgumentError(f"{what} must be at least 1, got {n}")
    return n


def count(value, what):
    """A count or bound ``value``: an integer of at least 0, or InvalidArgumentError naming
    ``what``."""
    value = index(value, what)
    if value < 0:
        raise InvalidArgumentError(f"{what} must be at least 0, got {value}")
    return value


def check_flag(value, what, integers=True):
    """A boolean option as a bool: True or False (NumPy's too), or, where ``integers``, an
    integer 0 or 1 (NumPy's and SciPy's callers pass those); else InvalidArgumentError
    naming ``what``.

    Examples
    --------
    >>> from accelmath._core.arguments import check_flag
    >>> check_flag(0, "full_matrices")
    False
    """
    if isinstance(value, (bool, numpy.bool_)):
        return bool(value)
    try:
        number = operator.index(value) if integers else None
    except TypeError:
        number = None
    if number not in (0, 1):
        raise InvalidArgumentError(f"{what} must be True or False, got {value!r}")
    return bool(number)


def normalize_axis(axis, ndim, what="axes"):
    """``axis`` of an array of ``ndim`` dimensions as a non-negative int (negative ones count
    from the end), or InvalidArgumentError.

    Examples
    --------
    >>> from accelmath._core.arguments import normalize_axis
    >>> normalize_axis(-1, 3)
    2
    """
    axis = index(axis, what)
    if not -ndim <= axis < ndim:
        raise AxisError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def check_execution(execution):
    """``execution`` if it is "auto", "cuda" or "cpu", else InvalidArgumentError."""
    if not isinstance(execution, str) or execution not in EXECUTIONS:
        raise InvalidArgumentError(
            f"Invalid execution {execution!r}, should be \"auto\", \"cuda\" or \"cpu\"")
    return execution


def check_workers(workers):
    """``workers`` as None or a nonzero int (negative: counted back from the number of CPUs,
    -1 meaning all of them), or InvalidArgumentError.

    Examples
    --------
    >>> from accelmath._core.arguments import check_workers
    >>> check_workers(2), check_workers(None)
    (2, None)
    """
    if workers is None:
        return None
    try:
        number = None if isinstance(workers, bool) else operator.index(workers)
    except TypeError:
        number = None
    cpus = os.cpu_count() or 1
    if not number or number < -cpus:
        raise InvalidArgumentError(
            f"workers must be None or a nonzero integer of at least {-cpus} (negative: counted "
            f"back from the {cpus} CPUs), got {workers!r}")
    return number

"""The plan caches and the call memo of the stateless linear-algebra functions
(:data:`dispatcher`: products and solvers alike), and their public ``cache_info``,
``clear_cache`` and ``set_cache_limits``.

A product on the device is remembered by
:func:`~accelmath.linalg._matmul.problem.call_key`. A solver's device call that ran accelmath's own small-matrix kernels on its operands where they lie
(no copy, no conversion: CuPy or torch arrays of the result's dtype, dense and C-ordered) is
remembered under its *call key* (:func:`call_key`): the function's name, its options as
given, and each operand's type and layout key (shape, strides, dtype, device; torch's lazy
conjugation and negation bits). An identical later call skips reading, checking and
normalizing its arguments, whose every rule depends on nothing else: :func:`recalled` reads
the operands' addresses, allocates the results and launches the kernel
(:class:`~accelmath.linalg._device.context.SmallCall`). A ``cholesky`` that cuSOLVER
factored on an operand read where it lies is remembered the same way, and so is a
``cho_factor`` that cuSOLVER factored (its finiteness check enqueued again), a ``cho_solve``
on operands read where they lie, a ``lu_solve``, a ``solve_triangular``, an ``eigh`` (``eigvalsh``) and a ``qr``: an identical
call allocates and enqueues cuSOLVER's work again
(:class:`~accelmath.linalg._device.context.CusolverCall`).
"""

from typing import Callable, NamedTuple

import numpy

from accelmath._core.call_key import layout_reader, read_keys
from accelmath._core.dispatch import Dispatcher
from accelmath._core.gpu.stream import check_stream

__all__ = ["dispatcher", "CallKey", "call_key", "recalled", "cache_info", "clear_cache",
           "set_cache_limits", "HostCall", "host_call"]

#: The plan caches and call memo of the stateless functions, per device.
dispatcher = Dispatcher()


def cache_info(device=None):
    """Statistics of the plan caches behind the stateless linear-algebra functions (the
    cuBLASLt plans of ``matmul``, the cuSOLVER solvers of the others).

    Parameters
    ----------
    device : int, optional
        A device id; by default the statistics of all devices are summed.

    Returns
    -------
    dict
        ``hits``, ``misses``, ``size`` (plans cached), ``bytes`` (the workspace bytes they
        hold, for every thread and stream that ran them), ``max_size`` and ``max_bytes``.

    Examples
    --------
    >>> from accelmath import linalg
    >>> sorted(linalg.cache_info())
    ['bytes', 'hits', 'max_bytes', 'max_size', 'misses', 'size']
    """
    return dispatcher.cache_info(device)


def clear_cache():
    """Drop every cached plan of the stateless linear-algebra functions (plans in use finish
    first) and every remembered call; reset the statistics.

    Examples
    --------
    >>> from accelmath import linalg
    >>> linalg.clear_cache()
    >>> linalg.cache_info()["size"]
    0
    """
    dispatcher.clear_cache()


def set_cache_limits(max_size=None, max_bytes=None):
    """Set the plan cache limits of each device: plans kept, and the workspace bytes they
    hold together (None: unchanged). Both are checked before either changes.

    Raises
    ------
    InvalidArgumentError
        For a limit that is not a non-negative integer.

    Examples
    --------
    >>> from accelmath import linalg
    >>> linalg.set_cache_limits(max_size=32)
    >>> linalg.cache_info()["max_size"]
    32
    >>> linalg.set_cache_limits(max_size=64)
    """
    dispatcher.set_cache_limits(max_size, max_bytes)

# The option types a key holds as they are, by exact type: a bool, a str, None (an int is
# keyed with its type: 1 equals True as a dict key)
_OPTIONS = (bool, str, type(None))


class CallKey(NamedTuple):
    """A device call's memo key, and the addresses of its arrays (read once for both): what
    :func:`call_key` and the products' :func:`~accelmath.linalg._matmul.problem.call_key`
    return."""

    key: tuple  # the function (or the product's options), the options, each array's layout
    addresses: tuple  # the arrays' addresses, in the order of the key (0 where absent)


def call_key(name, operands, *options):
    """``(key, addresses)`` of a call of solver ``name`` on ``operands`` with ``options``,
    or None for a call not to remember (an option of another type, an operand that is not a
    CuPy or torch array, a torch tensor that records gradients).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._memo import call_key
    >>> call_key("solve", (np.eye(2), np.ones(2)), True, "auto", "auto") is None
    True
    """
    key, addresses = [name], []
    for option in options:
        if option.__class__ is int:
            option = (int, option)
        elif option.__class__ not in _OPTIONS:
            return None
        key.append(option)
    if not read_keys(operands, key, addresses):
        return None
    return CallKey(tuple(key), tuple(addresses))


def recalled(call, stream):
    """The result of call ``call`` (:func:`call_key`'s, or None) where an identical one was
    remembered, else None."""
    if call is None:
        return None
    entry = dispatcher.recall(call.key)
    return None if entry is None else entry.run(call.addresses, stream)


# What a call key holds of a NumPy array besides its type (the call-key reader's shape and
# dtype, :func:`~accelmath._core.call_key.layout_reader`), for a lookup on a per-call path;
# host_call adds its strides (the operand record refuses strides that are not whole elements)
_numpy_layout = layout_reader(numpy.empty(0))
_NO_CALL = (None, None)


def given_dtypes(key):
    """The dtypes of the operands of :func:`host_call`'s ``key``, as the caller gave them.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._memo import given_dtypes, host_call
    >>> given_dtypes(host_call("solve", (np.eye(2), np.ones(2, np.float32)), (), None)[0])
    (dtype('float64'), dtype('float32'))
    """
    return tuple(layout[1] for layout in key[3::2])


class HostCall(NamedTuple):
    """What the call memo holds for a call that ran on the host on NumPy arrays."""

    run: Callable  # the call on NumPy arrays of the remembered layouts: their result


def host_call(name, operands, options, stream):
    """``(key, entry)``: the call memo key of a call of ``name`` on ``operands`` with
    ``options`` where every operand is a NumPy array (not a subclass), and the
    :class:`HostCall` remembered under it (``stream`` checked, as a host call checks it), or
    None; ``(None, None)`` for other operands and unhashable options.

    The key holds the options as given and their exact types (``1``, ``1.0`` and ``True``
    are equal in a dict, and not equally valid), and each operand's shape, strides and
    dtype: equal keys mean calls that the checks treat alike.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._memo import host_call
    >>> key, entry = host_call("inv", (np.eye(2),), (True, "auto", "auto"), None)
    >>> key[:3]
    ('inv', (True, 'auto', 'auto'), (<class 'bool'>, <class 'str'>, <class 'str'>))
    >>> key == host_call("inv", (np.eye(2),), (1, "auto", "auto"), None)[0]  # (1 == True)
    False
    >>> host_call("inv", ([[1.0]],), (True, "auto", "auto"), None)  # (not a NumPy array)
    (None, None)
    """
    key = [name, options, None]
    for x in operands:
        if x.__class__ is not numpy.ndarray:
            return _NO_CALL
        key.append(_numpy_layout(x))
        key.append(x.strides)
    key[2] = tuple(map(type, options))
    key = tuple(key)
    try:
        entry = dispatcher.recall(key)
    except TypeError:  # (an unhashable option: the checks refuse it)
        return _NO_CALL
    if entry is not None:
        check_stream(stream)
    return key, entry

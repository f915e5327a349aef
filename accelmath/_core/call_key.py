"""What a call key holds of each argument: the one place where the call memo
(:class:`~accelmath._core.dispatch.Dispatcher`) reads arrays of every kind.

A call key is made from the arguments as given, before any is checked: plain values (see
:func:`plain`) and, per array, its type and its *layout key*, read by a reader found once per
type. Two readers exist because two kinds of memo entry exist:

- :func:`layout_reader`: the layout of any array a plan runs on, host ones included (NumPy's
  shape and dtype, since the host engines read any strides; a torch CPU tensor's likewise,
  unless it records gradients; a device array's shape, strides, dtype and device);
- :func:`device_reader`: for calls that run on device arrays where they lie, the layout key
  and the address of CuPy and torch arrays (no array's work to wait for), none for others.
"""

import numpy

from accelmath._core.operand import adapter_for

__all__ = ["plain", "layout_reader", "LAYOUT_READERS", "device_reader", "read_keys"]

# Packages whose device arrays a call key describes with their address
_ADDRESSED = ("cupy", "torch")
#: array type -> its layout reader (None: not an array), for a lookup on a per-call path
LAYOUT_READERS = {}
_DEVICE = {}  # array type -> (layout_key, data_ptr), or None


def plain(value):
    """Whether ``value`` may be part of a call key: None or a tuple of ints (a bool or a
    float would equal an int in a dict, and find a call whose arguments were valid).

    Examples
    --------
    >>> from accelmath._core.call_key import plain
    >>> plain((1, 2)), plain((True, 2)), plain(None), plain([1])
    (True, False, True, False)
    """
    if value is None:
        return True
    if value.__class__ is not tuple:
        return False
    for v in value:
        if v.__class__ is not int:
            return False
    return True


def _numpy_layout(x):
    return x.shape, x.dtype  # (the host engines read any strides; the dtype has byte order)


def _torch_layout(layout_key):
    """torch CPU tensors by shape and dtype (None where one records gradients: checked
    against the grad mode each call); device ones by ``layout_key``."""
    def read(x):
        if x.is_cpu:
            return None if x.requires_grad else (x.shape, x.dtype)
        return layout_key(x)

    return read


def layout_reader(x):
    """The reader of the layout key of arrays of ``x``'s type (found once per type), or None
    for what is not an array (the checked path says why).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.call_key import layout_reader
    >>> layout_reader(np.zeros((2, 3)))(np.ones((2, 3)))
    ((2, 3), dtype('float64'))
    """
    cls = x.__class__
    read = LAYOUT_READERS.get(cls, False)
    if read is False:
        try:
            adapter = adapter_for(x)
        except TypeError:
            adapter = None
        if adapter is None:
            read = None
        elif cls is numpy.ndarray:
            read = _numpy_layout
        elif adapter.package == "torch":
            read = _torch_layout(adapter.layout_key)
        else:
            read = adapter.layout_key
        LAYOUT_READERS[cls] = read
    return read


def device_reader(x):
    """``(layout_key, data_ptr)`` of arrays of ``x``'s type where they are CuPy or torch
    arrays (found once per type); None for other types (their calls are not remembered)."""
    reader = _DEVICE.get(x.__class__, False)
    if reader is False:
        try:
            adapter = adapter_for(x)
        except TypeError:  # not an array: the checked path says why
            adapter = None
        reader = ((adapter.layout_key, adapter.data_ptr)
                  if adapter is not None and adapter.package in _ADDRESSED else None)
        _DEVICE[x.__class__] = reader
    return reader


def read_keys(operands, key, addresses):
    """Append to ``key`` each operand's type and layout key and to ``addresses`` its address
    (None and 0 for an operand that is None), for a call key; False where an operand has no
    key (see :func:`device_reader`), else True.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.call_key import read_keys
    >>> key, addresses = [], []
    >>> read_keys([None], key, addresses), key, addresses
    (True, [None], [0])
    >>> read_keys([np.zeros(2)], [], [])  # (host arrays: no address-keyed call)
    False
    """
    for x in operands:
        if x is None:
            key.append(None)
            addresses.append(0)
            continue
        reader = _DEVICE.get(x.__class__, False)
        if reader is False:
            reader = device_reader(x)
        if reader is None:
            return False
        layout = reader[0](x)
        if layout is None:
            return False
        key.append(x.__class__)
        key.append(layout)
        addresses.append(reader[1](x))
    return True

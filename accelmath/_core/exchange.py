"""The DLPack C exchange API: an array package that offers it (``torch.Tensor`` does, as
``__dlpack_c_exchange_api__``) describes an array, and names a device's current stream, to C
code in one call, without a Python object made. The call shim reads it (``_shim/exchange.c``); where
the shim is not used, or the API is of a version it does not read, each function here returns
None and callers read arrays through their attributes (:func:`hostcall.reader`).
"""

from accelmath._core import hostcall

__all__ = ["exchange_layout", "exchange_reader", "exchange_stream"]


def exchange_reader(api, types, layout, checks, fallback):
    """A reader of the pointer of arrays of one layout (as :func:`hostcall.reader` makes),
    reading the layout through the DLPack C exchange API of the arrays' package, or None where
    the call shim is not used or ``api`` is not an API it reads.

    One C call of the package describes the array: its dtype, device, shape and strides are
    compared there, without a Python object made for each (for torch tensors, about half the
    cost of :func:`hostcall.reader`'s attribute reads).

    Parameters
    ----------
    api : capsule
        The package's ``__dlpack_c_exchange_api__`` (DLPack 1.3 or a later 1.x).
    types : tuple of type
        The array types read through ``api``, by identity (no subclass); an array of any
        other type goes to ``fallback``.
    layout : tuple
        ``(code, bits, lanes, device_type, device_id, shape, strides)``: DLPack's dtype and
        device, the shape, and the strides in elements (those of axes of length 1 are not
        compared), as :func:`exchange_layout` gives them.
    checks : sequence of (get, expected)
        Further checks, as :func:`hostcall.reader` takes them (what DLPack does not
        describe, such as torch's lazy conjugation).
    fallback : callable or None
        The reader of arrays of other types (None: None for them).

    Returns
    -------
    callable or None
        Of one array: its pointer where it has the layout and passes the checks, else None.
    """
    return _made("ExchangeReader", api, tuple(types), tuple(layout),
                 tuple((get, expected) for get, expected in checks), fallback)


def exchange_layout(api, x):
    """What the DLPack C exchange API ``api`` says of array ``x``: ``(code, bits, lanes,
    device_type, device_id, shape, strides, address)`` (strides in elements, None for C
    order), or None where the call shim is not used or the API is not one it reads."""
    return _made("exchange_layout", api, x)


def exchange_stream(api, device_type, device_id):
    """A function of no arguments that returns the current stream (an int) of one device, as
    the DLPack C exchange API ``api`` names it, or None where the call shim is not used or
    the API is not one it reads."""
    return _made("ExchangeStream", api, device_type, device_id)


def _made(name, api, *args):
    """``name(api, *args)`` of the call shim, or None where the shim is not used, there is no
    API, or the API is of a version it does not read (ValueError)."""
    module = hostcall._extension()
    if module is None or api is None:
        return None
    try:
        return getattr(module, name)(api, *args)
    except ValueError:
        return None

"""Wrap any array: pointer, shape, element strides, dtype, device and package.

:func:`wrap_operand` reads an array of NumPy, CuPy, PyTorch, JAX, anything with
``__cuda_array_interface__`` or ``__dlpack__``, or an array-like (a list, a tuple, a scalar),
without copying device data. Each array type is handled by an :class:`Adapter` chosen once per
Python type (a dictionary lookup afterwards), so the per-call cost is a few attribute reads.
Adapters also allocate results in the caller's package and report the package's current
stream; no package is imported before an array of it is seen.

One module per array package: ``numpy_arrays``, ``cupy_arrays``, ``torch_tensors``,
``jax_arrays``, ``protocols`` (the generic producers; their DLPack capsules are read in
``dlpack``) and ``array_likes``; the record is in ``record``, the base class in ``base``,
the adapter of each package in ``packages``.
"""

import sys

from accelmath._core.operand.array_likes import ArrayLikeAdapter, is_array_like
from accelmath._core.operand.base import Adapter
from accelmath._core.operand.packages import (ADAPTERS, adapter_named, array_namespace,
                                              device_adapter)
from accelmath._core.operand.protocols import GenericAdapter
from accelmath._core.operand.record import ITEMSIZE, Operand, device_name, unsupported_operand
from accelmath.errors import (DeviceMismatchError, InvalidArgumentError, NoDeviceError,
                              UnsupportedDTypeError, UnsupportedOperandError)

__all__ = ["Operand", "Adapter", "wrap_operand", "wrap_named", "adapter_for", "adapter_named",
           "device_adapter", "array_namespace", "check_mutable", "check_same_device", "ITEMSIZE", "device_name"]

class _OperandAdapter(Adapter):
    """Lets an :class:`Operand` stand for its array (for operands built from views)."""

    def wrap(self, x):
        return x


_adapters = {Operand: _OperandAdapter()}  # type -> adapter
_array_likes = ArrayLikeAdapter()


def adapter_for(x):
    """The :class:`Adapter` for the type of ``x`` (found once per type).

    Raises
    ------
    UnsupportedOperandError
        If ``x`` is none of the kinds :func:`wrap_operand` reads.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand import adapter_for
    >>> adapter_for(np.zeros(3)).package, adapter_for([1, 2]).package
    ('numpy', 'numpy')
    >>> adapter_for([1, 2]).layout_key([1, 2]) is None  # array-likes take no fast path
    True
    """
    cls = type(x)
    adapter = _adapters.get(cls)
    if adapter is None:
        package = cls.__module__.partition(".")[0]
        if is_array_like(cls):  # before the packages: NumPy's scalars are array-likes
            adapter = _array_likes
        elif package != "numpy" and _is_ndarray(cls):  # (Numba's pinned and mapped arrays)
            adapter = adapter_named("numpy")
        elif package in ADAPTERS:
            adapter = adapter_named(package)
        elif (base := _subclassed(cls)) is not None:  # (a user's subclass of a package's array)
            adapter = adapter_named(base)
        elif _has(x, "__cuda_array_interface__") or _has(x, "__dlpack__"):
            adapter = GenericAdapter(package)
        elif hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
            adapter = _array_likes  # (host arrays of other packages, as NumPy reads them)
        else:
            raise unsupported_operand(x)
        _adapters[cls] = adapter
    return adapter


# the array types of the packages whose subclasses (defined in other modules) are read as the
# package's own arrays, by package
_BASES = {"torch": "Tensor", "cupy": "ndarray"}


def _subclassed(cls):
    """The package (of those imported) whose array type ``cls`` subclasses, or None."""
    for package, name in _BASES.items():
        module = sys.modules.get(package)
        base = getattr(module, name, None) if module is not None else None
        if isinstance(base, type) and issubclass(cls, base):
            return package
    return None


def _has(x, name):
    """Whether ``x`` has attribute ``name``; True where reading it fails (a property that
    raises: the wrap says how, naming the producer)."""
    try:
        return hasattr(x, name)
    except Exception:
        return True


def _is_ndarray(cls):
    import numpy

    return issubclass(cls, numpy.ndarray)


def wrap_operand(x):
    """Describe array ``x`` as an :class:`Operand` without copying it.

    Parameters
    ----------
    x : array or array-like
        A NumPy, CuPy, PyTorch or JAX array, any object with ``__cuda_array_interface__``
        or ``__dlpack__``, or an array-like: a list or tuple (nested or not), a Python or
        NumPy scalar, read as ``numpy.asarray(x)`` (a new array, the operand's ``obj``).

    Returns
    -------
    Operand

    Raises
    ------
    UnsupportedOperandError
        If ``x`` is not an array accelmath can read (a ``TypeError``); its subclass
        :class:`~accelmath.errors.GradientError` for a torch tensor that records gradients
        while they are enabled.
    UnsupportedDTypeError
        If its element type is not one accelmath can describe (a ``TypeError``), strings and
        objects among them.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand import wrap_operand
    >>> op = wrap_operand(np.zeros((4, 6), np.complex64)[:, ::2])
    >>> op.shape, op.strides, op.dtype, op.package
    ((4, 3), (6, 2), 'complex64', 'numpy')
    >>> op = wrap_operand([[1.0, 2.0], [3.0, 4.0]])
    >>> op.shape, op.dtype, op.package, type(op.obj).__name__
    ((2, 2), 'float64', 'numpy', 'ndarray')
    """
    cls = type(x)
    adapter = _adapters.get(cls)
    if adapter is None:
        adapter = adapter_for(x)
    return adapter.wrap(x)


def wrap_named(x, name):
    """:func:`wrap_operand` of argument ``name``: its errors (and a device array given where
    no GPU is usable: NoDeviceError) begin with ``"<name>: "``.

    Examples
    --------
    >>> from accelmath._core.operand import wrap_named
    >>> try:
    ...     wrap_named("text", "x")
    ... except TypeError as exc:
    ...     str(exc).startswith("x: ")
    True
    """
    try:
        return wrap_operand(x)
    except (UnsupportedOperandError, UnsupportedDTypeError, NoDeviceError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def check_mutable(out, name="out"):
    """Raise unless array ``out`` can take a result written in place.

    Raises
    ------
    InvalidArgumentError
        For arrays of packages whose arrays are immutable (JAX), and for an object whose
        array interface marks its data read-only.
    UnsupportedOperandError
        For array-likes (a list is read as a new NumPy array: a result written there would
        be lost), and for objects that are no array at all.
    """
    adapter = adapter_for(out)
    if adapter is _array_likes:
        cls = type(out)
        raise UnsupportedOperandError(
            f"unsupported operand of type {cls.__module__}.{cls.__qualname__} for {name}: "
            f"a result is written into an array (numpy.ndarray, cupy.ndarray, torch.Tensor, "
            f"an object with __cuda_array_interface__ or __dlpack__), not into an array-like; "
            f"omit {name} to get a new one")
    if adapter.immutable:
        raise InvalidArgumentError(
            f"{name} is a {adapter.package} array, which cannot be written in place; omit "
            f"{name} to get a new one")
    if adapter.read_only(out):
        raise InvalidArgumentError(f"{name} is read-only (its array interface says so)")


def check_same_device(*operands, names=None):
    """Raise DeviceMismatchError unless all operands live on the same device.

    ``names`` gives the argument names used in the message.
    """
    first = operands[0]
    for i, op in enumerate(operands[1:], 1):
        if op.device_id != first.device_id:
            a = names[0] if names else "operand 0"
            b = names[i] if names else f"operand {i}"
            raise DeviceMismatchError(
                f"{b} is on {device_name(op.device_id)} but {a} is on "
                f"{device_name(first.device_id)}; all operands must be on one device")

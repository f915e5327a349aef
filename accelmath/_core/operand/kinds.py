"""The ``like=`` keyword: results returned as another array kind than the caller's.

A result is of the kind of its call's first array argument (the rule of
:mod:`accelmath._core.operand`). ``like=`` asks for another kind: a package's name, its
module, or an array of it. :func:`returned_as` applies it to what a call returns, one rule for
every public function and plan:

- a device result becomes the named package's array over the same memory (zero copy, through
  DLPack or ``__cuda_array_interface__``), on its device;
- a device result asked for as NumPy (or as a host array: a torch tensor on the CPU) is
  copied to the host, and a host result asked for as CuPy or Numba (or as an array on a GPU)
  is copied to that package's current device (the array's device); torch keeps a result's
  side (a host result is a CPU tensor over the same memory), and JAX puts a host result on
  its default device;
- tuples (named or not) are converted element by element; NumPy's scalars as 0-d arrays, and
  what is no array (a Python number, a flag, None) is returned as it is.
"""

import types
from typing import Any, NamedTuple

from accelmath.errors import InvalidArgumentError, UnsupportedOperandError

__all__ = ["KINDS", "Target", "returned_as", "target_of"]

#: The kinds ``like=`` names, by package name.
KINDS = ("numpy", "cupy", "torch", "jax", "numba")


class Target(NamedTuple):
    """What a ``like=`` names (:func:`target_of`): the adapter of its package, and the array
    that names its place (None for a package's name or module)."""

    adapter: Any
    reference: Any


def target_of(like):
    """The :class:`Target` of what ``like`` names (a function resolves it before its work,
    so that a ``like`` that names nothing is refused first).

    Raises
    ------
    InvalidArgumentError
        For anything that names no kind accelmath can make.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand.kinds import target_of
    >>> target_of("numpy")[0].package, target_of(np)[0].package, target_of(np.ones(2))[0].package
    ('numpy', 'numpy', 'numpy')
    """
    from accelmath._core.operand import adapter_for
    from accelmath._core.operand.array_likes import is_array_like

    if isinstance(like, str):
        if like not in KINDS:
            raise InvalidArgumentError(f"like={like!r}: expected one of {', '.join(KINDS)}, a "
                                       "module of one of them, or an array")
        return Target(_named(like, like), None)
    if isinstance(like, types.ModuleType):
        root = like.__name__.partition(".")[0]
        if root not in KINDS:
            raise InvalidArgumentError(
                f"like is the module {like.__name__!r}: expected a module of "
                f"{', '.join(KINDS)}, one of their names, or an array")
        return Target(_named(root, like.__name__), None)
    try:
        adapter = None if is_array_like(type(like)) else adapter_for(like)
    except Exception:  # (not an array, or one whose interface fails as it is read)
        adapter = None
    if adapter is None or adapter.package not in KINDS:
        cls = type(like)
        raise InvalidArgumentError(
            f"like is a {cls.__module__}.{cls.__qualname__}: expected an array of "
            f"{', '.join(KINDS)}, one of their names or modules (accelmath makes no other kind)")
    return Target(adapter, like)


def _named(package, given):
    """The adapter of ``package`` (a top-level module's name: ``jaxlib`` is JAX's, as
    :data:`~accelmath._core.operand.packages.ADAPTERS` says), or InvalidArgumentError naming
    ``given`` where it has none or is not installed."""
    from accelmath._core.operand import adapter_named

    try:
        return adapter_named(package)
    except UnsupportedOperandError as exc:
        raise InvalidArgumentError(f"like={given!r}: {exc}") from None


def returned_as(result, like):
    """``result`` (an array, or a tuple of arrays and other values) as arrays of the kind
    ``like`` names (see the module's rule), or of the :class:`Target` it resolved to;
    ``like`` None: ``result`` itself.

    Raises
    ------
    InvalidArgumentError
        If ``like`` names no kind accelmath can make.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand.kinds import returned_as
    >>> returned_as([1.0, 2.0], None)
    [1.0, 2.0]
    >>> type(returned_as((np.ones(2), 3), "numpy")[0]).__name__
    'ndarray'
    """
    if like is None:
        return result
    adapter, reference = like if like.__class__ is Target else target_of(like)
    return _converted(result, adapter, reference)


def _converted(result, adapter, reference):
    if isinstance(result, tuple):
        items = [_converted(item, adapter, reference) for item in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    import numpy

    from accelmath._core.operand import adapter_for

    if isinstance(result, numpy.generic):  # (NumPy's scalar results: as 0-d arrays)
        result = result if adapter.package == "numpy" else numpy.asarray(result)
    if result is None or isinstance(result, (bool, int, float, complex, str)):
        return result  # (Python's scalars and flags: of no kind)
    try:
        source = adapter_for(result)
    except UnsupportedOperandError:
        return result
    on_device = source.wrap(result).on_device
    if reference is not None:
        wanted = _on_device(adapter, reference)
    elif adapter.package in ("torch", "jax"):
        wanted = on_device  # (torch keeps the side; JAX takes host data to its default device)
    else:
        wanted = adapter.package != "numpy"
    if source.package == adapter.package and on_device == wanted:
        return result
    if on_device and wanted:
        return adapter.from_dlpack(result)
    host = source.to_numpy(result)
    if adapter.package == "numpy":
        return host
    return adapter.from_numpy(host, reference)


def _on_device(adapter, reference):
    """Whether array ``reference`` lives on a GPU (read without its data: a torch tensor that
    records gradients names a place as well as any)."""
    if adapter.package == "torch":
        return reference.device.type != "cpu"
    return adapter.wrap(reference).on_device

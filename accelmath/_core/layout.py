"""Dense layouts in element strides: the strides of an axis order, and whether strides are
dense (pure, no device access)."""

from accelmath.errors import InvalidArgumentError

__all__ = ["contiguous_strides", "is_dense", "check_dense", "axis_order"]


def contiguous_strides(shape, order=None):
    """Element strides of a dense array of ``shape`` whose axes, slowest first, are ``order``
    (default: C order).

    Examples
    --------
    >>> from accelmath._core.layout import contiguous_strides
    >>> contiguous_strides((2, 3, 4)), contiguous_strides((2, 3, 4), (2, 1, 0))
    ((12, 4, 1), (1, 2, 6))
    """
    order = range(len(shape)) if order is None else order
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(list(order)):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def is_dense(shape, strides):
    """True where ``strides`` lay ``shape`` out densely in some axis order: positive, no
    overlap, no gaps (the strides of axes of length 1 do not matter).

    Examples
    --------
    >>> from accelmath._core.layout import is_dense
    >>> is_dense((2, 3), (1, 2)), is_dense((2, 3), (6, 1))
    (True, False)
    """
    step = 1
    for stride, extent in sorted((s, e) for e, s in zip(shape, strides) if e != 1):
        if stride != step:
            return False
        step *= max(extent, 1)
    return True


def check_dense(shape, strides, name="strides"):
    """``strides`` as a tuple, checked to lay out ``shape`` densely (:func:`is_dense`).

    Raises
    ------
    InvalidArgumentError
        Naming ``name``, where they do not (or are not one stride per axis).
    """
    strides = tuple(strides)
    if len(strides) != len(shape) or not is_dense(shape, strides):
        raise InvalidArgumentError(
            f"{name} {strides} do not lay out shape {tuple(shape)} densely (positive element "
            "strides, no overlap, no gaps)")
    return strides


def axis_order(strides):
    """Axes from the slowest to the fastest by stride magnitude (stable for ties).

    Examples
    --------
    >>> from accelmath._core.layout import axis_order
    >>> axis_order((1, 6, 2))
    [1, 2, 0]
    """
    return sorted(range(len(strides)), key=lambda a: -abs(strides[a]))

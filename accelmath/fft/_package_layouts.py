"""The layouts array packages give the results of their own FFT functions.

cuFFT can write a result in any dense axis order; writing it in the order the caller's package
would have chosen keeps accelmath a drop-in replacement (the same strides come back). Only
torch differs from C order, and its meta tensors say how without computing anything. The
first meta transform in a process costs a second or more (torch loads its reference
implementations), so each answer is kept in the on-disk store, keyed by torch's version and
the layout: a later process reads it instead.
"""

from accelmath._core import store

__all__ = ["package_fft_strides"]

_NAMESPACE = "layouts"


def package_fft_strides(package, kind, shape, strides, dtype, axes, out_shape):
    """The element strides of the result ``package``'s own FFT functions give an array of
    this layout, or None where they are not known (dense, in the input's axis order).

    Parameters
    ----------
    package : str
        The array package (``"torch"``; any other gives None).
    kind : {"c2c", "r2c", "c2r"}
        ``fftn``, ``rfftn`` or ``irfftn`` over ``axes``.
    shape, strides : tuple of int
        The input's layout (strides in elements).
    dtype : str
        The input's NumPy-style dtype name.
    axes : tuple of int
        The transformed axes.
    out_shape : tuple of int
        The result's shape.

    Examples
    --------
    >>> from accelmath.fft._package_layouts import package_fft_strides
    >>> package_fft_strides("numpy", "r2c", (4, 6), (6, 1), "float64", (0, 1), (4, 4)) is None
    True
    """
    if package != "torch":
        return None
    import torch

    key = f"torch {torch.__version__} {kind} {shape} {strides} {dtype} {axes} {out_shape}"
    known = store.load_json(_NAMESPACE, key)
    if isinstance(known, dict) and "strides" in known:
        return None if known["strides"] is None else tuple(known["strides"])
    found = _meta_strides(torch, kind, shape, strides, dtype, axes, out_shape)
    store.save_json(_NAMESPACE, key, {"strides": found})
    return None if found is None else tuple(found)


def _meta_strides(torch, kind, shape, strides, dtype, axes, out_shape):
    """What torch's meta tensors say (:func:`package_fft_strides`), as a list, or None."""
    # torch computes a transform over several axes in passes, the last one writing its axes
    # contiguously: a real transform over axes 0 and 1 comes back transposed, and its inverse
    # in C order. Its meta tensors say how.
    try:
        meta = torch.empty_strided(shape, strides, dtype=getattr(torch, dtype), device="meta")
        if kind == "c2c":
            result = torch.fft.fftn(meta, dim=axes)
        elif kind == "r2c":
            result = torch.fft.rfftn(meta, dim=axes)
        else:
            result = torch.fft.irfftn(meta, s=[out_shape[a] for a in axes], dim=axes)
        return list(result.stride())
    except Exception:  # a layout or dtype meta tensors do not take: the default
        return None

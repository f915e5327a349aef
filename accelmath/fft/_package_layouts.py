"""The layouts array packages give the results of their own FFT functions.

cuFFT can write a result in any dense axis order; writing it in the order the caller's package
would have chosen keeps accelmath a drop-in replacement (the same strides come back). Only
torch differs from C order. Its result is dense in an axis order that depends on the input's
stride order alone, so torch's own transform of a probe (a tensor of at most 2 elements per
axis whose strides are ordered as the input's) on the same device tells it in a few
microseconds of device time; each answer is kept in the on-disk store, keyed by torch's
version and the layout, and a later process reads it instead. Where no device tensor can be
made (no device given, a stream capturing a CUDA graph), torch's meta tensors answer, at the
cost of a second or more for the first one in a process (torch loads its reference
implementations).
"""

import warnings

from accelmath._core.disk import store

__all__ = ["package_fft_strides", "probe_strides"]

_NAMESPACE = "layouts"


def package_fft_strides(package, kind, shape, strides, dtype, axes, out_shape, device_id=None):
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
    device_id : int, optional
        The CUDA device of the operand, where torch's transform of a probe answers.

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
    if isinstance(known, dict) and _valid(known.get("strides", False), out_shape):
        return None if known["strides"] is None else tuple(known["strides"])
    found = None
    if device_id is not None and not torch.cuda.is_current_stream_capturing():
        found = probe_strides(torch, f"cuda:{device_id}", kind, shape, strides, dtype, axes,
                              out_shape)
    if found is None:
        found = _meta_strides(torch, kind, shape, strides, dtype, axes, out_shape)
    store.save_json(_NAMESPACE, key, {"strides": found})
    return None if found is None else tuple(found)


def _valid(strides, out_shape):
    """Whether a stored answer is one this module saves: None, or a list of one
    non-negative int per axis of the result (an entry of any other form is asked again)."""
    return strides is None or (isinstance(strides, list) and len(strides) == len(out_shape)
                               and all(type(s) is int and s >= 0 for s in strides))


def probe_strides(torch, device, kind, shape, strides, dtype, axes, out_shape):
    """The strides torch's own transform on ``device`` gives a result of this layout, as a
    list (or None where torch refuses the probe), from its transform of a probe.

    The probe has 2 elements on each axis of the input's longer than 1 (1 elsewhere) and
    strides in the same order as the input's, ties included, so torch sorts its axes as it
    would the input's. Its result is dense in some axis order; the result of the real input
    is dense in the same order, so each of its strides is the product of the real result's
    extents along the axes whose probe strides are smaller (an axis tied with another has
    extent 1 and changes no product).

    Examples
    --------
    >>> import torch
    >>> from accelmath.fft._package_layouts import probe_strides
    >>> # torch's CPU transform along the rows of a column-major matrix: its result is C order
    >>> probe_strides(torch, "cpu", "c2c", (3, 5), (1, 3), "complex64", (1,), (3, 5))
    [5, 1]
    """
    sizes = [1 if n == 1 else 2 for n in shape]
    ranks = sorted({s for s in strides if s})
    probe_stride = {}
    step = 1
    for value in ranks:  # the distinct strides, smallest first: dense for the probe's sizes
        probe_stride[value] = step
        step *= 2
    try:
        # (torch warns of its own complex-half support, which the caller did not ask about)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _transform(torch, device, kind, sizes, strides, probe_stride, dtype, axes,
                                out_shape)
    except Exception:  # a layout or dtype torch's transforms do not take
        return None
    ours = result.stride()
    found = []
    for axis in range(len(shape)):
        stride = 1
        for other in range(len(shape)):
            if ours[other] < ours[axis]:
                stride *= out_shape[other]
        found.append(stride)
    return found


def _transform(torch, device, kind, sizes, strides, probe_stride, dtype, axes, out_shape):
    """torch's transform of the probe of :func:`probe_strides`."""
    last = axes[-1]
    lengths = [2 * (sizes[a] - 1) if a == last and out_shape[a] > 1 else sizes[a] for a in axes]
    return _torch_fft(torch, kind, sizes, [probe_stride[s] if s else 0 for s in strides], dtype,
                      axes, lengths, device)


def _torch_fft(torch, kind, shape, strides, dtype, axes, s, device):
    """torch's transform of an empty tensor of this layout on ``device`` (``s``: the
    inverse real transform's output lengths along ``axes``)."""
    x = torch.empty_strided(shape, strides, dtype=getattr(torch, dtype), device=device)
    if kind == "c2c":
        return torch.fft.fftn(x, dim=axes)
    if kind == "r2c":
        return torch.fft.rfftn(x, dim=axes)
    return torch.fft.irfftn(x, s=s, dim=axes)


def _meta_strides(torch, kind, shape, strides, dtype, axes, out_shape):
    """What torch's meta tensors say (:func:`package_fft_strides`), as a list, or None."""
    # torch computes a transform over several axes in passes, the last one writing its axes
    # contiguously: a real transform over axes 0 and 1 comes back transposed, and its inverse
    # in C order. Its meta tensors say how.
    try:
        result = _torch_fft(torch, kind, shape, strides, dtype, axes,
                            [out_shape[a] for a in axes], "meta")
        return list(result.stride())
    except Exception:  # a layout or dtype meta tensors do not take: the default
        return None

"""What the subtraction's demo and its Dask path ask of the machine: whether the GPU path can
run, how many GPUs this process sees, and which array package holds images on them.

The GPU queries are accelmath's public ones (``accelmath.gpu_available``, ``devices``,
``library_info``), asked here and nowhere else in the showcase.
"""

import accelmath

__all__ = ["gpu_available", "gpu_count", "gpu_name", "gpu_package", "gpu_problem"]


def gpu_available():
    """Whether this process sees a usable CUDA GPU (never raises).

    Examples
    --------
    >>> from accelmath.subtraction._gpu import gpu_available
    >>> isinstance(gpu_available(), bool)
    True
    """
    return accelmath.gpu_available()


def gpu_count():
    """The number of usable CUDA GPUs this process sees (0 without one).

    Examples
    --------
    >>> from accelmath.subtraction._gpu import gpu_available, gpu_count
    >>> (gpu_count() > 0) == gpu_available()
    True
    """
    return len(accelmath.devices())


def gpu_name(ordinal=0):
    """The name of GPU ``ordinal`` (a GPU must be usable)."""
    return accelmath.devices()[ordinal]["name"]


def gpu_problem():
    """Why the subtraction's GPU path cannot run here, as a phrase, or None when it can: no
    usable GPU, or no cuFFT.

    Examples
    --------
    >>> from accelmath.subtraction._gpu import gpu_available, gpu_problem
    >>> gpu_problem() is None or isinstance(gpu_problem(), str)
    True
    """
    if not accelmath.gpu_available():
        return f"no usable GPU ({accelmath.gpu_unavailable_reason()})"
    cufft = accelmath.library_info()["cufft"]
    if cufft["path"] is None:
        return f"cuFFT is not installed ({cufft['error']}); pip install \".[cu12]\""
    return None


def gpu_package():
    """The array package that holds images on a GPU: CuPy if it imports, else torch where it
    sees CUDA; None if neither.

    Examples
    --------
    >>> from accelmath.subtraction._gpu import gpu_package
    >>> package = gpu_package()
    >>> package is None or package.__name__ in ("cupy", "torch")
    True
    """
    try:
        import cupy

        return cupy
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None

"""Moving test data between NumPy and the GPU packages: one rule for the GPU tests."""

import numpy as np

__all__ = ["on_device", "to_host"]


def on_device(package, a):
    """NumPy array ``a`` as an array of ``package`` (the cupy or torch module) on its GPU."""
    if package.__name__ == "torch":
        return package.from_numpy(np.ascontiguousarray(a)).cuda()
    return package.asarray(a)


def to_host(a):
    """Array ``a`` (NumPy, CuPy or torch) as a NumPy array."""
    if isinstance(a, np.ndarray):
        return a
    return a.get() if hasattr(a, "get") else a.detach().cpu().numpy()

"""Least squares on the device: NumPy's ``lstsq`` through accelmath's SVD and matrix
products (in the operands' precision: a package's own product may take less, as JAX's
float32 ``@`` on a GPU does), the rest in the caller's package."""

from accelmath._core.gpu.stream import resolve_stream
from accelmath._core.operand import adapter_for, array_namespace
from accelmath.linalg._device.spectral import svd
from accelmath.linalg._matmul.stateless import matmul

__all__ = ["lstsq"]


def lstsq(a, b, *, vector, rcond, stream):
    """``(x, residuals, rank, s)`` of ``min ||a x - b||`` for one m x n matrix ``a`` and m x k
    right-hand sides ``b``, as NumPy's ``lstsq`` (singular values below ``rcond`` times the
    largest count as zero). ``rank`` is read back from the device."""
    u, s, vh = svd(a, full_matrices=False, compute_uv=True, check=True, method="auto",
                   stream=stream)
    m, n = a.shape
    ad = a.adapter  # (Numba's arrays computed on CuPy or torch views, handed back as Numba's)
    u, s, vh = (ad.computable(t) for t in (u, s, vh))
    xp = array_namespace(u)
    # (the scope of the package that computes: CuPy's or torch's for Numba's arrays)
    with adapter_for(u).stream_scope(resolve_stream(stream, a), a.device_id):
        rhs = xp.reshape(ad.computable(b.obj), (m, b.shape[-1]))
        keep = s > rcond * s.max() if s.shape[0] else s > 0
        rank = int(keep.sum())
        inverse = xp.where(keep, 1 / xp.where(keep, s, 1), 0 * s)
        x = matmul(xp.swapaxes(vh, 0, 1).conj(),
                   inverse[:, None] * matmul(xp.swapaxes(u, 0, 1).conj(), rhs, stream=stream),
                   stream=stream)
        if rank == n and m > n:
            residuals = (abs(rhs - matmul(ad.computable(a.obj), x, stream=stream)) ** 2).sum(
                axis=0)
        else:
            residuals = s[:0]
        if vector:
            x = x[:, 0]
    return ad.handed_back(x), ad.handed_back(residuals), rank, ad.handed_back(s)

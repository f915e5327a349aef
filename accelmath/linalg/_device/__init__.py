"""The device path of the solvers: one call's context, cuSOLVER's handles and workspaces,
the batched cuSOLVER/cuBLAS routes, the finiteness checks, and the routines per family (LU,
Cholesky, the orthogonal factorizations, least squares); :mod:`.calls` is their entry, one
function per solver. Nothing here imports the public functions above it."""

__all__ = []

"""accelmath's own CUDA kernels of linear algebra: the element arithmetic, the source of the
auxiliary kernels (copies, determinants, pivots, checks) and the batched small- and
medium-matrix solvers. They know nothing of cuSOLVER or of the call memo."""

__all__ = []

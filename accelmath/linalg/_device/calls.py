"""The device path of the stateless solvers, one entry point per function.

Each takes the operands as :class:`~accelmath._core.operand.Operand` records of one device and
dtype, already checked (:mod:`accelmath.linalg._functions`), broadcasts their batch
dimensions, and returns arrays of the caller's package, enqueued on the caller's stream: C
order, but for what cuSOLVER makes in place, column-major each matrix (for packages other than
JAX): the factors of ``cholesky`` (lower) and ``lu_factor``, the eigenvectors of ``eigh``, and
Q of ``qr`` where it holds a's matrices. Solvers are cached per device by problem
(:data:`dispatcher`).
"""

from accelmath.linalg._device.cholesky import cho_factor, cho_solve, cholesky, solve_triangular
from accelmath.linalg._device.lstsq import lstsq
from accelmath.linalg._device.lu import det, inv, lu_factor, lu_solve, slogdet, solve
from accelmath.linalg._device.spectral import eigh, qr, svd
from accelmath.linalg._memo import dispatcher

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "svd", "lstsq",
           "cho_factor", "cho_solve", "lu_factor", "lu_solve", "solve_triangular",
           "dispatcher"]

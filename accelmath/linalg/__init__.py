"""Dense linear algebra: matrix products on cuBLASLt with its native epilogues (``matmul``,
``Matmul``), and on cuSOLVER and cuBLAS NumPy's and SciPy's solvers, batched over
leading dimensions, for NumPy, CuPy, PyTorch and JAX arrays (host arrays through NumPy/SciPy
LAPACK), and factor-once objects that solve many right-hand sides cheaply.

Examples
--------
>>> import numpy as np
>>> from accelmath import linalg
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> x = linalg.solve(a, np.array([2.0, 1.0]))
>>> bool(np.allclose(a @ x, [2.0, 1.0]))
True
"""

from accelmath._core.gpu import warmup as _warmup
from accelmath.linalg._factor import LU, QR, Cholesky
from accelmath.linalg._functions import SlogdetResult, cholesky, det, inv, lstsq, slogdet, solve
from accelmath.linalg._kernels.auxiliary import prepare
from accelmath.linalg._matmul.plan import Matmul
from accelmath.linalg._matmul.stateless import matmul
from accelmath.linalg._memo import cache_info, clear_cache, set_cache_limits
from accelmath.linalg._scipy_functions import (cho_factor, cho_solve, lu_factor, lu_solve,
                                               solve_triangular)
from accelmath.linalg._spectral_functions import (EighResult, QRResult, SVDResult, eigh, eigvalsh,
                                                  qr, svd, svdvals)

# the first device call's modules and libraries, loaded in the background
_warmup.start("linalg", _warmup.device_path(("accelmath.linalg._device.calls",),
                                            ("driver", "cublaslt", "cusolver", "cublas")))

__all__ = ["matmul", "Matmul", "solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh",
           "eigvalsh", "svd", "svdvals", "lstsq", "cho_factor", "cho_solve", "lu_factor",
           "lu_solve", "solve_triangular", "Cholesky", "LU", "QR", "SlogdetResult", "QRResult",
           "EighResult", "SVDResult", "prepare", "cache_info", "clear_cache", "set_cache_limits"]

"""The solver benchmark's GPU side: CuPy and torch where present, the test matrices, and the
float64 checks of every accelmath result (residual or reconstruction, orthogonality, triangles,
ordering), used by ``solvers.py``."""

import math

import numpy as np

TORCH_DEVICE = "cuda"

class Wrong(Exception):
    """A result of the wrong shape or order: the case is marked WRONG."""



class Context:
    """CuPy and torch where present; accelmath's operands are CuPy arrays (torch tensors when
    CuPy is missing); data is made and results are checked in that package, in float64."""

    def __init__(self):
        self.cp = self.torch = None
        try:
            import cupy
            import cupyx.scipy.linalg  # noqa: F401

            cupy.cuda.runtime.getDeviceCount()
            self.cp = cupy
        except Exception as exc:
            self.cp_missing = f"{type(exc).__name__}: {exc}"
        try:
            import torch

            if torch.cuda.is_available() or TORCH_DEVICE != "cuda":
                torch.backends.cuda.matmul.allow_tf32 = False  # the GEMM ceiling in true fp32
                self.torch = torch
        except Exception:
            pass
        self.xp = self.cp if self.cp is not None else self.torch
        self.base = "cupy" if self.cp is not None else "torch"
        self.gemm = {}     # dtype -> FLOP/s of the 4096^3 matmul
        self.rows = {}     # case name -> row, for targets that read other rows

    def cp_event(self):
        return self.cp.cuda.Event()

    def torch_event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def base_event(self):
        return self.cp_event() if self.base == "cupy" else self.torch_event()

    def sync(self):
        if self.cp is not None:
            self.cp.cuda.Device().synchronize()
        if self.torch is not None and TORCH_DEVICE == "cuda":
            self.torch.cuda.synchronize()

    def free(self):
        if self.cp is not None:
            self.cp.get_default_memory_pool().free_all_blocks()
        if self.torch is not None and TORCH_DEVICE == "cuda":
            self.torch.cuda.empty_cache()

    # arrays of the base package
    def randn(self, shape, seed):
        if self.base == "cupy":
            return self.cp.random.RandomState(seed).standard_normal(shape, dtype="float64")
        g = self.torch.Generator(device=TORCH_DEVICE).manual_seed(seed)
        return self.torch.randn(shape, generator=g, dtype=self.torch.float64,
                                device=TORCH_DEVICE)

    def astype(self, x, dtype):
        if self.base == "cupy":
            return self.cp.ascontiguousarray(self.cp.asarray(x).astype(dtype))
        return self.torch.as_tensor(x, device=TORCH_DEVICE).to(getattr(self.torch, dtype))

    def eye(self, n):
        if self.base == "cupy":
            return self.cp.eye(n)
        return self.torch.eye(n, dtype=self.torch.float64, device=TORCH_DEVICE)

    def arange(self, n):
        if self.base == "cupy":
            return self.cp.arange(n)
        return self.torch.arange(n, device=TORCH_DEVICE)

    @staticmethod
    def mT(x):
        return x.swapaxes(-1, -2) if hasattr(x, "swapaxes") else x.transpose(-1, -2)

    def fro(self, x):
        """Frobenius norm over the last two axes (a batch of norms)."""
        if self.base == "cupy":
            return self.cp.sqrt((x * x).sum(axis=(-2, -1)))
        return (x * x).sum(dim=(-2, -1)).sqrt()

    def upper_part(self, x, k):
        """The entries at or above diagonal ``k``, others zero."""
        i = self.arange(x.shape[-2])[:, None]
        j = self.arange(x.shape[-1])[None, :]
        return x * ((j - i) >= k)

    @staticmethod
    def fmax(x):
        return float(x.max())

    def to_torch(self, x):
        if self.torch is None:
            return None
        return self.torch.as_tensor(x, device=TORCH_DEVICE).clone()

    def to_cupy(self, x):
        return x if self.base == "cupy" else None


def tolerance(n, dtype):
    return 50 * max(n, 8) * float(np.finfo(dtype).eps)


def spd(ctx, shape, seed, shift=0.1):
    n = shape[-1]
    m = ctx.randn(shape, seed)
    a = m @ ctx.mT(m) / n + shift * ctx.eye(n)
    return (a + ctx.mT(a)) / 2


def symmetric(ctx, shape, seed):
    m = ctx.randn(shape, seed)
    return (m + ctx.mT(m)) / 2


def _f64(ctx, x):
    return ctx.astype(x, "float64")


def _shape(x, expected):
    if tuple(x.shape) != tuple(expected):
        raise Wrong(f"result shape {tuple(x.shape)}, expected {tuple(expected)}")


def check_solve(ctx, a, b):
    """``x -> max ‖A x - b‖ / (‖A‖ ‖x‖ + ‖b‖)`` over the batch."""
    A, B = _f64(ctx, a), _f64(ctx, b)
    vector = B.ndim == A.ndim - 1
    if vector:
        B = B[..., None]

    def check(x):
        _shape(x, b.shape)
        X = _f64(ctx, x)[..., None] if vector else _f64(ctx, x)
        return ctx.fmax(ctx.fro(A @ X - B) / (ctx.fro(A) * ctx.fro(X) + ctx.fro(B)))
    return check


def check_cholesky(ctx, a):
    A = _f64(ctx, a)

    def check(l):
        _shape(l, a.shape)
        L = _f64(ctx, l)
        if ctx.fmax(abs(ctx.upper_part(L, 1))) != 0:
            raise Wrong("nonzero entries above the diagonal")
        return ctx.fmax(ctx.fro(L @ ctx.mT(L) - A) / ctx.fro(A))
    return check


def _orthogonality(ctx, q):
    k = q.shape[-1]
    return ctx.fmax(ctx.fro(ctx.mT(q) @ q - ctx.eye(k)) / math.sqrt(k))


def check_qr(ctx, a):
    A = _f64(ctx, a)

    def check(result):
        q, r = result
        _shape(q, a.shape)
        _shape(r, a.shape)
        Q, R = _f64(ctx, q), _f64(ctx, r)
        if ctx.fmax(abs(R - ctx.upper_part(R, 0))) != 0:
            raise Wrong("R has nonzero entries below the diagonal")
        return max(ctx.fmax(ctx.fro(Q @ R - A) / ctx.fro(A)), _orthogonality(ctx, Q))
    return check


def check_eigh(ctx, a):
    A = _f64(ctx, a)

    def check(result):
        w, v = result
        _shape(v, a.shape)
        _shape(w, a.shape[:-1])
        W, V = _f64(ctx, w), _f64(ctx, v)
        if ctx.fmax(W[..., :-1] - W[..., 1:]) > 0:
            raise Wrong("eigenvalues not in ascending order")
        return max(ctx.fmax(ctx.fro(A @ V - V * W[..., None, :]) / ctx.fro(A)),
                   _orthogonality(ctx, V))
    return check


def check_svd(ctx, a):
    A = _f64(ctx, a)

    def check(result):
        u, s, vh = result
        _shape(u, a.shape)
        _shape(vh, a.shape)
        _shape(s, a.shape[:-1])
        U, S, Vh = _f64(ctx, u), _f64(ctx, s), _f64(ctx, vh)
        if ctx.fmax(S[..., 1:] - S[..., :-1]) > 0 or ctx.fmax(-S) > 0:
            raise Wrong("singular values not descending and nonnegative")
        return max(ctx.fmax(ctx.fro((U * S[..., None, :]) @ Vh - A) / ctx.fro(A)),
                   _orthogonality(ctx, U), _orthogonality(ctx, ctx.mT(Vh)))
    return check

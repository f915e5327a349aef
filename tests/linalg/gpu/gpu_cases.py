"""What the GPU tests of accelmath.linalg share (``test_*_gpu.py``): random data of known
conditioning, the array packages as put/get adapters, and one call per function whose
results are checked against the float64 oracle (NumPy/SciPy through the CPU path)."""

import numpy as np
from closeness import assert_close_dtype

import accelmath.linalg as la

DTYPES = ["float32", "float64", "complex64", "complex128"]
REAL = {"float32": "float32", "complex64": "float32", "float64": "float64",
        "complex128": "float64"}
METHODS = ["auto", "small", "cusolver", "batched"]


# ---- data and comparisons ----

def wide(dtype):
    """The float64 type of the oracle for ``dtype``."""
    return np.complex128 if str(dtype).startswith("complex") else np.float64


def random(shape, dtype, rng=None):
    rng = rng or np.random.default_rng()
    a = rng.standard_normal(shape)
    if str(dtype).startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def well(shape, dtype, permute=True):
    """Well-conditioned square matrices (I plus a small random part: condition about 2, the
    determinant of moderate size at any n), rows permuted, each matrix its own way, so that
    LU must interchange rows (and each matrix has pivots of its own)."""
    rng = np.random.default_rng()
    n = shape[-1]
    a = random(shape, dtype, rng) / (3 * np.sqrt(2 * max(n, 1))) + np.eye(n)
    if permute:
        rows = rng.permuted(np.broadcast_to(np.arange(n), shape[:-1]), axis=-1)
        a = np.take_along_axis(a, rows[..., None], axis=-2)
    return a.astype(dtype)


def matrix(shape, dtype):
    """Random matrices, well-conditioned where square (rectangular Gaussian ones are)."""
    return well(shape, dtype) if shape[-1] == shape[-2] else random(shape, dtype)


def spd(shape, dtype):
    """Hermitian positive-definite matrices."""
    a = random(shape, dtype)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2).conj() + n * np.eye(n)).astype(dtype)


def hermitian(shape, dtype):
    a = random(shape, dtype)
    return ((a + np.swapaxes(a, -1, -2).conj()) / 2).astype(dtype)


def garble(a, keep):
    """``a`` with garbage in the strict triangle that is not ``keep`` ("L" or "U")."""
    n = a.shape[-1]
    other = np.triu(np.ones((n, n), bool), 1) if keep == "L" else np.tril(np.ones((n, n), bool), -1)
    return np.where(other, 100 * random(a.shape, str(a.dtype)), a).astype(a.dtype)


def c(x):
    """``x`` in complex128, for the oracle's arithmetic."""
    return np.asarray(x).astype(np.complex128)


def mT(a):
    return np.swapaxes(a, -1, -2).conj()


def eye_like(a):
    """Identities of the shape of the square matrices ``a``."""
    return np.broadcast_to(np.eye(a.shape[-1]), a.shape)


def residual(op, x, b, vector, dtype, factor=10):
    """||op x - b|| small, b broadcast to the result's batch."""
    ax = c(op) @ (c(x)[..., None] if vector else c(x))
    bb = b[..., None] if vector else b
    assert_close_dtype(ax, np.broadcast_to(c(bb), ax.shape), dtype, factor)


# ---- array packages ----

class CuPy:
    name = "cupy"

    def __init__(self, cp):
        self.cp = cp

    def put(self, a):
        return self.cp.asarray(a)

    def get(self, r):
        assert isinstance(r, self.cp.ndarray), type(r)
        return self.cp.asnumpy(r)


class TorchCuda:
    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.device = torch.device("cuda", torch.cuda.current_device())

    def put(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def get(self, r):
        assert isinstance(r, self.torch.Tensor) and r.device == self.device, \
            (type(r), getattr(r, "device", None))
        return r.detach().resolve_conj().resolve_neg().cpu().numpy()


class JaxGpu:
    name = "jax"

    def __init__(self, jax):
        self.jax = jax
        self.device = next(d for d in jax.devices() if d.platform == "gpu")

    def put(self, a):
        return self.jax.device_put(a, self.device)

    def get(self, r):
        assert isinstance(r, self.jax.Array) and r.devices() == {self.device}, type(r)
        return np.asarray(r)


class NumbaGpu:
    name = "numba"

    def __init__(self, cuda):
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        self.cuda, self.array_type = cuda, DeviceNDArray

    def put(self, a):
        return self.cuda.to_device(np.ascontiguousarray(a))

    def get(self, r):
        assert isinstance(r, self.array_type), type(r)
        return r.copy_to_host()


class NumPyBack:
    """NumPy operands (with ``execution="cuda"``): NumPy results."""

    name = "numpy"

    def put(self, a):
        return a

    def get(self, r):
        assert isinstance(r, (np.ndarray, np.generic)), type(r)
        return np.asarray(r)


# ---- one call per function with well-defined results, for the cross-cutting tests ----

SIZES = {"small": (6, (3,)), "large": (110, (2,))}  # (n, batch): own kernels / cuSOLVER
CASES = ["solve", "solve_vector", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "svd",
         "svd_hermitian", "lstsq", "cho", "lu", "solve_triangular"]


def case(name, dtype, size="small"):
    """``(operands, call, canon)``: NumPy operands; ``call(*operands, **options)`` runs the
    functions and returns a tuple of results; ``canon(*host results)`` gives what is unique
    in them (|R|, reconstructions, one triangle...)."""
    n, batch = SIZES[size]
    shape = batch + (n, n)
    b = random(batch + (n, 2), dtype)

    def same(*results):
        return results

    if name == "solve":
        return (well(shape, dtype), b), lambda a, b, **k: (la.solve(a, b, **k),), same
    if name == "solve_vector":
        return ((well(shape, dtype), random((n,), dtype)),
                lambda a, b, **k: (la.solve(a, b, **k),), same)
    if name == "inv":
        return (well(shape, dtype),), lambda a, **k: (la.inv(a, **k),), same
    if name == "det":
        return (well(shape, dtype),), lambda a, **k: (la.det(a, **k),), same
    if name == "slogdet":
        return (well(shape, dtype),), lambda a, **k: tuple(la.slogdet(a, **k)), same
    if name == "cholesky":
        return ((spd(shape, dtype),),
                lambda a, **k: (la.cholesky(a, **k), la.cholesky(a, upper=True, **k)), same)
    if name == "qr":
        return ((random(batch + (n + 2, n), dtype),), lambda a, **k: tuple(la.qr(a, **k)),
                lambda q, r: (np.abs(r), c(q) @ c(r)))
    if name == "eigh":
        return ((hermitian(shape, dtype),),
                lambda a, **k: (*la.eigh(a, **k), la.eigvalsh(a, "U", **k)),
                lambda w, v, w2: (w, (c(v) * w[..., None, :]) @ mT(c(v)), w2))
    if name == "svd":
        return ((random(batch + (n, n + 3), dtype),),
                lambda a, **k: (*la.svd(a, full_matrices=False, **k), la.svdvals(a, **k)),
                lambda u, s, vh, s2: (s, (c(u) * s[..., None, :]) @ c(vh), s2))
    if name == "svd_hermitian":
        return ((hermitian(shape, dtype),),
                lambda a, **k: tuple(la.svd(a, hermitian=True, **k)),
                lambda u, s, vh: (s, (c(u) * s[..., None, :]) @ c(vh)))
    if name == "lstsq":
        tall = random((n + 3, n), dtype)
        tall[:n] += 4 * np.eye(n, dtype=dtype)  # (well conditioned: float32 agrees to 1e-4)
        return ((tall, random((n + 3, 2), dtype)), lambda a, b, **k: tuple(la.lstsq(a, b, **k)),
                same)
    if name == "cho":
        def cho(a, b, **k):
            factor, lower = la.cho_factor(a, lower=True, **k)
            assert lower is True
            return factor, la.cho_solve((factor, lower), b, **k)

        return (spd(shape, dtype), b), cho, lambda f, x: (np.tril(f), x)
    if name == "lu":
        def lu(a, b, **k):
            factors = la.lu_factor(a, **k)
            return (*factors, la.lu_solve(factors, b, **k),
                    la.lu_solve(factors, b, trans=2, **k))

        return (well(shape, dtype), b), lu, same
    if name == "solve_triangular":
        return ((well(shape, dtype, permute=False), b),
                lambda a, b, **k: (la.solve_triangular(a, b, lower=True, **k),
                                   la.solve_triangular(a, b, trans=2, unit_diagonal=True,
                                                       **k)), same)
    raise AssertionError(name)


def check_case(name, dtype, size, xp, put=None, **options):
    """Run case ``name`` on operands put by ``put`` (default ``xp.put``), results read by
    ``xp.get``: NumPy's shapes and dtypes, and what is unique in them equal to the float64
    oracle (NumPy/SciPy through the CPU path). Returns the device operands."""
    operands, call, canon = case(name, dtype, size)
    put = put or xp.put
    given = [put(o) for o in operands]
    results = call(*given, **options)
    host = [np.asarray(r) if isinstance(r, int) else xp.get(r) for r in results]
    numpy_results = call(*operands, execution="cpu")
    assert len(host) == len(numpy_results)
    for r, e, raw in zip(host, numpy_results, results):
        assert r.shape == np.shape(e), (r.shape, np.shape(e))
        if not isinstance(raw, int):
            assert r.dtype == np.asarray(e).dtype, (r.dtype, np.asarray(e).dtype)
    oracle = canon(*(np.asarray(r) for r in
                     call(*(o.astype(wide(o.dtype)) for o in operands), execution="cpu")))
    for r, e in zip(canon(*host), oracle):
        assert_close_dtype(r, e, dtype, 10)
    return operands, given


def method_call(function, a, b, method, **options):
    if function == "solve":
        return la.solve(a, b, method=method, **options)
    if function == "inv":
        return la.inv(a, method=method, **options)
    return la.cholesky(a, method=method, **options)


def method_data(function, shape, dtype):
    """Operands (a, b) of ``function`` and NumPy's float64 result."""
    if function == "cholesky":
        a = spd(shape, dtype)
        return a, None, np.linalg.cholesky(a.astype(wide(dtype)))
    a = well(shape, dtype)
    if function == "inv":
        return a, None, np.linalg.inv(a.astype(wide(dtype)))
    b = random(shape[:-1] + (shape[-1] + 1,), dtype)  # (k = n is the last test's)
    return a, b, np.linalg.solve(a.astype(wide(dtype)), b.astype(wide(dtype)))

"""accelmath.linalg on the GPU, against NumPy/SciPy in float64 on fresh random data.

CuPy arrays mainly (every function: residuals, reconstructions and unique results, four dtypes,
batched and broadcast, non-contiguous views, the device strategies, errors with their batch
index, explicit streams, empty shapes, the plan cache); torch CUDA tensors and JAX GPU arrays
for a representative subset; NumPy arrays with ``execution="cuda"``.
"""

import numpy as np
import pytest
import scipy.linalg

import accelmath.linalg as la
from accelmath.errors import InvalidArgumentError, LinAlgError, UnsupportedDTypeError

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]
TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}
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


def relative(x, y):
    return np.linalg.norm(c(x) - c(y)) / max(np.linalg.norm(c(y)), 1e-300)


def close(result, expected, dtype, factor=1.0):
    error = relative(result, expected)
    assert error < TOL[str(dtype)] * factor, error


def residual(op, x, b, vector, dtype, factor=10):
    """||op x - b|| small, b broadcast to the result's batch."""
    ax = c(op) @ (c(x)[..., None] if vector else c(x))
    bb = b[..., None] if vector else b
    close(ax, np.broadcast_to(c(bb), ax.shape), dtype, factor)


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


class NumPyBack:
    """NumPy operands (with ``execution="cuda"``): NumPy results."""

    name = "numpy"

    def put(self, a):
        return a

    def get(self, r):
        assert isinstance(r, (np.ndarray, np.generic)), type(r)
        return np.asarray(r)


@pytest.fixture
def cupy(cp):
    return CuPy(cp)


@pytest.fixture(params=["torch", "jax"])
def package(request):
    if request.param == "torch":
        return TorchCuda(request.getfixturevalue("torch_cuda"))
    return JaxGpu(request.getfixturevalue("jax_gpu"))


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
        close(r, e, dtype, 10)
    return operands, given


# ---- every function on CuPy arrays ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [
    ((6, 6), (6,)), ((6, 6), (6, 3)), ((4, 5, 5), (5,)), ((4, 5, 5), (4, 5, 2)),
    ((5, 5), (3, 5, 2)), ((3, 1, 5, 5), (4, 5, 2)), ((40, 40), (40, 3)), ((3, 40, 40), (40,)),
    ((2, 1, 40, 40), (3, 40, 2)), ((90, 90), (90, 3)), ((110, 110), (110, 3)),
    ((3, 110, 110), (110,))])
def test_solve(cupy, dtype, a_shape, b_shape):
    a, b = well(a_shape, dtype), random(b_shape, dtype)
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b)))
    expected = np.linalg.solve(a.astype(wide(dtype)), b.astype(wide(dtype)))
    assert x.shape == expected.shape and x.dtype == np.dtype(dtype)
    close(x, expected, dtype, 10)
    residual(a, x, b, len(b_shape) == 1, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (2, 3, 1, 1), (40, 40), (2, 40, 40),
                                   (70, 70), (2, 70, 70)])
def test_inv_det_slogdet(cupy, dtype, shape):
    a = well(shape, dtype)
    inverse = cupy.get(la.inv(cupy.put(a)))
    assert inverse.shape == shape and inverse.dtype == np.dtype(dtype)
    close(inverse, np.linalg.inv(a.astype(wide(dtype))), dtype, 10)
    close(c(a) @ c(inverse), eye_like(a), dtype, 10)
    d = cupy.get(la.det(cupy.put(a)))
    assert d.shape == shape[:-2] and d.dtype == np.dtype(dtype)
    close(d, np.linalg.det(a.astype(wide(dtype))), dtype, 10)
    sign, logabsdet = la.slogdet(cupy.put(a))
    sign, logabsdet = cupy.get(sign), cupy.get(logabsdet)
    expected = np.linalg.slogdet(a.astype(wide(dtype)))
    assert sign.dtype == np.dtype(dtype) and logabsdet.dtype == np.dtype(REAL[dtype])
    assert sign.shape == logabsdet.shape == shape[:-2]
    close(sign, expected.sign, dtype, 10)
    close(logabsdet, expected.logabsdet, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 7), (3, 5, 5), (40, 40), (2, 40, 40), (70, 70),
                                   (2, 70, 70)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(cupy, dtype, shape, upper):
    """Hermitian (complex) matrices; only the triangle named is read."""
    a = spd(shape, dtype)
    factor = cupy.get(la.cholesky(cupy.put(garble(a, "U" if upper else "L")), upper=upper))
    assert factor.shape == shape and factor.dtype == np.dtype(dtype)
    lower = np.linalg.cholesky(a.astype(wide(dtype)))
    close(factor, mT(lower) if upper else lower, dtype, 10)
    assert np.all((np.tril(factor, -1) if upper else np.triu(factor, 1)) == 0)
    close(mT(c(factor)) @ c(factor) if upper else c(factor) @ mT(c(factor)), a, dtype, 10)


def householder_q(h, tau):
    """Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H, from NumPy's raw QR (h transposed)."""
    f = np.swapaxes(c(h), -1, -2)  # (..., m, n), LAPACK's geqrf output
    m, k = f.shape[-2], tau.shape[-1]
    q = np.broadcast_to(np.eye(m, dtype=np.complex128), f.shape[:-2] + (m, m))
    for i in range(k):
        v = np.zeros(f.shape[:-2] + (m,), np.complex128)
        v[..., i] = 1
        v[..., i + 1:] = f[..., i + 1:, i]
        q = q @ (np.eye(m) - c(tau)[..., i, None, None] * v[..., :, None] * v[..., None, :].conj())
    return q


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 6, 4), (2, 4, 6), (50, 30),
                                   (30, 50)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
def test_qr(cupy, dtype, shape, mode):
    a = matrix(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    r_expected = np.linalg.qr(a.astype(wide(dtype)), "r")  # (..., k, n), unique up to row phases
    result = la.qr(cupy.put(a), mode)
    if mode == "r":
        r = cupy.get(result)
        assert r.shape == batch + (k, n) and r.dtype == np.dtype(dtype)
        assert np.all(np.tril(r, -1) == 0)
        close(np.abs(r), np.abs(r_expected), dtype, 10)
        return
    if mode == "raw":
        h, tau = cupy.get(result[0]), cupy.get(result[1])
        assert h.shape == batch + (n, m) and tau.shape == batch + (k,)
        assert h.dtype == tau.dtype == np.dtype(dtype)
        r = np.triu(np.swapaxes(h, -1, -2))[..., :k, :]
        close(householder_q(h, tau)[..., :, :k] @ c(r), a, dtype, 10)
        close(np.abs(r), np.abs(r_expected), dtype, 10)
        return
    assert type(result).__name__ == "QRResult"
    q, r = cupy.get(result.Q), cupy.get(result.R)
    qcols = m if mode == "complete" else k
    assert q.shape == batch + (m, qcols) and r.shape == batch + (qcols, n)
    assert q.dtype == r.dtype == np.dtype(dtype)
    assert np.all(np.tril(r, -1) == 0)
    close(c(q) @ c(r), a, dtype, 10)
    close(mT(c(q)) @ c(q), np.broadcast_to(np.eye(qcols), batch + (qcols, qcols)), dtype, 10)
    close(np.abs(r[..., :k, :]), np.abs(r_expected), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 6), (4, 5, 5), (40, 40), (2, 33, 33)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_eigvalsh(cupy, dtype, shape, uplo):
    """Only the triangle UPLO names is read: garbage in the other."""
    a = hermitian(shape, dtype)
    given = cupy.put(garble(a, uplo))
    w, v = la.eigh(given, uplo)
    w, v = cupy.get(w), cupy.get(v)
    assert w.shape == shape[:-1] and v.shape == shape
    assert w.dtype == np.dtype(REAL[dtype]) and v.dtype == np.dtype(dtype)
    expected = np.linalg.eigvalsh(a.astype(wide(dtype)))
    close(w, expected, dtype, 10)
    assert np.all(np.diff(w, axis=-1) >= 0)
    close((c(v) * w[..., None, :]) @ mT(c(v)), a, dtype, 10)
    close(mT(c(v)) @ c(v), eye_like(a), dtype, 10)
    values = cupy.get(la.eigvalsh(given, uplo))
    assert values.dtype == np.dtype(REAL[dtype])
    close(values, expected, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 6, 4), (2, 4, 6), (50, 30),
                                   (30, 50), (3, 50, 30)])
@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("method", ["auto", "cusolver"])  # (gesvdj, gesvd past 32 x 32)
def test_svd(cupy, dtype, shape, full_matrices, method):
    a = random(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    result = la.svd(cupy.put(a), full_matrices, method=method)
    assert type(result).__name__ == "SVDResult"
    u, s, vh = (cupy.get(r) for r in result)
    assert u.shape == batch + ((m, m) if full_matrices else (m, k))
    assert vh.shape == batch + ((n, n) if full_matrices else (k, n)) and s.shape == batch + (k,)
    assert u.dtype == vh.dtype == np.dtype(dtype) and s.dtype == np.dtype(REAL[dtype])
    close((c(u)[..., :, :k] * s[..., None, :]) @ c(vh)[..., :k, :], a, dtype, 10)
    for gram in (mT(c(u)) @ c(u), c(vh) @ mT(c(vh))):
        close(gram, eye_like(gram), dtype, 10)
    expected = np.linalg.svd(c(a), compute_uv=False)
    close(s, expected, dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0)
    values = cupy.get(la.svd(cupy.put(a), full_matrices, compute_uv=False, method=method))
    assert values.shape == batch + (k,) and values.dtype == np.dtype(REAL[dtype])
    close(values, expected, dtype, 10)
    close(cupy.get(la.svdvals(cupy.put(a), method=method)), expected, dtype, 10)
    unchecked = cupy.get(la.svd(cupy.put(a), full_matrices, check=False, method=method).S)
    close(unchecked, expected, dtype, 10)


def test_svd_runs_gesvd_where_gesvdj_does_not_converge(cupy, monkeypatch):
    from accelmath.linalg import _spectral

    checked = []

    def not_converged(info, count, stream):  # (as cuSOLVER's info codes would say)
        checked.append(count)
        return np.ones(count, np.int32)

    monkeypatch.setattr(_spectral, "read_info", not_converged)
    a = random((3, 40, 30), "float64")
    u, s, vh = (cupy.get(r) for r in la.svd(cupy.put(a), False))
    assert checked == [3]  # gesvdj ran, was checked, and gesvd wrote the results
    close((u * s[..., None, :]) @ vh, a, "float64", 10)
    close(s, np.linalg.svd(a, compute_uv=False), "float64", 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (3, 5, 5), (40, 40)])
def test_svd_hermitian(cupy, dtype, shape):
    a = hermitian(shape, dtype)
    u, s, vh = (cupy.get(r) for r in la.svd(cupy.put(a), hermitian=True))
    assert u.shape == vh.shape == shape and s.shape == shape[:-1]
    assert u.dtype == vh.dtype == np.dtype(dtype) and s.dtype == np.dtype(REAL[dtype])
    close((c(u) * s[..., None, :]) @ c(vh), a, dtype, 10)
    close(mT(c(u)) @ c(u), eye_like(a), dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    expected = np.linalg.svd(c(a), compute_uv=False)
    close(s, expected, dtype, 10)
    close(cupy.get(la.svd(cupy.put(a), compute_uv=False, hermitian=True)), expected, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, k", [((8, 3), None), ((8, 3), 2), ((3, 8), 2), ((5, 5), None),
                                      ((60, 20), 3), ((20, 60), None)])
def test_lstsq(cupy, dtype, shape, k):
    a = matrix(shape, dtype)
    b = random((shape[0],) if k is None else (shape[0], k), dtype)
    x, residuals, rank, s = la.lstsq(cupy.put(a), cupy.put(b))
    x, residuals, s = cupy.get(x), cupy.get(residuals), cupy.get(s)
    ex, eres, erank, es = np.linalg.lstsq(a.astype(wide(dtype)), b.astype(wide(dtype)))
    assert x.shape == ex.shape and residuals.shape == eres.shape and s.shape == es.shape
    assert x.dtype == np.dtype(dtype)
    assert residuals.dtype == s.dtype == np.dtype(REAL[dtype])
    assert int(rank) == erank == min(shape)
    close(x, ex, dtype, 10)
    close(s, es, dtype, 10)
    if eres.size:
        close(residuals, eres, dtype, 10)


def rank_two(dtype):
    """A 6 x 3 matrix of small integers (exact in every dtype) of rank 2."""
    a = np.random.default_rng().integers(-4, 5, (6, 3)).astype(dtype)
    if str(dtype).startswith("complex"):
        a = a + 1j * np.random.default_rng().integers(-4, 5, (6, 3))
    a[:, 2] = a[:, 0] + a[:, 1]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("vector", [True, False])
def test_lstsq_rank_deficient(cupy, dtype, vector):
    a = rank_two(dtype)
    b = random((6,) if vector else (6, 2), dtype)
    x, residuals, rank, s = la.lstsq(cupy.put(a), cupy.put(b))
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    assert erank == 2 and int(rank) == 2 and cupy.get(residuals).shape == (0,)
    assert cupy.get(x).shape == ex.shape
    close(cupy.get(x), ex, dtype, 10)  # the minimum-norm solution
    close(cupy.get(s), es, dtype, 10)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_lstsq_rank_deficient_single_precision(cupy, dtype):
    """NumPy computes single precision in double: an exactly rank-2 matrix has rank 2 with
    the default rcond (float64's epsilon times max(m, n)), and x is the minimum-norm
    solution."""
    a = rank_two(dtype)
    b = random((6,), dtype)
    x, residuals, rank, s = la.lstsq(cupy.put(a), cupy.put(b))
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    assert erank == 2
    assert int(rank) == 2
    close(cupy.get(x), ex, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_shape, b_shape", [((5, 5), (5,)), ((5, 5), (5, 2)),
                                              ((3, 4, 4), (4,)), ((3, 4, 4), (2, 1, 4, 3)),
                                              ((40, 40), (40, 3)), ((2, 40, 40), (40,))])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_cho_solve(cupy, dtype, c_shape, b_shape, lower):
    a, b = spd(c_shape, dtype), random(b_shape, dtype)
    dev_factor, low = la.cho_factor(cupy.put(a), lower=lower)
    assert low is lower
    factor = cupy.get(dev_factor)
    x = cupy.get(la.cho_solve((dev_factor, low), cupy.put(b)))
    np.testing.assert_array_equal(cupy.get(dev_factor), factor)  # (read, never written)
    assert factor.shape == c_shape and factor.dtype == np.dtype(dtype)
    reference = np.linalg.cholesky(a.astype(wide(dtype)))
    close(np.tril(factor) if lower else np.triu(factor), reference if lower else mT(reference),
          dtype, 10)
    np.testing.assert_array_equal(np.triu(factor, 1) if lower else np.tril(factor, -1), 0)
    assert x.dtype == np.dtype(dtype)
    residual(a, x, b, len(b_shape) == 1, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_reads_one_triangle(cupy, dtype, lower):
    """SciPy's own factor (a's entries in the other triangle) solved on the GPU."""
    a, b = spd((6, 6), dtype), random((6, 2), dtype)
    factor = scipy.linalg.cho_factor(a, lower=lower)[0]
    x = cupy.get(la.cho_solve((cupy.put(factor), lower), cupy.put(b)))
    residual(a, x, b, False, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((5, 5), (5,)), ((5, 5), (5, 3)),
                                              ((2, 4, 4), (4,)), ((2, 4, 4), (2, 4, 2)),
                                              ((40, 40), (40, 2)), ((3, 40, 40), (3, 40, 1))])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_lu_solve(cupy, dtype, a_shape, b_shape, trans):
    a, b = well(a_shape, dtype), random(b_shape, dtype)
    lu, piv = la.lu_factor(cupy.put(a))
    x = cupy.get(la.lu_solve((lu, piv), cupy.put(b), trans=trans))
    lu, piv = cupy.get(lu), cupy.get(piv)
    assert lu.shape == a_shape and lu.dtype == np.dtype(dtype)
    assert piv.shape == a_shape[:-1] and piv.dtype == np.int32
    for index in np.ndindex(a_shape[:-2]):
        elu, epiv = scipy.linalg.lu_factor(a[index].astype(wide(dtype)))
        np.testing.assert_array_equal(piv[index], epiv)
        close(lu[index], elu, dtype, 10)
    op = {0: a, 1: np.swapaxes(a, -1, -2), 2: mT(a)}[trans]
    vector = len(b_shape) == 1
    batch = np.broadcast_shapes(a_shape[:-2], () if vector else b_shape[:-2])
    assert x.shape == batch + (b_shape if vector else b_shape[-2:])
    assert x.dtype == np.dtype(dtype)
    residual(op, x, b, vector, dtype)


@pytest.mark.parametrize("a_shape, b_shape", [((2, 4, 4), (3, 1, 4, 2)), ((4, 4), (3, 4, 2)),
                                              ((40, 40), (2, 40, 1))])
def test_lu_solve_broadcasts_batches(cupy, a_shape, b_shape):
    """b's batch dimensions broadcast with lu's (and piv's), as on the CPU."""
    a, b = well(a_shape, "float64"), random(b_shape, "float64")
    factors = la.lu_factor(cupy.put(a))
    x = cupy.get(la.lu_solve(factors, cupy.put(b)))
    assert x.shape == np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + b_shape[-2:]
    residual(a, x, b, False, "float64")


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 6, 4)])
def test_lu_factor_rectangular(cupy, dtype, shape):
    a = random(shape, dtype)
    lu, piv = la.lu_factor(cupy.put(a))
    lu, piv = cupy.get(lu), cupy.get(piv)
    assert lu.shape == shape and piv.shape == shape[:-2] + (min(shape[-2:]),)
    for index in np.ndindex(shape[:-2]):
        elu, epiv = scipy.linalg.lu_factor(a[index].astype(wide(dtype)))
        np.testing.assert_array_equal(piv[index], epiv)
        close(lu[index], elu, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((5, 5), (5,)), ((3, 4, 4), (4, 2)),
                                              ((3, 4, 4), (2, 1, 4, 1)), ((40, 40), (40, 3))])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular(cupy, dtype, a_shape, b_shape, lower, trans, unit_diagonal):
    """The other triangle of a is full (not read); so is the diagonal with unit_diagonal."""
    a, b = well(a_shape, dtype, permute=False), random(b_shape, dtype)
    x = cupy.get(la.solve_triangular(cupy.put(a), cupy.put(b), trans=trans, lower=lower,
                                     unit_diagonal=unit_diagonal))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(a_shape[-1]) + np.eye(a_shape[-1])
    op = {0: t, 1: np.swapaxes(t, -1, -2), 2: mT(t)}[trans]
    assert x.dtype == np.dtype(dtype)
    vector = len(b_shape) == 1
    expected = np.linalg.solve(c(op), c(b)[..., None] if vector else c(b))
    expected = expected[..., 0] if vector else expected
    assert x.shape == expected.shape
    close(x, expected, dtype, 10)
    residual(op, x, b, vector, dtype)


def test_solve_triangular_zero_diagonal_raises(cupy):
    """A zero on the diagonal raises LinAlgError naming the batch index, as on the CPU."""
    a = well((3, 4, 4), "float64", permute=False)
    a[1, 2, 2] = 0
    b = random((4, 2), "float64")
    with pytest.raises(LinAlgError) as info:
        la.solve_triangular(cupy.put(a), cupy.put(b), lower=True)
    assert info.value.index == (1,)
    x = la.solve_triangular(cupy.put(a), cupy.put(b), lower=True, unit_diagonal=True)
    assert np.all(np.isfinite(cupy.get(x)))


# ---- torch CUDA tensors and JAX GPU arrays ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("name", CASES)
def test_packages(package, name, dtype, size):
    """Results of the caller's package (torch: on the input's device; JAX: jax.Array on
    its GPU), of NumPy's shapes and dtypes, equal to the float64 oracle."""
    check_case(name, dtype, size, package)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_packages_scipy_arguments(package, dtype):
    """cho_solve with lower=False and lu_solve with trans=1 on the package's arrays."""
    a, b = spd((3, 5, 5), dtype), random((3, 5, 2), dtype)
    factor, lower = la.cho_factor(package.put(a))
    residual(a, package.get(la.cho_solve((factor, lower), package.put(b))), b, False, dtype)
    a = well((3, 5, 5), dtype)
    factors = la.lu_factor(package.put(a))
    x = package.get(la.lu_solve(factors, package.put(b[0, :, 0]), trans=1))
    residual(np.swapaxes(a, -1, -2), x, b[0, :, 0], True, dtype)


# ---- non-contiguous operands ----

def device_view(cp, host, kind):
    """A CuPy view holding ``host``, not C-contiguous: matrices transposed in memory, every
    other element of a larger array, or negative strides."""
    if kind == "transposed" and host.ndim >= 2:
        dev = cp.asarray(np.ascontiguousarray(np.swapaxes(host, -1, -2))).swapaxes(-1, -2)
    elif kind == "reversed":
        index = (slice(None, None, -1),) * host.ndim
        dev = cp.asarray(np.ascontiguousarray(host[index]))[index]
    else:
        big = np.zeros(tuple(2 * s + 1 for s in host.shape), host.dtype)
        index = tuple(slice(1, 1 + 2 * s, 2) for s in host.shape)
        big[index] = host
        dev = cp.asarray(big)[index]
    np.testing.assert_array_equal(cp.asnumpy(dev), host)
    return dev


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("kind", ["transposed", "stepped", "reversed"])
@pytest.mark.parametrize("name", CASES)
def test_noncontiguous(cp, name, kind, size, dtype):
    """Views as operands give the results of their values, and are left as they were."""
    operands, given = check_case(name, dtype, size, CuPy(cp),
                                 put=lambda a: device_view(cp, a, kind))
    for host, dev in zip(operands, given):
        np.testing.assert_array_equal(cp.asnumpy(dev), host)


@pytest.mark.parametrize("method", ["auto", "small", "cusolver"])
def test_noncontiguous_methods(cupy, method):
    a = well((4, 8, 8), "float64")
    b = random((4, 8, 3), "float64")
    p = spd((4, 8, 8), "float64")
    dev_a = cupy.put(np.ascontiguousarray(np.swapaxes(a, -1, -2))).swapaxes(-1, -2)[::2]
    dev_b = cupy.put(b)[::-2]
    dev_p = cupy.put(p)[1::2, ::-1, ::-1]
    x = cupy.get(la.solve(dev_a, dev_b, method=method))
    close(x, np.linalg.solve(a[::2], b[::-2]), "float64", 10)
    close(cupy.get(la.inv(dev_a, method=method)), np.linalg.inv(a[::2]), "float64", 10)
    close(cupy.get(la.cholesky(dev_p, method=method)),
          np.linalg.cholesky(p[1::2, ::-1, ::-1]), "float64", 10)


# ---- the device strategies ----

def _method_call(function, a, b, method, **options):
    if function == "solve":
        return la.solve(a, b, method=method, **options)
    if function == "inv":
        return la.inv(a, method=method, **options)
    return la.cholesky(a, method=method, **options)


def _method_data(function, shape, dtype):
    """Operands (a, b) of ``function`` and NumPy's float64 result."""
    if function == "cholesky":
        a = spd(shape, dtype)
        return a, None, np.linalg.cholesky(a.astype(wide(dtype)))
    a = well(shape, dtype)
    if function == "inv":
        return a, None, np.linalg.inv(a.astype(wide(dtype)))
    b = random(shape[:-1] + (shape[-1] + 1,), dtype)  # (k = n is the last test's)
    return a, b, np.linalg.solve(a.astype(wide(dtype)), b.astype(wide(dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 17, 32])
@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
def test_methods_agree(cupy, function, n, dtype):
    """A batch of 1000 (rows interchanged for LU): each method gives NumPy's result."""
    a, b, expected = _method_data(function, (1000, n, n), dtype)
    dev_a = cupy.put(a)
    dev_b = None if b is None else cupy.put(b)
    results = {}
    for method in METHODS:
        results[method] = cupy.get(_method_call(function, dev_a, dev_b, method))
        assert results[method].shape == expected.shape
        assert results[method].dtype == np.dtype(dtype)
        close(results[method], expected, dtype, 10)
    close(results["small"], results["cusolver"], dtype, 10)
    if function == "cholesky":
        for method in METHODS:
            upper = cupy.get(la.cholesky(dev_a, upper=True, method=method))
            close(upper, mT(expected), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [3, 8, 17, 32])
@pytest.mark.parametrize("method", ["small", "cusolver"])
def test_partial_pivoting_backward_error(cupy, method, n, dtype):
    """Plain Gaussian matrices (some ill-conditioned): the residual of each system is at the
    level of the rounding, ||a x - b|| <= 100 n eps ||a|| ||x||."""
    a, b = random((1000, n, n), dtype), random((1000, n, 1), dtype)
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b), method=method))
    r = np.linalg.norm(c(a) @ c(x) - c(b), axis=(-2, -1))
    bound = np.linalg.norm(c(a), axis=(-2, -1)) * np.linalg.norm(c(x), axis=(-2, -1))
    eps = np.finfo(dtype).eps
    assert np.all(r <= 100 * n * eps * bound), np.max(r / bound) / eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [33, 64, 128])
@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
def test_batched_routes_agree(cupy, function, n, dtype):
    """Batches past the own kernels' reach: the batched routes (cuBLAS's getrfBatched and
    getrsBatched, cuSOLVER's potrfBatched), which "auto" takes, give NumPy's result and the
    one-matrix-at-a-time route's."""
    a, b, expected = _method_data(function, (20, n, n), dtype)
    dev_a = cupy.put(a)
    dev_b = None if b is None else cupy.put(b)
    results = {method: cupy.get(_method_call(function, dev_a, dev_b, method))
               for method in ("auto", "batched", "cusolver")}
    for result in results.values():
        close(result, expected, dtype, 10)
    close(results["batched"], results["cusolver"], dtype, 10)
    close(results["auto"], results["batched"], dtype, 1)
    if function == "cholesky":
        close(cupy.get(la.cholesky(dev_a, upper=True, method="batched")), mT(expected), dtype,
              10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, k", [(40, 1), (64, 3)])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_batched(cupy, dtype, n, k, lower):
    """cho_solve of a batch (potrsBatched, a column at a time)."""
    a = spd((6, n, n), dtype)
    b = random((6, n, k), dtype)
    factor = la.cho_factor(cupy.put(a), lower=lower)
    x = cupy.get(la.cho_solve(factor, cupy.put(b)))
    close(x, np.linalg.solve(c(a), c(b)), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(30, 8, 5), (30, 5, 8), (7, 32, 32), (2, 1, 1)])
@pytest.mark.parametrize("method", ["auto", "batched"])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_batched_jacobi(cupy, dtype, shape, method, full_matrices):
    """Batches up to 32 x 32 through gesvdjBatched: a reconstruction, unitary factors,
    NumPy's singular values, descending."""
    a = random(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    u, s, vh = (cupy.get(r) for r in la.svd(cupy.put(a), full_matrices, method=method))
    assert u.shape == shape[:-2] + ((m, m) if full_matrices else (m, k))
    assert vh.shape == shape[:-2] + ((n, n) if full_matrices else (k, n))
    close((c(u)[..., :, :k] * s[..., None, :]) @ c(vh)[..., :k, :], a, dtype, 10)
    for gram in (mT(c(u)) @ c(u), c(vh) @ mT(c(vh))):
        close(gram, eye_like(gram), dtype, 10)
    close(s, np.linalg.svd(c(a), compute_uv=False), dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0)
    values = cupy.get(la.svd(cupy.put(a), compute_uv=False, method=method))
    close(values, np.linalg.svd(c(a), compute_uv=False), dtype, 10)


def test_svd_batched_refuses_large_matrices(cupy):
    with pytest.raises(InvalidArgumentError, match="at most 32"):
        la.svd(cupy.put(random((2, 33, 4), "float64")), method="batched")


def test_small_method_refuses_large_matrices(cupy):
    a = cupy.put(well((2, 129, 129), "float64"))
    for call in (lambda: la.solve(a, a, method="small"), lambda: la.inv(a, method="small"),
                 lambda: la.cholesky(a, method="small")):
        with pytest.raises(InvalidArgumentError):
            call()


def test_small_method_returns_an_empty_batch_of_large_matrices(cupy):
    # (nothing to compute: no method refuses it, as NumPy returns one)
    a = cupy.put(np.zeros((0, 129, 129)))
    for result in (la.solve(a, a, method="small"), la.inv(a, method="small"),
                   la.cholesky(a, method="small")):
        assert cupy.get(result).shape == (0, 129, 129)


def test_small_method_names_the_largest_order_the_gpu_takes(cupy):
    from accelmath.linalg import _medium

    if _medium.fits("solve", 128, "complex128", 0):
        pytest.skip("this GPU's blocks take complex128 matrices of 128 rows")
    most = _medium.largest("solve", "complex128", 0)
    a = cupy.put(well((2, most + 1, most + 1), "complex128"))
    with pytest.raises(InvalidArgumentError, match=f"at most {most} rows on this GPU"):
        la.solve(a, a, method="small")
    a = well((2, most, most), "complex128")
    close(cupy.get(la.inv(cupy.put(a), method="small")), np.linalg.inv(a), "complex128", 10)


def test_small_method_single_matrix(cupy):
    a, b = well((5, 5), "float64"), random((5,), "float64")
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b), method="small"))
    close(x, np.linalg.solve(a, b), "float64", 10)


# ---- failures: the batch index, and NaN with check=False ----

FAILING = [("small", 4), ("cusolver", 4), ("auto", 4), ("batched", 4), ("small", 40),
           ("cusolver", 40), ("auto", 40), ("batched", 130)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("function", ["solve", "inv"])
@pytest.mark.parametrize("method, n", FAILING)
@pytest.mark.parametrize("batch, bad", [((5,), (3,)), ((2, 3), (1, 2))])
def test_singular_matrix_raises_with_its_index(cupy, function, method, n, batch, bad, dtype):
    a = well(batch + (n, n), dtype)
    a[bad] = 0
    b = cupy.put(random(batch + (n, 2), dtype))
    with pytest.raises(LinAlgError) as info:
        _method_call(function, cupy.put(a), b, method)
    assert info.value.index == bad
    assert isinstance(info.value, np.linalg.LinAlgError)
    assert f"(batch index {bad})" in str(info.value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("function", ["solve", "inv"])
@pytest.mark.parametrize("method, n", FAILING)
def test_singular_matrix_with_check_false(cupy, function, method, n, dtype):
    a, b, expected = _method_data(function, (5, n, n), dtype)
    a[3] = 0
    result = cupy.get(_method_call(function, cupy.put(a), None if b is None else cupy.put(b),
                                   method, check=False))
    assert np.all(np.isnan(result[3]))
    others = [0, 1, 2, 4]
    close(result[others], expected[others], dtype, 10)


@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
@pytest.mark.parametrize("n", [4, 40])
def test_small_kernels_read_no_info_back_where_none_failed(cupy, monkeypatch, function, n):
    # the kernels raise the thread's page-locked flag where a system fails: a checked call
    # that finds it lowered reads no info codes back, the call remembered as well
    from accelmath.linalg import _context

    a, b, expected = _method_data(function, (5, n, n), "float64")
    a_dev, b_dev = cupy.put(a), None if b is None else cupy.put(b)
    monkeypatch.setattr(_context, "check_info",
                        lambda *args: pytest.fail("info codes were read back"))
    for _ in range(2):
        close(cupy.get(_method_call(function, a_dev, b_dev, "small")), expected, "float64", 10)
    monkeypatch.undo()
    a[3] = -np.eye(n) if function == "cholesky" else 0
    a_bad = cupy.put(a)
    for _ in range(2):
        with pytest.raises(LinAlgError) as info:
            _method_call(function, a_bad, b_dev, "small")
        assert info.value.index == (3,)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method, n", FAILING)
@pytest.mark.parametrize("upper", [False, True])
def test_not_positive_definite(cupy, method, n, upper, dtype):
    a, _, expected = _method_data("cholesky", (2, 3, n, n), dtype)
    a[1, 2] = -np.eye(n)
    with pytest.raises(LinAlgError) as info:
        la.cholesky(cupy.put(a), upper=upper, method=method)
    assert info.value.index == (1, 2)
    assert "(batch index (1, 2))" in str(info.value)
    result = cupy.get(la.cholesky(cupy.put(a), upper=upper, method=method, check=False))
    assert np.all(np.isnan(result[1, 2]))
    result[1, 2] = 0
    expected[1, 2] = 0
    close(result, mT(expected) if upper else expected, dtype, 10)


@pytest.mark.parametrize("n", [4, 40, 70])
def test_factorizations_of_scipy_raise_with_the_index(cupy, n):
    a = spd((5, n, n), "float64")
    a[3] = -np.eye(n)
    with pytest.raises(LinAlgError) as info:
        la.cho_factor(cupy.put(a))
    assert info.value.index == (3,)
    a = well((5, n, n), "float64")
    a[3] = 0
    with pytest.raises(LinAlgError) as info:
        la.lu_factor(cupy.put(a))
    assert info.value.index == (3,)
    lu, piv = la.lu_factor(cupy.put(a), check=False)
    lu = cupy.get(lu)
    assert np.all(np.isnan(lu[3])) and np.all(np.isfinite(lu[[0, 1, 2, 4]]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_of_singular_matrices(cupy, dtype):
    a = well((5, 4, 4), dtype)
    a[3] = 0
    d = cupy.get(la.det(cupy.put(a)))
    assert d[3] == 0
    close(d, np.linalg.det(a.astype(wide(dtype))), dtype, 10)
    sign, logabsdet = (cupy.get(r) for r in la.slogdet(cupy.put(a)))
    assert sign[3] == 0 and logabsdet[3] == -np.inf
    assert np.all(np.isfinite(logabsdet[[0, 1, 2, 4]]))


# ---- streams, host data on the GPU, empty shapes, promotion, the plan cache ----

@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("name", CASES)
def test_explicit_stream(cp, name, size, dtype):
    """With stream= a non-blocking stream (the operands written on it), the results are
    right once that stream is synchronized."""
    stream = cp.cuda.Stream(non_blocking=True)

    class OnStream(CuPy):
        def put(self, a):
            with stream:
                return self.cp.asarray(a)

        def get(self, r):
            stream.synchronize()
            return super().get(r)

    check_case(name, dtype, size, OnStream(cp), stream=stream)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
def test_explicit_stream_without_check(cp, function, dtype):
    """check=False reads nothing back: only the stream's synchronization orders the read."""
    stream = cp.cuda.Stream(non_blocking=True)
    a, b, expected = _method_data(function, (200, 8, 8), dtype)
    for method in ("small", "cusolver"):
        with stream:
            dev_a = cp.asarray(a)
            dev_b = None if b is None else cp.asarray(b)
        result = _method_call(function, dev_a, dev_b, method, check=False, stream=stream)
        stream.synchronize()
        close(cp.asnumpy(result), expected, dtype, 10)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("name", CASES)
def test_execution_cuda_with_numpy_operands(name, dtype):
    """NumPy operands with execution="cuda": NumPy results equal to the CPU path's."""
    check_case(name, dtype, "small", NumPyBack(), execution="cuda")


def test_empty_as_numpy(cupy):
    for name in ("inv", "det", "cholesky", "eigvalsh", "svdvals"):
        for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
            a = np.zeros(shape)
            r = cupy.get(getattr(la, name)(cupy.put(a)))
            e = np.asarray(getattr(np.linalg, name)(a))
            assert r.shape == e.shape and r.dtype == e.dtype, (name, shape)
            np.testing.assert_array_equal(r, e)
    for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
        sign, logabsdet = (cupy.get(r) for r in la.slogdet(cupy.put(np.zeros(shape))))
        expected = np.linalg.slogdet(np.zeros(shape))
        np.testing.assert_array_equal(sign, expected.sign)
        np.testing.assert_array_equal(logabsdet, expected.logabsdet)
        w, v = (cupy.get(r) for r in la.eigh(cupy.put(np.zeros(shape))))
        assert w.shape == shape[:-1] and v.shape == shape
    assert cupy.get(la.solve(cupy.put(np.zeros((2, 0, 0))),
                             cupy.put(np.zeros((2, 0, 3))))).shape == (2, 0, 3)
    assert cupy.get(la.solve(cupy.put(np.zeros((0, 3, 3))),
                             cupy.put(np.zeros(3)))).shape == (0, 3)
    for mode in ("reduced", "complete", "r", "raw"):
        for shape in ((3, 0), (0, 3), (2, 3, 0)):
            r = la.qr(cupy.put(np.zeros(shape)), mode)
            e = np.linalg.qr(np.zeros(shape), mode)
            for ri, ei in zip(r if isinstance(r, tuple) else (r,),
                              e if isinstance(e, tuple) else (e,)):
                ri = cupy.get(ri)
                assert ri.shape == ei.shape, (mode, shape)
                np.testing.assert_array_equal(ri, ei)
    for full_matrices in (True, False):
        for shape in ((3, 0), (0, 3), (2, 3, 0)):
            r = [cupy.get(x) for x in la.svd(cupy.put(np.zeros(shape)), full_matrices)]
            e = np.linalg.svd(np.zeros(shape), full_matrices)
            for ri, ei in zip(r, e):
                assert ri.shape == ei.shape
                np.testing.assert_array_equal(ri, ei)
    factor, lower = la.cho_factor(cupy.put(np.zeros((0, 0))))
    assert cupy.get(factor).shape == (0, 0)
    lu, piv = la.lu_factor(cupy.put(np.zeros((0, 3, 3))))
    assert cupy.get(lu).shape == (0, 3, 3) and cupy.get(piv).shape == (0, 3)
    assert cupy.get(piv).dtype == np.int32
    assert cupy.get(la.lu_solve((lu, piv), cupy.put(np.zeros((0, 3, 2))))).shape == (0, 3, 2)
    assert cupy.get(la.solve_triangular(cupy.put(np.eye(3)),
                                        cupy.put(np.zeros((3, 0))))).shape == (3, 0)


def test_integers_and_mixed_dtypes_promote(cupy):
    rng = np.random.default_rng()
    a = rng.integers(1, 9, (4, 4)) + 20 * np.eye(4, dtype=np.int64)
    b = rng.integers(1, 9, (4,))
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b)))
    assert x.dtype == np.float64
    close(x, np.linalg.solve(a, b), "float64")
    assert cupy.get(la.det(cupy.put(a))).dtype == np.float64
    a32 = well((4, 4), "float32")
    b64 = random((4,), "complex64")
    x = cupy.get(la.solve(cupy.put(a32), cupy.put(b64)))
    assert x.dtype == np.complex64
    close(x, np.linalg.solve(c(a32), c(b64)), "complex64", 10)


@pytest.mark.parametrize("name", ["solve", "inv", "det", "cholesky", "qr", "eigh", "svd",
                                  "lu", "cho", "solve_triangular"])
def test_plan_cache_reuses_the_solver(cp, name):
    """A second call of the same shapes is served by the cached solver (cuSOLVER's sizes)."""
    from accelmath.linalg._memo import dispatcher

    operands, call, _ = case(name, "float64", "large")
    given = [cp.asarray(o) for o in operands]
    call(*given)
    before = dispatcher.cache_info()
    call(*given)
    after = dispatcher.cache_info()
    assert after["hits"] > before["hits"]
    assert after["misses"] == before["misses"]


# (last: a plan shared by mistake would write past its workspace)
@pytest.mark.parametrize("first", ["inv", "det", "lu_factor"])
@pytest.mark.parametrize("n, method", [(110, "auto"), (6, "cusolver")])
def test_solve_after_other_lu_calls_of_the_same_sizes(cupy, first, n, method):
    """solve with n right-hand sides after inv, det or lu_factor of the same matrices (one
    cuSOLVER problem size): right results."""
    a, b = well((2, n, n), "float64"), random((2, n, n), "float64")
    dev_a = cupy.put(a)
    getattr(la, first)(dev_a)
    x = cupy.get(la.solve(dev_a, cupy.put(b), method=method))
    close(x, np.linalg.solve(a, b), "float64", 10)


@pytest.mark.parametrize("call, name", [
    (lambda x, eye, ones: la.cho_factor(x), "a"),
    (lambda x, eye, ones: la.lu_factor(x), "a"),
    (lambda x, eye, ones: la.solve_triangular(x, ones), "a"),
    (lambda x, eye, ones: la.solve_triangular(eye, x), "b"),
    (lambda x, eye, ones: la.cho_solve((eye, True), x), "b"),
    (lambda x, eye, ones: la.cho_solve((x, True), ones), "c"),
    (lambda x, eye, ones: la.lu_solve((eye, la.lu_factor(eye)[1]), x), "b")])
@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_nan_and_inf_with_check_finite_on_the_gpu(cp, call, name, package):
    # SciPy's check_finite on device operands: the first bad operand and matrix named, one
    # read back for both operands of a solve where all are finite
    if package == "torch":
        torch = pytest.importorskip("torch")
        to_device = lambda x: torch.from_dlpack(cp.asarray(x))  # noqa: E731
    else:
        to_device = cp.asarray
    eye = to_device(np.broadcast_to(np.eye(3), (3, 3, 3)).copy())
    ones = to_device(np.ones((3, 3, 1)))
    for bad in (np.nan, np.inf):
        x = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
        x[2, 1, 0] = bad
        with pytest.raises(LinAlgError, match=f"^{name}: array must not contain infs or NaNs") \
                as e:
            call(to_device(x), eye, ones)
        assert e.value.index == (2,)
    fine = eye if name in ("a", "c") else ones
    result = call(fine, eye, ones)
    first = result[0] if isinstance(result, tuple) else result
    assert bool(np.isfinite(np.asarray(cp.asnumpy(cp.from_dlpack(first)))).all())


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_check_finite_on_the_gpu_in_many_blocks_and_other_layouts(cupy, dtype):
    # flagged by accelmath's kernel (dense operands: a matrix over many blocks, the bad value
    # at its last element, or in a complex value's imaginary part) or through the package
    # (a transposed view); the first operand of two bad ones is named
    n = 300
    a = np.broadcast_to(np.eye(n, dtype=dtype) * 2, (3, n, n)).copy()
    b = np.ones((3, n, 2), dtype)
    bad = a.copy()
    bad[1, n - 1, n - 1] = np.nan if dtype == "float32" else complex(1, np.inf)
    for call, name in [(lambda: la.cho_factor(cupy.put(bad)), "a"),
                       (lambda: la.lu_factor(cupy.put(bad).swapaxes(-1, -2)), "a"),
                       (lambda: la.cho_solve((cupy.put(bad), True), cupy.put(b * np.nan)), "c"),
                       (lambda: la.solve_triangular(
                           cupy.put(a), cupy.put(np.ascontiguousarray(bad[..., -2:]))), "b")]:
        with pytest.raises(LinAlgError, match=f"^{name}: array must not contain") as e:
            call()
        assert e.value.index == (1,)
    x = cupy.get(la.cho_solve(la.cho_factor(cupy.put(a)), cupy.put(b)))
    close(x, b / 2, dtype)


@pytest.mark.parametrize("on_stream", [False, True])
def test_check_finite_of_large_matrices_beside_the_call(torch_cuda, on_stream):
    # a check reading BESIDE_BYTES or more runs on a stream beside the call's, its work
    # meanwhile on the call's: right results, and NaN and Inf caught wherever they are, in
    # new and in remembered calls (the plan kept), on the current stream or a named one
    from accelmath.linalg import _finite

    torch = torch_cuda
    n = 1100
    assert n * n * 8 >= _finite.BESIDE_BYTES > (n * n // 2) * 8
    device = torch.device("cuda", torch.cuda.current_device())
    a = torch.from_numpy(spd((n, n), "float64")).to(device)
    b = torch.from_numpy(random((n, 2), "float64")).to(device)
    stream = torch.cuda.Stream() if on_stream else None
    options = {"stream": stream} if on_stream else {}
    with torch.cuda.stream(stream) if on_stream else torch.cuda.stream(None):
        for _ in range(3):  # the first call, then remembered ones
            c = la.cho_factor(a, **options)
            x = la.cho_solve(c, b, **options)
            t = la.solve_triangular(c[0], b, lower=False, **options)
        torch.cuda.synchronize()
        residual(a.cpu().numpy(), x.cpu().numpy(), b.cpu().numpy(), False, "float64")
        upper = np.triu(c[0].cpu().numpy())
        residual(upper, t.cpu().numpy(), b.cpu().numpy(), False, "float64")
        for where, bad in (((n - 1, n - 1), np.nan), ((0, 0), np.inf), ((n // 2, 7), np.nan)):
            spoiled = a.clone()
            la.cho_factor(spoiled, **options)  # fine: remembered, with their checks' plans
            la.cho_solve((spoiled, False), b, **options)
            spoiled[where] = bad
            for _ in range(2):
                with pytest.raises(LinAlgError, match="^a: array must not contain") as e:
                    la.cho_factor(spoiled, **options)
                assert e.value.index == ()
                with pytest.raises(LinAlgError, match="^c: array must not contain"):
                    la.cho_solve((spoiled, False), b, **options)
            x = la.cho_solve(c, b, **options)  # and the calls after it are right again
            torch.cuda.synchronize()
            residual(a.cpu().numpy(), x.cpu().numpy(), b.cpu().numpy(), False, "float64")


@pytest.mark.parametrize("n", [6, 110])  # accelmath's kernels, cuSOLVER
@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_nan_and_inf_under_check_on_the_gpu(request, n, package):
    # check=True names the operand and matrix holding a NaN or an infinity, in a new call
    # and in a remembered one (a fine call first, then the same arrays spoiled in place);
    # check=False leaves NaN in that matrix's results
    if package == "torch":
        torch = request.getfixturevalue("torch_cuda")
        put = lambda x: torch.from_numpy(np.ascontiguousarray(x)).cuda()  # noqa: E731
        get = lambda x: x.cpu().numpy()  # noqa: E731
    else:
        cp = request.getfixturevalue("cp")
        put, get = cp.asarray, cp.asnumpy
    a = np.broadcast_to(np.eye(n) * 2, (3, n, n)).copy()
    calls = [(lambda x, y, **k: la.solve(x, y, **k), "a"),
             (lambda x, y, **k: la.solve(y, x[..., :2], **k), "b"),
             (lambda x, y, **k: la.inv(x, **k), "a"),
             (lambda x, y, **k: la.cholesky(x, **k), "a"),
             (lambda x, y, **k: la.eigh(x, **k)[0], "a"),
             (lambda x, y, **k: la.eigvalsh(x, **k), "a"),
             (lambda x, y, **k: la.svd(x, **k)[1], "a"),
             (lambda x, y, **k: la.svdvals(x, **k), "x")]
    for call, name in calls:
        for bad in (np.nan, np.inf):
            x, y = put(a), put(a)
            call(x, y)  # fine (and remembered where its route is)
            spoiled = a.copy()
            spoiled[1, n - 1, 0] = bad
            x[...] = put(spoiled)
            for _ in range(2):
                with pytest.raises(LinAlgError,
                                   match=f"^{name}: array must not contain infs or NaNs") as e:
                    call(x, y)
                assert e.value.index == (1,)
        result = get(call(x, y, check=False))
        assert np.isnan(result[1]).any() and np.isfinite(result[[0, 2]]).all()


@pytest.mark.parametrize("method", ["cusolver", "batched"])
def test_nan_and_inf_found_by_the_copies_name_the_operands_own_matrix(cupy, method):
    # cuSOLVER's routes find NaN and Inf in the copies they make of the operands: a
    # broadcast operand is named at its own batch index, a's before b's (cho_factor: the
    # small kernels find them)
    n = 40
    a = np.broadcast_to(np.eye(n) * 2, (1, 1, n, n)).copy()
    b = np.ones((2, 3, n, 1))
    spoiled_a, spoiled_b = a.copy(), b.copy()
    spoiled_a[0, 0, n - 1, 0] = np.nan
    spoiled_b[1, 2, 0, 0] = np.inf
    for x, y, name, index in [(spoiled_a, b, "a", (0, 0)), (a, spoiled_b, "b", (1, 2)),
                              (spoiled_a, spoiled_b, "a", (0, 0))]:
        with pytest.raises(LinAlgError, match=f"^{name}: array must not contain") as e:
            la.solve(cupy.put(x), cupy.put(y), method=method)
        assert e.value.index == index
    for call in (lambda x: la.inv(x, method=method), lambda x: la.cholesky(x, method=method),
                 lambda x: la.cholesky(x, upper=True, method=method),
                 lambda x: la.cho_factor(x), lambda x: la.lu_factor(x)):
        bad = np.broadcast_to(a[0], (3, n, n)).copy()
        bad[2, 0, n - 1] = np.inf  # (the upper triangle: read by the check alone)
        with pytest.raises(LinAlgError, match="^a: array must not contain") as e:
            call(cupy.put(bad))
        assert e.value.index == (2,)
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b), method=method))
    close(x, b / 2, "float64")


@pytest.mark.parametrize("n", [6, 40])  # accelmath's warp and block kernels
def test_the_small_kernels_name_a_broadcast_operands_own_matrix(cupy, n):
    # a NaN in a broadcast a names a's own index, a NaN in b beside a singular a names b;
    # cho_factor without check_finite reads one triangle only, as SciPy's does
    a = np.eye(n) * 2
    b = np.ones((2, 5, n, 1))
    bad_a = a.copy()
    bad_a[n - 1, 0] = np.nan
    with pytest.raises(LinAlgError, match=r"^a: .*\(batch index \(\)\)"):
        la.solve(cupy.put(bad_a), cupy.put(b))
    singular = np.broadcast_to(a, (2, 5, n, n)).copy()
    singular[1, 3, :, 0] = 0
    bad_b = b.copy()
    bad_b[1, 3, 0, 0] = np.inf
    with pytest.raises(LinAlgError, match=r"^b: .*\(batch index \(1, 3\)\)"):
        la.solve(cupy.put(singular), cupy.put(bad_b))
    spd_a = spd((3, n, n), "float64")
    spoiled = spd_a.copy()
    spoiled[1, 0, n - 1] = np.nan  # (the upper triangle: not read for lower=True)
    c, lower = la.cho_factor(cupy.put(spoiled), lower=True, check_finite=False)
    close(np.tril(cupy.get(c)), np.linalg.cholesky(spd_a), "float64", 10)
    with pytest.raises(LinAlgError, match=r"^a: .*\(batch index \(1,\)\)"):
        la.cho_factor(cupy.put(spoiled), lower=True)


@pytest.mark.parametrize("cls", ["Cholesky", "LU", "QR"])
def test_factor_objects_refuse_a_lossy_dtype_on_the_gpu(cupy, cls):
    a = cupy.put(spd((4, 4), "float64"))
    factor = getattr(la, cls)(a)
    with pytest.raises(UnsupportedDTypeError, match="^b has dtype complex128, .* imaginary"):
        factor.solve(cupy.put(np.ones(4) + 1j))
    with pytest.raises(UnsupportedDTypeError, match="^a has dtype complex128"):
        factor.refactor(a + 0j)
    residual(cupy.get(a), cupy.get(factor.solve(cupy.put(np.arange(4)))), np.arange(4.0),
             True, "float64")


def test_lu_solve_takes_strided_pivots_and_checks_b(cupy):
    a = well((4, 4), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    spaced = cupy.cp.zeros(8, np.int32)
    spaced[::2] = piv
    b = np.ones(4)
    b[2] = np.nan
    with pytest.raises(LinAlgError, match="^b: array must not contain"):
        la.lu_solve((lu, spaced[::2]), cupy.put(b))
    x = cupy.get(la.lu_solve((lu, spaced[::2]), cupy.put(np.ones(4))))
    residual(a, x, np.ones(4), True, "float64")


def test_check_finite_names_the_first_bad_operand_of_mixed_layouts(cupy):
    # a dense c (the kernel's) and a transposed b (its package's): both bad, c is named
    c = np.eye(5)
    c[1, 1] = np.inf
    b = np.ones((2, 5)) * np.nan
    with pytest.raises(LinAlgError, match="^c: array must not contain"):
        la.cho_solve((cupy.put(c), True), cupy.put(b).T)
    with pytest.raises(LinAlgError, match="^b: array must not contain"):
        la.cho_solve((cupy.put(np.eye(5)), True), cupy.put(b).T)


# ---- lu_solve's pivots out of range: refused under check_finite, NaN without it ----

def _refused_pivot(bad, position, index):
    """The message of lu_solve's refusal of pivot ``bad`` at ``position`` of the matrix at
    batch ``index`` of piv, as a pattern."""
    import re

    return (rf"^piv: pivot {bad} at position {position} is out of range for lu of order "
            rf"\d+: .*\(batch index {re.escape(str(index))}\)$")


# 8 x 8, alone and batched: swap_rows and cuBLAS's triangular solves (the conversion of the
# pivots checks them: no launch more); 40: the same beside two batch dimensions; 4200 rows
# of float64: cusolverDnXgetrs (swap_rows takes at most 4096), whose pivots the same
# conversion makes
@pytest.mark.parametrize("n, batch", [(8, ()), (8, (3, 100)), (40, (2,)), (4200, ())])
@pytest.mark.parametrize("trans", [0, 2])
def test_lu_solve_refuses_a_pivot_out_of_range(cupy, n, batch, trans):
    a, b = well(batch + (n, n), "float64"), random(batch + (n, 2), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    index = tuple(s - 1 for s in batch)
    bad_system = np.zeros(batch, bool)
    bad_system[index] = True
    op = a if trans == 0 else mT(a)
    for bad in (n, -1, 2**31 - 1):
        spoiled = piv.copy()
        spoiled[index + (n // 2,)] = bad
        kept = [cupy.get(x) for x in (lu, spoiled)]
        with pytest.raises(InvalidArgumentError, match=_refused_pivot(bad, n // 2, index)):
            la.lu_solve((lu, spoiled), cupy.put(b), trans=trans)
        for before, after in zip(kept, (lu, spoiled)):
            np.testing.assert_array_equal(before, cupy.get(after))
        # without check_finite nothing is read back: that system's solution is NaN
        x = cupy.get(la.lu_solve((lu, spoiled), cupy.put(b), trans=trans, check_finite=False))
        assert np.isnan(x[bad_system]).all()
        residual(op[~bad_system], x[~bad_system], b[~bad_system], False, "float64")


def test_lu_solve_checks_the_pivots_of_a_remembered_call(cupy):
    a = well((5, 8, 8), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    b = cupy.put(random((5, 8, 1), "float64"))
    for _ in range(3):  # (remembered after the first: run again on the same addresses)
        residual(a, cupy.get(la.lu_solve((lu, piv), b)), cupy.get(b), False, "float64")
    piv[3, 4] = -7
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(-7, 4, (3,))):
        la.lu_solve((lu, piv), b)
    assert np.isnan(cupy.get(la.lu_solve((lu, piv), b, check_finite=False))[3]).all()


def test_lu_solve_checks_pivots_of_other_types_and_layouts(cupy):
    cp = cupy.cp
    a, b = well((4, 8, 8), "float64"), random((4, 8, 1), "float64")
    lu, piv = la.lu_factor(cupy.put(a))
    expected = cupy.get(la.lu_solve((lu, piv), cupy.put(b)))
    wide = piv.astype(cp.int64)
    spaced = cp.zeros((4, 16), cp.int64)  # (copied as pairs of int32 words)
    spaced[:, ::2] = piv
    for given in (wide, spaced[:, ::2], piv.astype(cp.uint8)):
        np.testing.assert_array_equal(cupy.get(la.lu_solve((lu, given), cupy.put(b))),
                                      expected)
    wide[2, 1] = 2**32 + 1  # (as int32, a pivot 1 in range)
    spaced[1, 10] = -2**40
    for given, bad, position, index in ((wide, 2**32 + 1, 1, (2,)),
                                        (spaced[:, ::2], -2**40, 5, (1,))):
        with pytest.raises(InvalidArgumentError, match=_refused_pivot(bad, position, index)):
            la.lu_solve((lu, given), cupy.put(b))
    # piv broadcast over lu's batch: its own batch index is named
    lu2, piv2 = la.lu_factor(cupy.put(well((2, 4, 8, 8), "float64")))
    one = piv2[0].copy()
    one[3, 0] = 8
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(8, 0, (3,))):
        la.lu_solve((lu2, one), cupy.put(random((2, 4, 8, 1), "float64")))


def test_lu_solve_refuses_bad_pivots_beside_a_large_check_and_with_a_strided_b(cupy):
    # b of 8.96 MB: its finiteness check runs beside the solve, and the pivots' flag is read
    # once it is done; a strided b is checked through CuPy, and the flag read after a wait
    cp, count = cupy.cp, 140000
    lu = cp.ascontiguousarray(cp.broadcast_to(cp.eye(8), (count, 8, 8)))  # (a = I)
    piv = cp.tile(cp.arange(8, dtype=cp.int32), (count, 1))
    b = cupy.put(random((count, 8, 1), "float64"))
    np.testing.assert_array_equal(cupy.get(la.lu_solve((lu, piv), b)), cupy.get(b))
    piv[count - 2, 7] = 9
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(9, 7, (count - 2,))):
        la.lu_solve((lu, piv), b)
    strided = cupy.put(random((5, 8, 2), "float64"))[..., :1]
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(9, 7, (3,))):
        la.lu_solve((lu[-5:], piv[-5:]), strided)


def test_lu_solve_refuses_bad_pivots_with_execution_cuda():
    lu, piv = scipy.linalg.lu_factor(well((8, 8), "float64"))
    piv[5] = 8
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(8, 5, ())):
        la.lu_solve((lu, piv), np.ones(8), execution="cuda")
    x = la.lu_solve((lu, piv), np.ones(8), execution="cuda", check_finite=False)
    assert isinstance(x, np.ndarray) and np.isnan(x).all()


def test_lu_solve_refuses_bad_pivots_of_torch_and_jax(package):
    a, b = well((3, 8, 8), "float64"), random((3, 8, 1), "float64")
    lu, piv = la.lu_factor(a)  # (on the CPU: int32 pivots; torch's own are int64)
    piv = piv.astype(np.int64)
    piv[1, 2] = -1
    with pytest.raises(InvalidArgumentError, match=_refused_pivot(-1, 2, (1,))):
        la.lu_solve((package.put(lu), package.put(piv)), package.put(b))
    x = package.get(la.lu_solve((package.put(lu), package.put(piv)), package.put(b),
                                check_finite=False))
    assert np.isnan(x[1]).all()
    residual(a[::2], x[::2], b[::2], False, "float64")

"""accelmath.linalg's functions on the CPU path against NumPy/SciPy in float64, on fresh random
data: residuals and reconstructions, well- and ill-conditioned, square and tall/wide, batched
and broadcast, four dtypes, on NumPy arrays, torch CPU tensors, JAX CPU arrays and lists."""

import numpy as np
import pytest
import scipy.linalg
from closeness import assert_close_dtype

from accelmath import linalg as la
from accelmath.linalg import _operands
from accelmath.linalg import _scipy_functions as sla

DTYPES = ["float32", "float64", "complex64", "complex128"]


class Package:
    """Moves NumPy arrays into an array package and results back."""

    name = "numpy"

    def put(self, a):
        return a

    def expect(self, dtype):
        """The dtype of results from operands of ``dtype``."""
        return np.dtype(dtype)

    def get(self, r):
        assert isinstance(r, (np.ndarray, np.generic)), f"expected NumPy, got {type(r)}"
        return np.asarray(r)


class Torch(Package):
    name = "torch"

    def __init__(self):
        self.torch = pytest.importorskip("torch")

    def put(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(a))

    def get(self, r):
        assert isinstance(r, self.torch.Tensor) and r.device.type == "cpu", type(r)
        return r.numpy()


class Jax(Package):
    name = "jax"

    def __init__(self):
        self.jax = pytest.importorskip("jax")
        self.jax.config.update("jax_enable_x64", True)

    def put(self, a):
        return self.jax.device_put(a, self.jax.devices("cpu")[0])

    def get(self, r):
        assert isinstance(r, self.jax.Array), type(r)
        return np.asarray(r)


class Lists(Package):
    name = "list"

    def put(self, a):
        return a.tolist()

    def expect(self, dtype):
        return np.dtype({"float32": "float64", "complex64": "complex128"}.get(dtype, dtype))


@pytest.fixture(params=["numpy", "torch", "jax", "list"])
def xp(request):
    return {"numpy": Package, "torch": Torch, "jax": Jax, "list": Lists}[request.param]()


def random(shape, dtype, rng=None):
    rng = rng or np.random.default_rng()
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def spd(shape, dtype, rng=None):
    """Hermitian positive-definite matrices."""
    a = random(shape, dtype, rng)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2).conj() + n * np.eye(n)).astype(dtype)


def hermitian(shape, dtype, rng=None):
    a = random(shape, dtype, rng)
    return ((a + np.swapaxes(a, -1, -2).conj()) / 2).astype(dtype)


def ill_conditioned(n, dtype, condition, rng=None):
    """A matrix of condition number ``condition``."""
    rng = rng or np.random.default_rng()
    q1, _ = np.linalg.qr(random((n, n), dtype, rng))
    q2, _ = np.linalg.qr(random((n, n), dtype, rng))
    s = np.logspace(0, -np.log10(condition), n)
    return ((q1 * s) @ q2).astype(dtype)


def mT(a):
    return np.swapaxes(a, -1, -2).conj()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((6, 6), (6,)), ((6, 6), (6, 3)),
                                              ((4, 5, 5), (5,)), ((4, 5, 5), (4, 5, 2)),
                                              ((5, 5), (3, 5, 2)), ((2, 1, 4, 4), (3, 4, 1))])
def test_solve(xp, dtype, a_shape, b_shape):
    a = random(a_shape, dtype) + 4 * np.eye(a_shape[-1], dtype=dtype)
    b = random(b_shape, dtype)
    x = xp.get(la.solve(xp.put(a), xp.put(b)))
    expected = np.linalg.solve(a.astype(complex if "complex" in dtype else float), b)
    assert x.dtype == xp.expect(dtype) and x.shape == expected.shape
    assert_close_dtype(x, expected, dtype)
    ax = a @ (x[..., None] if len(b_shape) == 1 else x)
    bb = b[..., None] if len(b_shape) == 1 else b
    assert_close_dtype(ax, np.broadcast_to(bb, ax.shape), dtype, 10)


@pytest.mark.parametrize("condition", [1e3, 1e8])
def test_solve_ill_conditioned(condition):
    a = ill_conditioned(20, "float64", condition)
    b = random((20, 2), "float64")
    x = la.solve(a, b)
    assert np.linalg.norm(a @ x - b) / np.linalg.norm(b) < 1e-14 * condition
    assert_close_dtype(x, np.linalg.solve(a, b), "float64", condition / 100)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (2, 3, 1, 1)])
def test_inv_det_slogdet(xp, dtype, shape):
    a = random(shape, dtype) + 3 * np.eye(shape[-1], dtype=dtype)
    inverse = xp.get(la.inv(xp.put(a)))
    assert inverse.dtype == xp.expect(dtype)
    assert_close_dtype(a @ inverse, np.broadcast_to(np.eye(shape[-1]), shape), dtype, 10)
    assert_close_dtype(xp.get(la.det(xp.put(a))), np.linalg.det(a.astype(np.complex128)), dtype)
    sign, logabsdet = la.slogdet(xp.put(a))
    expected = np.linalg.slogdet(a.astype(np.complex128 if "complex" in dtype else np.float64))
    assert_close_dtype(xp.get(sign), expected.sign, dtype)
    assert_close_dtype(xp.get(logabsdet), expected.logabsdet, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 7), (3, 5, 5)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(xp, dtype, shape, upper):
    a = spd(shape, dtype)
    c = xp.get(la.cholesky(xp.put(a), upper=upper))
    assert c.dtype == xp.expect(dtype)
    assert_close_dtype(mT(c) @ c if upper else c @ mT(c), a, dtype)
    assert np.all((np.tril(c, -1) if upper else np.triu(c, 1)) == 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 6, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
def test_qr(xp, dtype, shape, mode):
    a = random(shape, dtype)
    m, n = shape[-2:]
    result = la.qr(xp.put(a), mode)
    if mode == "r":
        r = xp.get(result)
        assert_close_dtype(np.abs(r), np.abs(np.linalg.qr(a, "r")), dtype)
        return
    if mode == "raw":
        h, tau = map(xp.get, result)
        assert h.shape == shape[:-2] + (n, m) and tau.shape == shape[:-2] + (min(m, n),)
        assert_close_dtype(h, np.linalg.qr(a, "raw")[0], dtype)
        return
    assert type(result).__name__ == "QRResult"
    q, r = xp.get(result.Q), xp.get(result.R)
    k = m if mode == "complete" else min(m, n)
    assert q.shape == shape[:-2] + (m, k) and q.dtype == xp.expect(dtype)
    assert_close_dtype(q @ r, a, dtype, 10)
    assert_close_dtype(mT(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype, 10)
    assert np.all(np.tril(r, -1) == 0)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 6, 4)])
@pytest.mark.parametrize("mode", ["full", "f", "economic", "e"])
def test_qr_takes_numpys_deprecated_modes(xp, shape, mode):
    # as NumPy: its DeprecationWarning, "full" the reduced factors, "economic" the reflectors
    # of "raw", untransposed; each call warns (a remembered one too)
    a = random(shape, "float64")
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match=f"The '{mode[0]}"):
            result = la.qr(xp.put(a), mode)
        with pytest.warns(DeprecationWarning):
            expected = np.linalg.qr(a, mode)
        if mode[0] == "f":
            q, r = xp.get(result.Q), xp.get(result.R)
            assert q.shape == expected.Q.shape and r.shape == expected.R.shape
            assert_close_dtype(q @ r, a, "float64", 10)
        else:
            assert xp.get(result).shape == expected.shape == shape
            assert_close_dtype(xp.get(result), expected, "float64", 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 6), (4, 5, 5)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_eigvalsh(xp, dtype, shape, uplo):
    a = hermitian(shape, dtype)
    w, v = la.eigh(xp.put(a), uplo)
    w, v = xp.get(w), xp.get(v)
    real = "float32" if dtype in ("float32", "complex64") else "float64"
    assert w.dtype == xp.expect(real) and v.dtype == xp.expect(dtype)
    assert_close_dtype(w, np.linalg.eigvalsh(a.astype(np.complex128)), dtype, 10)
    assert_close_dtype((v * w[..., None, :]) @ mT(v), a, dtype, 10)
    assert_close_dtype(mT(v) @ v, np.broadcast_to(np.eye(shape[-1]), shape), dtype, 10)
    assert_close_dtype(xp.get(la.eigvalsh(xp.put(a), uplo)), w, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(xp, dtype, shape, full_matrices):
    a = random(shape, dtype)
    u, s, vh = map(xp.get, la.svd(xp.put(a), full_matrices))
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape[-2:] == ((m, m) if full_matrices else (m, k)) and s.shape[-1] == k
    assert_close_dtype((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)
    assert_close_dtype(mT(u) @ u,
                       np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
                       dtype, 10)
    expected = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    assert_close_dtype(s, expected, dtype, 10)
    assert_close_dtype(xp.get(la.svd(xp.put(a), compute_uv=False)), expected, dtype, 10)
    assert_close_dtype(xp.get(la.svdvals(xp.put(a))), expected, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_hermitian(xp, dtype):
    a = hermitian((3, 5, 5), dtype)
    u, s, vh = map(xp.get, la.svd(xp.put(a), hermitian=True))
    assert_close_dtype((u * s[..., None, :]) @ vh, a, dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0)
    assert_close_dtype(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False), dtype, 10)


@pytest.mark.parametrize("package", [Torch, Jax])
def test_hermitian_svd_of_packages(package):
    """The device path's reordering of eigh's results, on CPU arrays of each package (the
    case skips where that package is missing), against NumPy's svd(hermitian=True)."""
    xp = package()
    a = hermitian((2, 4, 4), "complex128")
    w, v = np.linalg.eigh(a)
    expected = np.linalg.svd(a, hermitian=True)
    u, s, vh = (xp.get(r) for r in _operands.hermitian_svd(xp.put(w), xp.put(v), True))
    assert_close_dtype(s, expected.S, "complex128")
    assert_close_dtype((u * s[..., None, :]) @ vh, a, "complex128")
    assert_close_dtype(xp.get(_operands.hermitian_svd(xp.put(w), None, False)),
                       expected.S, "complex128")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, k", [((8, 3), None), ((8, 3), 2), ((3, 8), 2), ((5, 5), None)])
def test_lstsq(xp, dtype, shape, k):
    a = random(shape, dtype)
    b = random((shape[0],) if k is None else (shape[0], k), dtype)
    x, residuals, rank, s = la.lstsq(xp.put(a), xp.put(b))
    x, residuals, s = xp.get(x), xp.get(residuals), xp.get(s)
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    assert x.shape == ex.shape and residuals.shape == eres.shape and int(rank) == erank
    assert_close_dtype(x, ex, dtype, 10)
    assert_close_dtype(s, es, dtype)
    if residuals.size:
        assert_close_dtype(residuals, eres, dtype, 10)


def test_lstsq_rank_deficient():
    a = random((6, 3), "float64")
    a[:, 2] = a[:, 0] + a[:, 1]
    b = random(6, "float64")
    x, residuals, rank, s = la.lstsq(a, b)
    assert rank == 2 and residuals.shape == (0,)
    assert_close_dtype(x, np.linalg.lstsq(a, b)[0], "float64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_shape, b_shape", [((5, 5), (5,)), ((5, 5), (5, 2)),
                                              ((3, 4, 4), (4,)), ((3, 4, 4), (2, 1, 4, 3))])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_cho_solve(xp, dtype, c_shape, b_shape, lower):
    a = spd(c_shape, dtype)
    b = random(b_shape, dtype)
    c, low = sla.cho_factor(xp.put(a), lower=lower)
    assert low is lower
    x = xp.get(sla.cho_solve((c, low), xp.put(b)))
    c = xp.get(c)
    factor = np.tril(c) if lower else np.triu(c)
    assert_close_dtype(factor @ mT(factor) if lower else mT(factor) @ factor, a, dtype)
    if len(c_shape) == 2:
        assert_close_dtype(c, scipy.linalg.cho_factor(a, lower=lower)[0], dtype)
    ax = a @ (x[..., None] if len(b_shape) == 1 else x)
    bb = b[..., None] if len(b_shape) == 1 else b
    assert_close_dtype(ax, np.broadcast_to(bb, ax.shape), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((5, 5), (5,)), ((5, 5), (5, 3)),
                                              ((2, 4, 4), (4,)), ((2, 4, 4), (3, 1, 4, 2))])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_lu_solve(xp, dtype, a_shape, b_shape, trans):
    a = random(a_shape, dtype)
    b = random(b_shape, dtype)
    lu, piv = sla.lu_factor(xp.put(a))
    x = xp.get(sla.lu_solve((lu, piv), xp.put(b), trans=trans))
    lu, piv = xp.get(lu), xp.get(piv)
    assert piv.dtype == np.int32 and piv.shape == a_shape[:-1]
    if len(a_shape) == 2:
        elu, epiv = scipy.linalg.lu_factor(a)
        np.testing.assert_array_equal(piv, epiv)
        assert_close_dtype(lu, elu, dtype)
    op = {0: a, 1: np.swapaxes(a, -1, -2), 2: mT(a)}[trans]
    ax = op @ (x[..., None] if len(b_shape) == 1 else x)
    bb = b[..., None] if len(b_shape) == 1 else b
    assert_close_dtype(ax, np.broadcast_to(bb, ax.shape), dtype, 100)


def test_lu_factor_rectangular():
    a = random((3, 6, 4), "float64")
    lu, piv = sla.lu_factor(a)
    assert lu.shape == a.shape and piv.shape == (3, 4)
    for i in range(3):
        elu, epiv = scipy.linalg.lu_factor(a[i])
        assert_close_dtype(lu[i], elu, "float64")
        np.testing.assert_array_equal(piv[i], epiv)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((5, 5), (5,)), ((3, 4, 4), (4, 2)),
                                              ((3, 4, 4), (2, 1, 4, 1))])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular(xp, dtype, a_shape, b_shape, lower, trans, unit_diagonal):
    a = random(a_shape, dtype) + 3 * np.eye(a_shape[-1], dtype=dtype)
    b = random(b_shape, dtype)
    x = xp.get(sla.solve_triangular(xp.put(a), xp.put(b), trans=trans, lower=lower,
                                    unit_diagonal=unit_diagonal))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(a_shape[-1]) + np.eye(a_shape[-1])
    op = {0: t, 1: np.swapaxes(t, -1, -2), 2: mT(t)}[trans]
    ax = op @ (x[..., None] if len(b_shape) == 1 else x)
    bb = b[..., None] if len(b_shape) == 1 else b
    assert_close_dtype(ax, np.broadcast_to(bb, ax.shape), dtype, 10)
    if len(a_shape) == 2:
        assert_close_dtype(x, scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                                            unit_diagonal=unit_diagonal),
                           dtype, 10)


@pytest.mark.parametrize("function, args", [
    (la.solve, ((3, 3), (3,))), (la.inv, ((3, 3),)), (la.det, ((3, 3),)),
    (la.cholesky, ((3, 3),)), (la.eigvalsh, ((3, 3),)), (la.svdvals, ((3, 2),))])
def test_integers_promote_to_float64(function, args):
    rng = np.random.default_rng()
    operands = [rng.integers(1, 9, shape) + (9 * np.eye(3, dtype=int) if len(shape) == 2
                                              and shape[0] == shape[1] else 0)
                for shape in args]
    operands[0] = operands[0] + operands[0].T if function in (la.cholesky, la.eigvalsh) \
        else operands[0]
    result = function(*operands)
    assert np.asarray(result).dtype == np.float64
    assert_close_dtype(result, getattr(np.linalg, function.__name__)(*operands), "float64")


def test_mixed_dtypes_promote():
    a = random((4, 4), "float32") + 4 * np.eye(4, dtype=np.float32)
    b = random((4,), "complex64")
    assert la.solve(a, b).dtype == np.complex64
    assert la.solve(a, b.astype(np.complex128)).dtype == np.complex128
    assert sla.solve_triangular(a, np.arange(4)).dtype == np.float64


def test_numpy_scalars_and_subclasses_as_numpy_gives_them():
    assert type(la.det([[2.0]])) is np.float64
    assert type(la.slogdet([[2.0]]).sign) is np.float64

    class Sub(np.ndarray):
        pass

    b = np.arange(2.0).view(Sub)
    assert type(la.solve(np.eye(2), b)) is Sub
    assert type(la.inv(np.eye(2).view(Sub))) is Sub


def test_empty_as_numpy():
    for function in (la.inv, la.det, la.cholesky, la.eigvalsh, la.svdvals):
        for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
            a = np.zeros(shape)
            r, e = function(a), getattr(np.linalg, function.__name__)(a)
            assert np.shape(r) == np.shape(e) and np.asarray(r).dtype == np.asarray(e).dtype
            np.testing.assert_array_equal(r, e)
    assert la.solve(np.zeros((2, 0, 0)), np.zeros((2, 0, 3))).shape == (2, 0, 3)
    for mode in ("reduced", "complete", "r", "raw"):
        for shape in ((3, 0), (0, 3)):
            r = la.qr(np.zeros(shape), mode)
            e = np.linalg.qr(np.zeros(shape), mode)
            for ri, ei in zip(r if isinstance(r, tuple) else (r,),
                              e if isinstance(e, tuple) else (e,)):
                assert ri.shape == ei.shape
    c, lower = sla.cho_factor(np.zeros((0, 0)))
    assert c.shape == (0, 0)
    lu, piv = sla.lu_factor(np.zeros((0, 3, 3)))
    assert lu.shape == (0, 3, 3) and piv.shape == (0, 3) and piv.dtype == np.int32
    assert sla.lu_solve((lu, piv), np.zeros((0, 3, 2))).shape == (0, 3, 2)
    assert sla.solve_triangular(np.eye(3), np.zeros((3, 0))).shape == (3, 0)


_SCIPY_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "int64", "float16",
                 "float32", "float64", "longdouble", "complex64", "complex128", "clongdouble"]


@pytest.mark.parametrize("dtype", _SCIPY_DTYPES)
@pytest.mark.parametrize("b_dtype", ["float64", "complex64", "int16"])
def test_scipy_functions_compute_in_scipys_dtypes(dtype, b_dtype):
    # (SciPy's LAPACK wrappers: narrow integers and float16 in float32, long double in
    # double, complex64 with a double real in complex128; numpy.linalg's rules differ)
    from accelmath.linalg import cho_factor, cho_solve, lu_factor, lu_solve, solve_triangular

    a = (2 * np.eye(3) + np.tri(3)).astype(dtype)
    b = np.arange(1, 4).astype(b_dtype)
    for _ in range(3):  # (the calls the memo remembers too, batched ones included)
        for x, y in ((a, b), (np.stack([a, a]), np.stack([b, b])[..., None])):
            pairs = [(lu_factor(x)[0], scipy.linalg.lu_factor(x)[0]),
                     (cho_factor(x)[0], scipy.linalg.cho_factor(x)[0]),
                     (solve_triangular(x, y, lower=True),
                      scipy.linalg.solve_triangular(x, y, lower=True)),
                     (cho_solve(cho_factor(x), y),
                      scipy.linalg.cho_solve(scipy.linalg.cho_factor(x), y)),
                     (lu_solve(lu_factor(x), y),
                      scipy.linalg.lu_solve(scipy.linalg.lu_factor(x), y))]
            for ours, theirs in pairs:
                assert ours.dtype == theirs.dtype
                np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_an_operand_whose_dtype_is_no_dtype_is_refused_by_name():
    # (an unhashable dtype attribute met the SciPy functions' long double lookup: a bare
    # TypeError of a dict)
    from accelmath.errors import UnsupportedDTypeError
    from accelmath.linalg import lu_factor

    class Odd:
        dtype = []

        def __array__(self, dtype=None, copy=None):
            return np.zeros((2, 2), object)

    with pytest.raises(UnsupportedDTypeError, match="^a: unsupported dtype 'object'"):
        lu_factor(Odd())

"""The small-matrix kernels (accelmath.linalg._kernels.small, and past 32 rows
accelmath.linalg._kernels.medium): every instantiation compiles with NVRTC for sm_90 (no GPU needed),
the launchers refuse what they cannot do before touching a device, and, on a GPU, solve / inv
/ cholesky against NumPy in float64 on fresh random data, including singular and not
positive-definite systems."""

import concurrent.futures
import functools

import numpy as np
import pytest
from closeness import assert_close_elementwise

from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._kernels import medium as _medium
from accelmath.linalg._kernels import small as _small

ORDERS = (1, 2, 3, 8, 17, 32)  # the warp kernels'
MEDIUM_ORDERS = (33, 48, 63, 64, 65, 100, 128)  # the block kernels'
DTYPES = tuple(_small.DTYPES)
# (op, n, dtype, kb) the launchers may ask for at these orders (kb < 0: a block kernel's -kb)
INSTANCES = ([("solve", n, d, kb) for n in ORDERS for d in DTYPES for kb in (1, 2, 4, 8)]
             + [("inv", n, d, _small._block_width(n)) for n in ORDERS for d in DTYPES]
             + [("cholesky", n, d, 1) for n in ORDERS for d in DTYPES]
             + [("solve", n, d, -kb) for n in (33, 64, 65, 128) for d in DTYPES
                for kb in ((4, 8, 16, 32, 64) if n in (65, 128) else (4, 64))]
             + [("inv", n, d, -64) for n in (33, 64, 65, 128) for d in DTYPES]
             + [("cholesky", n, d, -4) for n in (33, 64, 65, 128) for d in DTYPES])
# (n, batch) of the GPU tests: past a warp's systems for the warp kernels, past one system
# a block for the block kernels
SIZES = ([(n, batch) for n in ORDERS for batch in (1, 7, 10000)]
         + [(n, batch) for n in MEDIUM_ORDERS for batch in (1, 7, 300)])


# -- compiling (CPU) --------------------------------------------------------------------------

def _source(instance):
    """``(module, compile options)`` of a kernel instance: a positive ``kb`` is a warp
    kernel's (``_small``), a negative one a block kernel's (``_medium``, ``-kb`` columns)."""
    op, n, dtype, kb = instance
    if kb > 0:
        return _small, _small.compile_options(op, n, dtype, kb)[0]
    return _medium, _medium.compile_options(op, n, dtype, -kb)


@pytest.fixture(scope="module")
def compiled(request):
    """Every instance compiled, in parallel (NVRTC runs outside the GIL): instance -> cubin
    or the exception."""
    request.getfixturevalue("nvrtc")

    def build(instance):
        module, extra = _source(instance)
        try:
            return compile_cuda(module.SOURCE, CompileOptions(arch=(9, 0), extra=extra),
                                "accelmath_linalg_small.cu")
        except Exception as exc:  # reported by the test of that instance
            return exc

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(zip(INSTANCES, pool.map(build, INSTANCES)))


@pytest.mark.parametrize("instance", INSTANCES, ids=lambda t: "-".join(map(str, t)))
def test_every_instance_compiles_for_sm_90(compiled, instance):
    cubin = compiled[instance]
    if isinstance(cubin, Exception):
        raise cubin
    assert cubin[:4] == b"\x7fELF"
    assert _source(instance)[0]._KERNEL[instance[0]].encode() in cubin


def test_block_kernels_shared_memory():
    # the matrix at an odd row stride; LU's two published rows, pivots and permutation
    assert _medium.shared_bytes("cholesky", 64, "float64") == 64 * 65 * 8 + 64 * 8
    assert _medium.shared_bytes("cholesky", 33, "complex64") == 33 * 33 * 8 + 33 * 4
    assert _medium.shared_bytes("solve", 48, "complex128", 8) == (48 * 49 * 16 + 2 * 8 * 16
                                                                   + 48 * 16 + 48 * 4)
    # on Hopper a block may opt in to 227 KiB: every order of float64, complex128 to 119
    hopper = 227 * 1024
    assert max(_medium.shared_bytes(op, 128, "float64", 64) for op in _medium.OPS) <= hopper
    assert max(_medium.shared_bytes(op, 119, "complex128", 64) for op in _medium.OPS) <= hopper
    assert _medium.shared_bytes("cholesky", 120, "complex128") > hopper


def test_block_kernels_fit_the_gpus_shared_memory(monkeypatch):
    monkeypatch.setattr(_medium, "block_shared_memory", lambda device_id: 227 * 1024)
    assert _medium.fits("solve", 128, "float64", 0)
    assert not _medium.fits("solve", 128, "complex128", 0)
    assert _medium.largest("cholesky", "complex128", 0) == 119
    monkeypatch.setattr(_medium, "block_shared_memory", lambda device_id: 99 * 1024)
    assert _medium.largest("solve", "float64", 0) == 111
    monkeypatch.setattr(_small, "_kernel", lambda *args: pytest.fail("a warp kernel was wanted"))
    with pytest.raises(InvalidArgumentError, match=r"n=120 .* at most 111 rows"):
        _small.solve(0, 0, 0, 0, 120, 1, 4, "float64", 0, 0)


def test_block_kernels_block_width():
    assert [_medium.block_width(k) for k in (1, 4, 5, 9, 33, 64, 100)] == [4, 4, 8, 16, 64,
                                                                           64, 64]


def test_warps_per_block_fit_static_shared_memory():
    # the largest case: complex128 at n = 32 needs two warps a block; small ones four
    assert _small.compile_options("solve", 32, "complex128", 8)[1] == 2
    assert _small.compile_options("solve", 8, "float64", 1)[1] == 4


def test_block_width():
    assert [_small._block_width(k) for k in (1, 2, 3, 4, 5, 8, 9, 100)] == [1, 2, 4, 4, 8, 8,
                                                                            8, 8]


# -- argument checks (CPU: refused before any device is touched) ------------------------------

@pytest.mark.parametrize("call", [
    lambda n, d: _small.solve(0, 0, 0, 0, n, 1, 4, d, 0, 0),
    lambda n, d: _small.inv(0, 0, 0, n, 4, d, 0, 0),
    lambda n, d: _small.cholesky(0, 0, 0, n, 4, d, False, 0, 0),
])
def test_bad_arguments_are_refused(call):
    with pytest.raises(InvalidArgumentError, match=r"n=129 .*1 <= n <= 128"):
        call(129, "float64")
    with pytest.raises(InvalidArgumentError, match="n=0"):
        call(0, "float64")
    with pytest.raises(UnsupportedDTypeError, match="dtype='float16'.*'float32'"):
        call(8, "float16")


def test_bad_counts_are_refused():
    with pytest.raises(InvalidArgumentError, match="k=-1"):
        _small.solve(0, 0, 0, 0, 8, -1, 4, "float64", 0, 0)
    with pytest.raises(InvalidArgumentError, match="batch=-2"):
        _small.inv(0, 0, 0, 8, -2, "float64", 0, 0)


@pytest.mark.parametrize("n", [8, 40])
def test_empty_batch_launches_nothing(monkeypatch, n):
    for module in (_small, _medium):
        monkeypatch.setattr(module, "_kernel", lambda *args: pytest.fail("a kernel was wanted"))
    _small.solve(0, 0, 0, 0, n, 1, 0, "float64", 0, 0)
    _small.inv(0, 0, 0, n, 0, "float64", 0, 0)
    _small.cholesky(0, 0, 0, n, 0, "float64", True, 0, 0)


# -- on a GPU, against NumPy ----------------------------------------------------------------------

TOLERANCE = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-11, "complex128": 1e-11}


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _well_conditioned(rng, batch, n, dtype):
    """Matrices of condition number (infinity norm) at most 3, every one of the batch:
    random ones scaled to off-diagonal row sums of at most 1/2 plus the identity, their rows
    shuffled so that pivoting still swaps rows. (``random + n I`` is singular to working
    precision now and then in a batch of 10000.)"""
    m = _random(rng, (batch, n, n), dtype)
    m = m / (2 * np.abs(m).sum(axis=-1).max(axis=-1))[:, None, None] + np.eye(n)
    rows = rng.permuted(np.broadcast_to(np.arange(n), (batch, n)), axis=-1)
    return np.take_along_axis(m, rows[:, :, None], axis=1).astype(dtype)


def _positive_definite(rng, batch, n, dtype):
    m = _random(rng, (batch, n, n), dtype)
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)


def _skip_unless_fits(n, dtype, *ops):
    """Skip where a block kernel of ``ops`` does not get its shared memory on this GPU (the
    largest complex128 orders)."""
    if n > _small.WARP_N and not all(_medium.fits(op, n, dtype, 0) for op in ops):
        pytest.skip(f"{dtype} at n={n} is past this GPU's shared memory a block")


def _run(cp, function, *args):
    stream = cp.cuda.get_current_stream()
    function(*args, stream.ptr, 0)
    stream.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", SIZES)
@pytest.mark.parametrize("k", [1, 9])
def test_solve_against_numpy(cp, dtype, n, batch, k):
    _skip_unless_fits(n, dtype, "solve")
    rng = np.random.default_rng()
    a = _well_conditioned(rng, batch, n, dtype)
    b = _random(rng, (batch, n, k), dtype)
    a_dev, b_dev = cp.asarray(a), cp.asarray(b)
    x_dev = cp.empty_like(b_dev)
    info = cp.full(batch, -1, dtype=cp.int32)
    _run(cp, _small.solve, a_dev.data.ptr, b_dev.data.ptr, x_dev.data.ptr, info.data.ptr, n, k,
         batch, dtype)
    expected = np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128))
    assert (info.get() == 0).all()
    assert_close_elementwise(x_dev.get(), expected, TOLERANCE[dtype], rtol=TOLERANCE[dtype],
                             floor=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [0, 2, 3, 5, 17, 70])
@pytest.mark.parametrize("n", [8, 40])
def test_solve_other_counts_of_right_hand_sides(cp, dtype, k, n):
    rng = np.random.default_rng()
    batch = 33
    a = _well_conditioned(rng, batch, n, dtype)
    b = _random(rng, (batch, n, k), dtype)
    a_dev, b_dev = cp.asarray(a), cp.asarray(b)
    x_dev = cp.empty_like(b_dev)
    info = cp.full(batch, -1, dtype=cp.int32)
    _run(cp, _small.solve, a_dev.data.ptr, b_dev.data.ptr, x_dev.data.ptr, info.data.ptr, n, k,
         batch, dtype)
    assert (info.get() == 0).all()
    if k:
        assert_close_elementwise(x_dev.get(),
                                 np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128)),
                                 TOLERANCE[dtype], rtol=TOLERANCE[dtype], floor=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("n", [17, 50])
def test_solve_in_place(cp, dtype, n):
    rng = np.random.default_rng()
    k, batch = 6, 100
    a = _well_conditioned(rng, batch, n, dtype)
    b = _random(rng, (batch, n, k), dtype)
    a_dev, b_dev = cp.asarray(a), cp.asarray(b)
    info = cp.full(batch, -1, dtype=cp.int32)
    _run(cp, _small.solve, a_dev.data.ptr, b_dev.data.ptr, b_dev.data.ptr, info.data.ptr, n, k,
         batch, dtype)
    assert_close_elementwise(b_dev.get(),
                             np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128)),
                             TOLERANCE[dtype], rtol=TOLERANCE[dtype], floor=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", SIZES)
def test_singular_systems_give_their_pivot_and_nan(cp, dtype, n, batch):
    _skip_unless_fits(n, dtype, "solve", "inv")
    rng = np.random.default_rng()
    a = _well_conditioned(rng, batch, n, dtype)
    bad, column = batch // 2, n // 2
    a[bad, :, column] = 0  # the first `column` columns are independent: pivot column+1 is 0
    b = _random(rng, (batch, n, 1), dtype)
    a_dev, b_dev = cp.asarray(a), cp.asarray(b)
    x_dev, inv_dev = cp.empty_like(b_dev), cp.empty_like(a_dev)
    info, info_inv = (cp.full(batch, -1, dtype=cp.int32) for _ in range(2))
    _run(cp, _small.solve, a_dev.data.ptr, b_dev.data.ptr, x_dev.data.ptr, info.data.ptr, n, 1,
         batch, dtype)
    _run(cp, _small.inv, a_dev.data.ptr, inv_dev.data.ptr, info_inv.data.ptr, n, batch, dtype)
    expected_info = np.zeros(batch, np.int32)
    expected_info[bad] = column + 1
    for got, out in ((info, x_dev), (info_inv, inv_dev)):
        np.testing.assert_array_equal(got.get(), expected_info)
        out = out.get()
        assert np.isnan(out[bad]).all()
        good = np.arange(batch) != bad
        assert not np.isnan(out[good]).any()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", [(1, 7), (3, 40), (8, 10), (32, 5), (33, 4), (100, 4),
                                      (128, 4)])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_give_the_operands_code(cp, dtype, n, batch, bad):
    # A holding one (anywhere: either triangle, off the pivots' path): code -1 and NaN
    # results; else B holding one: code -2; a system that is fine besides them keeps its
    # own code (a zero pivot's) or 0. The warp kernels' segments and the block kernels'
    # systems do not see each other's.
    _skip_unless_fits(n, dtype, "solve", "inv", "cholesky")
    rng = np.random.default_rng()
    a = _well_conditioned(rng, batch, n, dtype)
    spd = _positive_definite(rng, batch, n, dtype)
    b = _random(rng, (batch, n, 2), dtype)
    i, j = int(rng.integers(n)), int(rng.integers(n))
    for x in (a, spd):
        x[1, i, j] = bad  # system 1: A
        x[2, j, i] = bad  # system 2: A and B (A is named)
    b[2, n - 1, 1] = bad
    b[batch - 1, 0, 0] = bad  # the last system: B alone
    singular = batch >= 5
    if singular:
        a[3, :, 0] = 0  # system 3: a zero first pivot
    expected = np.zeros(batch, np.int32)
    expected[[1, 2]] = -1
    expected[batch - 1] = -2
    if singular:
        expected[3] = 1
    if batch >= 7 and n > 1:  # system 4: a zero pivot and B holding one: B named first
        a[4, :, 1] = 0
        b[4, 1, 0] = bad
        expected[4] = -2
    a_dev, b_dev, spd_dev = cp.asarray(a), cp.asarray(b), cp.asarray(spd)
    x_dev, inv_dev, l_dev = cp.empty_like(b_dev), cp.empty_like(a_dev), cp.empty_like(a_dev)
    infos = [cp.full(batch, 7, dtype=cp.int32) for _ in range(3)]
    _run(cp, _small.solve, a_dev.data.ptr, b_dev.data.ptr, x_dev.data.ptr, infos[0].data.ptr,
         n, 2, batch, dtype)
    _run(cp, _small.inv, a_dev.data.ptr, inv_dev.data.ptr, infos[1].data.ptr, n, batch, dtype)
    _run(cp, _small.cholesky, spd_dev.data.ptr, l_dev.data.ptr, infos[2].data.ptr, n, batch,
         dtype, False)
    np.testing.assert_array_equal(infos[0].get(), expected)
    a_only = np.where(expected == -2, 0, expected)
    if batch >= 7 and n > 1:
        a_only[4] = 2  # (inv: its zero second pivot)
    np.testing.assert_array_equal(infos[1].get(), a_only)
    np.testing.assert_array_equal(infos[2].get(), np.where(a_only > 0, 0, a_only))
    for out in (x_dev.get(), inv_dev.get(), l_dev.get()):
        assert np.isnan(out[[1, 2]]).all()
        assert np.isfinite(out[0]).all()
    # cholesky without check_finite: only the triangle read counts (LAPACK's potrf): a
    # value in the other one leaves the factor as it is
    spd = _positive_definite(rng, batch, n, dtype)
    expected_l = np.linalg.cholesky(spd.astype(np.complex128))
    if n > 1:
        spd[1, 0, n - 1] = bad  # (the upper triangle)
    spd_dev, info = cp.asarray(spd), cp.full(batch, 7, dtype=cp.int32)
    unchecked = functools.partial(_small.cholesky, check_finite=False)
    _run(cp, unchecked, spd_dev.data.ptr, l_dev.data.ptr, info.data.ptr, n, batch, dtype, False)
    assert (info.get() == 0).all()
    assert_close_elementwise(l_dev.get(), expected_l, TOLERANCE[dtype], rtol=TOLERANCE[dtype],
                             floor=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", SIZES)
def test_inv_against_numpy(cp, dtype, n, batch):
    _skip_unless_fits(n, dtype, "inv")
    rng = np.random.default_rng()
    a = _well_conditioned(rng, batch, n, dtype)
    a_dev = cp.asarray(a)
    out = cp.empty_like(a_dev)
    info = cp.full(batch, -1, dtype=cp.int32)
    _run(cp, _small.inv, a_dev.data.ptr, out.data.ptr, info.data.ptr, n, batch, dtype)
    assert (info.get() == 0).all()
    assert_close_elementwise(out.get(), np.linalg.inv(a.astype(np.complex128)), TOLERANCE[dtype],
                             rtol=TOLERANCE[dtype], floor=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [8, 40])
def test_inv_in_place(cp, n):
    rng = np.random.default_rng()
    a = _well_conditioned(rng, 50, n, "float64")
    a_dev = cp.asarray(a)
    info = cp.full(50, -1, dtype=cp.int32)
    _run(cp, _small.inv, a_dev.data.ptr, a_dev.data.ptr, info.data.ptr, n, 50, "float64")
    assert_close_elementwise(a_dev.get(), np.linalg.inv(a), TOLERANCE["float64"],
                             rtol=TOLERANCE["float64"], floor=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", SIZES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_against_numpy(cp, dtype, n, batch, upper):
    _skip_unless_fits(n, dtype, "cholesky")
    rng = np.random.default_rng()
    a = _positive_definite(rng, batch, n, dtype)
    expected = np.linalg.cholesky(a.astype(np.complex128))
    if upper:
        expected = np.conj(np.swapaxes(expected, -1, -2))
    # only the named triangle is read: spoil the other one
    spoil = np.tril(np.full((n, n), 1e30), -1) if upper else np.triu(np.full((n, n), 1e30), 1)
    a_dev = cp.asarray((a + spoil).astype(dtype))
    out = cp.empty_like(a_dev)
    info = cp.full(batch, -1, dtype=cp.int32)
    _run(cp, _small.cholesky, a_dev.data.ptr, out.data.ptr, info.data.ptr, n, batch, dtype,
         upper)
    assert (info.get() == 0).all()
    result = out.get()
    assert_close_elementwise(result, expected, TOLERANCE[dtype], rtol=TOLERANCE[dtype], floor=1.0)
    other = np.tril(result, -1) if upper else np.triu(result, 1)
    assert (other == 0).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", SIZES)
def test_not_positive_definite_gives_its_order_and_nan(cp, dtype, n, batch):
    _skip_unless_fits(n, dtype, "cholesky")
    rng = np.random.default_rng()
    a = _positive_definite(rng, batch, n, dtype)
    bad, order = batch // 2, n // 2 + 1
    a[bad, order - 1, order - 1] = -1e3 * n * n  # minors below `order` stay positive definite
    a_dev = cp.asarray(a)
    out = cp.empty_like(a_dev)
    info = cp.full(batch, -1, dtype=cp.int32)
    _run(cp, _small.cholesky, a_dev.data.ptr, out.data.ptr, info.data.ptr, n, batch, dtype,
         False)
    expected_info = np.zeros(batch, np.int32)
    expected_info[bad] = order
    np.testing.assert_array_equal(info.get(), expected_info)
    result = out.get()
    assert np.isnan(result[bad]).all()
    assert not np.isnan(result[np.arange(batch) != bad]).any()

"""The auxiliary kernels of the linear-algebra device path (accelmath.linalg._kernels.auxiliary): the
source compiles with NVRTC for sm_90 with every entry point (no GPU needed), the launchers
refuse bad arguments before touching a device, and, on a GPU, each kernel against NumPy."""

import numpy as np
import pytest

from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._kernels import auxiliary as _kernels
from accelmath.linalg._kernels.auxiliary import (DTYPES, MAX_BATCH_DIMS, copy_matrices, det,
                                                 fail_to_nan, flag_nonfinite, identity, log_det,
                                                 nonfinite_blocks, pivots_from_scipy,
                                                 pivots_to_scipy, swap_rows, swap_rows_fit,
                                                 zero_diagonal)

def entry_points(dtype):
    """The kernels of ``dtype``'s module (the dtype-free ones are in every module)."""
    return ([f"{k}_{dtype}" for k in ("copy", "copy32", "tiles", "tiles32", "fail_to_nan",
                                          "flag_nonfinite", "identity", "swap_rows",
                                          "zero_diagonal")]
            + [f"{k}_{dtype}_{p}" for k in ("lu_det", "pivots_from_scipy")
               for p in ("int32", "int64")])


DTYPE_FREE = ["pivots_int32", "pivots_int64", "pointer_array"]


def _dense_batch_strides(batch_shape, size):
    """C-order strides of a dense batch of matrices of ``size`` elements each."""
    return tuple(int(np.prod(batch_shape[k + 1:], dtype=np.int64)) * size
                 for k in range(len(batch_shape)))


def gather(src_ptr, dst_ptr, batch_shape, src_batch_strides, m, n, src_row_stride,
           src_col_stride, dtype, stream, device_id, triangle=None, conj=False,
           transpose=False):
    """copy_matrices from a strided batch into a dense column-major one."""
    rows = n if transpose else m  # of the destination matrix
    copy_matrices(src_ptr, dst_ptr, batch_shape, src_batch_strides,
                  _dense_batch_strides(batch_shape, m * n), m, n,
                  (src_row_stride, src_col_stride), (1, rows), dtype, stream, device_id,
                  triangle=triangle, conj=conj, transpose=transpose)


def scatter(src_ptr, dst_ptr, batch_shape, dst_batch_strides, m, n, dst_row_stride,
            dst_col_stride, dtype, stream, device_id, triangle=None, conj=False,
            transpose=False):
    """copy_matrices from a dense column-major batch into a strided one."""
    copy_matrices(src_ptr, dst_ptr, batch_shape, _dense_batch_strides(batch_shape, m * n),
                  dst_batch_strides, m, n, (1, m), (dst_row_stride, dst_col_stride), dtype,
                  stream, device_id, triangle=triangle, conj=conj, transpose=transpose)


# -- compiling and argument checks (CPU) -----------------------------------------------------

@pytest.mark.parametrize("arch", [(8, 0), (9, 0)])
def test_the_source_compiles(arch, nvrtc):
    for variant in (None,) + DTYPES:  # (each dtype compiled alone, as SourceModules does)
        extra = () if variant is None else (f"-DACCELMATH_{variant}",)
        cubin = compile_cuda(_kernels.SOURCE, CompileOptions(arch=arch, extra=extra),
                             "accelmath_linalg.cu")
        for dtype in DTYPES:
            for name in entry_points(dtype):
                assert (name.encode() in cubin) == (dtype == variant), (variant, name)
        for name in DTYPE_FREE:
            assert name.encode() in cubin, name


def _clear_launches():
    """Forget the launches the launchers prepared (with the module they were given)."""
    _kernels._copy_launch.cache_clear()
    _kernels._pivots_launch.cache_clear()


@pytest.fixture
def no_device(monkeypatch):
    """Fail if a launcher gets as far as loading its module."""
    monkeypatch.setattr(_kernels, "_module",
                        lambda *args: pytest.fail("module loaded"))
    _clear_launches()  # (prepared with another module)
    yield
    _clear_launches()


def test_bad_dtypes_are_refused(no_device):
    with pytest.raises(UnsupportedDTypeError, match="dtype='float16'"):
        gather(0, 0, (2,), (16,), 4, 4, 4, 1, "float16", 0, 0)
    with pytest.raises(UnsupportedDTypeError, match="dtype='int32'"):
        log_det(0, 0, 4, 2, "int32", 0, 0, 0, 0)
    with pytest.raises(UnsupportedDTypeError, match="pivot_dtype='int16'"):
        det(0, 0, 4, 2, "float64", 0, 0, 0, pivot_dtype="int16")
    with pytest.raises(UnsupportedDTypeError, match="pivot_dtype='float64'"):
        pivots_to_scipy(0, 0, 4, 0, 0, pivot_dtype="float64")
    with pytest.raises(UnsupportedDTypeError, match="pivot_dtype='uint32'"):
        pivots_from_scipy(0, 0, 4, 2, 0, 4, "float64", 0, 0, pivot_dtype="uint32")
    for call in (lambda: fail_to_nan(0, 0, 4, 2, "bool", 0, 0),
                 lambda: flag_nonfinite(0, 4, 2, "bool", 0, 0, 0),
                 lambda: identity(0, 4, 2, "bool", 0, 0),
                 lambda: swap_rows(0, 0, 4, 1, 1, "bool", False, 0, 0),
                 lambda: pivots_from_scipy(0, 0, 4, 2, 0, 4, "bool", 0, 0),
                 lambda: zero_diagonal(0, 4, 2, "bool", 0, 0, 0)):
        with pytest.raises(UnsupportedDTypeError, match="dtype='bool'"):
            call()


def test_bad_copies_are_refused(no_device):
    with pytest.raises(InvalidArgumentError, match="triangle='X'"):
        gather(0, 0, (), (), 4, 4, 4, 1, "float64", 0, 0, triangle="X")
    with pytest.raises(InvalidArgumentError, match="differ in length"):
        copy_matrices(0, 0, (2, 3), (9,), (9, 3), 3, 3, (3, 1), (1, 3), "float64", 0, 0)
    with pytest.raises(InvalidArgumentError, match="n=65536"):
        identity(0, 65536, 1, "float64", 0, 0)


def test_swap_rows_takes_what_shared_memory_holds(no_device):
    assert swap_rows_fit(4096, "float64") and not swap_rows_fit(4097, "float64")
    assert swap_rows_fit(2457, "complex128") and not swap_rows_fit(2458, "complex128")
    with pytest.raises(InvalidArgumentError, match="at most 4096 rows of float64; got n=5000"):
        swap_rows(0, 0, 5000, 1, 1, "float64", False, 0, 0)


@pytest.fixture
def launches(monkeypatch):
    """The kernels the copy launcher would start: (name, the launch's arguments as ints)."""
    seen = []

    class Module:
        def function(self, name):
            return name

    monkeypatch.setattr(_kernels, "_module", lambda device_id, dtype: (Module(), 132 * 16))
    monkeypatch.setattr(_kernels, "launch", lambda func, config, args, stream: seen.append(
        (func, config, [getattr(a, "value", None) for a in args])))
    _clear_launches()  # (prepared with another module)
    yield seen
    _clear_launches()


@pytest.mark.parametrize("src, dst, kernel, swapped", [
    ((1, 100), (1, 100), "copy32_float64", False),    # column-major to column-major
    ((60, 1), (60, 1), "copy32_float64", True),       # row-major to row-major: along j
    ((60, 1), (1, 100), "tiles32_float64", False),    # row- to column-major: tiles
    ((1, 100), (60, 1), "tiles32_float64", True),     # column- to row-major: tiles, swapped
])
def test_copies_run_along_the_destination(launches, src, dst, kernel, swapped):
    m, n = 100, 60
    copy_matrices(0, 0, (3,), (6000,), (6000,), m, n, src, dst, "float64", 0, 0, triangle="L")
    [(name, config, args)] = launches
    assert name == kernel
    # the tiled kernel takes (tiles, tiles along j, tiles a matrix) first, the other a count
    dims = args[5:7] if name.startswith("tiles") else args[3:5]
    assert tuple(dims) == ((n, m) if swapped else (m, n))
    d_i, d_j, mode, flags = args[-4:]
    assert flags is None  # (no check)
    assert abs(d_i) <= abs(d_j)  # threads along the destination's fast axis
    assert mode == (2 if swapped else 1)  # the lower triangle, seen swapped, is the upper
    if name.startswith("tiles"):
        assert config.block == (32, 8, 1)
        rows, cols = (n, m) if swapped else (m, n)
        assert args[2] == -(-rows // 32) * -(-cols // 32) * 3  # every tile of 3 matrices


def test_a_batch_past_the_kernels_dimensions_is_launched_in_parts(launches):
    # 7 dimensions that do not merge: a launch for each index of the first, at its offsets
    # (elements of 8 bytes, flags of 4)
    shape = (2,) * (MAX_BATCH_DIMS + 1)
    src = tuple(4 ** k * 100 for k in range(MAX_BATCH_DIMS + 1))[::-1]  # gaps: no merging
    dst = tuple(9 * 2 ** k for k in range(MAX_BATCH_DIMS + 1))[::-1]
    copy_matrices(1000, 2000, shape, src, dst, 3, 3, (3, 1), (1, 3), "float64", 0, 0,
                  flags_ptr=3000)
    assert [args[:2] + args[-1:] for _, _, args in launches] == [
        [1000, 2000, 3000], [1000 + 8 * src[0], 2000 + 8 * dst[0], 3000 + 4 * 2 ** 6]]
    (first, _, args0), (second, _, args1) = launches
    assert first == second and args0[2:-1] == args1[2:-1]  # (the same 6-dimension copy)


def test_small_matrices_are_not_tiled(launches):
    copy_matrices(0, 0, (10000,), (64,), (64,), 8, 8, (8, 1), (1, 8), "float64", 0, 0)
    assert launches[0][0] == "copy32_float64"


@pytest.mark.parametrize("n, batch, grid, block", [
    (8, 1, (1, 1, 1), (32, 8, 1)), (8, 100, (1, 13, 1), (32, 8, 1)),
    (40, 5, (1, 2, 1), (64, 4, 1)), (4200, 1, (17, 1, 1), (256, 1, 1)),
    (8, 10**6, (1, 65535, 1), (32, 8, 1))])
def test_pivots_are_converted_and_checked_in_one_launch(launches, n, batch, grid, block):
    # (lu_solve's check of its pivots rides on the conversion it makes anyway)
    for pivot_dtype in ("int32", "int64"):
        pivots_from_scipy(1, 2, n, batch, 3, 2 * n, "complex64", 0, 0, pivot_dtype, 4)
    (first, config, args), (second, _, _) = launches
    assert (first, second) == ("pivots_from_scipy_complex64_int32",
                               "pivots_from_scipy_complex64_int64")
    assert (config.grid, config.block) == (grid, block)
    assert args == [1, 2, n, batch, 3, 2 * n, 4]


def test_empty_work_launches_nothing(no_device):
    gather(0, 0, (0, 3), (9, 9), 3, 3, 3, 1, "float64", 0, 0)
    fail_to_nan(0, 0, 9, 0, "float64", 0, 0)
    flag_nonfinite(0, 9, 0, "float64", 0, 0, 0)
    flag_nonfinite(0, 0, 4, "float64", 0, 0, 0)
    identity(0, 0, 5, "float64", 0, 0)
    pivots_to_scipy(0, 0, 0, 0, 0)
    pivots_from_scipy(0, 0, 4, 0, 0, 4, "float64", 0, 0)
    pivots_from_scipy(0, 0, 0, 4, 0, 0, "float64", 0, 0)
    zero_diagonal(0, 4, 0, "float64", 0, 0, 0)
    log_det(0, 0, 3, 0, "float64", 0, 0, 0, 0)


# -- on a GPU, against NumPy ----------------------------------------------------------------------

def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _strides(array):
    return tuple(s // array.itemsize for s in array.strides)


def _synchronize(cp):
    cp.cuda.get_current_stream().synchronize()


def _stream(cp):
    return cp.cuda.get_current_stream().ptr


def _column_major(flat, batch_shape, rows, cols):
    """A dense column-major batch read back as (..., rows, cols) matrices."""
    return np.swapaxes(flat.reshape(*batch_shape, cols, rows), -1, -2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("triangle", [None, "L", "U"])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("conj", [False, True])
def test_gather_against_numpy(cp, dtype, triangle, transpose, conj):
    rng = np.random.default_rng()
    host = _random(rng, (2, 6, 7, 9), dtype)
    base = cp.asarray(host)
    src = base[:, ::2, 1:6, 1:9:2]  # (2, 3, 5, 4), strided in every axis
    m, n = 5, 4
    dst = cp.zeros(2 * 3 * m * n, dtype)
    s = _strides(src)
    gather(src.data.ptr, dst.data.ptr, (2, 3), s[:2], m, n, s[2], s[3], dtype, _stream(cp), 0,
           triangle=triangle, conj=conj, transpose=transpose)
    _synchronize(cp)
    expected = host[:, ::2, 1:6, 1:9:2]
    if triangle == "L":
        expected = np.tril(expected)
    elif triangle == "U":
        expected = np.triu(expected)
    if conj:
        expected = np.conj(expected)
    if transpose:
        expected = np.swapaxes(expected, -1, -2)
    rows, cols = expected.shape[-2:]
    np.testing.assert_array_equal(_column_major(dst.get(), (2, 3), rows, cols), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("m, n, order", [(5, 4, (1, 5)), (40, 33, (1, 40)), (40, 33, (33, 1))])
@pytest.mark.parametrize("triangle", [None, "L"])
def test_copies_flag_the_matrices_holding_nan_or_inf(cp, dtype, m, n, order, triangle):
    # each element read (the triangle left out too), by the elementwise kernel and the
    # tiled one (row-major to column-major, 40 x 33), the copy itself unchanged; the flags
    # of the matrices without any left as they were (here 0, one of them 7)
    rng = np.random.default_rng()
    host = _random(rng, (2, 3, m, n), dtype)
    host[0, 1, 0, n - 1] = np.nan  # above the diagonal
    host[1, 2, m - 1, 0] = np.inf
    host[1, 0, m // 2, n // 2] = complex(0, np.inf) if dtype == "complex64" else -np.inf
    src = cp.asarray(host)
    dst = cp.zeros(host.size, dtype)
    flags = cp.asarray(np.array([0, 0, 0, 0, 7, 0], np.int32))
    s = _strides(src)
    copy_matrices(src.data.ptr, dst.data.ptr, (2, 3), s[:2], (3 * m * n, m * n), m, n, s[2:],
                  order, dtype, _stream(cp), 0, triangle=triangle, flags_ptr=flags.data.ptr)
    _synchronize(cp)
    np.testing.assert_array_equal(flags.get(), [0, 1, 0, 1, 7, 1])
    expected = np.tril(host) if triangle == "L" else host
    got = dst.get().reshape(2, 3, n, m) if order == (1, m) else dst.get().reshape(2, 3, m, n)
    np.testing.assert_array_equal(np.swapaxes(got, -1, -2) if order == (1, m) else got,
                                  expected)


@pytest.mark.gpu
def test_a_copy_in_parts_flags_each_part(cp):
    # a batch of 7 dimensions that do not merge: two launches, each with its own flags
    rng = np.random.default_rng()
    shape = (2,) * (MAX_BATCH_DIMS + 1) + (3, 3)
    host = _random(rng, (3,) * (MAX_BATCH_DIMS + 1) + (3, 3), "float64")
    src = cp.asarray(host)[(slice(0, 2),) * (MAX_BATCH_DIMS + 1)]  # gaps in every axis
    expected = host[(slice(0, 2),) * (MAX_BATCH_DIMS + 1)].copy()
    expected[1, 0, 1, 0, 0, 1, 1, 2, 2] = np.nan
    src[1, 0, 1, 0, 0, 1, 1, 2, 2] = np.nan
    dst = cp.zeros(int(np.prod(shape)), "float64")
    flags = cp.zeros(2 ** (MAX_BATCH_DIMS + 1), np.int32)
    s = _strides(src)
    dense = tuple(int(x) for x in np.cumprod((9,) + (2,) * MAX_BATCH_DIMS)[::-1])
    copy_matrices(src.data.ptr, dst.data.ptr, shape[:-2], s[:-2], dense, 3, 3, s[-2:], (3, 1),
                  "float64", _stream(cp), 0, flags_ptr=flags.data.ptr)
    _synchronize(cp)
    np.testing.assert_array_equal(dst.get().reshape(shape), expected)
    assert np.flatnonzero(flags.get()).tolist() == [
        int(np.ravel_multi_index((1, 0, 1, 0, 0, 1, 1), (2,) * (MAX_BATCH_DIMS + 1)))]


@pytest.mark.gpu
def test_gather_broadcasts_a_batch_stride_of_zero(cp):
    rng = np.random.default_rng()
    host = _random(rng, (3, 3), "float64")
    src = cp.asarray(host)  # C order: row stride 3, column stride 1
    dst = cp.zeros(4 * 9, "float64")
    gather(src.data.ptr, dst.data.ptr, (4,), (0,), 3, 3, 3, 1, "float64", _stream(cp), 0)
    _synchronize(cp)
    np.testing.assert_array_equal(_column_major(dst.get(), (4,), 3, 3),
                                  np.broadcast_to(host, (4, 3, 3)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("transpose", [False, True])
def test_scatter_is_the_way_back(cp, dtype, transpose):
    rng = np.random.default_rng()
    m, n = 4, 6
    dense = _random(rng, (3, m, n), dtype)  # the matrices, sent as a column-major batch
    flat = cp.asarray(np.swapaxes(dense, -1, -2).reshape(-1))
    out_host = _random(rng, (3, 8, 9), dtype)
    out = cp.asarray(out_host)
    view = out[:, 1:1 + (n if transpose else m), 2:2 + (m if transpose else n)]
    s = _strides(view)
    scatter(flat.data.ptr, view.data.ptr, (3,), s[:1], m, n, s[1], s[2], dtype, _stream(cp), 0,
            transpose=transpose)
    _synchronize(cp)
    expected = out_host.copy()
    expected[:, 1:1 + view.shape[1], 2:2 + view.shape[2]] = (
        np.swapaxes(dense, -1, -2) if transpose else dense)
    np.testing.assert_array_equal(out.get(), expected)


def _lu_factors(a, pivot_dtype):
    """LAPACK's LU of each matrix (row-major, as SciPy returns it) and 1-based pivots."""
    import scipy.linalg

    lus, pivots = zip(*(scipy.linalg.lu_factor(m) for m in a))
    return np.stack(lus), (np.stack(pivots) + 1).astype(pivot_dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", [(1, 3), (5, 7), (300, 2)])
@pytest.mark.parametrize("pivot_dtype", ["int32", "int64"])
def test_log_det_and_det_against_numpy(cp, dtype, n, batch, pivot_dtype):
    rng = np.random.default_rng()
    a = (_random(rng, (batch, n, n), dtype) / np.sqrt(n)).astype(dtype)  # (NumPy 2: / promotes)
    lu, piv = _lu_factors(a, pivot_dtype)
    lu_dev = cp.asarray(np.ascontiguousarray(np.swapaxes(lu, -1, -2)))  # column-major
    piv_dev = cp.asarray(piv)
    real = np.empty(0, dtype).real.dtype
    sign, logabs = cp.empty(batch, dtype), cp.empty(batch, real)
    value = cp.empty(batch, dtype)
    log_det(lu_dev.data.ptr, piv_dev.data.ptr, n, batch, dtype, sign.data.ptr, logabs.data.ptr,
            _stream(cp), 0, pivot_dtype=pivot_dtype)
    det(lu_dev.data.ptr, piv_dev.data.ptr, n, batch, dtype, value.data.ptr, _stream(cp), 0,
        pivot_dtype=pivot_dtype)
    _synchronize(cp)
    # the oracle: the same factors, reduced in float64
    d = np.diagonal(lu, axis1=-2, axis2=-1).astype(np.complex128)
    swaps = (piv != np.arange(1, n + 1)).sum(axis=-1)
    expected_sign = np.prod(d / np.abs(d), axis=-1) * (-1.0) ** swaps
    expected_logabs = np.log(np.abs(d)).sum(axis=-1)
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-12
    np.testing.assert_allclose(sign.get(), expected_sign, rtol=tol, atol=tol)
    np.testing.assert_allclose(logabs.get(), expected_logabs, rtol=tol, atol=tol * n)
    # (in the dtype: a float32 determinant of 1e-66 is 0, as NumPy's is)
    expected_det = expected_sign * np.exp(expected_logabs)
    if not dtype.startswith("complex"):  # (the sign of a real matrix is real: +1 or -1)
        expected_det = expected_det.real
    expected_det = expected_det.astype(dtype)
    np.testing.assert_allclose(value.get(), expected_det, rtol=tol * n, atol=0)
    if dtype in ("float64", "complex128"):  # and NumPy's own answer, from its own LU
        numpy_sign, numpy_logabs = np.linalg.slogdet(a)
        np.testing.assert_allclose(sign.get(), numpy_sign, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(logabs.get(), numpy_logabs, rtol=1e-9, atol=1e-9 * n)
        np.testing.assert_allclose(value.get(), np.linalg.det(a), rtol=1e-9 * n, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_log_det_of_a_zero_diagonal_entry(cp, dtype):
    n = 4
    lu = np.eye(n, dtype=dtype)[None].copy()
    lu[0, 2, 2] = 0
    lu_dev, piv = cp.asarray(lu), cp.asarray(np.arange(1, n + 1, dtype=np.int64)[None])
    real = np.empty(0, dtype).real.dtype
    sign, logabs, value = cp.empty(1, dtype), cp.empty(1, real), cp.empty(1, dtype)
    log_det(lu_dev.data.ptr, piv.data.ptr, n, 1, dtype, sign.data.ptr, logabs.data.ptr,
            _stream(cp), 0)
    det(lu_dev.data.ptr, piv.data.ptr, n, 1, dtype, value.data.ptr, _stream(cp), 0)
    _synchronize(cp)
    assert sign.get()[0] == 0 and logabs.get()[0] == -np.inf and value.get()[0] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_fail_to_nan(cp, dtype):
    rng = np.random.default_rng()
    host = _random(rng, (4, 3, 5), dtype)
    data = cp.asarray(host)
    info = cp.asarray(np.array([0, 3, 0, -1], np.int32))
    fail_to_nan(info.data.ptr, data.data.ptr, 15, 4, dtype, _stream(cp), 0)
    _synchronize(cp)
    result = data.get()
    assert np.isnan(result[[1, 3]]).all()
    np.testing.assert_array_equal(result[[0, 2]], host[[0, 2]])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_matrix", [6, 70000])
def test_flag_nonfinite(cp, dtype, per_matrix):
    rng = np.random.default_rng()
    host = _random(rng, (5, per_matrix), dtype)
    host[1, -1] = np.inf
    host[3, per_matrix // 2] = np.nan
    if dtype.startswith("complex"):
        host[4, 0] = complex(0, np.nan)
    blocks = nonfinite_blocks(per_matrix)
    flags = cp.full(5 * blocks, 7, np.int32)  # (every flag written)
    flag_nonfinite(cp.asarray(host).data.ptr, per_matrix, 5, dtype, flags.data.ptr,
                   _stream(cp), 0)
    _synchronize(cp)
    result = flags.get().reshape(5, blocks)
    assert set(result.ravel()) <= {0, 1}
    expected = [False, True, False, True, dtype.startswith("complex")]
    assert list(result.any(axis=1)) == expected


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 5, 700])
def test_zero_diagonal(cp, dtype, n):
    rng = np.random.default_rng()
    host = _random(rng, (4, n, n), dtype) + 3 * np.eye(n, dtype=dtype)
    host[1, n - 1, n - 1] = 0
    if n > 1:
        host[3, n // 2, n // 2] = 0
        host[3, n - 1, n - 1] = 0  # (the first zero counts)
        host[2, 0, 1] = 0  # off the diagonal: no matter
    info = cp.full(4, 7, np.int32)  # (every code written)
    zero_diagonal(cp.asarray(host).data.ptr, n, 4, dtype, info.data.ptr, _stream(cp), 0)
    _synchronize(cp)
    expected = [0, n, 0, n // 2 + 1 if n > 1 else 0]
    assert list(info.get()) == expected


@pytest.mark.gpu
@pytest.mark.parametrize("pivot_dtype", ["int32", "int64"])
@pytest.mark.parametrize("n, batch", [(3, 3), (8, 70000), (300, 2), (129, 65537)])
def test_pivots_from_scipy_keep_every_row_in_its_matrix(cp, pivot_dtype, n, batch):
    # (8 matrices a block, 1 a block, and past the grid's 65535 in y)
    from accelmath._core.gpu.memory import host_flag

    rng = np.random.default_rng()
    piv = np.tile(np.array([rng.integers(i, n) for i in range(n)], pivot_dtype), (batch, 1))
    good = piv.copy()
    piv[1, n - 1], piv[batch - 1, 0] = n, -1  # no row of an n x n matrix
    if pivot_dtype == "int64":
        piv[0, 0] = 2**32  # (int32 would wrap it to row 0)
    bad = np.zeros(batch, bool)
    bad[[0 if pivot_dtype == "int64" else 1, 1, batch - 1]] = True
    out = cp.empty(piv.shape, cp.int64)
    rhs = cp.asarray(np.ones((batch, 2, n)))
    flag = host_flag()
    pivots_from_scipy(cp.asarray(piv).data.ptr, out.data.ptr, n, batch, rhs.data.ptr, 2 * n,
                      "float64", _stream(cp), 0, pivot_dtype=pivot_dtype, flag_ptr=flag.ptr)
    assert flag.raised_after(_stream(cp))
    expected = np.where(bad[:, None] & ((piv < 0) | (piv >= n)), np.arange(n), good) + 1
    np.testing.assert_array_equal(out.get(), expected)
    x = rhs.get()
    assert np.isnan(x[bad]).all() and (x[~bad] == 1).all()
    flag = host_flag()
    pivots_from_scipy(cp.asarray(good).data.ptr, out.data.ptr, n, batch, rhs.data.ptr, 2 * n,
                      "float64", _stream(cp), 0, pivot_dtype=pivot_dtype, flag_ptr=flag.ptr)
    assert not flag.raised_after(_stream(cp))
    np.testing.assert_array_equal(out.get(), good + 1)


@pytest.mark.gpu
@pytest.mark.parametrize("pivot_dtype", ["int32", "int64"])
def test_pivots_to_scipy(cp, pivot_dtype):
    piv = np.array([[3, 2, 3], [1, 3, 3]], pivot_dtype)
    src = cp.asarray(piv)
    out = cp.empty(piv.shape, cp.int32)
    pivots_to_scipy(src.data.ptr, out.data.ptr, piv.size, _stream(cp), 0,
                    pivot_dtype=pivot_dtype)
    _synchronize(cp)
    np.testing.assert_array_equal(out.get(), piv - 1)
    assert out.get().dtype == np.int32


def _interchanged(x, ipiv, reverse):
    """NumPy's reference of swap_rows: LAPACK's row interchanges (1-based pivots) on each
    block of the batch, in order or in reverse."""
    x = x.copy()
    for block, pivots in zip(x, ipiv):
        order = range(len(pivots))
        for i in (reversed(order) if reverse else order):
            j = pivots[i] - 1
            block[[i, j]] = block[[j, i]]
    return x


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, k, batch", [(1, 1, 1), (9, 1, 3), (2162, 1, 1), (300, 70, 2)])
@pytest.mark.parametrize("reverse", [False, True])
def test_swap_rows_against_numpy(cp, dtype, n, k, batch, reverse):
    rng = np.random.default_rng(n * k + batch)
    x = (rng.standard_normal((batch, n, k)) + (1j if "complex" in dtype else 0)
         * rng.standard_normal((batch, n, k))).astype(dtype)
    # pivots as getrf makes them: row i swapped with a row at or below it, often itself
    ipiv = np.array([[rng.integers(i, n) + 1 if rng.random() < 0.7 else i + 1
                      for i in range(n)] for _ in range(batch)], np.int64)
    # the kernel reads dense column-major n x k blocks: each column's n rows contiguous
    dev, pivots = cp.asarray(np.ascontiguousarray(x.transpose(0, 2, 1))), cp.asarray(ipiv)
    swap_rows(dev.data.ptr, pivots.data.ptr, n, k, batch, dtype, reverse, _stream(cp), 0)
    _synchronize(cp)
    np.testing.assert_array_equal(dev.get().transpose(0, 2, 1),
                                  _interchanged(x, ipiv, reverse))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", [(1, 4), (7, 3), (100, 2)])
def test_identity(cp, dtype, n, batch):
    dst = cp.full((batch, n, n), 7, dtype)
    identity(dst.data.ptr, n, batch, dtype, _stream(cp), 0)
    _synchronize(cp)
    np.testing.assert_array_equal(dst.get(), np.broadcast_to(np.eye(n, dtype=dtype),
                                                             (batch, n, n)))




def _in_order(cp, host, order):
    """``host`` on the device, its matrices in C or F (column-major) order."""
    if order == "C":
        return cp.asarray(host)
    return cp.asarray(np.swapaxes(host, -1, -2).copy()).swapaxes(-1, -2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("src_order", ["C", "F", "strided"])
@pytest.mark.parametrize("dst_order", ["C", "F"])
@pytest.mark.parametrize("triangle", [None, "L", "U"])
@pytest.mark.parametrize("transpose", [False, True])
def test_large_copies_in_every_layout(cp, dtype, src_order, dst_order, triangle, transpose):
    # matrices past the tile size: copies along one axis, and through tiles across axes
    rng = np.random.default_rng()
    m, n = 70, 45
    host = _random(rng, (2, 3, 2 * m + 1, n + 7), dtype)
    base = cp.asarray(host)
    if src_order == "strided":
        src, expected = base[:, :, 1::2, 3:3 + n], host[:, :, 1::2, 3:3 + n]
    else:
        src, expected = _in_order(cp, host[:, :, :m, :n], src_order), host[:, :, :m, :n]
    if triangle:
        expected = (np.tril if triangle == "L" else np.triu)(expected)
    expected = np.conj(expected)
    if transpose:
        expected = np.swapaxes(expected, -1, -2)
    dst = _in_order(cp, np.zeros_like(expected), dst_order)
    s, d = _strides(src), _strides(dst)
    copy_matrices(src.data.ptr, dst.data.ptr, (2, 3), s[:2], d[:2], m, n, s[2:], d[2:], dtype,
                  _stream(cp), 0, triangle=triangle, conj=True, transpose=transpose)
    _synchronize(cp)
    np.testing.assert_array_equal(dst.get(), expected)


@pytest.mark.parametrize("shape, src, dst, generic", [
    ((4, 50, 30), (1500, 30, 1), (1500, 30, 1), True),    # C order both: one run of memory
    ((4, 50, 30), (1500, 30, 1), (1500, 1, 50), False),   # C to column-major: tiles
    ((4, 50, 30), (1500, 1, 50), (1500, 1, 50), False),   # column-major both
    ((50,), (1,), (1,), True),                            # not a matrix
])
def test_the_device_context_copies_matrices_with_the_matrix_kernels(monkeypatch, shape, src,
                                                                   dst, generic):
    from types import SimpleNamespace

    from accelmath.linalg._device import context as _context

    ran = []
    monkeypatch.setattr(_context, "copy_scale", lambda *a, **k: ran.append("generic"))
    monkeypatch.setattr(_kernels, "copy_matrices", lambda *a, **k: ran.append("matrices"))
    ctx = SimpleNamespace(dtype="float64", stream=0, device_id=0)
    _context.copy(ctx, 0, 0, shape, src, dst)
    assert ran == ["generic" if generic else "matrices"]


# -- prepare ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "float16", "not a dtype", None])
def test_prepare_refuses_what_the_kernels_do_not_have(dtype):
    from accelmath import linalg

    with pytest.raises(UnsupportedDTypeError, match="not supported by the linear-algebra"):
        linalg.prepare("float64", dtype)


@pytest.mark.gpu
def test_prepare_compiles_in_the_background_then_the_kernels_are_found(monkeypatch, tmp_path):
    from accelmath import linalg
    from accelmath._core.gpu import modules
    from accelmath._core.gpu.device import compute_capability

    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    source = _kernels.SOURCE + "\n// prepare\n"
    monkeypatch.setattr(_kernels, "_module", modules.SourceModules(source, "prepare.cu"))
    linalg.prepare(np.complex64, device=0)
    options = CompileOptions(arch=compute_capability(0), extra=("-DACCELMATH_complex64",))
    thread = modules._soon[modules._compile_key(source, options, "prepare.cu")]
    thread.join()
    assert modules.is_compiled(source, options, "prepare.cu")
    linalg.prepare("complex64", device=0, wait=True)
    assert (0, "complex64") in _kernels._module._found


@pytest.mark.parametrize("device", [-1, 99, "x"])
def test_prepare_names_a_device_it_cannot_use(device):
    # (wait=True once raised IndexError or TypeError from the list of devices, with or
    # without a GPU: found by the fuzz)
    from accelmath import linalg
    from accelmath._core.gpu.device import gpu_available
    from accelmath.errors import NoDeviceError

    with pytest.raises(InvalidArgumentError if gpu_available() else NoDeviceError,
                       match="device"):
        linalg.prepare("float64", device=device, wait=True)

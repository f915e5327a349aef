"""NaN and infinities in device operands of accelmath.linalg: check_finite (SciPy's functions)
and check (NumPy's) name the first bad operand and its matrix's batch index, in new and in
remembered calls, through accelmath's kernel, the package or cuSOLVER's copies, on the call's
stream or beside it."""

import numpy as np
import pytest
from closeness import assert_close_dtype

import accelmath.linalg as la
from accelmath.errors import LinAlgError

from .gpu_cases import random, residual, spd, well

pytestmark = pytest.mark.gpu


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
    assert_close_dtype(x, b / 2, dtype)


@pytest.mark.parametrize("on_stream", [False, True])
def test_check_finite_of_large_matrices_beside_the_call(torch_cuda, on_stream):
    # a check reading BESIDE_BYTES or more runs on a stream beside the call's, its work
    # meanwhile on the call's: right results, and NaN and Inf caught wherever they are, in
    # new and in remembered calls (the plan kept), on the current stream or a named one
    from accelmath.linalg._device import finite as _finite

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
    assert_close_dtype(x, b / 2, "float64")


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
    assert_close_dtype(np.tril(cupy.get(c)), np.linalg.cholesky(spd_a), "float64", 10)
    with pytest.raises(LinAlgError, match=r"^a: .*\(batch index \(1,\)\)"):
        la.cho_factor(cupy.put(spoiled), lower=True)


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

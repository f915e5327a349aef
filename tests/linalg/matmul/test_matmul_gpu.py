"""matmul and Matmul on cuBLASLt, for CuPy, torch and JAX arrays, against NumPy in float64:
shapes with 1, odd and non-multiple-of-8 sizes, batched and broadcast, transposed views,
torch's lazily conjugated views, alpha/beta/c, every epilogue, TF32 only on opt-in, out=,
stream=, autotuning and the stored choice, Matmul.execute on other operands."""

import numpy as np
import pytest
from closeness import PRODUCT_EPS, assert_close_products

from accelmath import linalg
from accelmath.linalg._matmul.epilogue import gelu, gelu_derivative, relu_mask

pytestmark = pytest.mark.gpu

DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [((3, 5), (5, 4)), ((1, 1), (1, 1)), ((33, 17), (17, 45)), ((1, 129), (129, 1)),
          ((7,), (7, 3)), ((4, 7), (7,)), ((6,), (6,)), ((2, 3, 5), (5, 9)),
          ((4, 1, 3, 5), (2, 5, 1)), ((9, 13), (2, 3, 13, 5))]


def random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def oracle(x):
    return x.astype(np.complex128) if x.dtype.kind == "c" else x.astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_cupy_products(cp, dtype, a_shape, b_shape):
    rng = np.random.default_rng()
    a, b = random(rng, a_shape, dtype), random(rng, b_shape, dtype)
    result = linalg.matmul(cp.asarray(a), cp.asarray(b))
    assert isinstance(result, cp.ndarray) and result.dtype == dtype
    assert_close_products(cp.asnumpy(result), oracle(a) @ oracle(b), dtype, a_shape[-1])


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_cupy_views_alpha_beta_c(cp, dtype):
    rng = np.random.default_rng()
    a = random(rng, (2, 6, 5), dtype)
    b = random(rng, (6, 10), dtype)
    c = random(rng, (2, 5, 5), dtype)
    ga = cp.asarray(a).transpose(0, 2, 1)  # F-ordered matrices: read with T
    gb = cp.asarray(b)[:, ::2]             # strided columns: copied
    alpha, beta = (0.5, -2.0) if dtype == "float32" else (0.5 + 1j, -2.0 - 0.5j)
    expected = alpha * (oracle(a).transpose(0, 2, 1) @ oracle(b)[:, ::2]) + beta * oracle(c)
    if dtype == "float32":
        expected = expected.real
    result = linalg.matmul(ga, gb, cp.asarray(c), alpha=alpha, beta=beta)
    assert_close_products(cp.asnumpy(result), expected, dtype, 6)


def test_torch_dtypes_broadcast_and_conj(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()
    for dtype in ("float16", "bfloat16", "float32"):
        a = torch.from_numpy(rng.standard_normal((4, 1, 5, 6))).to("cuda", getattr(torch, dtype))
        b = torch.from_numpy(rng.standard_normal((3, 6, 7))).to("cuda", getattr(torch, dtype))
        result = linalg.matmul(a, b)
        assert isinstance(result, torch.Tensor) and result.dtype == a.dtype
        expected = a.double().cpu().numpy() @ b.double().cpu().numpy()
        assert_close_products(result.double().cpu().numpy(), expected, dtype, 6)
    x = random(rng, (6, 5), "complex128")
    y = random(rng, (6, 9), "complex128")
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    # x.mH: a lazily conjugated transpose, read with cuBLASLt's C; x.conj(): copied
    assert_close_products(linalg.matmul(tx.mH, ty).cpu().numpy(), x.conj().T @ y, "complex128", 6)
    z = random(rng, (5, 6), "complex128")
    assert_close_products(linalg.matmul(torch.from_numpy(z).cuda().conj(), ty).cpu().numpy(),
                          z.conj() @ y, "complex128", 6)


def test_jax(jax_gpu):
    import jax.numpy as jnp

    rng = np.random.default_rng()
    a, b = random(rng, (3, 9, 17), "float32"), random(rng, (17, 5), "float32")
    bias = random(rng, (5,), "float32")
    result = linalg.matmul(jnp.asarray(a), jnp.asarray(b), epilogue="relu_bias",
                           bias=jnp.asarray(bias))
    assert isinstance(result, jax_gpu.Array)
    assert_close_products(np.asarray(result), np.maximum(oracle(a) @ oracle(b) + bias, 0),
                          "float32", 17)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("epilogue", ["bias", "relu", "gelu", "relu_bias", "gelu_bias"])
def test_forward_epilogues(torch_cuda, dtype, epilogue):
    torch = torch_cuda
    rng = np.random.default_rng()
    tdtype = getattr(torch, dtype)
    a = torch.from_numpy(rng.standard_normal((2, 33, 64))).to("cuda", tdtype)
    b = torch.from_numpy(rng.standard_normal((64, 40))).to("cuda", tdtype)
    bias = (torch.from_numpy(rng.standard_normal(40)).to("cuda", tdtype)
            if "bias" in epilogue else None)
    pre = a.double().cpu().numpy() @ b.double().cpu().numpy()
    if bias is not None:
        pre = pre + bias.double().cpu().numpy()
    expected = {"bias": pre, "relu": np.maximum(pre, 0), "gelu": gelu(pre)}[
        epilogue.split("_")[0]]
    result = linalg.matmul(a, b, epilogue=epilogue, bias=bias)
    assert_close_products(result.double().cpu().numpy(), expected, dtype, 64)


@pytest.mark.parametrize("with_bias", [False, True])
def test_aux_and_backward(cp, with_bias):
    rng = np.random.default_rng()
    m, k, n = 37, 24, 130  # n: neither a multiple of 8 nor of 128
    a, b = random(rng, (2, m, k), "float32"), random(rng, (k, n), "float32")
    g = random(rng, (2, m, k), "float32")
    bias = random(rng, (n,), "float32") if with_bias else None
    gbias = None if bias is None else cp.asarray(bias)
    pre = oracle(a) @ oracle(b) + (0 if bias is None else oracle(bias))
    tol = 8 * PRODUCT_EPS["float32"] * np.sqrt(k) * np.abs(pre).max()
    suffix = "_bias" if with_bias else ""
    ga, gb, gg = cp.asarray(a), cp.asarray(b), cp.asarray(g)
    d, mask = linalg.matmul(ga, gb, epilogue="relu_aux" + suffix, bias=gbias)
    assert mask.dtype == np.uint8 and mask.shape == (2, m, 32)
    assert_close_products(cp.asnumpy(d), np.maximum(pre, 0), "float32", k)
    bits = relu_mask(cp.asnumpy(mask), n)
    clear = np.abs(pre) > tol  # (signs of values within rounding of 0 may differ)
    np.testing.assert_array_equal(bits[clear], (pre > 0)[clear])
    d, aux = linalg.matmul(ga, gb, epilogue="gelu_aux" + suffix, bias=gbias)
    assert_close_products(cp.asnumpy(d), gelu(pre), "float32", k)
    assert aux.shape == (2, m, n)
    assert_close_products(cp.asnumpy(aux), pre, "float32", k)
    grad = oracle(g) @ oracle(b)
    assert_close_products(cp.asnumpy(linalg.matmul(gg, gb, epilogue="drelu", aux=mask)),
                          grad * bits, "float32", k)
    dgelu = grad * gelu_derivative(oracle(cp.asnumpy(aux)))
    assert_close_products(cp.asnumpy(linalg.matmul(gg, gb, epilogue="dgelu", aux=aux)), dgelu,
                          "float32", k)
    d, db = linalg.matmul(gg, gb, epilogue="dgelu_bgrad", aux=aux)
    assert_close_products(cp.asnumpy(d), dgelu, "float32", k)
    assert_close_products(cp.asnumpy(db), dgelu.sum(axis=-2), "float32", k * m)
    d, db = linalg.matmul(gg, gb, epilogue="drelu_bgrad", aux=mask)
    assert_close_products(cp.asnumpy(db), (grad * bits).sum(axis=-2), "float32", k * m)


def _package(request, package):
    """``(to_device, to_host, array type)`` of an array package of the GPU tests."""
    if package == "cupy":
        cp = request.getfixturevalue("cp")
        return cp.asarray, cp.asnumpy, cp.ndarray
    if package == "torch":
        torch = request.getfixturevalue("torch_cuda")
        return (lambda x: torch.from_numpy(np.ascontiguousarray(x)).cuda(),
                lambda x: x.cpu().numpy(), torch.Tensor)
    if package == "numba":
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        cuda = request.getfixturevalue("numba_cuda")
        return (lambda x: cuda.to_device(np.ascontiguousarray(x)), lambda x: x.copy_to_host(),
                DeviceNDArray)
    jax = request.getfixturevalue("jax_gpu")
    return jax.numpy.asarray, np.asarray, jax.Array


@pytest.mark.parametrize("package", ["cupy", "torch", "jax", "numba"])
def test_every_epilogue_in_every_package(request, package):
    # the forward, auxiliary and backward epilogues on each package's arrays, against their
    # formulas in float64; results in the caller's package
    put, get, kind = _package(request, package)
    rng = np.random.default_rng()
    m, k, n = 19, 24, 40
    a, b, g = (random(rng, (m, k), "float32"), random(rng, (k, n), "float32"),
               random(rng, (m, k), "float32"))
    bias = random(rng, (n,), "float32")
    pre = oracle(a) @ oracle(b) + bias
    grad = oracle(g) @ oracle(b)
    ga, gb, gg, gbias = put(a), put(b), put(g), put(bias)
    for name, expected in [("bias", pre), ("relu_bias", np.maximum(pre, 0)),
                           ("gelu_bias", gelu(pre))]:
        result = linalg.matmul(ga, gb, epilogue=name, bias=gbias)
        assert isinstance(result, kind)
        assert_close_products(get(result), expected, "float32", k)
    d, mask = linalg.matmul(ga, gb, epilogue="relu_aux_bias", bias=gbias)
    assert isinstance(d, kind) and isinstance(mask, kind)
    assert_close_products(get(d), np.maximum(pre, 0), "float32", k)
    bits = relu_mask(get(mask), n)
    d, aux = linalg.matmul(ga, gb, epilogue="gelu_aux_bias", bias=gbias)
    assert_close_products(get(d), gelu(pre), "float32", k)
    assert_close_products(get(aux), pre, "float32", k)
    assert_close_products(get(linalg.matmul(gg, gb, epilogue="drelu", aux=mask)), grad * bits,
                          "float32", k)
    dgelu = grad * gelu_derivative(oracle(get(aux)))
    d, db = linalg.matmul(gg, gb, epilogue="dgelu_bgrad", aux=aux)
    assert_close_products(get(d), dgelu, "float32", k)
    assert_close_products(get(db), dgelu.sum(axis=-2), "float32", k * m)
    d, db = linalg.matmul(gg, gb, epilogue="drelu_bgrad", aux=mask)
    assert_close_products(get(db), (grad * bits).sum(axis=-2), "float32", k * m)
    d, da = linalg.matmul(ga, gb, epilogue="bgrada")
    assert_close_products(get(da), oracle(a).sum(axis=-1), "float32", k)
    d, db = linalg.matmul(ga, gb, epilogue="bgradb")
    assert_close_products(get(db), oracle(b).sum(axis=-2), "float32", k)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_products_take_no_epilogue(cp, dtype):
    # cuBLASLt has none for them: refused before it is asked, as on the CPU path
    from accelmath.errors import UnsupportedDTypeError

    rng = np.random.default_rng()
    ga, gb = cp.asarray(random(rng, (33, 20), dtype)), cp.asarray(random(rng, (20, 17), dtype))
    for epilogue, bias in (("bias", cp.asarray(random(rng, (17,), dtype))), ("bgrada", None),
                           ("bgradb", None)):
        with pytest.raises(UnsupportedDTypeError, match=f"epilogue '{epilogue}' takes real"):
            linalg.matmul(ga, gb, epilogue=epilogue, bias=bias)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("a_order, b_order", [("C", "C"), ("F", "C"), ("C", "F"), ("F", "F")])
def test_bias_gradients(cp, dtype, a_order, b_order):
    # cuBLASLt takes each bias gradient for one layout of its operand: the others are copied
    rng = np.random.default_rng()
    a, b = random(rng, (48, 40), dtype), random(rng, (40, 24), dtype)
    ga, gb = cp.asarray(a, order=a_order), cp.asarray(b, order=b_order)
    d, da = linalg.matmul(ga, gb, epilogue="bgrada")
    assert_close_products(cp.asnumpy(d), oracle(a) @ oracle(b), dtype, 40)
    assert_close_products(cp.asnumpy(da), oracle(a).sum(axis=-1), dtype, 40)
    d, db = linalg.matmul(ga, gb, epilogue="bgradb")
    assert_close_products(cp.asnumpy(d), oracle(a) @ oracle(b), dtype, 40)
    assert_close_products(cp.asnumpy(db), oracle(b).sum(axis=-2), dtype, 40)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_strided_out(cp, dtype):
    # an out= whose strides no cuBLASLt layout takes: written through scratch space
    rng = np.random.default_rng()
    a, b = random(rng, (3, 6, 5), dtype), random(rng, (5, 7), dtype)
    base = cp.zeros((3, 6, 14), dtype)
    out = base[:, :, ::2]
    assert linalg.matmul(cp.asarray(a), cp.asarray(b), out=out) is out
    assert_close_products(cp.asnumpy(out), oracle(a) @ oracle(b), dtype, 5)
    assert not cp.asnumpy(base[:, :, 1::2]).any()


def test_tf32_only_on_opt_in(cp):
    rng = np.random.default_rng()
    a, b = random(rng, (256, 1024), "float32"), random(rng, (1024, 256), "float32")
    expected = oracle(a) @ oracle(b)
    ga, gb = cp.asarray(a), cp.asarray(b)
    strict = np.abs(cp.asnumpy(linalg.matmul(ga, gb)) - expected).max()
    tf32 = np.abs(cp.asnumpy(linalg.matmul(ga, gb, allow_tf32=True)) - expected).max()
    assert tf32 < 1e-2 * np.abs(expected).max()
    assert strict < tf32 / 20  # float32 products stay float32 unless TF32 is asked for


def test_out_and_stream(cp):
    rng = np.random.default_rng()
    a, b = random(rng, (31, 17), "float64"), random(rng, (17, 9), "float64")
    out = cp.empty((31, 9))
    assert linalg.matmul(cp.asarray(a), cp.asarray(b), out=out) is out
    assert_close_products(cp.asnumpy(out), a @ b, "float64", 17)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        ga, gb = cp.asarray(a), cp.asarray(b)
    stream.synchronize()
    result = linalg.matmul(ga, gb, stream=stream)
    stream.synchronize()
    assert_close_products(cp.asnumpy(result), a @ b, "float64", 17)


def test_host_operands_on_the_gpu(cp):
    rng = np.random.default_rng()
    a, b = random(rng, (5, 8), "float32"), random(rng, (8, 3), "float32")
    result = linalg.matmul(a, b, execution="cuda")
    assert isinstance(result, np.ndarray)
    assert_close_products(result, oracle(a) @ oracle(b), "float32", 8)


def test_plan_execute_autotune_and_store(cp):
    rng = np.random.default_rng()
    a, b = random(rng, (512, 384), "float16"), random(rng, (384, 640), "float16")
    ga, gb = cp.asarray(a), cp.asarray(b)
    with linalg.Matmul(ga, gb, epilogue="relu") as plan:
        choice = plan.autotune(iterations=2)
        assert_close_products(cp.asnumpy(plan.execute()), np.maximum(oracle(a) @ oracle(b), 0),
                              "float16", 384)
        a2, b2 = random(rng, (512, 384), "float16"), random(rng, (384, 640), "float16")
        result = plan.execute(cp.asarray(a2), cp.asarray(b2))  # other operands, same layout
        assert_close_products(cp.asnumpy(result), np.maximum(oracle(a2) @ oracle(b2), 0),
                              "float16", 384)
        if plan.candidates > 1:
            assert choice is not None and choice.index == plan.algorithm
            # a second plan of the same product starts with the stored choice, in this
            # process and in the next
            with linalg.Matmul(ga, gb, epilogue="relu") as second:
                assert second._lt.stored and second.algorithm == plan.algorithm
            assert _in_a_new_process(
                "import cupy as cp\nfrom accelmath import linalg\n"
                "a, b = cp.ones((512, 384), 'float16'), cp.ones((384, 640), 'float16')\n"
                "p = linalg.Matmul(a, b, epilogue='relu')\n"
                "print(p._lt.stored, p.algorithm)") == f"True {plan.algorithm}"
    layout = linalg.Matmul(a_shape=(512, 384), b_shape=(384, 640), dtype="float16",
                           package="cupy", device=0)
    assert_close_products(cp.asnumpy(layout.execute(ga, gb)), oracle(a) @ oracle(b), "float16", 384)
    with pytest.raises(ValueError, match="made for a layout"):
        layout.execute()
    layout.free()


def _in_a_new_process(code):
    """What ``code`` prints, run in a new Python process (the same store)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_heuristic_answer_is_kept(cp, monkeypatch):
    # a second plan of the same product (in this process or the next) reads the heuristic's
    # candidates from the store instead of asking cuBLASLt again
    from accelmath.linalg._matmul import cublaslt as _matmul_cublaslt

    rng = np.random.default_rng()
    a, b = random(rng, (33, 19), "float64"), random(rng, (19, 45), "float64")
    linalg.Matmul(cp.asarray(a), cp.asarray(b)).free()

    def asked(*args):
        raise AssertionError("the heuristic was asked again")

    monkeypatch.setattr(_matmul_cublaslt.LtPlan, "_ask_heuristic", asked)
    with linalg.Matmul(cp.asarray(a), cp.asarray(b)) as plan:
        assert_close_products(cp.asnumpy(plan.execute()), a @ b, "float64", 19)


# --- the call memo of the stateless matmul: repeated calls skip the checks --------------------

def _memo_cases_cupy(cp, rng):
    """Calls of many layouts and keywords, each ``() -> [(result, expected, dtype, k)]`` on
    fresh data: run in turns, each layout is first checked and remembered, then recalled."""

    def dev(x):
        return cp.asarray(x)

    def get(x):
        return cp.asnumpy(x)

    def plain(dtype, a_shape, b_shape):
        def case():
            a, b = random(rng, a_shape, dtype), random(rng, b_shape, dtype)
            return [(get(linalg.matmul(dev(a), dev(b))), oracle(a) @ oracle(b), dtype,
                     a_shape[-1])]
        return case

    def transposed():
        a, b = random(rng, (40, 24), "float32"), random(rng, (17, 40), "float32")
        return [(get(linalg.matmul(dev(a).T, dev(b).T)), oracle(a).T @ oracle(b).T,
                 "float32", 40)]

    def strided():
        a, b = random(rng, (9, 6), "float64"), random(rng, (6, 14), "float64")
        return [(get(linalg.matmul(dev(a), dev(b)[:, ::2])), oracle(a) @ oracle(b)[:, ::2],
                 "float64", 6)]

    def alpha_beta_c(dtype, alpha, beta):
        def case():
            a, b = random(rng, (2, 7, 5), dtype), random(rng, (5, 6), dtype)
            c = random(rng, (2, 7, 6), dtype)
            expected = alpha * (oracle(a) @ oracle(b)) + beta * oracle(c)
            if not dtype.startswith("complex"):
                expected = expected.real
            result = linalg.matmul(dev(a), dev(b), dev(c), alpha=alpha, beta=beta)
            return [(get(result), expected, dtype, 5)]
        return case

    def beta_zero_ignores_c():
        a, b = random(rng, (6, 5), "float32"), random(rng, (5, 4), "float32")
        c = cp.full((6, 4), cp.nan, "float32")
        return [(get(linalg.matmul(dev(a), dev(b), c, beta=0)), oracle(a) @ oracle(b), "float32",
                 5)]

    def into_out(strided_out):
        def case():
            a, b = random(rng, (3, 6, 5), "float64"), random(rng, (5, 7), "float64")
            out = cp.zeros((3, 6, 14))[:, :, ::2] if strided_out else cp.zeros((3, 6, 7))
            assert linalg.matmul(dev(a), dev(b), out=out) is out
            return [(get(out), oracle(a) @ oracle(b), "float64", 5)]
        return case

    def bias_epilogue(epilogue):
        def case():
            a, b = random(rng, (2, 33, 24), "float32"), random(rng, (24, 40), "float32")
            bias = random(rng, (40,), "float32")
            pre = oracle(a) @ oracle(b) + oracle(bias)
            expected = {"bias": pre, "relu_bias": np.maximum(pre, 0),
                        "gelu_bias": gelu(pre)}[epilogue]
            result = linalg.matmul(dev(a), dev(b), epilogue=epilogue, bias=dev(bias))
            return [(get(result), expected, "float32", 24)]
        return case

    def gelu_aux():
        a, b = random(rng, (2, 9, 16), "float32"), random(rng, (16, 130), "float32")
        bias = random(rng, (130,), "float32")
        pre = oracle(a) @ oracle(b) + oracle(bias)
        d, aux = linalg.matmul(dev(a), dev(b), epilogue="gelu_aux_bias", bias=dev(bias))
        return [(get(d), gelu(pre), "float32", 16), (get(aux), pre, "float32", 16)]

    def bias_gradient():
        a, b = random(rng, (12, 10), "float64"), random(rng, (10, 8), "float64")
        d, da = linalg.matmul(dev(a), dev(b), epilogue="bgrada")
        return [(get(d), oracle(a) @ oracle(b), "float64", 10),
                (get(da), oracle(a).sum(axis=-1), "float64", 10)]

    def on_stream():
        a, b = random(rng, (31, 17), "float64"), random(rng, (17, 9), "float64")
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            ga, gb = dev(a), dev(b)
        stream.synchronize()
        result = linalg.matmul(ga, gb, stream=stream)
        stream.synchronize()
        return [(get(result), oracle(a) @ oracle(b), "float64", 17)]

    def misaligned(offset):
        # a and b at ``offset`` float32 elements past a 256-byte boundary
        def case():
            a, b = random(rng, (8, 12), "float32"), random(rng, (12, 8), "float32")
            base_a, base_b = cp.empty(96 + offset, "float32"), cp.empty(96 + offset, "float32")
            ga = base_a[offset:].reshape(8, 12)
            gb = base_b[offset:].reshape(12, 8)
            ga[...], gb[...] = dev(a), dev(b)
            return [(get(linalg.matmul(ga, gb)), oracle(a) @ oracle(b), "float32", 12)]
        return case

    def zero_inner():
        a, b = cp.empty((4, 0), "float32"), cp.empty((0, 3), "float32")
        return [(get(linalg.matmul(a, b)), np.zeros((4, 3)), "float32", 1)]

    return [plain("float32", (64, 64), (64, 64)), plain("float64", (33, 17), (17, 45)),
            plain("float16", (16, 40), (40, 24)), plain("complex64", (5, 6), (6, 7)),
            plain("float32", (4, 1, 3, 5), (2, 5, 1)), plain("float64", (6,), (6,)),
            plain("float32", (7,), (7, 3)), transposed, strided,
            alpha_beta_c("float64", 0.5, -2.0), alpha_beta_c("float64", 1.5, -2.0),
            alpha_beta_c("complex64", 0.5 + 1j, -2.0 - 0.5j), beta_zero_ignores_c,
            into_out(False), into_out(True), bias_epilogue("bias"),
            bias_epilogue("relu_bias"), bias_epilogue("gelu_bias"), gelu_aux, bias_gradient,
            on_stream, misaligned(0), misaligned(1), misaligned(4), zero_inner]


def test_memo_cupy_calls_in_turns(cp):
    from accelmath.linalg import _memo as linalg_memo

    rng = np.random.default_rng()
    cases = _memo_cases_cupy(cp, rng)
    linalg_memo.dispatcher.clear_cache()
    for turn in range(3):
        for i in rng.permutation(len(cases)):
            for result, expected, dtype, k in cases[i]():
                assert_close_products(result, expected, dtype, k)
    assert linalg_memo.dispatcher._calls  # (calls were remembered)


def test_memo_after_plans_left_the_cache(cp):
    # plans evicted while the memo still names them: those calls are planned again
    from accelmath.linalg import _memo as linalg_memo

    rng = np.random.default_rng()
    cases = _memo_cases_cupy(cp, rng)[:6]
    linalg_memo.dispatcher.set_cache_limits(max_size=2)
    try:
        for turn in range(3):
            for case in cases:
                for result, expected, dtype, k in case():
                    assert_close_products(result, expected, dtype, k)
    finally:
        linalg_memo.dispatcher.set_cache_limits(max_size=64)


def test_memo_torch_calls_in_turns(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()

    def dev(x):
        return torch.from_numpy(x).cuda()

    def get(t):
        return t.resolve_conj().resolve_neg().cpu().numpy()

    def conj_transpose():
        x, y = random(rng, (6, 5), "complex128"), random(rng, (6, 9), "complex128")
        return [(get(linalg.matmul(dev(x).mH, dev(y))), x.conj().T @ y, "complex128", 6)]

    def conj_view():
        z, y = random(rng, (5, 6), "complex128"), random(rng, (6, 9), "complex128")
        return [(get(linalg.matmul(dev(z).conj(), dev(y))), z.conj() @ y, "complex128", 6)]

    def conj_c():
        a, b = random(rng, (4, 6), "complex64"), random(rng, (6, 3), "complex64")
        c = random(rng, (4, 3), "complex64")
        result = linalg.matmul(dev(a), dev(b), dev(c).conj(), beta=1.0)
        return [(get(result), oracle(a) @ oracle(b) + oracle(c).conj(), "complex64", 6)]

    def neg_view():
        z, b = random(rng, (5, 6), "complex128"), random(rng, (6, 3), "float64")
        a = dev(z).conj().imag  # a lazily negated view
        assert a.is_neg()
        return [(get(linalg.matmul(a, dev(b))), -z.imag @ b, "float64", 6)]

    def plain(dtype):
        def case():
            a = torch.from_numpy(rng.standard_normal((64, 48))).to("cuda", getattr(torch, dtype))
            b = torch.from_numpy(rng.standard_normal((48, 32))).to("cuda", getattr(torch, dtype))
            expected = a.double().cpu().numpy() @ b.double().cpu().numpy()
            return [(linalg.matmul(a, b).double().cpu().numpy(), expected, dtype, 48)]
        return case

    def into_out():
        a, b = random(rng, (8, 5), "float32"), random(rng, (5, 6), "float32")
        out = torch.empty(6, 8, device="cuda").T
        assert linalg.matmul(dev(a), dev(b), out=out) is out
        return [(get(out), oracle(a) @ oracle(b), "float32", 5)]

    def records_gradients():
        a, b = random(rng, (7, 4), "float32"), random(rng, (4, 3), "float32")
        ta = dev(a).requires_grad_()
        with torch.no_grad():
            result = linalg.matmul(ta, dev(b))
        return [(get(result), oracle(a) @ oracle(b), "float32", 4)]

    def bias_epilogue():
        a, b = random(rng, (2, 9, 16), "float32"), random(rng, (16, 24), "float32")
        bias = random(rng, (24,), "float32")
        result = linalg.matmul(dev(a), dev(b), epilogue="relu_bias", bias=dev(bias))
        return [(get(result), np.maximum(oracle(a) @ oracle(b) + oracle(bias), 0), "float32",
                 16)]

    cases = [conj_transpose, conj_view, conj_c, neg_view, plain("float32"),
             plain("bfloat16"), plain("float16"), into_out, records_gradients, bias_epilogue]
    for turn in range(3):
        for i in rng.permutation(len(cases)):
            for result, expected, dtype, k in cases[i]():
                assert_close_products(result, expected, dtype, k)


def test_memo_bad_calls_still_raise(cp, torch_cuda):
    from accelmath.errors import GradientError, InvalidArgumentError, UnsupportedDTypeError
    from accelmath.linalg import _memo as linalg_memo

    torch = torch_cuda
    rng = np.random.default_rng()
    a, b = random(rng, (8, 6), "float32"), random(rng, (6, 5), "float32")
    bias = random(rng, (5,), "float32")
    ga, gb, gbias = cp.asarray(a), cp.asarray(b), cp.asarray(bias)

    def bad_calls():
        with pytest.raises(InvalidArgumentError, match="bias"):
            linalg.matmul(ga, gb, epilogue="bias", bias=cp.ones(6, "float32"))
        with pytest.raises(InvalidArgumentError, match="bias"):
            linalg.matmul(ga, gb, epilogue="bias")
        with pytest.raises(InvalidArgumentError, match="bias"):
            linalg.matmul(ga, gb, bias=gbias)
        with pytest.raises(InvalidArgumentError, match="execution"):
            linalg.matmul(ga, gb, execution="cpu")
        with pytest.raises(InvalidArgumentError, match="execution"):
            linalg.matmul(ga, gb, execution="gpu")
        with pytest.raises(UnsupportedDTypeError, match="Cannot cast"):
            linalg.matmul(ga, gb, out=cp.empty((8, 5), "float64"))
        with pytest.raises(InvalidArgumentError, match="out has"):
            linalg.matmul(ga, gb, out=cp.empty((8, 6), "float32"))
        with pytest.raises(InvalidArgumentError, match="alpha"):
            linalg.matmul(ga, gb, alpha=True)
        with pytest.raises(InvalidArgumentError, match="alpha"):
            linalg.matmul(ga, gb, alpha=1j)
        with pytest.raises(InvalidArgumentError, match="allow_tf32"):
            linalg.matmul(ga, gb, allow_tf32=1)
        with pytest.raises(UnsupportedDTypeError):
            linalg.matmul(ga, gb.astype("float64"))
        with pytest.raises(ValueError, match="core dimension"):
            linalg.matmul(ga, ga)
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        with pytest.raises(GradientError):
            linalg.matmul(ta.clone().requires_grad_(), tb)
        with pytest.raises(TypeError) as caught:
            linalg.matmul(ga, gb, stream="not a stream")
        return str(caught.value)

    linalg_memo.dispatcher.clear_cache()
    first = bad_calls()  # nothing remembered yet
    assert not linalg_memo.dispatcher._calls
    for _ in range(2):
        assert_close_products(cp.asnumpy(linalg.matmul(ga, gb)), oracle(a) @ oracle(b),
                              "float32", 6)
        assert_close_products(cp.asnumpy(linalg.matmul(ga, gb, epilogue="bias", bias=gbias)),
                              oracle(a) @ oracle(b) + oracle(bias), "float32", 6)
        assert_close_products(cp.asnumpy(linalg.matmul(ga, gb, out=cp.empty((8, 5), "float32"))),
                              oracle(a) @ oracle(b), "float32", 6)
        with torch.no_grad():
            ta = torch.from_numpy(a).cuda().requires_grad_()
            linalg.matmul(ta, torch.from_numpy(b).cuda())
        remembered = len(linalg_memo.dispatcher._calls)
        assert bad_calls() == first  # the same errors, the memo in place
        assert len(linalg_memo.dispatcher._calls) == remembered


@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_plan_execute_through_the_call_shim(cp, package):
    # a plan whose product is one cuBLASLt call runs its execute in C (where the call shim
    # is built): bound operands, operands given, out= and new results, c, after autotune
    from accelmath._core import hostcall

    if package == "torch":
        torch = pytest.importorskip("torch")
        to_device = lambda x: torch.from_dlpack(cp.asarray(x))  # noqa: E731
        to_host = lambda x: cp.asnumpy(cp.from_dlpack(x))  # noqa: E731
    else:
        to_device, to_host = cp.asarray, cp.asnumpy
    rng = np.random.default_rng()
    a, b, c = (random(rng, shape, "float32") for shape in ((40, 24), (24, 33), (40, 33)))
    ga, gb, gc = to_device(a), to_device(b), to_device(c)
    expected = oracle(a) @ oracle(b)
    with linalg.Matmul(ga, gb) as plan, linalg.Matmul(ga, gb, gc, alpha=2, beta=-1) as with_c:
        if hostcall.status().startswith("C call shim"):
            assert type(plan.execute).__name__ == "Launch"
            assert type(with_c.execute).__name__ == "Launch"
        first, second = plan.execute(), plan.execute()
        assert first is not second and type(first) is type(ga)
        assert_close_products(to_host(first), expected, "float32", 24)
        assert_close_products(to_host(second), expected, "float32", 24)
        out = to_device(np.zeros((40, 33), "float32"))
        assert plan.execute(out=out) is out
        assert_close_products(to_host(out), expected, "float32", 24)
        a2, b2 = random(rng, (40, 24), "float32"), random(rng, (24, 33), "float32")
        assert_close_products(to_host(plan.execute(to_device(a2), to_device(b2))),
                              oracle(a2) @ oracle(b2), "float32", 24)
        assert_close_products(to_host(plan.execute(None, to_device(b2))), oracle(a) @ oracle(b2),
                              "float32", 24)
        plan.autotune(iterations=2)
        assert_close_products(to_host(plan.execute()), expected, "float32", 24)
        assert_close_products(to_host(with_c.execute()), 2 * expected - oracle(c), "float32", 24)
        c2 = random(rng, (40, 33), "float32")
        assert_close_products(to_host(with_c.execute(ga, gb, to_device(c2))),
                              2 * expected - oracle(c2), "float32", 24)
        with pytest.raises(ValueError, match="does not match the"):
            plan.execute(to_device(random(rng, (24, 40), "float32")))
    with pytest.raises(Exception, match="freed"):
        plan.execute()


def test_the_stateless_product_is_a_cached_matmul_plan(cp):
    from accelmath._core import hostcall
    from accelmath.linalg import _memo as linalg_memo
    from accelmath.linalg._matmul.problem import call_key

    rng = np.random.default_rng()
    host = [rng.standard_normal(shape) for shape in ((33, 17), (17, 9), (33, 9))]
    a, b, c = (cp.asarray(x) for x in host)
    linalg.clear_cache()
    for alpha, beta in ((1, 0), (0.5, 0), (2.0, -1.0), (-3, 0.25)):
        for _ in range(2):  # planned, then recalled: each call with its own scalars
            args = (a, b, c) if beta else (a, b)
            result = linalg.matmul(*args, alpha=alpha, beta=beta)
            expected = alpha * host[0] @ host[1] + (beta * host[2] if beta else 0)
            assert_close_products(cp.asnumpy(result), expected, "float64", 17)
    key = call_key(a, b, None, None, None, None, 1, 0, None, "auto", False)
    plan = linalg_memo.dispatcher.recall(key.key)
    assert isinstance(plan, linalg.Matmul)
    if hostcall.status().startswith("C call shim"):
        assert type(plan.scaled(1, 0)).__name__ == "Launch"
    stream = cp.cuda.Stream()
    out = cp.empty((33, 9))
    assert linalg.matmul(a, b, out=out, stream=stream) is out
    stream.synchronize()
    assert_close_products(cp.asnumpy(out), host[0] @ host[1], "float64", 17)
    linalg.clear_cache()

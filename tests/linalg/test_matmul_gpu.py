"""matmul and Matmul on cuBLASLt, for CuPy, torch and JAX arrays, against NumPy in float64:
shapes with 1, odd and non-multiple-of-8 sizes, batched and broadcast, transposed views,
torch's lazily conjugated views, alpha/beta/c, every epilogue, TF32 only on opt-in, out=,
stream=, autotuning and the stored choice, Matmul.execute on other operands."""

import numpy as np
import pytest

from accelmath import linalg
from accelmath.linalg._epilogue import gelu, gelu_derivative, relu_mask

pytestmark = pytest.mark.gpu

EPS = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-14,
       "complex64": 2e-6, "complex128": 1e-14}
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


def close(result, expected, dtype, k):
    result = oracle(np.asarray(result))
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=0,
                               atol=8 * EPS[dtype] * np.sqrt(max(k, 1)) * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_cupy_products(cp, dtype, a_shape, b_shape):
    rng = np.random.default_rng()
    a, b = random(rng, a_shape, dtype), random(rng, b_shape, dtype)
    result = linalg.matmul(cp.asarray(a), cp.asarray(b))
    assert isinstance(result, cp.ndarray) and result.dtype == dtype
    close(cp.asnumpy(result), oracle(a) @ oracle(b), dtype, a_shape[-1])


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
    close(cp.asnumpy(result), expected, dtype, 6)


def test_torch_dtypes_broadcast_and_conj(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()
    for dtype in ("float16", "bfloat16", "float32"):
        a = torch.from_numpy(rng.standard_normal((4, 1, 5, 6))).to("cuda", getattr(torch, dtype))
        b = torch.from_numpy(rng.standard_normal((3, 6, 7))).to("cuda", getattr(torch, dtype))
        result = linalg.matmul(a, b)
        assert isinstance(result, torch.Tensor) and result.dtype == a.dtype
        expected = a.double().cpu().numpy() @ b.double().cpu().numpy()
        close(result.double().cpu().numpy(), expected, dtype, 6)
    x = random(rng, (6, 5), "complex128")
    y = random(rng, (6, 9), "complex128")
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    # x.mH: a lazily conjugated transpose, read with cuBLASLt's C; x.conj(): copied
    close(linalg.matmul(tx.mH, ty).cpu().numpy(), x.conj().T @ y, "complex128", 6)
    z = random(rng, (5, 6), "complex128")
    close(linalg.matmul(torch.from_numpy(z).cuda().conj(), ty).cpu().numpy(),
          z.conj() @ y, "complex128", 6)


def test_jax(jax_gpu):
    import jax.numpy as jnp

    rng = np.random.default_rng()
    a, b = random(rng, (3, 9, 17), "float32"), random(rng, (17, 5), "float32")
    bias = random(rng, (5,), "float32")
    result = linalg.matmul(jnp.asarray(a), jnp.asarray(b), epilogue="relu_bias",
                           bias=jnp.asarray(bias))
    assert isinstance(result, jax_gpu.Array)
    close(np.asarray(result), np.maximum(oracle(a) @ oracle(b) + bias, 0), "float32", 17)


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
    close(result.double().cpu().numpy(), expected, dtype, 64)


@pytest.mark.parametrize("with_bias", [False, True])
def test_aux_and_backward(cp, with_bias):
    rng = np.random.default_rng()
    m, k, n = 37, 24, 130  # n: neither a multiple of 8 nor of 128
    a, b = random(rng, (2, m, k), "float32"), random(rng, (k, n), "float32")
    g = random(rng, (2, m, k), "float32")
    bias = random(rng, (n,), "float32") if with_bias else None
    gbias = None if bias is None else cp.asarray(bias)
    pre = oracle(a) @ oracle(b) + (0 if bias is None else oracle(bias))
    tol = 8 * EPS["float32"] * np.sqrt(k) * np.abs(pre).max()
    suffix = "_bias" if with_bias else ""
    ga, gb, gg = cp.asarray(a), cp.asarray(b), cp.asarray(g)
    d, mask = linalg.matmul(ga, gb, epilogue="relu_aux" + suffix, bias=gbias)
    assert mask.dtype == np.uint8 and mask.shape == (2, m, 32)
    close(cp.asnumpy(d), np.maximum(pre, 0), "float32", k)
    bits = relu_mask(cp.asnumpy(mask), n)
    clear = np.abs(pre) > tol  # (signs of values within rounding of 0 may differ)
    np.testing.assert_array_equal(bits[clear], (pre > 0)[clear])
    d, aux = linalg.matmul(ga, gb, epilogue="gelu_aux" + suffix, bias=gbias)
    close(cp.asnumpy(d), gelu(pre), "float32", k)
    assert aux.shape == (2, m, n)
    close(cp.asnumpy(aux), pre, "float32", k)
    grad = oracle(g) @ oracle(b)
    close(cp.asnumpy(linalg.matmul(gg, gb, epilogue="drelu", aux=mask)), grad * bits,
          "float32", k)
    dgelu = grad * gelu_derivative(oracle(cp.asnumpy(aux)))
    close(cp.asnumpy(linalg.matmul(gg, gb, epilogue="dgelu", aux=aux)), dgelu, "float32", k)
    d, db = linalg.matmul(gg, gb, epilogue="dgelu_bgrad", aux=aux)
    close(cp.asnumpy(d), dgelu, "float32", k)
    close(cp.asnumpy(db), dgelu.sum(axis=-2), "float32", k * m)
    d, db = linalg.matmul(gg, gb, epilogue="drelu_bgrad", aux=mask)
    close(cp.asnumpy(db), (grad * bits).sum(axis=-2), "float32", k * m)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("a_order, b_order", [("C", "C"), ("F", "C"), ("C", "F"), ("F", "F")])
def test_bias_gradients(cp, dtype, a_order, b_order):
    # cuBLASLt takes each bias gradient for one layout of its operand: the others are copied
    rng = np.random.default_rng()
    a, b = random(rng, (48, 40), dtype), random(rng, (40, 24), dtype)
    ga, gb = cp.asarray(a, order=a_order), cp.asarray(b, order=b_order)
    d, da = linalg.matmul(ga, gb, epilogue="bgrada")
    close(cp.asnumpy(d), oracle(a) @ oracle(b), dtype, 40)
    close(cp.asnumpy(da), oracle(a).sum(axis=-1), dtype, 40)
    d, db = linalg.matmul(ga, gb, epilogue="bgradb")
    close(cp.asnumpy(d), oracle(a) @ oracle(b), dtype, 40)
    close(cp.asnumpy(db), oracle(b).sum(axis=-2), dtype, 40)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_strided_out(cp, dtype):
    # an out= whose strides no cuBLASLt layout takes: written through scratch space
    rng = np.random.default_rng()
    a, b = random(rng, (3, 6, 5), dtype), random(rng, (5, 7), dtype)
    base = cp.zeros((3, 6, 14), dtype)
    out = base[:, :, ::2]
    assert linalg.matmul(cp.asarray(a), cp.asarray(b), out=out) is out
    close(cp.asnumpy(out), oracle(a) @ oracle(b), dtype, 5)
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
    close(cp.asnumpy(out), a @ b, "float64", 17)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        ga, gb = cp.asarray(a), cp.asarray(b)
    stream.synchronize()
    result = linalg.matmul(ga, gb, stream=stream)
    stream.synchronize()
    close(cp.asnumpy(result), a @ b, "float64", 17)


def test_host_operands_on_the_gpu(cp):
    rng = np.random.default_rng()
    a, b = random(rng, (5, 8), "float32"), random(rng, (8, 3), "float32")
    result = linalg.matmul(a, b, execution="cuda")
    assert isinstance(result, np.ndarray)
    close(result, oracle(a) @ oracle(b), "float32", 8)


def test_plan_execute_autotune_and_store(cp):
    rng = np.random.default_rng()
    a, b = random(rng, (512, 384), "float16"), random(rng, (384, 640), "float16")
    ga, gb = cp.asarray(a), cp.asarray(b)
    with linalg.Matmul(ga, gb, epilogue="relu") as plan:
        choice = plan.autotune(iterations=2)
        close(cp.asnumpy(plan.execute()), np.maximum(oracle(a) @ oracle(b), 0), "float16", 384)
        a2, b2 = random(rng, (512, 384), "float16"), random(rng, (384, 640), "float16")
        result = plan.execute(cp.asarray(a2), cp.asarray(b2))  # other operands, same layout
        close(cp.asnumpy(result), np.maximum(oracle(a2) @ oracle(b2), 0), "float16", 384)
        if plan.candidates > 1:
            assert choice is not None and choice.index == plan.algorithm
            # a second plan of the same product starts with the stored choice
            with linalg.Matmul(ga, gb, epilogue="relu") as second:
                assert second._lt.stored and second.algorithm == plan.algorithm
    layout = linalg.Matmul(a_shape=(512, 384), b_shape=(384, 640), dtype="float16",
                           package="cupy", device=0)
    close(cp.asnumpy(layout.execute(ga, gb)), oracle(a) @ oracle(b), "float16", 384)
    with pytest.raises(ValueError, match="made for a layout"):
        layout.execute()
    layout.free()


def test_the_heuristic_answer_is_kept(cp, monkeypatch):
    # a second plan of the same product (in this process or the next) reads the heuristic's
    # candidates from the store instead of asking cuBLASLt again
    from accelmath.linalg import _matmul_cublaslt

    rng = np.random.default_rng()
    a, b = random(rng, (33, 19), "float64"), random(rng, (19, 45), "float64")
    linalg.Matmul(cp.asarray(a), cp.asarray(b)).free()

    def asked(*args):
        raise AssertionError("the heuristic was asked again")

    monkeypatch.setattr(_matmul_cublaslt.LtPlan, "_ask_heuristic", asked)
    with linalg.Matmul(cp.asarray(a), cp.asarray(b)) as plan:
        close(cp.asnumpy(plan.execute()), a @ b, "float64", 19)

"""matmul and Matmul on the CPU path, against NumPy in float64: every dtype NumPy holds, every
epilogue (auxiliary outputs and gradients against their formulas), 1-D, batched and
broadcast operands, alpha/beta/c, layouts from operands and from layouts, lifetime."""

import numpy as np
import pytest

from accelmath import linalg
from accelmath.errors import StateError
from accelmath.linalg._epilogue import gelu, gelu_derivative, relu_mask

DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
# relative tolerance per unit of sqrt(k)
EPS = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-14,
       "complex64": 2e-6, "complex128": 1e-14}


def random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def close(result, expected, dtype, k):
    result = np.asarray(result).astype(np.complex128 if dtype.startswith("complex")
                                       else np.float64)
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    tol = 8 * EPS[dtype] * np.sqrt(max(k, 1)) * scale
    assert result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=0, atol=tol)


SHAPES = [((3, 5), (5, 4)), ((1, 1), (1, 1)), ((7,), (7, 3)), ((4, 7), (7,)), ((6,), (6,)),
          ((2, 3, 5), (5, 9)), ((4, 1, 3, 5), (2, 5, 1)), ((9, 13), (2, 3, 13, 5))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_products(dtype, a_shape, b_shape):
    rng = np.random.default_rng()
    a, b = random(rng, a_shape, dtype), random(rng, b_shape, dtype)
    expected = np.matmul(a.astype(np.complex128), b.astype(np.complex128))
    if not dtype.startswith("complex"):
        expected = expected.real
    result = linalg.matmul(a, b)
    assert result.dtype == dtype
    close(result, expected, dtype, a_shape[-1])


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_views_alpha_beta_c(dtype):
    rng = np.random.default_rng()
    a = random(rng, (2, 6, 5), dtype).transpose(0, 2, 1)  # (2, 5, 6), F-ordered matrices
    b = random(rng, (6, 8), dtype)[:, ::2]                 # strided
    c = random(rng, (2, 5, 4), dtype)
    alpha, beta = (0.5, -2.0) if dtype == "float32" else (0.5 + 1j, -2.0)
    expected = alpha * (a.astype(complex) @ b.astype(complex)) + beta * c
    if dtype == "float32":
        expected = expected.real
    close(linalg.matmul(a, b, c, alpha=alpha, beta=beta), expected, dtype, 6)


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng()
    a = rng.standard_normal((5, 33)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((33, 3)).astype(ml_dtypes.bfloat16)
    result = linalg.matmul(a, b)
    assert result.dtype == ml_dtypes.bfloat16
    close(result, a.astype(np.float64) @ b.astype(np.float64), "bfloat16", 33)


def test_torch_cpu_and_conj_view():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    x = random(rng, (4, 3), "complex128")
    b = random(rng, (4, 5), "complex128")
    t = torch.from_numpy(x)
    result = linalg.matmul(t.mH, torch.from_numpy(b))  # a lazily conjugated transpose
    assert isinstance(result, torch.Tensor)
    close(result.numpy(), x.conj().T @ b, "complex128", 4)


EPILOGUES = ["bias", "relu", "gelu", "relu_bias", "gelu_bias"]


def _pre(a, b, bias=None):
    pre = a.astype(np.float64) @ b.astype(np.float64)
    return pre if bias is None else pre + bias


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("epilogue", EPILOGUES)
def test_forward_epilogues(dtype, epilogue):
    rng = np.random.default_rng()
    a, b = random(rng, (3, 7, 11), dtype), random(rng, (11, 13), dtype)
    bias = random(rng, (13,), dtype) if "bias" in epilogue else None
    pre = _pre(a, b, None if bias is None else bias.astype(np.float64))
    expected = {"bias": pre, "relu": np.maximum(pre, 0), "gelu": gelu(pre)}[
        epilogue.split("_")[0]]
    close(linalg.matmul(a, b, epilogue=epilogue, bias=bias), expected, dtype, 11)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_aux_and_backward(dtype, with_bias):
    rng = np.random.default_rng()
    a, b = random(rng, (2, 5, 9), dtype), random(rng, (9, 130), dtype)
    g = random(rng, (2, 5, 9), dtype)
    bias = random(rng, (130,), dtype) if with_bias else None
    suffix = "_bias" if with_bias else ""
    pre = _pre(a, b, None if bias is None else bias.astype(np.float64))
    d, mask = linalg.matmul(a, b, epilogue="relu_aux" + suffix, bias=bias)
    assert mask.dtype == np.uint8 and mask.shape == (2, 5, 32)
    close(d, np.maximum(pre, 0), dtype, 9)
    np.testing.assert_array_equal(relu_mask(mask, 130), pre > 0)
    d, aux = linalg.matmul(a, b, epilogue="gelu_aux" + suffix, bias=bias)
    close(d, gelu(pre), dtype, 9)
    close(aux, pre, dtype, 9)
    # backward: the gradient g @ b through the activation, and its bias gradient
    grad = _pre(g, b)
    close(linalg.matmul(g, b, epilogue="drelu", aux=mask), grad * (pre > 0), dtype, 9)
    dgelu = grad * gelu_derivative(aux.astype(np.float64))
    close(linalg.matmul(g, b, epilogue="dgelu", aux=aux), dgelu, dtype, 9)
    d, db = linalg.matmul(g, b, epilogue="dgelu_bgrad", aux=aux)
    close(d, dgelu, dtype, 9)
    close(db, dgelu.sum(axis=-2), dtype, 9 * 5)
    d, db = linalg.matmul(g, b, epilogue="drelu_bgrad", aux=mask)
    close(db, (grad * (pre > 0)).sum(axis=-2), dtype, 9 * 5)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_bias_gradients(dtype):
    rng = np.random.default_rng()
    a, b = random(rng, (6, 10), dtype), random(rng, (10, 4), dtype)
    d, da = linalg.matmul(a, b, epilogue="bgrada")
    close(d, a.astype(complex) @ b if dtype.startswith("c") else _pre(a, b), dtype, 10)
    close(da, a.astype(np.complex128).sum(-1) if dtype.startswith("c")
          else a.astype(np.float64).sum(-1), dtype, 10)
    d, db = linalg.matmul(a, b, epilogue="bgradb")
    close(db, b.astype(np.complex128).sum(-2) if dtype.startswith("c")
          else b.astype(np.float64).sum(-2), dtype, 10)


def test_out():
    rng = np.random.default_rng()
    a, b = random(rng, (4, 3), "float64"), random(rng, (3, 5), "float64")
    out = np.empty((4, 5))
    assert linalg.matmul(a, b, out=out) is out
    close(out, a @ b, "float64", 3)


def test_plan_from_operands_and_layout():
    rng = np.random.default_rng()
    a, b = random(rng, (2, 4, 6), "float32"), random(rng, (6, 3), "float32")
    with linalg.Matmul(a, b, alpha=2.0) as plan:
        close(plan.execute(), 2 * _pre(a, b), "float32", 6)
        a2 = random(rng, (2, 4, 6), "float32")
        close(plan.execute(a2), 2 * _pre(a2, b), "float32", 6)
        assert plan.autotune() is None  # nothing to time on the CPU
    plan = linalg.Matmul(a_shape=(2, 4, 6), b_shape=(6, 3), dtype="float32",
                         epilogue="bias")
    bias = random(rng, (3,), "float32")
    close(plan.execute(a, b, bias=bias), _pre(a, b, bias), "float32", 6)
    with pytest.raises(ValueError, match="made for a layout"):
        plan.execute()
    plan.free()
    plan.free()  # idempotent
    with pytest.raises(StateError, match="freed"):
        plan.execute(a, b, bias=bias)


def test_plan_refuses_other_layouts():
    a, b = np.ones((4, 6)), np.ones((6, 3))
    plan = linalg.Matmul(a, b)
    with pytest.raises(ValueError, match="layout"):
        plan.execute(np.ones((5, 6)))

"""Python epilogues of matmul and Matmul: the head that cuBLASLt runs natively (scales folded
into alpha and beta, a bias vector, ReLU or GELU, positive scales folded through a ReLU), the
rest fused, and every result against a float64 NumPy oracle on fresh random data; on the CPU
for NumPy arrays and on the GPU for CuPy and torch."""

import numpy as np
import pytest
from closeness import assert_close

from accelmath import linalg
from accelmath.errors import InvalidArgumentError, TraceError
from accelmath.fusion import gelu, relu, trace
from accelmath.linalg._matmul.fused import match

EPILOGUES = {
    "relu bias half": (lambda acc, b, s: relu(acc + b) * 0.5, "relu_bias", False),
    "scaled relu bias scaled": (lambda acc, b, s: relu(acc * 2.0 + b) * s, "relu_bias", False),
    "gelu": (lambda acc, b, s: gelu(acc), "gelu", False),
    "bias then more": (lambda acc, b, s: np.tanh(acc + b) * s, "bias", True),
    "relu then more": (lambda acc, b, s: relu(acc) - s, "relu", True),
    "nothing native": (lambda acc, b, s: np.exp(acc * 0.1) * b, None, True),
    "acc used twice": (lambda acc, b, s: relu(acc) + acc, None, True),
}


def _oracle(fn, a, b, args):
    wide = [np.asarray(x, np.float64) if not np.isscalar(x) else x for x in args]
    return fn(a.astype(np.float64) @ b.astype(np.float64), *wide)


@pytest.mark.parametrize("name", EPILOGUES)
def test_the_head_cublaslt_runs_and_the_rest(name):
    fn, native, rest = EPILOGUES[name]
    head = match(trace(fn, np.float32, np.float32, 2.0))
    assert head.native == native
    assert (head.rest is not None) == rest


def test_float64_keeps_gelu_in_the_fused_pass():
    # (cuBLASLt's double GELU is good to about 1e-11: not double's accuracy)
    head = match(trace(lambda acc, b: gelu(acc + b), np.float64, np.float64))
    assert head.native == "bias" and [n.op for n in head.rest.nodes] == ["input", "gelu"]
    assert match(trace(lambda acc, b: relu(acc + b), np.float64, np.float64)).native == \
        "relu_bias"


def test_the_rest_is_the_expression_after_the_head():
    head = match(trace(lambda acc, b, s: relu(acc + b) * s + 1.0, np.float32, np.float32, 2.0))
    assert head.native == "relu_bias" and head.after_relu == (("input", 2),)
    assert [n.op for n in head.rest.nodes].count("relu") == 0
    assert head.rest.key == trace(lambda y, b, s: y + 1.0, np.float32, np.float32, 2.0).key


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", EPILOGUES)
def test_python_epilogues_on_the_cpu(name, dtype):
    fn = EPILOGUES[name][0]
    rng = np.random.default_rng()
    a, b = (rng.standard_normal(s).astype(dtype) for s in ((6, 5), (5, 4)))
    bias = rng.standard_normal(4).astype(dtype)
    for scale in (1.5, -0.5):
        got = linalg.matmul(a, b, epilogue=fn, epilogue_args=(bias, scale))
        assert got.dtype == dtype
        assert_close(got, _oracle(fn, a, b, (bias, scale)), 1e-5 if dtype == "float32" else 1e-12)


def test_complex_products_fuse_their_whole_epilogue():
    rng = np.random.default_rng()
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    bias = rng.standard_normal(2) + 1j * rng.standard_normal(2)
    got = linalg.matmul(a, b, epilogue=lambda acc, v: (acc * 2.0 + v).conj(),
                        epilogue_args=(bias,))
    assert_close(got, (2 * a @ b + bias).conj(), 1e-12)


def test_alpha_beta_and_c_are_the_element():
    rng = np.random.default_rng()
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((3, 2))
    bias = rng.standard_normal(2)
    got = linalg.matmul(a, b, c, alpha=2.0, beta=0.5, epilogue=lambda acc, v: relu(acc + v) * 3.0,
                        epilogue_args=(bias,))
    assert_close(got, np.maximum(2 * a @ b + 0.5 * c + bias, 0) * 3, 1e-12)


def test_a_bias_that_is_no_vector_runs_the_whole_expression():
    rng = np.random.default_rng()
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    matrix = rng.standard_normal((3, 2))
    got = linalg.matmul(a, b, epilogue=lambda acc, m: relu(acc + m), epilogue_args=(matrix,))
    assert_close(got, np.maximum(a @ b + matrix, 0), 1e-12)


def test_out_a_new_dtype_and_errors():
    rng = np.random.default_rng()
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    out = np.empty((3, 2))
    assert linalg.matmul(a, b, epilogue=lambda acc: acc * 2.0, out=out) is out
    assert_close(out, 2 * a @ b, 1e-12)
    mask = linalg.matmul(a, b, epilogue=lambda acc: acc > 0)
    assert mask.dtype == bool and (mask == (a @ b > 0)).all()
    with pytest.raises(InvalidArgumentError, match="takes none"):
        linalg.matmul(a, b, epilogue="relu", epilogue_args=(1.0,))
    with pytest.raises(TraceError, match="no truth value"):
        linalg.matmul(a, b, epilogue=lambda acc: acc if acc > 0 else 0)
    with pytest.raises(InvalidArgumentError, match="out has shape"):
        linalg.matmul(a, b, epilogue=lambda acc: acc > 0, out=out)


def test_a_plan_with_a_python_epilogue():
    rng = np.random.default_rng()
    a, b, bias = rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    with linalg.Matmul(a, b, epilogue=lambda acc, v, s: relu(acc + v) * s) as plan:
        for s in (2.0, -1.0):
            assert_close(plan.execute(epilogue_args=(bias, s)), np.maximum(a @ b + bias, 0) * s,
                         1e-12)
    with pytest.raises(InvalidArgumentError, match="need a plan made with a Python epilogue"):
        linalg.Matmul(a, b).execute(epilogue_args=(1.0,))
    with pytest.raises(InvalidArgumentError, match="need a plan made with a Python epilogue"):
        linalg.Matmul(a, b).execute(epilogue_args=bias)  # (one array: no truth value asked)


def test_a_plan_keeps_the_epilogue_arguments_it_was_made_with():
    rng = np.random.default_rng()
    a, b, bias = rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    plan = linalg.Matmul(a, b, epilogue=lambda acc, v, s: relu(acc + v) * s,
                         epilogue_args=(bias, 2.0))
    assert_close(plan.execute(), np.maximum(a @ b + bias, 0) * 2.0, 1e-12)
    assert_close(plan.execute(epilogue_args=(bias, -1.0)), np.maximum(a @ b + bias, 0) * -1.0,
                 1e-12)
    assert_close(plan.execute(a * 2), np.maximum(2 * a @ b + bias, 0) * 2.0, 1e-12)
    with pytest.raises(InvalidArgumentError, match="need a plan made with a Python epilogue"):
        linalg.Matmul(a, b, epilogue_args=(bias,))
    with pytest.raises(InvalidArgumentError, match="need a plan made with a Python epilogue"):
        linalg.Matmul(a, b, epilogue="relu", epilogue_args=(bias,))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", EPILOGUES)
def test_python_epilogues_on_cupy(cp, name, dtype):
    fn = EPILOGUES[name][0]
    rng = np.random.default_rng()
    a, b = (rng.standard_normal(s).astype(dtype) for s in ((64, 48), (48, 40)))
    bias = rng.standard_normal(40).astype(dtype)
    for scale in (1.5, -0.5):
        got = linalg.matmul(cp.asarray(a), cp.asarray(b), epilogue=fn,
                            epilogue_args=(cp.asarray(bias), scale))
        assert isinstance(got, cp.ndarray) and got.dtype == dtype
        tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
        assert_close(got.get(), _oracle(fn, a, b, (bias, scale)), tol)


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_a_scaled_bias_kept_between_calls_is_each_calls_own(package, request, monkeypatch):
    from accelmath.linalg._matmul import fused

    monkeypatch.setattr(fused, "fastest", lambda *args: 0)  # (the native epilogue)
    xp = request.getfixturevalue("cp" if package == "cupy" else "torch_cuda")
    put = xp.asarray if package == "cupy" else (lambda x: xp.from_numpy(x).cuda())
    rng = np.random.default_rng()
    a, b = rng.standard_normal((64, 48)), rng.standard_normal((48, 40))
    biases = [rng.standard_normal(40) for _ in range(3)]
    results = [linalg.matmul(put(a), put(b), epilogue=lambda acc, v: relu(acc + v) * 0.5,
                             epilogue_args=(put(bias),)) for bias in biases]
    for got, bias in zip(results, biases):
        got = got.get() if package == "cupy" else got.cpu().numpy()
        assert_close(got, np.maximum(a @ b + bias, 0) * 0.5, 1e-12)


@pytest.mark.gpu
def test_python_epilogue_on_torch_plan(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()
    a, b, bias = rng.standard_normal((33, 17)), rng.standard_normal((17, 9)), rng.standard_normal(9)
    ta, tb, tbias = (torch.from_numpy(x).cuda() for x in (a, b, bias))
    got = linalg.matmul(ta, tb, epilogue=lambda acc, v: relu(acc + v) * 0.5,
                        epilogue_args=(tbias,))
    assert isinstance(got, torch.Tensor)
    assert_close(got.cpu().numpy(), np.maximum(a @ b + bias, 0) * 0.5, 1e-12)
    with linalg.Matmul(ta, tb, epilogue=lambda acc, v: gelu(acc) + v) as plan:
        assert_close(plan.execute(epilogue_args=(tbias,)).cpu().numpy(),
                     gelu(a @ b) + bias, 1e-12)


def test_named_epilogue_arrays_with_a_python_epilogue_are_refused():
    a, b = np.ones((2, 3)), np.ones((3, 2))
    with pytest.raises(InvalidArgumentError, match="bias= and aux= go with the named"):
        linalg.matmul(a, b, bias=np.ones(2), epilogue=lambda acc: relu(acc))


def test_dtypes_a_fused_expression_lacks_are_named():
    torch = pytest.importorskip("torch")
    from accelmath.errors import UnsupportedDTypeError

    a = torch.ones((2, 3), dtype=torch.bfloat16)
    with pytest.raises(UnsupportedDTypeError, match="bfloat16"):
        linalg.matmul(a, a.T, epilogue=lambda acc: relu(acc))


def test_a_strided_bias_runs_the_whole_expression():
    from accelmath.linalg._matmul.fused import _fits, match

    head = match(trace(lambda acc, b: relu(acc + b), np.float32, np.float32))
    dense, strided = np.ones(4, np.float32), np.ones(8, np.float32)[::2]
    from accelmath._core.operand import wrap_operand

    assert _fits(head, [None, wrap_operand(dense)], 4, np.dtype("float32"))
    assert not _fits(head, [None, wrap_operand(strided)], 4, np.dtype("float32"))


_HEADS = [lambda acc, b, s: acc, lambda acc, b, s: acc * 2.0, lambda acc, b, s: acc * s,
          lambda acc, b, s: acc + b, lambda acc, b, s: acc * s + b,
          lambda acc, b, s: relu(acc + b), lambda acc, b, s: relu(acc * 0.5 + b) * s,
          lambda acc, b, s: gelu(acc + b), lambda acc, b, s: relu(acc) * 3.0,
          lambda acc, b, s: gelu(acc * s)]
_TAILS = [lambda h, acc, b, s: h, lambda h, acc, b, s: h + 1.0,
          lambda h, acc, b, s: np.tanh(h) * s, lambda h, acc, b, s: h - b,
          lambda h, acc, b, s: h * h, lambda h, acc, b, s: np.where(h > 0, h, acc),
          lambda h, acc, b, s: np.maximum(h, s)]


def test_random_heads_and_tails_give_numpys_result():
    """Every head the matcher knows, with a random tail, scale, alpha and c: the product
    with its native head and the rest fused equals the expression on NumPy's product."""
    seed = int(np.random.default_rng().integers(2**31))
    rng = np.random.default_rng(seed)
    for _ in range(120):
        head, tail = (table[int(rng.integers(len(table)))] for table in (_HEADS, _TAILS))

        def fn(acc, b, s, head=head, tail=tail):
            return tail(head(acc, b, s), acc, b, s)

        a, w, bias = rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), rng.standard_normal(3)
        s = float(rng.choice([1.5, -0.5, 2.0]))
        c = rng.standard_normal((5, 3)) if rng.random() < 0.3 else None
        alpha, beta = float(rng.choice([1.0, 0.5])), 0.0 if c is None else 1.0
        product = alpha * a @ w + (0.0 if c is None else beta * c)
        got = linalg.matmul(a, w, c, alpha=alpha, beta=beta, epilogue=fn,
                            epilogue_args=(bias, s))
        np.testing.assert_allclose(got, fn(product, bias, s), rtol=1e-10, atol=1e-10,
                                   err_msg=f"seed {seed}")


def test_a_strided_or_broadcast_bias_stays_in_the_fused_pass():
    # (cuBLASLt reads a bias as a dense vector: a view with another stride is not its bias)
    from accelmath._core.operand import wrap_operand
    from accelmath.linalg._matmul.fused import _fits

    head = match(trace(lambda acc, b: relu(acc + b), np.float32, np.float32))
    dtype = np.dtype(np.float32)
    for bias, fits in ((np.zeros(6, np.float32), True), (np.zeros(12, np.float32)[::2], False),
                       (np.broadcast_to(np.float32(1), (6,)), False)):
        assert _fits(head, [None, wrap_operand(bias)], 6, dtype) is fits


def test_the_device_plan_refuses_a_strided_bias():
    from accelmath.linalg._matmul import problem as problems

    a, b = np.ones((4, 3), np.float32), np.ones((3, 6), np.float32)
    problem = problems.prepare(a, b, None, np.ones(12, np.float32)[::2], None, 1, 0,
                               "bias", "auto", False)
    with pytest.raises(InvalidArgumentError, match="bias has stride 2"):
        problems.spec_of(problem, None, 256)

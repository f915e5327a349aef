"""matmul and Matmul on the CPU path, against NumPy in float64: every dtype NumPy holds, every
epilogue (auxiliary outputs and gradients against their formulas), 1-D, batched and
broadcast operands, alpha/beta/c, layouts from operands and from layouts, lifetime."""

import numpy as np
import pytest
from closeness import assert_close_products

from accelmath import linalg
from accelmath.errors import StateError
from accelmath.linalg._matmul.epilogue import gelu, gelu_derivative, relu_mask

DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]


def random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


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
    assert_close_products(result, expected, dtype, a_shape[-1])


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
    assert_close_products(linalg.matmul(a, b, c, alpha=alpha, beta=beta), expected, dtype, 6)


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng()
    a = rng.standard_normal((5, 33)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((33, 3)).astype(ml_dtypes.bfloat16)
    result = linalg.matmul(a, b)
    assert result.dtype == ml_dtypes.bfloat16
    assert_close_products(result, a.astype(np.float64) @ b.astype(np.float64), "bfloat16", 33)


def test_bfloat16_torch_cpu_tensors_aux_out_and_layout_plans():
    # torch's bfloat16 has no NumPy view: its aux, out and gradient outputs go through torch
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    a = torch.from_numpy(rng.standard_normal((5, 33))).to(torch.bfloat16)
    b = torch.from_numpy(rng.standard_normal((33, 3))).to(torch.bfloat16)
    exact = a.double().numpy() @ b.double().numpy()
    d, pre = linalg.matmul(a, b, epilogue="gelu_aux")
    assert d.dtype == pre.dtype == torch.bfloat16
    assert_close_products(pre.double().numpy(), exact, "bfloat16", 33)
    grad = linalg.matmul(a, b, epilogue="dgelu", aux=pre)
    assert_close_products(grad.double().numpy(), exact * gelu_derivative(pre.double().numpy()),
                          "bfloat16", 33)
    grad, bias_grad = linalg.matmul(a, b, epilogue="dgelu_bgrad", aux=pre)
    assert_close_products(bias_grad.double().numpy(), grad.double().numpy().sum(axis=0),
                          "bfloat16", 33)
    out = torch.empty(5, 3, dtype=torch.bfloat16)
    assert linalg.matmul(a, b, out=out) is out
    assert_close_products(out.double().numpy(), exact, "bfloat16", 33)
    with linalg.Matmul(a_shape=(5, 33), b_shape=(33, 3), dtype="bfloat16",
                       package="torch") as plan:
        assert_close_products(plan.execute(a, b).double().numpy(), exact, "bfloat16", 33)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with linalg.Matmul(a_shape=(5, 33), b_shape=(33, 3), dtype="bfloat16") as plan:  # NumPy
        result = plan.execute(a.float().numpy().astype(ml_dtypes.bfloat16),
                              b.float().numpy().astype(ml_dtypes.bfloat16))
        assert result.dtype == ml_dtypes.bfloat16
        assert_close_products(result.astype(np.float64), exact, "bfloat16", 33)


def test_torch_cpu_and_conj_view():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    x = random(rng, (4, 3), "complex128")
    b = random(rng, (4, 5), "complex128")
    t = torch.from_numpy(x)
    result = linalg.matmul(t.mH, torch.from_numpy(b))  # a lazily conjugated transpose
    assert isinstance(result, torch.Tensor)
    assert_close_products(result.numpy(), x.conj().T @ b, "complex128", 4)


def test_torch_conj_view_of_c():
    # c is read as its values, however lazily conjugated
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    a, b = random(rng, (4, 6), "complex128"), random(rng, (6, 3), "complex128")
    c = random(rng, (4, 3), "complex128")
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    result = linalg.matmul(ta, tb, torch.from_numpy(c).conj(), beta=2.0)
    assert_close_products(result.numpy(), a @ b + 2.0 * c.conj(), "complex128", 6)


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
    assert_close_products(linalg.matmul(a, b, epilogue=epilogue, bias=bias), expected, dtype, 11)


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
    assert_close_products(d, np.maximum(pre, 0), dtype, 9)
    np.testing.assert_array_equal(relu_mask(mask, 130), pre > 0)
    d, aux = linalg.matmul(a, b, epilogue="gelu_aux" + suffix, bias=bias)
    assert_close_products(d, gelu(pre), dtype, 9)
    assert_close_products(aux, pre, dtype, 9)
    # backward: the gradient g @ b through the activation, and its bias gradient
    grad = _pre(g, b)
    assert_close_products(linalg.matmul(g, b, epilogue="drelu", aux=mask), grad * (pre > 0),
                          dtype, 9)
    dgelu = grad * gelu_derivative(aux.astype(np.float64))
    assert_close_products(linalg.matmul(g, b, epilogue="dgelu", aux=aux), dgelu, dtype, 9)
    d, db = linalg.matmul(g, b, epilogue="dgelu_bgrad", aux=aux)
    assert_close_products(d, dgelu, dtype, 9)
    assert_close_products(db, dgelu.sum(axis=-2), dtype, 9 * 5)
    d, db = linalg.matmul(g, b, epilogue="drelu_bgrad", aux=mask)
    assert_close_products(db, (grad * (pre > 0)).sum(axis=-2), dtype, 9 * 5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bias_gradients(dtype):
    rng = np.random.default_rng()
    a, b = random(rng, (6, 10), dtype), random(rng, (10, 4), dtype)
    d, da = linalg.matmul(a, b, epilogue="bgrada")
    assert_close_products(d, _pre(a, b), dtype, 10)
    assert_close_products(da, a.astype(np.float64).sum(-1), dtype, 10)
    d, db = linalg.matmul(a, b, epilogue="bgradb")
    assert_close_products(db, b.astype(np.float64).sum(-2), dtype, 10)


def test_out():
    rng = np.random.default_rng()
    a, b = random(rng, (4, 3), "float64"), random(rng, (3, 5), "float64")
    out = np.empty((4, 5))
    assert linalg.matmul(a, b, out=out) is out
    assert_close_products(out, a @ b, "float64", 3)


def test_plan_from_operands_and_layout():
    rng = np.random.default_rng()
    a, b = random(rng, (2, 4, 6), "float32"), random(rng, (6, 3), "float32")
    with linalg.Matmul(a, b, alpha=2.0) as plan:
        assert_close_products(plan.execute(), 2 * _pre(a, b), "float32", 6)
        a2 = random(rng, (2, 4, 6), "float32")
        assert_close_products(plan.execute(a2), 2 * _pre(a2, b), "float32", 6)
        assert plan.autotune() is None  # nothing to time on the CPU
    plan = linalg.Matmul(a_shape=(2, 4, 6), b_shape=(6, 3), dtype="float32",
                         epilogue="bias")
    bias = random(rng, (3,), "float32")
    assert_close_products(plan.execute(a, b, bias=bias), _pre(a, b, bias), "float32", 6)
    with pytest.raises(ValueError, match="made for a layout"):
        plan.execute()
    plan.free()
    plan.free()  # idempotent
    with pytest.raises(StateError, match="freed"):
        plan.execute(a, b, bias=bias)


def test_layout_plan_of_a_backward_epilogue():
    # made without aux: the plan's template aux has the layout the forward product returns
    rng = np.random.default_rng()
    g, b = random(rng, (2, 5, 9), "float64"), random(rng, (9, 130), "float64")
    pre = random(rng, (2, 5, 130), "float64")
    grad = _pre(g, b)
    _, mask = linalg.matmul(pre, np.eye(130), epilogue="relu_aux")
    with linalg.Matmul(a_shape=(2, 5, 9), b_shape=(9, 130), dtype="float64",
                       epilogue="drelu") as plan:
        assert_close_products(plan.execute(g, b, aux=mask), grad * (pre > 0), "float64", 9)
    with linalg.Matmul(a_shape=(2, 5, 9), b_shape=(9, 130), dtype="float64",
                       epilogue="dgelu") as plan:
        assert_close_products(plan.execute(g, b, aux=pre), grad * gelu_derivative(pre),
                              "float64", 9)


def test_plan_refuses_other_layouts():
    a, b = np.ones((4, 6)), np.ones((6, 3))
    plan = linalg.Matmul(a, b)
    with pytest.raises(ValueError, match="layout"):
        plan.execute(np.ones((5, 6)))


# --- the call memo of the stateless matmul -------------------------------------------------

def _key(a, b, c=None, *, bias=None, aux=None, out=None, alpha=1, beta=0, epilogue=None,
         execution="auto", allow_tf32=False):
    from accelmath.linalg._matmul.problem import call_key

    found = call_key(a, b, c, bias, aux, out, alpha, beta, epilogue, execution, allow_tf32)
    return None if found is None else found.key


def test_call_key_tells_calls_apart():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(4, 6, dtype=torch.float64), torch.randn(6, 5, dtype=torch.float64)
    c, bias, out = torch.randn(4, 5, dtype=torch.float64), torch.randn(5, dtype=torch.float64), \
        torch.empty(4, 5, dtype=torch.float64)
    key = _key(a, b)
    # equal calls (other arrays of the same layouts) give the same key, but for the
    # alignment of their addresses (the last field, tested below)
    assert key is not None and key[:-1] == _key(a.clone(), b.clone())[:-1]
    assert _key(a, b, c, beta=2.0, bias=bias, epilogue="bias", out=out)[:-1] == _key(
        a.clone(), b.clone(), c.clone(), beta=2.0, bias=bias.clone(), epilogue="bias",
        out=torch.empty_like(out))[:-1]
    assert key == _key(a, b)
    # alpha's and beta's values are the call's own, not the key's
    assert _key(a, b, alpha=2)[:-1] == key[:-1]
    assert _key(a, b, c, alpha=3.0, beta=-1.5) == _key(a, b, c, alpha=0.5, beta=2.0)
    others = [
        _key(torch.randn(4, 7, dtype=torch.float64), torch.randn(7, 5, dtype=torch.float64)),
        _key(a.float(), b.float()),                                # dtype
        _key(a.T.contiguous().T, b),                               # strides
        _key(a, torch.randn(5, 6, dtype=torch.float64).T),         # a transposed view
        _key(a, b, c), _key(a, b, c, beta=1), _key(a, b, c, beta=1.0), _key(a, b, c, beta=1j),
        _key(a, b, alpha=2.0), _key(a, b, alpha=2 + 0j), _key(a, b, alpha=2 + 1j),
        _key(a, b, epilogue="relu"), _key(a, b, epilogue="bias", bias=bias),
        _key(a, b, out=out), _key(a, b, out=torch.empty(5, 4, dtype=torch.float64).T),
        _key(a, b, execution="cuda"), _key(a.float(), b.float(), allow_tf32=True),
        _key(a, b, aux=torch.zeros(4, 5, dtype=torch.float64), epilogue="dgelu"),
        _key(a.numpy(), b),                                        # another array type: none
    ]
    keys = [k for k in others if k is not None]
    assert len(keys) == len(others) - 1 and others[-1] is None
    assert key not in keys and len(set(keys)) == len(keys)


def test_call_key_conj_views_and_alignment():
    torch = pytest.importorskip("torch")
    x = torch.randn(6, 4, dtype=torch.complex128)
    b = torch.randn(6, 3, dtype=torch.complex128)
    mh = _key(x.mH, b)                       # a lazily conjugated transpose
    assert mh is not None and mh != _key(x.mH.resolve_conj(), b) and mh != _key(x.T, b)
    base = torch.randn(64, dtype=torch.float64)
    a1 = base[:16].view(4, 4)
    a2 = base[2:18].view(4, 4)               # the same layout, 16 bytes further
    a3 = base[1:17].view(4, 4)               # 8 bytes further: another alignment
    b = torch.randn(4, 4, dtype=torch.float64)
    keys = [_key(a, b)[-1] for a in (a1, a2, a3)]
    word = a1.data_ptr() | b.data_ptr()
    assert keys[0] == (256 if word % 256 == 0 else 16 if word % 16 == 0 else word % 16)
    assert keys[1] in (16, 8) and keys[2] == 8
    # c counts where beta is not 0
    c = base[1:17].view(4, 4)
    assert _key(a1, b, c, beta=0)[-1] == keys[0] and _key(a1, b, c, beta=1)[-1] == 8


def test_call_key_refuses_what_it_cannot_hold():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    assert _key(a, b) is not None
    assert _key(a, b, alpha=True) is None            # a bool would equal the int 1
    assert _key(a, b, allow_tf32=1) is None          # only True and False
    assert _key(a, b, execution=None) is None
    assert _key(a, b, epilogue=["relu"]) is None
    assert _key(a, b, alpha=[1]) is None
    assert _key(a.requires_grad_(), b) is None       # checked against each call's grad mode
    assert _key(np.ones((3, 3)), np.ones((3, 3))) is None
    assert _key([[1.0]], [[1.0]]) is None
    assert _key("a", b) is None


def _aligned(a):
    """A copy of ``a`` at a 256-byte boundary (as device pools allocate)."""
    buffer = np.empty(a.nbytes + 256, np.uint8)
    start = -buffer.ctypes.data % 256
    copy = buffer[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    copy[...] = a
    return copy


class _DeviceArray:
    """A host array posing as an array on GPU 0 (with an adapter of its own), so that the
    memo's device path runs here on a stand-in for cuBLASLt."""

    def __init__(self, a, copy=True):
        self.a = _aligned(a) if copy else a

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: self.a.dtype)
    T = property(lambda self: _DeviceArray(self.a.T, copy=False))


def _device_adapter():
    from accelmath._core.operand import Adapter, Operand

    class FakeAdapter(Adapter):
        package = "fake"

        def wrap(self, x):
            a = x.a
            return Operand(x, a.ctypes.data, a.shape, tuple(s // a.itemsize for s in a.strides),
                           a.dtype.name, 0, self)

        def layout_key(self, x):
            return x.a.shape, x.a.strides, x.a.dtype, 0

        def data_ptr(self, x):
            return x.a.ctypes.data

        def empty(self, shape, dtype, device_id):
            return _DeviceArray(np.empty(shape, dtype))

    return FakeAdapter()


def _at(ptr, shape, strides, dtype):
    """The float64 array of ``shape`` and element ``strides`` at address ``ptr``."""
    import ctypes

    itemsize = np.dtype(dtype).itemsize
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    flat = np.frombuffer((ctypes.c_char * (extent * itemsize)).from_address(ptr), dtype)
    return np.lib.stride_tricks.as_strided(flat, shape, [s * itemsize for s in strides])


class _FakeLt:
    """cuBLASLt's plan, computed with NumPy from the addresses and the spec (float64,
    matrices, the bias epilogue)."""

    nbytes = 0
    made = 0
    mask = 0

    def __init__(self, spec, device_id, package):
        import threading
        from types import SimpleNamespace

        self.spec = spec
        self.resources = SimpleNamespace(local=threading.local())
        _FakeLt.made += 1

    def direct_call(self, alpha, beta, uses_c):
        return None  # (no C call: every run is the Python one)

    def free(self):
        pass

    def run(self, a, b, c, d, bias, aux, alpha, beta, stream, algo=None):
        import ctypes

        spec = self.spec
        result = ctypes.c_double.from_address(alpha).value * (
            _at(a, *spec.a[:2], "float64") @ _at(b, *spec.b[:2], "float64"))
        if c:
            result += ctypes.c_double.from_address(beta).value * _at(c, *spec.c[:2], "float64")
        if spec.epilogue.bias:
            result += _at(bias, (spec.product.n,), (1,), "float64")
        _at(d, spec.product.matrix_shape, spec.d, "float64")[...] = result


@pytest.fixture
def fake_device(monkeypatch):
    """matmul's device path on arrays of :class:`_DeviceArray`, computed by :class:`_FakeLt`;
    yields a list that counts the calls that were read and checked."""
    from accelmath._core import operand
    from accelmath.linalg import _memo as linalg_memo
    from accelmath._core import call_key
    from accelmath.linalg._matmul import plan
    from accelmath.linalg._matmul import problem as problems

    monkeypatch.setitem(operand._adapters, _DeviceArray, _device_adapter())
    monkeypatch.setattr(call_key, "_ADDRESSED", ("fake",))
    monkeypatch.setattr(call_key, "_DEVICE", {})
    monkeypatch.setattr(plan, "LtPlan", _FakeLt)
    monkeypatch.setenv("ACCELMATH_SMALL_PRODUCTS", "0")  # (every product on the fake cuBLASLt)
    prepared = []
    prepare = problems.prepare

    def counted(*args):
        prepared.append(len(args))  # (not the arguments: arrays must be free to go)
        return prepare(*args)

    monkeypatch.setattr(problems, "prepare", counted)
    linalg_memo.dispatcher.clear_cache()
    yield prepared
    linalg_memo.dispatcher.clear_cache()


def test_memo_runs_repeated_calls_unchecked(fake_device):
    from accelmath.errors import InvalidArgumentError
    from accelmath.linalg import _memo as linalg_memo

    rng = np.random.default_rng()

    def fresh(*shape):
        return rng.standard_normal(shape)

    def check(result, expected):
        assert isinstance(result, _DeviceArray)
        assert_close_products(result.a, expected, "float64", 8)

    def run(a, b, *args, **kwargs):
        return linalg.matmul(_DeviceArray(a), b if isinstance(b, _DeviceArray) else
                             _DeviceArray(b), *args, **kwargs)

    for _ in range(3):  # fresh data of one layout: read and checked once
        a, b = fresh(5, 8), fresh(8, 3)
        check(run(a, b), a @ b)
    assert len(fake_device) == 1 and _FakeLt.made >= 1
    made = _FakeLt.made
    for i in range(6):  # alternating layouts and keywords, each remembered after its first
        a, bt, c, bias = fresh(5, 8), fresh(3, 8), fresh(5, 3), fresh(3)
        b = _DeviceArray(bt).T  # a transposed view
        if i % 3 == 0:
            check(run(a, b, _DeviceArray(c), alpha=0.5, beta=2.0), 0.5 * a @ bt.T + 2.0 * c)
        elif i % 3 == 1:
            out = _DeviceArray(np.empty((5, 3)))
            assert run(a, b, out=out) is out
            check(out, a @ bt.T)
        else:
            check(run(a, b, epilogue="bias", bias=_DeviceArray(bias)), a @ bt.T + bias)
    assert len(fake_device) == 1 + 3
    a, b, c = fresh(5, 8), fresh(8, 3), fresh(5, 3)
    # other values of alpha and beta: the call's own (its key is that of a call seen)
    check(run(a, b, _DeviceArray(c), alpha=1.5, beta=-3.0), 1.5 * a @ b - 3.0 * c)
    check(run(a, b, _DeviceArray(c), alpha=-0.25, beta=0.5), -0.25 * a @ b + 0.5 * c)
    assert len(fake_device) == 5
    # bad input raises every time, and is never remembered
    size = len(linalg_memo.dispatcher._calls)
    for _ in range(2):
        with pytest.raises(InvalidArgumentError, match="bias"):
            run(a, b, epilogue="bias", bias=_DeviceArray(fresh(4)))
        with pytest.raises(InvalidArgumentError, match="c has shape"):
            run(a, b, _DeviceArray(fresh(3, 5)), beta=1.0)
    assert len(linalg_memo.dispatcher._calls) == size
    check(run(a, b), a @ b)  # the good call still runs from the memo
    assert len(fake_device) == 5 + 4
    # a plan that left the cache: the call is checked and planned again
    linalg_memo.dispatcher.clear_cache()
    check(run(a, b), a @ b)
    assert len(fake_device) == 10 and _FakeLt.made > made


def test_device_inner_length_0_takes_no_c_and_no_epilogue(fake_device):
    from accelmath.errors import InvalidArgumentError

    a, b = _DeviceArray(np.ones((3, 0))), _DeviceArray(np.ones((0, 4)))
    c = _DeviceArray(np.ones((3, 4)))
    for args, kwargs in (((), {"epilogue": "relu"}), ((c,), {"beta": 1.0})):
        with pytest.raises(InvalidArgumentError, match="inner length of 0"):
            linalg.matmul(a, b, *args, **kwargs)
        with pytest.raises(InvalidArgumentError, match="inner length of 0"):
            linalg.Matmul(a, b, *args, **kwargs)


def test_memo_keeps_no_caller_array(fake_device):
    import gc
    import weakref

    from accelmath.linalg import _memo as linalg_memo

    a, b = np.ones((4, 6)), np.ones((6, 2))
    da, db = _DeviceArray(a), _DeviceArray(b)
    refs = [weakref.ref(da), weakref.ref(db)]
    linalg.matmul(da, db)
    assert len(linalg_memo.dispatcher._calls) == 1
    del da, db
    gc.collect()
    assert all(r() is None for r in refs)


def test_host_scalars_are_kept_but_keep_the_sign_of_a_zero_alpha():
    from accelmath.linalg._matmul.problem import host_scalars

    first, _ = host_scalars("float32", 2, 0)
    assert host_scalars("float32", 2.0, 0)[0] is first  # one value, kept
    assert [v.value for v in first] == [2.0, 0.0]
    assert host_scalars("float64", -0.0, 1)[0][0].value == 0.0
    assert str(host_scalars("float64", -0.0, 1)[0][0].value) == "-0.0"
    assert str(host_scalars("float64", 0.0, 1)[0][0].value) == "0.0"
    assert list(host_scalars("complex128", 1 - 2j, 0)[0][0]) == [1.0, -2.0]

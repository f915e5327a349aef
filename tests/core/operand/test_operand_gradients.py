"""A torch tensor that records gradients is never silently detached: refused while gradients
are enabled, read under torch.no_grad(); every path accelmath.fft has for tensors agrees."""

import numpy as np
import pytest

import accelmath.fft
from accelmath._core.operand import adapter_named, wrap_operand
from accelmath.errors import GradientError, UnsupportedOperandError
from accelmath.fft import FFT

torch = pytest.importorskip("torch")

MESSAGE = r"requires_grad=True .* not differentiable yet: call it under torch.no_grad\(\), " \
          r"or pass x.detach\(\)"


@pytest.fixture
def adapter():
    return adapter_named("torch")


def leaf():
    return torch.randn(4, 6, dtype=torch.float64, requires_grad=True)


def test_gradient_error_is_an_unsupported_operand():
    assert issubclass(GradientError, UnsupportedOperandError)
    assert issubclass(GradientError, TypeError)


@pytest.mark.parametrize("make", [
    leaf,
    lambda: leaf() * 2,  # not a leaf: records its history
    lambda: torch.nn.Parameter(torch.randn(3, dtype=torch.complex64)),
    lambda: leaf().T,
])
def test_refused_while_gradients_are_enabled(make):
    x = make()
    with pytest.raises(GradientError, match=MESSAGE):
        wrap_operand(x)


def test_read_where_gradients_are_off():
    x = leaf()
    with torch.no_grad():
        op = wrap_operand(x)
    assert op.obj is x and op.ptr == x.data_ptr()
    with torch.inference_mode():
        assert wrap_operand(x).ptr == x.data_ptr()
    assert wrap_operand(x.detach()).ptr == x.data_ptr()


def test_to_numpy_does_not_detach_silently(adapter):
    x = leaf()
    with pytest.raises(GradientError, match=MESSAGE):
        adapter.to_numpy(x)
    with torch.no_grad():
        np.testing.assert_array_equal(adapter.to_numpy(x), x.detach().numpy())


def test_no_layout_key_for_tensors_that_record_gradients(adapter):
    x = leaf()
    assert adapter.layout_key(x) is None
    with torch.no_grad():
        assert adapter.layout_key(x) is None  # (the grad mode is a property of each call)
    assert adapter.layout_key(x.detach()) is not None


@pytest.mark.parametrize("strided", [False, True])
def test_reader_turns_tensors_that_record_gradients_away(adapter, strided):
    plain = torch.zeros(6, 4, dtype=torch.float64)
    plain = plain.T if strided else plain.reshape(4, 6)
    read = adapter.reader(adapter.layout_key(plain))
    assert read(plain) == plain.data_ptr()
    x = leaf().detach().T.contiguous().T if strided else leaf().detach()
    x.requires_grad_(True)
    assert (x.shape, x.stride(), x.dtype) == (plain.shape, plain.stride(), plain.dtype)
    assert read(x) is None
    with torch.no_grad():
        assert read(x) is None  # (then wrapped, and taken: see test_read_where_gradients_are_off)


@pytest.mark.parametrize("call", [
    lambda x: accelmath.fft.fft(x),
    lambda x: accelmath.fft.rfft2(x),
    lambda x: accelmath.fft.irfft(x.to(torch.complex128).detach().requires_grad_(True)),
    lambda x: FFT(x, kind="r2c").execute(),
    lambda x: accelmath.fft.fft(x, execution="cpu"),
    lambda x: accelmath.fft.fft(x, out=torch.empty(4, 6, dtype=torch.complex128)),
])
def test_fft_refuses_tensors_that_record_gradients(call):
    with pytest.raises(GradientError, match=MESSAGE):
        call(leaf())


def test_fft_takes_them_under_no_grad():
    x = leaf()
    with torch.no_grad():
        result = accelmath.fft.rfft2(x)
        plan = FFT(x, kind="r2c")
        planned = plan.execute()
    expected = np.fft.rfft2(x.detach().numpy())
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(planned.numpy(), expected, rtol=1e-12, atol=1e-12)
    assert not result.requires_grad


def test_a_plan_made_for_plain_tensors_refuses_tensors_that_record_gradients():
    plain = torch.randn(4, 6, dtype=torch.float64)
    plan = FFT(plain, kind="r2c")
    plan.execute(plain)
    with pytest.raises(GradientError, match=MESSAGE):
        plan.execute(leaf())
    out = torch.empty(4, 4, dtype=torch.complex128, requires_grad=True)
    with pytest.raises(GradientError, match=MESSAGE):
        plan.execute(plain, out=out)


def test_the_stateless_memo_refuses_tensors_that_record_gradients():
    plain = torch.randn(4, 6, dtype=torch.float64)
    accelmath.fft.rfft(plain)
    accelmath.fft.rfft(plain)  # (a memo hit, where the functions keep one)
    x = plain.clone().requires_grad_(True)
    with pytest.raises(GradientError, match=MESSAGE):
        accelmath.fft.rfft(x)

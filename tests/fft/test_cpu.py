"""The CPU backend (accelmath.fft._cpu): a host transform's runner is its execute; CPU torch
tensors run on torch.fft or on the host engine over NumPy views of them, whichever measured
faster, with the same results."""

import logging
import time

import numpy as np
import pytest

from accelmath.fft import _cpu

CASES = [("c2c", (16,), "complex128", (0,), None, False),
         ("c2c", (6, 10), "float64", (1,), None, False),
         ("c2c", (4, 6, 5), "complex64", (0, 2), None, False),
         ("c2c", (12,), "complex128", (0,), (8,), False),
         ("r2c", (5, 12), "float64", (1,), None, False),
         ("r2c", (5, 12), "float32", (0, 1), None, True),
         ("c2r", (3, 7), "complex128", (1,), None, False),
         ("c2r", (3, 7), "complex64", (1,), (10,), True)]


def _input(kind, shape, dtype):
    rng = np.random.default_rng()
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("kind, shape, dtype, axes, s, conjugate", CASES)
@pytest.mark.parametrize("inverse", [None, True])
def test_a_runner_computes_what_execute_does(kind, shape, dtype, axes, s, conjugate, inverse):
    transform = _cpu.HostTransform(kind, shape, dtype, axes, s, "ortho", conjugate)
    x = _input(kind, shape, dtype)
    for workers in (None, 2):
        np.testing.assert_array_equal(transform.runner(inverse, workers)(x),
                                      transform.execute(x, inverse, workers=workers))


@pytest.mark.parametrize("kind, shape, dtype, axes, s, conjugate", CASES)
def test_torch_tensors_on_the_host_engine_match_torch_fft(kind, shape, dtype, axes, s,
                                                          conjugate):
    torch = pytest.importorskip("torch")
    by_torch = _cpu.TorchTransform(kind, shape, dtype, axes, s, "forward", conjugate)
    via = _cpu.TorchViaHost(_cpu.HostTransform(kind, shape, dtype, axes, s, "forward",
                                               conjugate), by_torch)
    assert (via.out_shape, via.out_dtype) == (by_torch.out_shape, by_torch.out_dtype)
    t = torch.from_numpy(_input(kind, shape, dtype))
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-12
    for inverse in (None, True) if kind == "c2c" else (None,):  # (real kinds run one way)
        expected = by_torch.execute(t, inverse).numpy()
        for result in (via.execute(t, inverse), via.runner(inverse)(t)):
            assert isinstance(result, torch.Tensor) and result.dtype == by_torch.execute(t).dtype
            np.testing.assert_allclose(result.numpy(), expected, rtol=tol, atol=tol)
        out = torch.empty(via.out_shape, dtype=result.dtype)
        assert via.execute(t, inverse, out=out) is out
        np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)


def test_views_numpy_cannot_see_go_to_torch_fft():
    torch = pytest.importorskip("torch")
    shape = (4, 8)

    def via(dtype):
        return _cpu.TorchViaHost(_cpu.HostTransform("c2c", shape, dtype, (1,)),
                                 _cpu.TorchTransform("c2c", shape, dtype, (1,)))

    conj = torch.randn(shape, dtype=torch.complex128).conj()
    neg = torch.randn(shape, dtype=torch.complex128).conj().imag  # (a negated view)
    grad = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    assert conj.is_conj() and neg.is_neg()
    for view in (conj, neg, grad):
        transform = via(str(view.dtype).split(".")[1])
        expected = np.fft.fft(view.numpy(force=True), axis=1)
        with torch.no_grad():
            for result in (transform.runner()(view), transform.execute(view)):
                np.testing.assert_allclose(result.numpy(force=True), expected, atol=1e-12)
    out = torch.empty(shape, dtype=torch.complex128).conj()  # (an out NumPy cannot see)
    t = torch.randn(shape, dtype=torch.complex128)
    assert via("complex128").execute(t, out=out) is out
    np.testing.assert_allclose(out.numpy(force=True), np.fft.fft(t.numpy(), axis=1),
                               atol=1e-12)


def test_torch_transforms_are_timed_both_ways_where_numpy_views_take_them(monkeypatch):
    pytest.importorskip("torch")
    timed = []
    monkeypatch.setattr(_cpu, "_fastest",
                        lambda candidates, shape, dtype: timed.append(candidates)
                        or candidates[1])
    chosen = _cpu.host_transform("c2c", (64,), "complex128", (0,), package="torch")
    assert isinstance(chosen, _cpu.TorchViaHost) and len(timed) == 1
    # other dtypes (converted first) and large transforms: torch.fft, untimed
    for shape, dtype in [((64,), "float16"), ((64,), "int64"), ((256, 256), "complex64")]:
        chosen = _cpu.host_transform("c2c", shape, dtype, (0,), package="torch")
        assert isinstance(chosen, _cpu.TorchTransform)
    assert len(timed) == 1


def test_the_faster_candidate_is_chosen_and_logged(caplog):
    torch = pytest.importorskip("torch")

    class Candidate:
        def __init__(self, seconds):
            self.seconds = seconds

        def runner(self):
            def run(t):
                assert isinstance(t, torch.Tensor) and tuple(t.shape) == (3, 4)
                end = time.perf_counter() + self.seconds
                while time.perf_counter() < end:
                    pass
            return run

    slow, fast = Candidate(2e-3), Candidate(1e-4)
    with caplog.at_level(logging.DEBUG, logger="accelmath"):
        assert _cpu._fastest((slow, fast), (3, 4), "float64") is fast
        assert _cpu._fastest((fast, slow), (3, 4), "float64") is fast
    assert "CPU FFT of torch tensors (3, 4) float64: Candidate" in caplog.text

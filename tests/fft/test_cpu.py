"""The CPU backend (accelmath.fft._cpu): a host transform's runner is its execute; CPU torch
tensors run on torch.fft or on the host engine over NumPy views of them, whichever measured
faster, with the same results."""

import logging
import threading
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
def test_a_writer_computes_what_execute_does_into_any_out(kind, shape, dtype, axes, s,
                                                          conjugate):
    scipy_fft = pytest.importorskip("scipy.fft")
    transform = _cpu.HostTransform(kind, shape, dtype, axes, s, "backward", conjugate)
    x = _input(kind, shape, dtype)
    expected = transform.execute(x)
    write = transform.writer()
    for out in (np.empty(transform.out_shape, transform.out_dtype),  # (written directly)
                np.empty(transform.out_shape[::-1], transform.out_dtype).T):  # (copied in)
        assert write(x, out) is out
        np.testing.assert_array_equal(out, expected)
    with scipy_fft.set_workers(2):  # (the context's threads, read each call)
        np.testing.assert_array_equal(write(x, np.empty_like(expected)), expected)
    if x.dtype == transform.out_dtype and x.shape == transform.out_shape:  # (over its input)
        write(x, x)
        np.testing.assert_array_equal(x, expected)


def test_calls_without_workers_take_the_threads_of_their_context_and_thread():
    scipy_fft = pytest.importorskip("scipy.fft")
    read = _cpu._workers_reader()
    outside = scipy_fft.get_workers()
    assert read() == outside
    transform = _cpu.HostTransform("c2c", (8,), "complex128", (0,))
    seen = []
    transform._function = lambda a, *args: seen.append(args[-1])  # (the engine: its threads)
    run, run_two = transform.runner(), transform.runner(workers=2)
    x = np.zeros(8, complex)
    with scipy_fft.set_workers(3):
        assert read() == 3
        other = []
        thread = threading.Thread(target=lambda: other.append((read(), scipy_fft.get_workers())))
        thread.start()
        thread.join()
        assert other[0][0] == other[0][1] != 3  # (another thread: not this context's)
        run(x)
        run_two(x)
    run(x)
    assert seen == [3, 2, outside] and read() == outside


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
    """Lazily conjugated or negated views (and out= tensors so) run on torch.fft."""
    torch = pytest.importorskip("torch")
    shape = (4, 8)

    def via(dtype):
        return _cpu.TorchViaHost(_cpu.HostTransform("c2c", shape, dtype, (1,)),
                                 _cpu.TorchTransform("c2c", shape, dtype, (1,)))

    conj = torch.randn(shape, dtype=torch.complex128).conj()
    neg = torch.randn(shape, dtype=torch.complex128).conj().imag  # (a negated view)
    grad = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    assert conj.is_conj() and neg.is_neg()
    # (a tensor that records gradients, under no_grad, is read as it is: NumPy sees it then)
    for view, fallbacks in ((conj, ["runner", "execute"]), (neg, ["runner", "execute"]),
                            (grad, [])):
        transform = via(str(view.dtype).split(".")[1])
        by_torch = _spied(transform)
        expected = np.fft.fft(view.numpy(force=True), axis=1)
        with torch.no_grad():
            for result in (transform.runner()(view), transform.execute(view)):
                np.testing.assert_allclose(result.numpy(force=True), expected, atol=1e-12)
                assert not result.requires_grad
        assert by_torch == fallbacks
    out = torch.empty(shape, dtype=torch.complex128).conj()  # (an out NumPy cannot see)
    t = torch.randn(shape, dtype=torch.complex128)
    transform = via("complex128")
    by_torch = _spied(transform)
    assert transform.execute(t, out=out) is out
    np.testing.assert_allclose(out.numpy(force=True), np.fft.fft(t.numpy(), axis=1),
                               atol=1e-12)
    assert by_torch == ["execute"]
    transform.execute(t)  # (a plain tensor: the host engine)
    assert by_torch == ["execute"]


def _spied(via):
    """A list that grows by the name of each TorchTransform method ``via`` falls back on
    (``runner`` when the runner it made is given a tensor NumPy cannot see)."""
    calls, by_torch = [], via._torch

    class Spy:
        def execute(self, *args):
            calls.append("execute")
            return by_torch.execute(*args)

        def runner(self, *args):
            run = by_torch.runner(*args)

            def spied(t):
                calls.append("runner")
                return run(t)
            return spied

    via._torch = Spy()
    return calls


def test_torch_transforms_are_timed_both_ways_where_numpy_views_take_them(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(_cpu, "_chosen", {})  # (none timed before, none kept after)
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


def test_the_choice_is_made_once_for_each_transform(monkeypatch):
    torch = pytest.importorskip("torch")
    import accelmath.fft

    timed = []
    fastest = _cpu._fastest
    monkeypatch.setattr(_cpu, "_fastest", lambda *args: timed.append(args) or fastest(*args))
    monkeypatch.setattr(_cpu, "_chosen", {})
    t = torch.randn(4, 64, dtype=torch.complex128)
    for _ in range(3):  # (calls the memo does not hold: axes as a list, or s without axes)
        accelmath.fft.fftn(t, axes=[1])
        with pytest.warns(DeprecationWarning):
            accelmath.fft.fftn(t, s=(4, 64))
        np.testing.assert_allclose(accelmath.fft.fftn(t, axes=[1]).numpy(),
                                   np.fft.fft(t.numpy(), axis=1), atol=1e-12)
    assert len(timed) == 2


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


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_out_may_be_an_ndarray_subclass(tmp_path):
    import accelmath.fft as afft

    # (a memmap, a masked array, a matrix: SciPy's engine refused them as out=)
    x = np.arange(16.0) + 1j
    mapped = np.memmap(tmp_path / "out.dat", dtype=complex, mode="w+", shape=(16,))
    assert afft.fft(x, out=mapped) is mapped
    np.testing.assert_allclose(np.asarray(mapped), np.fft.fft(x), atol=1e-12)
    masked = np.ma.zeros(16, dtype=complex)
    afft.FFT(x).execute(x, out=masked)
    np.testing.assert_allclose(masked.data, np.fft.fft(x), atol=1e-12)
    matrix = np.matrix(np.zeros((4, 4), complex))
    afft.fft2(np.ones((4, 4)) + 0j, out=matrix)
    np.testing.assert_allclose(np.asarray(matrix), np.fft.fft2(np.ones((4, 4))), atol=1e-12)


def test_misaligned_long_doubles_are_copied_not_read_in_place():
    """Complex long doubles at a misaligned address (a field of a packed record): SciPy's
    engine read them in place and crashed the interpreter; run in a child process, so that a
    crash fails this test instead of ending the run."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, scipy.fft, accelmath.fft as af
        rec = np.zeros(8, dtype=[("t", "f8"), ("z", np.clongdouble)])
        z = rec["z"]
        z[:] = np.arange(8) + 1j
        assert not z.flags.aligned
        for f in ("fft", "ifft", "fftn"):
            assert np.allclose(getattr(af, f)(z), getattr(np.fft, f)(z)), f
        out = np.empty(8, np.clongdouble)
        assert af.fft(z, out=out) is out and np.allclose(out, np.fft.fft(z))
        with scipy.fft.set_backend(af.scipy_backend):
            assert np.allclose(scipy.fft.fft(z), np.fft.fft(z))
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_long_double_results_go_to_out_and_shift():
    """A long double transform writes into a NumPy out= of its dtype (checked as any out=),
    and its result, like any NumPy array of a dtype no transform takes, shifts."""
    import accelmath.fft as af
    from accelmath.errors import (InvalidArgumentError, UnsupportedDTypeError,
                                  UnsupportedOperandError)

    x = np.random.default_rng().standard_normal(6).astype(np.longdouble)
    for name, out in (("fft", np.empty(6, np.clongdouble)), ("rfft", np.empty(4, np.clongdouble)),
                      ("ifft", np.empty(6, np.clongdouble)[::-1])):
        assert getattr(af, name)(x, out=out) is out
        np.testing.assert_allclose(out, getattr(np.fft, name)(x), rtol=1e-15)
    y = af.fft(x)
    assert y.dtype == np.clongdouble
    np.testing.assert_array_equal(af.fftshift(y), np.fft.fftshift(y))
    np.testing.assert_array_equal(af.ifftshift(y), np.fft.ifftshift(y))
    words = np.array(list("abcdef"), dtype=object)
    np.testing.assert_array_equal(af.fftshift(words), np.fft.fftshift(words))
    with pytest.raises(InvalidArgumentError, match="wrong shape"):
        af.fft(x, out=np.empty(5, np.clongdouble))
    with pytest.raises(UnsupportedDTypeError, match="Cannot cast"):
        af.fft(x, out=np.empty(6, complex))
    with pytest.raises(UnsupportedOperandError, match="ArrayType"):
        af.fft(x, out=[0] * 6)
    frozen = np.empty(6, np.clongdouble)
    frozen.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        af.fft(x, out=frozen)


def test_torch_input_into_a_numpy_out_that_torch_cannot_view():
    """A CPU tensor's transform into a NumPy out= of negative strides or another byte order
    (torch views neither): written all the same, not torch's ValueError."""
    torch = pytest.importorskip("torch")
    import accelmath.fft as af

    t = torch.randn(8, dtype=torch.complex128)
    for out in (np.empty(8, complex)[::-1], np.empty(8, ">c16")):
        assert af.fft(t, out=out) is out
        np.testing.assert_allclose(out, np.fft.fft(t.numpy()), rtol=1e-12)


def test_ranges_and_buffers_are_array_likes():
    """A range, a bytearray and an array.array are read as NumPy reads them (a bytearray's
    bytes as uint8): the same transforms."""
    import array

    import accelmath.fft as af

    for x in (range(8), bytearray(range(8)), array.array("d", range(8)),
              array.array("i", range(8))):
        np.testing.assert_allclose(af.fft(x), np.fft.fft(np.asarray(x)), atol=1e-12)
        np.testing.assert_allclose(af.rfft(x), np.fft.rfft(np.asarray(x)), atol=1e-12)

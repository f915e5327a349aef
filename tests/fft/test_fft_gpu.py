"""The FFT functions and plans on the GPU, against numpy.fft in float64 on fresh random data."""

import os

import numpy as np
import pytest
from closeness import assert_close

import accelmath.fft as afft

pytestmark = pytest.mark.gpu

FUNCS = {
    "fft": ("c2c", 1), "ifft": ("c2c", 1), "rfft": ("r2c", 1), "irfft": ("c2r", 1),
    "hfft": ("c2r", 1), "ihfft": ("r2c", 1), "fft2": ("c2c", 2), "ifft2": ("c2c", 2),
    "rfft2": ("r2c", 2), "irfft2": ("c2r", 2), "fftn": ("c2c", "n"), "ifftn": ("c2c", "n"),
    "rfftn": ("r2c", "n"), "irfftn": ("c2r", "n"),
}


def _data(rng, shape, kind, dtype=np.float64):
    x = rng.standard_normal(shape)
    if kind != "r2c":
        x = x + 1j * rng.standard_normal(shape)
    if kind == "r2c":
        return x.astype(dtype)
    return x.astype(np.complex64 if dtype == np.float32 else np.complex128)


@pytest.fixture(params=["cupy", "torch"])
def xp(request):
    if request.param == "cupy":
        cp = pytest.importorskip("cupy")
        return ("cupy", cp.asarray, lambda a: cp.asnumpy(a), cp.ndarray)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return ("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(),
            lambda t: t.cpu().numpy(), torch.Tensor)


CASES = [
    # name, shape, kwargs
    ("fft", (256,), {}), ("fft", (7, 33), {"axis": 0}), ("fft", (1,), {}),
    ("fft", (4088,), {"norm": "ortho"}), ("ifft", (3, 5, 97), {"n": 50}),
    ("ifft", (3, 5, 97), {"n": 130, "axis": 1, "norm": "forward"}),
    ("rfft", (16, 4088), {}), ("rfft", (5, 31), {"n": 40, "norm": "ortho"}),
    ("irfft", (8, 33), {}), ("irfft", (8, 33), {"n": 65}), ("irfft", (6, 17), {"axis": 0}),
    ("hfft", (4, 9), {}), ("ihfft", (4, 18), {"norm": "forward"}),
    ("fft2", (3, 64, 48), {}), ("fft2", (40, 6, 30), {"axes": (0, 2)}),
    ("ifft2", (24, 36), {"s": (20, 40), "norm": "ortho"}),
    ("rfft2", (2, 63, 64), {}), ("rfft2", (30, 20), {"axes": (1, 0)}),
    ("irfft2", (12, 9), {}), ("irfft2", (12, 9), {"s": (12, 17)}),
    ("fftn", (6, 8, 10), {}), ("fftn", (3, 4, 5, 6), {}), ("fftn", (2, 3, 4, 5, 6), {}),
    ("fftn", (9, 10, 11), {"axes": (2, 0)}), ("ifftn", (5, 6, 7, 8), {"axes": (3, 1, 0, 2)}),
    ("rfftn", (4, 5, 6, 8), {}), ("rfftn", (6, 7, 8), {"axes": (2, 0, 1)}),
    ("irfftn", (4, 5, 6, 5), {}), ("irfftn", (6, 7, 8), {"axes": (0, 2, 1)}),
]


@pytest.mark.parametrize("name,shape,kwargs", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
@pytest.mark.parametrize("view", ["contiguous", "transposed", "sliced"])
def test_against_numpy(xp, name, shape, kwargs, view):
    package, to_dev, to_host, array_type = xp
    kind = FUNCS[name][0]
    rng = np.random.default_rng()
    if view == "transposed":
        host = _data(rng, shape[::-1], kind).T
    elif view == "sliced":
        big = _data(rng, tuple(2 * n + 1 for n in shape), kind)
        host = big[tuple(slice(1, 1 + 2 * n, 2) for n in shape)]
    else:
        host = _data(rng, shape, kind)
    # build the same strided view on the device
    if view == "transposed":
        dev = to_dev(np.ascontiguousarray(host.T))
        dev = dev.T if package == "cupy" else dev.permute(*range(len(shape) - 1, -1, -1))
    elif view == "sliced":
        dev = to_dev(big)[tuple(slice(1, 1 + 2 * n, 2) for n in shape)]
    else:
        dev = to_dev(host)
    assert tuple(dev.shape) == host.shape
    got = getattr(afft, name)(dev, **kwargs)
    assert isinstance(got, array_type)
    ref = getattr(np.fft, name)(host, **kwargs)
    assert tuple(got.shape) == ref.shape
    assert_close(to_host(got), ref, 1e-12)
    # the input is never modified
    assert_close(to_host(dev), host, 0)


@pytest.mark.parametrize("name", ["fft", "rfft2", "irfftn", "ifft2"])
def test_float32(xp, name):
    package, to_dev, to_host, _ = xp
    kind = FUNCS[name][0]
    host = _data(np.random.default_rng(), (6, 40, 24), kind, np.float32)
    got = getattr(afft, name)(to_dev(host))
    ref = getattr(np.fft, name)(host.astype(np.complex128 if kind != "r2c" else np.float64))
    assert str(got.dtype).endswith("complex64" if kind != "c2r" else "float32")
    assert_close(to_host(got), ref, 2e-6)


def test_negative_strides_cupy(cp):
    host = _data(np.random.default_rng(), (12, 20), "c2c")[::-1, ::-2]
    assert_close(cp.asnumpy(afft.fft2(cp.asarray(np.ascontiguousarray(host))[::1])),
                 np.fft.fft2(host), 1e-12)
    dev = cp.asarray(_data(np.random.default_rng(), (12, 20), "c2c"))
    assert_close(cp.asnumpy(afft.fft2(dev[::-1, ::-2])),
                 np.fft.fft2(cp.asnumpy(dev)[::-1, ::-2]), 1e-12)
    assert_close(cp.asnumpy(afft.rfft(dev.real[::-1])),
                 np.fft.rfft(cp.asnumpy(dev.real)[::-1]), 1e-12)


def test_large_4088_complex128(cp):
    rng = np.random.default_rng()
    host = rng.standard_normal((4088, 4088))
    dev = cp.asarray(host)
    spec = afft.rfft2(dev)
    assert_close(cp.asnumpy(spec), np.fft.rfft2(host), 1e-12)
    back = afft.irfft2(spec, s=host.shape)
    assert_close(cp.asnumpy(back), host, 1e-12)


def test_out_and_in_place(cp):
    host = _data(np.random.default_rng(), (8, 64), "c2c")
    dev = cp.asarray(host)
    out = cp.empty_like(dev)
    assert afft.fft(dev, out=out) is out
    assert_close(cp.asnumpy(out), np.fft.fft(host), 1e-12)
    assert afft.ifft(out, out=out) is out  # in place
    assert_close(cp.asnumpy(out), host, 1e-12)
    # an out of Fortran order gets its own plan, no copy needed
    fout = cp.empty((8, 64), cp.complex128, order="F")
    afft.fft(dev, out=fout)
    assert_close(cp.asnumpy(fout), np.fft.fft(host), 1e-12)


def test_out_views_with_gaps(xp):
    """An ``out=`` view with gaps between its elements (cuFFT writes only dense layouts) gets
    the result by one copy; an ``out=`` of the wrong shape or dtype is refused, naming it."""
    _, asarray, to_numpy, _ = xp
    host = _data(np.random.default_rng(), (6, 40), "c2c")
    x = asarray(host)
    big = asarray(np.zeros((6, 80), np.complex128))
    view = big[:, ::2]
    assert afft.fft(x, out=view) is view
    assert_close(to_numpy(big)[:, ::2], np.fft.fft(host), 1e-12)
    assert not to_numpy(big)[:, 1::2].any()  # the gaps are left alone
    with pytest.raises(ValueError, match="out has wrong shape"):
        afft.fft(x, out=asarray(np.zeros((6, 41), np.complex128)))
    with pytest.raises(TypeError, match="Cannot cast the complex128 result into out"):
        afft.fft(x, out=asarray(np.zeros((6, 40))))
    with pytest.raises(ValueError, match="on the CPU|on device|must be on one device"):
        afft.fft(x, out=np.zeros((6, 40), np.complex128))


@pytest.mark.parametrize("name", ["fft", "rfft2", "irfft2"])
def test_empty_batches(xp, name):
    """No elements in a batch axis: an empty result, as in NumPy, from the functions and
    from a plan."""
    _, asarray, to_numpy, _ = xp
    kind = FUNCS[name][0]
    host = _data(np.random.default_rng(), (0, 6, 8), kind)
    got = getattr(afft, name)(asarray(host))
    assert to_numpy(got).shape == getattr(np.fft, name)(host).shape
    plan = afft.FFT(asarray(host), axes=(1, 2))
    assert to_numpy(plan.execute()).shape == (0, 6, 5 if kind == "r2c" else 8)


@pytest.mark.parametrize("call", [
    lambda x: afft.fft(x, axis=2),
    lambda x: afft.fft(x, n=0), lambda x: afft.fftn(x, s=(0, 4), axes=(0, 1)),
    lambda x: afft.fft(x[:0, :0]), lambda x: afft.irfft2(x, norm="sideways"),
])
def test_bad_arguments_on_the_gpu(xp, call):
    _, asarray, _, _ = xp
    with pytest.raises(ValueError):
        call(asarray(_data(np.random.default_rng(), (4, 6), "c2c")))


def test_integers_promote_on_the_gpu(xp):
    _, asarray, to_numpy, _ = xp
    host = np.arange(24).reshape(4, 6)
    assert_close(to_numpy(afft.fft2(asarray(host))), np.fft.fft2(host), 1e-12)
    assert_close(to_numpy(afft.rfft(asarray(host > 5))), np.fft.rfft(host > 5), 1e-12)


def test_half_precision_torch(torch_cuda):
    torch = torch_cuda
    host = np.random.default_rng().standard_normal((4, 64)).astype(np.float16)
    got = afft.rfft(torch.from_numpy(host).cuda())
    assert got.dtype == torch.complex32
    ref = np.fft.rfft(host.astype(np.float64))
    assert_close(got.to(torch.complex64).cpu().numpy(), ref, 3e-3)
    back = afft.irfft(got)
    assert back.dtype == torch.float16
    assert_close(back.float().cpu().numpy(), host.astype(np.float64), 3e-3)
    with pytest.raises(ValueError, match="powers of 2"):  # cuFFT's half precision
        afft.fft(torch.from_numpy(host[:, :60]).cuda())


def test_half_precision_without_complex32(cp):
    """CuPy has no complex32: float16 computes in single precision, as in cupy.fft and
    scipy.fft; a plan asks for the conversion."""
    host = np.random.default_rng().standard_normal((4, 64)).astype(np.float16)
    exact = host.astype(np.float64)
    got = afft.rfft(cp.asarray(host))
    assert got.dtype == cp.complex64
    assert_close(cp.asnumpy(got), np.fft.rfft(exact), 1e-6)
    got = afft.fft2(cp.asarray(host))
    assert got.dtype == cp.complex64
    assert_close(cp.asnumpy(got), np.fft.fft2(exact), 1e-6)
    with pytest.raises(TypeError, match="computes in float32, but the operand is float16"):
        afft.FFT(cp.asarray(host))


def test_plan_execute_new_operands_and_streams(xp):
    package, to_dev, to_host, _ = xp
    rng = np.random.default_rng()
    hosts = [_data(rng, (16, 64, 64), "c2c") for _ in range(3)]
    devs = [to_dev(h) for h in hosts]
    with afft.FFT(devs[0], axes=(1, 2)) as plan:
        for host, dev in zip(hosts, devs):
            assert_close(to_host(plan.execute(dev)), np.fft.fft2(host), 1e-12)
            assert_close(to_host(plan.inverse(plan.forward(dev))), host, 1e-12)
        out = to_dev(np.empty((16, 64, 64), np.complex128))
        assert plan.execute(devs[1], out=out) is out
        assert_close(to_host(out), np.fft.fft2(hosts[1]), 1e-12)
        if package == "cupy":
            import cupy as cp

            s = cp.cuda.Stream(non_blocking=True)
            r = plan.execute(devs[2], stream=s)
            s.synchronize()
            assert_close(to_host(r), np.fft.fft2(hosts[2]), 1e-12)
    with pytest.raises(Exception, match="freed"):
        plan.execute(devs[0])


def test_plans_from_a_layout(xp):
    name, asarray, to_numpy, array_type = xp
    host = _data(np.random.default_rng(), (3, 48, 40), "r2c")
    plan = afft.FFT(shape=host.shape, dtype="float64", package=name, device=0, axes=(1, 2))
    got = plan.execute(asarray(host))
    assert isinstance(got, array_type)
    assert_close(to_numpy(got), np.fft.rfft2(host), 1e-12)


def test_r2c_c2r_plans(xp):
    package, to_dev, to_host, _ = xp
    host = np.random.default_rng().standard_normal((4, 30, 21))
    dev = to_dev(host)
    with afft.FFT(dev, axes=(1, 2), norm="ortho") as fwd:
        spec = fwd.execute()
        assert_close(to_host(spec), np.fft.rfft2(host, norm="ortho"), 1e-12)
        with afft.FFT(spec, axes=(1, 2), kind="c2r", last_axis_size=21, norm="ortho") as inv:
            assert_close(to_host(inv.execute()), host, 1e-12)



@pytest.mark.parametrize("axes, last, norm", [((2,), 20, "backward"), ((1, 2), 21, "forward"),
                                              ((0, 1, 2), 20, "ortho")])
def test_c2r_plans_that_overwrite_their_input(xp, axes, last, norm):
    package, to_dev, to_host, _ = xp
    rng = np.random.default_rng()
    host = rng.standard_normal((4, 30, last))
    spectrum = np.fft.rfftn(host, axes=axes, norm=norm)
    with afft.FFT(to_dev(spectrum), axes=axes, kind="c2r", last_axis_size=last, norm=norm,
                  overwrite_input=True) as plan:
        assert plan._executor.copy_in is None  # (the copy it spares)
        for _ in range(2):  # (new operands each time: the input's contents are spent)
            assert_close(to_host(plan.execute(to_dev(spectrum))), host, 1e-12)


def test_a_conjugating_c2r_plan_keeps_its_copy_and_its_input(xp):
    # (the copy conjugates: overwrite_input does not spare it)
    package, to_dev, to_host, _ = xp
    half = np.fft.rfft(np.random.default_rng().standard_normal((6, 40)), axis=1)
    x = to_dev(half)
    with afft.FFT(x, axes=(1,), kind="c2r", last_axis_size=40, conjugate=True, norm="forward",
                  overwrite_input=True) as plan:
        assert plan._executor.copy_in is not None
        assert_close(to_host(plan.execute(x)), np.fft.hfft(half, n=40, axis=1), 1e-12)
    np.testing.assert_array_equal(to_host(x), half)

def test_a_jax_operand_is_never_overwritten(jax_gpu):
    # (JAX arrays are immutable, and others may share their buffer: the plan copies)
    import jax.numpy as jnp

    host = np.random.default_rng().standard_normal((3, 64, 64))
    spectrum = np.fft.rfftn(host, axes=(1, 2))
    x = jnp.asarray(spectrum)
    with afft.FFT(x, axes=(1, 2), kind="c2r", last_axis_size=64, overwrite_input=True) as plan:
        assert plan._executor.copy_in is not None
        assert_close(np.asarray(plan.execute(x)), host, 1e-12)
    np.testing.assert_array_equal(np.asarray(x), spectrum)


def test_jax_inputs(jax_gpu):
    jax = jax_gpu
    import jax.numpy as jnp

    host = _data(np.random.default_rng(), (16, 40), "c2c")
    x = jnp.asarray(host)
    got = afft.fft2(x)
    assert isinstance(got, jax.Array)
    assert_close(np.asarray(got), np.fft.fft2(host), 1e-12)
    real = jnp.asarray(host.real)
    assert_close(np.asarray(afft.rfft(real)), np.fft.rfft(host.real), 1e-12)


def test_jax_results_wait_for_the_transform(jax_gpu):
    """JAX reads a result on its own streams right away: it must wait for the transform,
    enqueued on the current stream, on an explicit stream, or by a plan (a large transform,
    so that reading too early would show)."""
    jax = jax_gpu
    import jax.numpy as jnp

    host = _data(np.random.default_rng(), (2, 2048, 2048), "c2c")
    ref = np.fft.fft2(host)
    total = np.abs(ref).sum()
    x = jnp.asarray(host)
    other = _other_stream()
    with afft.FFT(x, axes=(1, 2)) as plan:
        for run in (lambda: afft.fft2(x), lambda: afft.fft2(x, stream=other),
                    plan.execute, lambda: plan.execute(stream=other)):
            for _ in range(3):
                got = run()
                assert isinstance(got, jax.Array)
                assert abs(float(jnp.abs(got).sum()) - total) <= 1e-9 * total
            assert_close(np.asarray(run()), ref, 1e-12)


def test_array_interface_stream_is_waited_for(cp):
    """A ``__cuda_array_interface__`` (version 3) names the stream still writing the data:
    the transform reads the data only once that work is done. A real array of such a
    producer is promoted to complex like any other."""

    class Producer:
        def __init__(self, array, stream=None):
            self.__cuda_array_interface__ = {**array.__cuda_array_interface__,
                                             "stream": stream}

    rng = np.random.default_rng()
    a = cp.asarray(rng.standard_normal((2048, 2048)) / 2048 ** 0.5 + 0j)
    x, y = cp.asarray(_data(rng, (2048, 2048), "c2c")), cp.empty_like(a)
    writer, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    for stream in (None, other):
        afft.fft2(Producer(x), stream=stream)  # the plan made and cached (it may synchronize)
        cp.cuda.Device().synchronize()
        with writer:  # milliseconds of work changing x (nothing allocated: no implicit sync)
            for _ in range(5):
                cp.matmul(a, x, out=y)
                cp.matmul(a, y, out=x)
        got = afft.fft2(Producer(x, writer.ptr), stream=stream)
        cp.cuda.Device().synchronize()
        assert_close(cp.asnumpy(got), np.fft.fft2(cp.asnumpy(x)), 1e-12)
    got = afft.fft2(Producer(x.real.copy()))
    assert_close(cp.asnumpy(got), np.fft.fft2(cp.asnumpy(x.real)), 1e-12)


def test_dlpack_producers_are_waited_for(torch_cuda):
    """A producer known only by ``__dlpack__`` is asked for its data in stream order: a
    function or a plan, on the default stream or on a non-blocking one, reads the data only
    once the producer's work writing it is done."""
    torch = torch_cuda

    class Producer:  # torch's DLPack export, and nothing else of the tensor
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kwargs):
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    rng = np.random.default_rng()
    a = torch.from_numpy(rng.standard_normal((2048, 2048)) / 2048 ** 0.5 + 0j).cuda()
    x = torch.from_numpy(_data(rng, (2048, 2048), "c2c")).cuda()
    y = torch.empty_like(a)
    writer, other = torch.cuda.Stream(), torch.cuda.Stream()  # non-blocking streams
    plan = afft.FFT(Producer(x), axes=(0, 1))
    runs = [lambda: afft.fft2(Producer(x)), lambda: afft.fft2(Producer(x), stream=other),
            lambda: plan.execute(Producer(x)), lambda: plan.execute(Producer(x), stream=other)]
    for run in runs:
        run()  # plans made and cached, results' memory pooled (either may synchronize)
        torch.cuda.synchronize()
        with torch.cuda.stream(writer):  # milliseconds of work changing x
            for _ in range(5):
                torch.matmul(a, x, out=y)
                torch.matmul(a, y, out=x)
            got = run()
        torch.cuda.synchronize()
        got = got.get() if hasattr(got, "get") else got.cpu().numpy()
        assert_close(got, np.fft.fft2(x.cpu().numpy()), 1e-12)


def _other_stream():
    """A non-blocking stream of CuPy, else of torch."""
    try:
        import cupy

        return cupy.cuda.Stream(non_blocking=True)
    except ImportError:
        torch = pytest.importorskip("torch")
        return torch.cuda.Stream()


def test_cache_reuse_and_limits(cp):
    afft.clear_cache()
    x = cp.asarray(_data(np.random.default_rng(), (32, 32), "c2c"))
    for _ in range(5):
        afft.fft2(x)
    info = afft.cache_info()
    assert info["misses"] == 1 and info["hits"] == 4 and info["size"] == 1
    afft.set_cache_limits(max_size=2)
    for n in (8, 9, 10, 11):
        afft.fft(cp.ones(n, cp.complex64))
    assert afft.cache_info()["size"] <= 2
    afft.set_cache_limits(max_size=64)
    afft.clear_cache()
    assert afft.cache_info()["size"] == 0


def test_host_array_with_cuda_execution(cp):
    host = _data(np.random.default_rng(), (8, 30), "c2c")
    got = afft.fft(host, execution="cuda")
    assert isinstance(got, np.ndarray)
    assert_close(got, np.fft.fft(host), 1e-12)


def test_output_right_after_the_workspace(monkeypatch, cp):
    """A plan with a scratch buffer whose cuFFT calls need no work area (r2c float32 4096^2
    in torch's layout, through the scratch buffer), writing into an array that starts where
    its workspace ends, as a pool may place them: cuFFT must not be handed that address as
    a work area (it refuses one at the output's address: CUFFT_EXEC_FAILED)."""
    from accelmath._core.gpu import resources
    from accelmath._core.gpu.memory import Workspace
    from accelmath.fft import _cuda

    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # (timed now, not a stored choice)
    monkeypatch.setattr(_cuda.CudaExecutor, "_time", lambda self, steps, *args: -sum(
        "tmp" in (step.src, step.dst) for step in steps))
    host = np.random.default_rng().standard_normal((4096, 4096)).astype(np.float32)
    with afft.FFT(cp.asarray(host), axes=(0, 1), out_strides=(1, 4096)) as plan:
        executor = plan._executor
        scratch = executor._offsets[3]
        assert executor.nbytes == scratch > 0  # the scratch buffer, and no work area
        memory = cp.empty(scratch + 4096 * 2049 * 8, cp.uint8)
        # (the workspace a thread takes on its first run)
        monkeypatch.setattr(resources, "allocate_workspace",
                            lambda nbytes, *_: Workspace(memory.data.ptr, nbytes, owner=memory))
        out = cp.ndarray((4096, 2049), cp.complex64, memptr=memory.data + scratch,
                         strides=(8, 4096 * 8))
        plan.execute(cp.asarray(host), out=out)
        assert_close(cp.asnumpy(out), np.fft.rfft2(host.astype(np.float64)), 1e-6)


@pytest.mark.parametrize("choice", ["joint", "split", "scratch"])
@pytest.mark.parametrize("shape,axes", [((1100, 2048), (0, 1)), ((2, 96, 80, 160), (1, 2, 3)),
                                        ((2050, 1024), (0, 1))])
def test_tuned_r2c_c2r_candidates(monkeypatch, choice, shape, axes, cp):
    """Every plan the executor times for large multi-axis real transforms is right."""
    from accelmath.fft._cuda import CudaExecutor

    timed = []

    def fake_time(self, steps, copy_in, handles, work, inverse):
        staged = any("tmp" in (step.src, step.dst) for step in steps)
        timed.append("scratch" if staged else "split" if len(steps) > 1 else "joint")
        return 0.0 if timed[-1] == choice else 1.0

    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # (timed now, not a stored choice)
    monkeypatch.setenv("ACCELMATH_MIXED", "0")  # (cuFFT's candidates alone: 1100 = 4 25 11)
    monkeypatch.setattr(CudaExecutor, "_time", fake_time)
    host = np.random.default_rng().standard_normal(shape)
    dev = cp.asarray(host)
    with afft.FFT(dev, axes=axes) as fwd:
        spec = fwd.execute()
        assert timed == ["joint", "split", "scratch"]
        steps = fwd._executor.steps
        assert [len(s.n) for s in steps if s.kind == "r2c"] == (
            [len(axes)] if choice == "joint" else [1])
        assert (steps[0].dst == "tmp") == (choice == "scratch")
        assert_close(cp.asnumpy(spec), np.fft.rfftn(host, axes=axes), 1e-12)
        with afft.FFT(spec, axes=axes, kind="c2r", last_axis_size=shape[axes[-1]]) as inv:
            # the c2r through the scratch buffer reads its input itself, the others a copy
            assert (inv._executor.copy_in is None) == (choice == "scratch")
            for _ in range(2):
                assert_close(cp.asnumpy(inv.execute()), host, 1e-12)
            assert_close(cp.asnumpy(spec), np.fft.rfftn(host, axes=axes), 1e-12)  # left intact


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_r2c_in_torch_layout_through_scratch(monkeypatch, dtype, cp):
    """torch's transposed rfft2 layout, written through the scratch buffer."""
    from accelmath.fft._cuda import CudaExecutor

    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # (timed now, not a stored choice)
    monkeypatch.setattr(CudaExecutor, "_time", lambda self, steps, *args: -sum(
        "tmp" in (step.src, step.dst) for step in steps))
    host = np.random.default_rng().standard_normal((2050, 1024)).astype(dtype)
    dev = cp.asarray(host)
    with afft.FFT(dev, out_strides=(1, 2050)) as plan:
        assert [s.dst for s in plan._executor.steps] == ["tmp", "out"]
        for _ in range(2):
            spec = plan.execute()
            assert spec.strides == (spec.itemsize, 2050 * spec.itemsize)
            assert_close(cp.asnumpy(spec), np.fft.rfft2(host.astype(np.float64)),
                         1e-12 if dtype == "float64" else 1e-5)


@pytest.mark.parametrize("name", ["fftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("shape,axes", [((96, 80), (0, 1)), ((6, 40, 32), (0, 1)),
                                        ((6, 40, 32), (1, 2)), ((40, 32), (1, 0)),
                                        ((6, 40, 32), (0, 1, 2)), ((6, 40, 32), (0,)),
                                        ((1100, 2048), (0, 1))])
def test_torch_results_in_torch_layout(name, shape, axes, torch_cuda):
    """Results of torch tensors have torch's own strides (cuFFT writes all of these), and
    irfftn reads torch's rfftn layout (the last case is large enough to time candidates)."""
    torch = torch_cuda
    rng = np.random.default_rng()
    host = rng.standard_normal(shape)
    kwargs = {}
    if name == "fftn":
        host = host + 1j * rng.standard_normal(shape)
    t = torch.from_numpy(host).cuda()
    expected = getattr(np.fft, name)(host, axes=axes)
    if name == "irfftn":
        t = torch.fft.rfftn(t, dim=axes)  # transposed for axes 0 and 1
        host = t.cpu().numpy()
        kwargs = {"s": [shape[a] for a in axes]}
        expected = np.fft.irfftn(host, axes=axes, **kwargs)
    for _ in range(2):
        got = getattr(afft, name)(t, axes=axes, **kwargs)
        assert_close(got.cpu().numpy(), expected, 1e-12)
    theirs = getattr(torch.fft, name)(t, dim=axes, **kwargs).stride()
    assert got.stride() == theirs  # torch's layout, which its transform of a probe tells
    assert_close(t.cpu().numpy(), host, 0)  # the input is left intact


def test_torch_conjugate_and_negative_views(torch_cuda):
    torch = torch_cuda
    host = _data(np.random.default_rng(), (8, 32), "c2c")
    t = torch.from_numpy(host).cuda()
    for _ in range(2):  # the second call takes the remembered-call path
        assert_close(afft.fft(t.conj()).cpu().numpy(), np.fft.fft(host.conj()), 1e-12)
        assert_close(afft.fft(t).cpu().numpy(), np.fft.fft(host), 1e-12)
        assert_close(afft.rfft(t.conj().imag).cpu().numpy(), np.fft.rfft(-host.imag), 1e-12)
    with afft.FFT(t, axes=(1,)) as plan:
        assert_close(plan.execute(t).cpu().numpy(), np.fft.fft(host, axis=1), 1e-12)
        assert_close(plan.execute(t.conj()).cpu().numpy(), np.fft.fft(host.conj(), axis=1), 1e-12)
        with afft.FFT(t.real.contiguous(), axes=(1,)) as real_plan:
            # a real plan: the negated view (the imaginary part of a conjugate) is resolved
            for _ in range(2):
                assert_close(real_plan.execute(t.conj().imag.contiguous()).cpu().numpy(),
                             np.fft.rfft(-host.imag, axis=1), 1e-12)
                assert_close(real_plan.execute(t.conj().imag).cpu().numpy(),
                             np.fft.rfft(-host.imag, axis=1), 1e-12)
        out = torch.empty_like(t)
        with pytest.raises(ValueError, match="conjugated"):
            plan.execute(t, out=out.conj())


def test_plan_fast_path_still_checks_operands(xp):
    package, to_dev, to_host, _ = xp
    from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError

    rng = np.random.default_rng()
    host = _data(rng, (32, 64), "c2c")
    dev = to_dev(host)
    with afft.FFT(dev, axes=(1,)) as plan:
        out = to_dev(np.empty((32, 64), np.complex128))
        for _ in range(3):
            assert plan.execute(dev, out=out) is out
        assert_close(to_host(out), np.fft.fft(host, axis=1), 1e-12)
        with pytest.raises(InvalidArgumentError, match="does not match"):
            plan.execute(to_dev(_data(rng, (16, 64), "c2c")))
        with pytest.raises(InvalidArgumentError, match="does not match"):
            plan.execute(to_dev(np.ascontiguousarray(host.T)).T)
        with pytest.raises(InvalidArgumentError, match="does not match"):
            plan.execute(to_dev(host.astype(np.complex64)))
        wide = to_dev(_data(rng, (32, 128), "c2c"))
        with pytest.raises(InvalidArgumentError, match="does not match"):
            plan.execute(wide[:, ::2])  # the plan's shape, other strides
        with pytest.raises(InvalidArgumentError, match="out has wrong shape"):
            plan.execute(dev, out=wide[:, 1::2])
        with pytest.raises(InvalidArgumentError, match="out has wrong shape"):
            plan.execute(dev, out=to_dev(np.empty((32, 32), np.complex128)))
        with pytest.raises(UnsupportedDTypeError, match="out has dtype"):
            plan.execute(dev, out=to_dev(np.empty((32, 64), np.complex64)))
        with pytest.raises(InvalidArgumentError, match="out has wrong shape"):
            plan.execute(dev, out=to_dev(np.empty((64, 32), np.complex128)).T)
        for direction, ref in (("inverse", np.fft.ifft(host, axis=1)),
                               ("forward", np.fft.fft(host, axis=1))):
            assert plan.execute(dev, out=out, direction=direction) is out
            assert_close(to_host(out), ref, 1e-12)
        for direction in ("sideways", ["forward"]):
            with pytest.raises(InvalidArgumentError, match="direction"):
                plan.execute(dev, out=out, direction=direction)
        execute = plan.execute  # held across free(): must not reach the freed handles
    with pytest.raises(Exception, match="freed"):
        execute(dev, out=out)
    with afft.FFT(to_dev(_data(rng, (32, 64), "r2c")), axes=(1,)) as plan:
        with pytest.raises(InvalidArgumentError, match="direction"):
            plan.execute(direction="inverse")


def test_stateless_calls_remembered_by_layout(xp):
    package, to_dev, to_host, _ = xp
    rng = np.random.default_rng()
    afft.clear_cache()
    hosts = [_data(rng, (24, 40), "c2c") for _ in range(3)]
    for host in hosts:
        assert_close(to_host(afft.fft(to_dev(host), axis=0)), np.fft.fft(host, axis=0), 1e-12)
    info = afft.cache_info()
    assert (info["misses"], info["hits"]) == (1, 2)
    # the same call on other layouts, dtypes and lengths gets other plans
    big = _data(rng, (48, 40), "c2c")
    assert_close(to_host(afft.fft(to_dev(big)[::2], axis=0)), np.fft.fft(big[::2], axis=0), 1e-12)
    assert_close(to_host(afft.fft(to_dev(hosts[0].astype(np.complex64)), axis=0)),
                 np.fft.fft(hosts[0], axis=0), 1e-5)
    assert_close(to_host(afft.fft(to_dev(hosts[0]), 30, axis=0)),
                 np.fft.fft(hosts[0], 30, axis=0), 1e-12)
    assert_close(to_host(afft.fft(to_dev(hosts[0]), axis=0, norm="ortho")),
                 np.fft.fft(hosts[0], axis=0, norm="ortho"), 1e-12)
    assert_close(to_host(afft.ifft(to_dev(hosts[0]), axis=0)), np.fft.ifft(hosts[0], axis=0), 1e-12)
    afft.clear_cache()
    assert_close(to_host(afft.fft(to_dev(hosts[1]), axis=0)), np.fft.fft(hosts[1], axis=0), 1e-12)


def test_stateless_calls_keyed_by_records(xp):
    """The memo remembers a device call under a CallKey, the cache keeps its plan under a
    PlanKey (accelmath.fft._records)."""
    from accelmath.fft import _transform
    from accelmath.fft._records import CallKey, PlanKey, Transform

    package, to_dev, to_host, _ = xp
    afft.clear_cache()
    host = _data(np.random.default_rng(), (8, 16), "c2c")
    x = to_dev(host)
    assert_close(to_host(afft.fft(x, axis=1, norm="ortho")),
                 np.fft.fft(host, axis=1, norm="ortho"), 1e-12)
    (call,) = _transform.dispatcher._calls
    assert type(call) is CallKey and not call.out_given and call.array_type is type(x)
    assert call.transform == Transform("c2c", None, (1,), "ortho", False, False, "auto", None)
    (key,) = [key for cache in _transform.dispatcher._caches.values() for key in cache._entries]
    assert type(key) is PlanKey
    assert (key.kind, key.axes, tuple(key.shape), key.dtype, key.norm, key.conjugate, key.last,
            key.out_strides, key.package) == ("c2c", (1,), (8, 16), "complex128", "ortho",
                                              False, None, None, package)


@pytest.mark.parametrize("kind", ["c2c", "c2r"])
def test_each_thread_gets_handles_and_gives_them_back(kind, cp):
    """A thread's first call makes its own cuFFT handles (and workspace); when the thread
    ends they become spare, and the next thread takes them instead of planning again."""
    import gc
    import threading

    rng = np.random.default_rng()
    ref = _data(rng, (4, 40, 30), "r2c" if kind == "c2r" else "c2c")
    # norm="forward": the inverse is unscaled (and for c2c one cuFFT call, the direct path)
    host = np.fft.fftn(ref, axes=(1, 2)) if kind == "c2c" else np.fft.rfftn(ref, axes=(1, 2))
    dev = cp.asarray(host)
    with afft.FFT(dev, axes=(1, 2), kind=kind, norm="forward") as plan:
        scale = 40 * 30
        results = [plan.execute(dev, direction="inverse")]
        held = plan._executor.resources._held
        per_thread = len(held.handles)

        def work():
            results.append(plan.execute(dev, direction="inverse"))
            cp.cuda.get_current_stream().synchronize()

        for _ in range(3):
            thread = threading.Thread(target=work)
            thread.start()
            thread.join()
            del thread
            gc.collect()
            assert len(held.handles) == 2 * per_thread  # the main thread's, and one spare
            assert len(held.spare) == 1
        assert len(held.workspaces) == 1  # the main thread's; the others were freed
        for got in results:
            assert_close(cp.asnumpy(got) / scale, ref, 1e-12)


@pytest.mark.parametrize("shape,axes", [((48, 40), (0, 1)), ((5, 48, 40), (1, 2))])
def test_r2c_into_transposed_output_needs_no_copy(shape, axes, cp):
    """An r2c plan writing the transposed layout torch.fft returns: no joint cuFFT call can
    write it, the halved axis alone then the others can, without a scratch copy."""
    rng = np.random.default_rng()
    host = rng.standard_normal(shape)
    out_shape = list(shape)
    out_shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    out_strides = [0] * len(shape)
    step = 1
    # fastest first: the transform axes in the order given, then the batch axes
    for axis in list(axes) + [a for a in reversed(range(len(shape))) if a not in axes]:
        out_strides[axis] = step
        step *= out_shape[axis]
    with afft.FFT(cp.asarray(host), axes=axes, out_strides=out_strides) as plan:
        assert plan._executor.copy_in is None and plan._executor.copy_out is None
        got = plan.execute()
        assert got.strides == tuple(8 * 2 * s for s in out_strides)
        assert_close(cp.asnumpy(got), np.fft.rfftn(host, axes=axes), 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(48, 40, 5), (48, 40, 3), (9, 30, 7, 5)])
def test_real_transforms_over_a_middle_axis(xp, dtype, shape):
    """The batch axes around the transformed one cannot merge; a loop over the inner one would
    start real data at odd elements, which cuFFT rejects (such layouts go through a copy)."""
    package, to_dev, to_host, _ = xp
    rng = np.random.default_rng()
    x = rng.standard_normal(shape).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    spectrum = afft.rfft(to_dev(x), axis=1)
    assert_close(to_host(spectrum), np.fft.rfft(x.astype(np.float64), axis=1), tol)
    back = afft.irfft(to_dev(np.fft.rfft(x, axis=1)), shape[1], axis=1)
    assert_close(to_host(back), x, tol)


def test_library_calls_through_ctypes_and_the_shim(cp):
    """cuFFT runs through the compiled call shim where it builds, a plan's execute(x, out=)
    too, and through plain ctypes with ACCELMATH_HOSTCALL=0: the same results either way."""
    import subprocess
    import sys

    from accelmath._core import hostcall

    x = cp.asarray(_data(np.random.default_rng(), (32, 1024), "c2c"))
    with afft.FFT(x, axes=(1,)) as plan:
        func = plan._executor._calls[0][0]
        compiled = hostcall.status().startswith("C call shim")
        assert (type(func).__name__ == "Function") == compiled, hostcall.status()
        assert (type(plan.execute).__name__ == "Launch") == compiled
        assert_close(cp.asnumpy(plan.execute(x)), np.fft.fft(cp.asnumpy(x), axis=1), 1e-12)
        out = cp.empty_like(x)
        for _ in range(3):  # out= checked in Python the first time, then read in C
            y = cp.asarray(_data(np.random.default_rng(), (32, 1024), "c2c"))
            assert plan.execute(y, out=out) is out
            assert_close(cp.asnumpy(out), np.fft.fft(cp.asnumpy(y), axis=1), 1e-12)
    script = (
        "import numpy as np, cupy as cp, accelmath.fft as afft\n"
        "from accelmath._core import hostcall\n"
        "x = np.random.default_rng().standard_normal((8, 300)) + 1j\n"
        "with afft.FFT(cp.asarray(x), axes=(1,)) as plan:\n"
        "    assert type(plan._executor._calls[0][0]).__name__ != 'Function'\n"
        "    assert type(plan.execute).__name__ != 'Launch'\n"
        "    got = cp.asnumpy(plan.execute(cp.asarray(x), direction='inverse'))\n"
        "ref = np.fft.ifft(x, axis=1)\n"
        "assert np.linalg.norm(got - ref) <= 1e-12 * np.linalg.norm(ref)\n"
        "print(hostcall.status())\n")
    env = {**os.environ, "ACCELMATH_HOSTCALL": "0"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ctypes (ACCELMATH_HOSTCALL=0)"


def _stream_tools(package):
    """For ``package``: a new non-blocking stream, a context making it current, a spin of
    about 50 ms enqueued on the current stream, and the pool address of a new byte array."""
    if package == "cupy":
        import cupy as cp

        spin = cp.RawKernel(
            'extern "C" __global__ void spin(long long n) {'
            ' long long t = clock64(); while (clock64() - t < n) {} }', "spin")
        stream = cp.cuda.Stream(non_blocking=True)
        return (stream, lambda: stream, lambda: spin((1,), (1,), (np.int64(10**8),)),
                lambda n: cp.empty(n, cp.uint8).data.ptr)
    import torch

    stream = torch.cuda.Stream()
    return (stream, lambda: torch.cuda.stream(stream), lambda: torch.cuda._sleep(10**8),
            lambda n: torch.empty(n, dtype=torch.uint8, device="cuda").data_ptr())


@pytest.mark.parametrize("call", ["stateless", "remembered", "execute", "promoted and padded"])
def test_explicit_stream_orders_the_whole_call(xp, call):
    """With ``stream=`` other than the current stream, everything a call enqueues or
    allocates follows that stream: a dtype conversion and padding of the input run there
    (right, while the current stream is busy), and the result comes from the pool in that
    stream's order (freed, its memory goes to the next allocation on that stream)."""
    package, to_dev, to_host, _ = xp
    stream, scope, spin, new_address = _stream_tools(package)
    host = _data(np.random.default_rng(), (8, 1000), "c2c")
    x = to_dev(host)
    ref = np.fft.fft(host)
    if call == "stateless":
        result = afft.fft(x, stream=stream)
    elif call == "remembered":
        afft.fft(x, stream=stream)
        result = afft.fft(x, stream=stream)
    elif call == "execute":
        plan = afft.FFT(x, axes=(1,))
        plan.execute(x)
        result = plan.execute(x, stream=stream)
    else:
        host = host.real.astype(np.float32)
        x = to_dev(host)
        ref = np.fft.fft(host.astype(np.float64), n=1200)
        afft.fft(x, n=1200, stream=stream)  # planned, and the pools hold memory: no call syncs
        stream.synchronize()
        spin()
        result = afft.fft(x, n=1200, stream=stream)
    stream.synchronize()
    if call == "promoted and padded":
        # (the padded copy, freed too, is as large as the result: the address check below
        # would be ambiguous; a conversion or copy left on the busy stream fails this one)
        assert_close(to_host(result), ref, 1e-5)
        return
    assert_close(to_host(result), ref, 1e-12)
    address = result.data.ptr if package == "cupy" else result.data_ptr()
    nbytes = result.nbytes if package == "cupy" else result.numel() * result.element_size()
    del result
    with scope():
        assert new_address(nbytes) == address


def test_host_array_with_cuda_execution_on_a_stream(cp):
    stream, _, spin, _ = _stream_tools("cupy")
    host = _data(np.random.default_rng(), (64, 4096), "c2c")
    afft.fft(host, execution="cuda", stream=stream)
    spin()  # the current stream is busy
    got = afft.fft(host, execution="cuda", stream=stream)
    assert_close(got, np.fft.fft(host), 1e-12)
    cp.cuda.get_current_stream().synchronize()


def test_a_thread_keeps_workspaces_on_its_last_streams_only(xp):
    from accelmath._core.gpu.resources import STREAMS_KEPT as _STREAMS_KEPT

    package, to_dev, to_host, _ = xp
    host = _data(np.random.default_rng(), (16, 4088), "c2c")  # (with a work area)
    x = to_dev(host)
    if package == "cupy":
        import cupy as cp

        streams = [cp.cuda.Stream(non_blocking=True) for _ in range(_STREAMS_KEPT + 3)]
    else:
        import torch

        streams = [torch.cuda.Stream() for _ in range(_STREAMS_KEPT + 3)]
    with afft.FFT(x, axes=(1,)) as plan:
        for round_ in range(2):
            for stream in streams:
                result = plan.execute(x, stream=stream)
                stream.synchronize()
                assert_close(to_host(result), np.fft.fft(host), 1e-12)
        workspaces = plan._executor.resources.local.state.workspaces
        handle = streams[-1].ptr if package == "cupy" else streams[-1].cuda_stream
        assert len(workspaces) == _STREAMS_KEPT and list(workspaces)[-1] == handle
        assert plan.nbytes > 0 and plan.held_bytes == _STREAMS_KEPT * plan.nbytes


def test_cache_counts_the_workspaces_of_every_stream(cp):
    afft.clear_cache()
    x = cp.asarray(_data(np.random.default_rng(), (16, 4088), "c2c"))  # (with a work area)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(3)]
    for stream in streams:
        afft.fft(x, stream=stream)
    plan = afft.FFT(x, axes=(1,))
    assert plan.nbytes > 0
    assert afft.cache_info()["bytes"] == 3 * plan.nbytes


def test_cache_bound_holds_as_plans_take_workspaces(cp):
    """A cached plan run on another stream takes another workspace: the byte bound is
    checked again then, evicting the plan used longest ago."""
    afft.clear_cache()
    rng = np.random.default_rng()
    x = cp.asarray(_data(rng, (16, 4088), "c2c"))  # (with a work area)
    y = cp.asarray(_data(rng, (8, 4088), "c2c"))
    nbytes = afft.FFT(x, axes=(1,)).nbytes + afft.FFT(y, axes=(1,)).nbytes
    grown = []
    try:
        afft.set_cache_limits(max_bytes=nbytes + 1)
        afft.fft(y)
        afft.fft(x)
        assert afft.cache_info()["size"] == 2
        plan = afft._transform.dispatcher.cache(x.device.id)._entries
        (x_plan,) = [entry[0] for entry in plan.values() if entry[0].in_shape == (16, 4088)]
        on_grow = x_plan.on_grow
        x_plan.on_grow = lambda: (grown.append(1), on_grow())
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            assert_close(cp.asnumpy(afft.fft(x)), np.fft.fft(cp.asnumpy(x)), 1e-12)
        stream.synchronize()
        assert grown == [1]
        info = afft.cache_info()
        assert info["size"] == 1 and info["bytes"] == 2 * x_plan.nbytes  # y's plan went
    finally:
        afft.set_cache_limits(max_bytes=4 << 30)
        afft.clear_cache()

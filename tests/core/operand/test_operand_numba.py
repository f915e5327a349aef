"""Numba device arrays are a kind of their own: read without a copy, every family's results
returned as Numba arrays on the same device, Numba streams taken as ``stream=``, plans executed
into Numba ``out=`` arrays; and all of it where CuPy is not installed (a process that hides
it), as CuPy arrays work where Numba is not. Every result against a float64 NumPy oracle on
fresh random data. The parity suites of fft (``xp``), linalg (``package``) and matmul run
their bodies on Numba arrays too."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from closeness import assert_close

import accelmath.fft
from accelmath import linalg
from accelmath._core.operand import wrap_operand
from accelmath.errors import UnsupportedDTypeError, UnsupportedOperandError

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda(numba_cuda):
    return numba_cuda


def _array_type():
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray


def _random(shape, dtype="float64"):
    rng = np.random.default_rng()
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def test_a_numba_array_is_read_where_it_lies(cuda):
    host = _random((6, 10))
    d = cuda.to_device(host)
    op = wrap_operand(d)
    assert op.package == "numba" and op.ptr == d.device_ctypes_pointer.value
    assert op.shape == (6, 10) and op.strides == (10, 1) and op.dtype == "float64"
    assert op.device_id == 0 and op.on_device and op.ready is None
    view = d[1:5, ::3]
    op = wrap_operand(view)
    assert op.strides == (10, 3) and op.ptr == d.device_ctypes_pointer.value + 10 * 8
    stream = cuda.stream()
    assert wrap_operand(d.bind(stream)).ready == int(stream)  # (work there may still write it)


def test_every_family_returns_numba_arrays(cuda):
    kind = _array_type()
    x = _random((32, 48))
    spectrum = accelmath.fft.rfft2(cuda.to_device(x))
    assert isinstance(spectrum, kind)
    assert_close(spectrum.copy_to_host(), np.fft.rfft2(x), 1e-12)
    back = accelmath.fft.irfft2(spectrum, s=x.shape)
    assert isinstance(back, kind)
    assert_close(back.copy_to_host(), x, 1e-12)
    c = _random((40, 40), "complex128")
    assert_close(accelmath.fft.fft(cuda.to_device(c)).copy_to_host(), np.fft.fft(c), 1e-12)
    real = accelmath.fft.fft(cuda.to_device(x))  # (float64 read as complex128 on the device)
    assert isinstance(real, kind)
    assert_close(real.copy_to_host(), np.fft.fft(x), 1e-12)
    a, b = _random((24, 24)) + 24 * np.eye(24), _random((24, 5))
    product = linalg.matmul(cuda.to_device(a), cuda.to_device(b))
    assert isinstance(product, kind)
    assert_close(product.copy_to_host(), a @ b, 1e-12)
    solved = linalg.solve(cuda.to_device(a), cuda.to_device(b))
    assert isinstance(solved, kind)
    assert_close(solved.copy_to_host(), np.linalg.solve(a, b), 1e-11)
    w, v = linalg.eigh(cuda.to_device(a + a.T))
    assert isinstance(w, kind) and isinstance(v, kind)
    assert_close(w.copy_to_host(), np.linalg.eigvalsh(a + a.T), 1e-11)


def test_fused_expressions_and_raw_kernels_on_numba_arrays(cuda):
    from accelmath.fusion import RawKernel, elementwise

    kind = _array_type()
    x, y = _random((33, 17)), _random((17,))
    fused = elementwise(lambda a, b, s: np.exp(-abs(a)) * s + b)
    got = fused(cuda.to_device(x), cuda.to_device(y), 2.5)
    assert isinstance(got, kind)
    assert_close(got.copy_to_host(), np.exp(-abs(x)) * 2.5 + y, 1e-14)
    filtered = accelmath.fft.fft(cuda.to_device(x.astype(complex)),
                                 epilogue=lambda v: v * 2.0)
    assert isinstance(filtered, kind)
    assert_close(filtered.copy_to_host(), np.fft.fft(x) * 2.0, 1e-12)
    scale = RawKernel('extern "C" __global__ void scale(double *x, double a, long long n) '
                      '{ long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; '
                      'if (i < n) x[i] *= a; }', "scale")
    d = cuda.to_device(x)
    scale(((x.size + 127) // 128,), (128,), (d, 3.0, x.size))
    cuda.synchronize()
    assert_close(d.copy_to_host(), 3.0 * x, 0)


def test_numba_streams_and_a_plan_into_numba_out(cuda):
    kind = _array_type()
    stream = cuda.stream()
    x = _random((8, 64, 64), "complex64")
    inputs = [cuda.to_device(x), cuda.to_device(np.ascontiguousarray(x[::-1]))]
    out = cuda.device_array(x.shape, np.complex64)
    with accelmath.fft.FFT(inputs[0], axes=(1, 2)) as plan:
        for k, d in enumerate(inputs):
            assert plan.forward(d, out=out, stream=stream) is out
            stream.synchronize()
            expected = np.fft.fft2(x if k == 0 else x[::-1], axes=(1, 2))
            assert_close(out.copy_to_host(), expected, 1e-5)
    got = accelmath.fft.fft(inputs[0], stream=cuda.default_stream())
    assert isinstance(got, kind)
    assert_close(got.copy_to_host(), np.fft.fft(x), 1e-5)


def test_numba_arrays_in_the_image_subtraction(cuda):
    cp = pytest.importorskip("cupy")  # (the subtraction computes through CuPy or torch views)
    from accelmath.subtraction import subtract, synthetic_pair

    pair = synthetic_pair(256, seed=int(np.random.default_rng().integers(2**31)), stars=150,
                          kernel_half_width=3)
    images = [cuda.to_device(np.asarray(a)) for a in (pair.reference, pair.science, pair.mask)]
    result = subtract(*images[:2], mask=images[2], half_width=3)
    assert isinstance(result.difference, _array_type())
    on_cupy = subtract(cp.asarray(pair.reference), cp.asarray(pair.science),
                       mask=cp.asarray(pair.mask), half_width=3)
    assert result.ratio == pytest.approx(on_cupy.ratio, rel=1e-12)
    assert_close(result.difference.copy_to_host(), cp.asnumpy(on_cupy.difference), 1e-12)


def test_a_numba_difference_is_written_as_fits(cuda, tmp_path):
    pytest.importorskip("astropy")
    pytest.importorskip("cupy")
    from astropy.io import fits

    from accelmath.subtraction import write_difference

    host = np.random.default_rng().standard_normal((16, 12))
    write_difference(tmp_path / "d.fits", cuda.to_device(host))
    with fits.open(tmp_path / "d.fits") as hdus:
        np.testing.assert_allclose(hdus[0].data, host.astype(np.float32))


def test_bad_numba_operands_are_refused(cuda):
    x = cuda.to_device(_random((16,), "complex128"))
    with pytest.raises(UnsupportedDTypeError):
        accelmath.fft.fft(cuda.to_device(np.zeros(4, "datetime64[s]")))
    with pytest.raises((UnsupportedDTypeError, ValueError), match="out|dtype"):
        accelmath.fft.fft(x, out=cuda.device_array(16, np.float64))
    with pytest.raises((UnsupportedOperandError, ValueError), match="shape|out"):
        accelmath.fft.fft(x, out=cuda.device_array(8, np.complex128))
    with pytest.raises(UnsupportedOperandError, match="stream"):
        accelmath.fft.fft(x, stream="not a stream")


def _run(code):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_numba_arrays_where_cupy_is_not_installed():
    pytest.importorskip("numba.cuda")
    out = _run("""
        import sys
        sys.modules["cupy"] = None  # (as where CuPy is not installed)
        import numpy as np
        from numba import cuda
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        import accelmath.fft
        from accelmath import linalg
        from accelmath.fusion import elementwise
        rng = np.random.default_rng()
        x = rng.standard_normal((64, 64))
        checks = {
            "rfft2": (accelmath.fft.rfft2(cuda.to_device(x)), np.fft.rfft2(x)),
            "fft of reals": (accelmath.fft.fft(cuda.to_device(x)), np.fft.fft(x)),
            "matmul": (linalg.matmul(cuda.to_device(x), cuda.to_device(x)), x @ x),
            "solve": (linalg.solve(cuda.to_device(x + 64 * np.eye(64)), cuda.to_device(x)),
                      np.linalg.solve(x + 64 * np.eye(64), x)),
            "fused": (elementwise(lambda a: a * a + 1.0)(cuda.to_device(x)), x * x + 1.0),
        }
        for name, (got, expected) in checks.items():
            assert isinstance(got, DeviceNDArray), (name, type(got))
            error = np.linalg.norm(got.copy_to_host() - expected) / np.linalg.norm(expected)
            assert error < 1e-11, (name, error)
        assert "cupy" not in [m for m in sys.modules if sys.modules[m] is not None]
        print("ok")
    """)
    assert "ok" in out


def test_cupy_arrays_where_numba_is_not_installed():
    pytest.importorskip("cupy")
    out = _run("""
        import sys
        sys.modules["numba"] = None  # (as where Numba is not installed)
        import cupy as cp
        import numpy as np
        import accelmath.fft
        from accelmath import linalg
        x = np.random.default_rng().standard_normal((64, 64))
        got = accelmath.fft.rfft2(cp.asarray(x))
        assert isinstance(got, cp.ndarray)
        assert np.allclose(cp.asnumpy(got), np.fft.rfft2(x), rtol=1e-12, atol=1e-10)
        assert isinstance(linalg.matmul(cp.asarray(x), cp.asarray(x)), cp.ndarray)
        print("ok")
    """)
    assert "ok" in out

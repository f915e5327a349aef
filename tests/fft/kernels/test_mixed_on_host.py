"""The mixed-radix kernels' CUDA source (``fft._kernels.mixed.filter_source``), generated for one
thread a block and compiled as host C++ (g++: a block one call, the barriers nothing, shared
memory a static array), run over every row and column as the launches do: the 2-D filter
``irfft2(fn(rfft2(x)))`` with further arrays and scalars, even and odd widths, large prime
factors, float32 and float64, matches NumPy. What runs on a GPU differs in the threads a
block shares the work among and in CUDA's math library."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from accelmath.fft._kernels import mixed as _mixed
from accelmath.fft._fusion import filter as spectral
from accelmath.fusion import _cuda, frequency, index
from accelmath.fusion._elementwise import arguments, traced, types_of

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

_SHIM = r"""
#include <math.h>
#include <cmath>
#define __device__
#define __forceinline__ inline
#define __global__
#define __constant__
#define __shared__
#define __launch_bounds__(...)
#define __syncthreads()
using std::exp; using std::log; using std::sqrt; using std::sin; using std::cos;
using std::tanh; using std::pow; using std::hypot; using std::atan2; using std::fabs;
struct float2 { float x, y; };
struct double2 { double x, y; };
struct am_dim { unsigned int x, y, z; };
static am_dim blockIdx = {0, 0, 0};
static const am_dim threadIdx = {0, 0, 0}, blockDim = {1, 1, 1};
static inline void sincospi(double v, double *s, double *c) {
  *s = sin(M_PI * v); *c = cos(M_PI * v); }
static inline double __longlong_as_double(long long b) {
  double d; __builtin_memcpy(&d, &b, 8); return d; }
static inline float __int_as_float(int b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
"""

_HARNESS = r"""
cx s[2 * (N0 > N1 ? N0 : N1)];
extern "C" void am_filter(const real *x, cx *y, real *out, real scale, Element e) {
  for (unsigned i = 0; i < (N0 > N1 ? N0 : N1) + 128; ++i) { blockIdx.x = i; init_tables(); }
  for (unsigned r = 0; r < N0; ++r) { blockIdx.x = r; rows_forward(x, y); }
  for (unsigned c = 0; c < H1; ++c) { blockIdx.x = c; columns(y, scale, e); }
  for (unsigned r = 0; r < N0; ++r) { blockIdx.x = r; rows_inverse(y, out); }
}
"""


def _fn(s, k, a):
    return s * k + a


def _run_on_host(tmp_path, x, fn, args):
    """``spectral_filter(x, fn, args)`` by the kernels compiled for the host."""
    dtype = x.dtype.name
    complex_dtype = "complex64" if dtype == "float32" else "complex128"
    n0, n1 = x.shape
    half = (n0, n1 // 2 + 1)
    traced_fn = traced(fn, "fn")
    values = arguments(args, "args")
    expression = traced_fn.expression([np.dtype(complex_dtype), *types_of(values)])
    element = _cuda.element_source(expression, 2, 0, complex_dtype, narrow=True)
    source = _mixed.filter_source(n0, n1, dtype, element, threads=((1, 4), (1, 4)))
    (tmp_path / "mixed.cpp").write_text(_SHIM + source + _HARNESS)
    built = subprocess.run(["g++", "-std=c++17", "-O1", "-Wno-unknown-pragmas", "-shared",
                            "-fPIC", str(tmp_path / "mixed.cpp"), "-o",
                            str(tmp_path / "mixed.so")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-4000:]
    library = ctypes.CDLL(str(tmp_path / "mixed.so"))
    fused = spectral._Fused(expression, half, 0, x.shape, None, ("host",), 0)
    e = spectral._element(fused, values)
    real = ctypes.c_float if dtype == "float32" else ctypes.c_double
    library.am_filter.argtypes = [ctypes.c_void_p] * 3 + [real, type(e)]
    spectrum = np.zeros(half, complex_dtype)
    out = np.zeros(x.shape, dtype)
    library.am_filter(x.ctypes.data, spectrum.ctypes.data, out.ctypes.data, fused.scale, e)
    return out


def _close(got, expected, dtype):
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    assert np.abs(got - expected).max() <= tolerance * np.abs(expected).max()


@pytest.mark.parametrize("shape, dtype", [
    ((146, 97), "float64"), ((96, 110), "float32"), ((22, 146), "float64"),
    ((33, 16), "float32"),
    # two primes above 7 (13 x 11): the second one's stage twiddles its pairs
    ((143, 26), "float64"), ((22, 286), "float32"), ((143, 143), "float64")])
def test_the_filter_on_the_host(tmp_path, shape, dtype):
    rng = np.random.default_rng()
    half = (shape[0], shape[1] // 2 + 1)
    x = rng.standard_normal(shape).astype(dtype)
    k = ((rng.standard_normal(half) + 1j * rng.standard_normal(half)) / 10).astype(
        "complex64" if dtype == "float32" else "complex128")
    got = _run_on_host(tmp_path, x, _fn, (k, 0.5))
    _close(got, np.fft.irfft2(np.fft.rfft2(x.astype(np.float64)) * k + 0.5, s=shape), dtype)


@pytest.mark.parametrize("shape", [(146, 110), (143, 97)])
def test_frequency_and_index_on_the_host(tmp_path, shape):
    """A Gaussian of the frequencies (rows along axis 0, the halved axis 1) and an index:
    the element's coordinates are the spectrum's."""
    rng = np.random.default_rng()
    x = rng.standard_normal(shape)

    def fn(s, width):
        return s * np.exp(-(frequency(0) ** 2 + frequency(1) ** 2) * width) + index(1) * 1e-3

    got = _run_on_host(tmp_path, x, fn, (50.0,))
    f0 = np.fft.fftfreq(shape[0])[:, None]
    f1 = np.fft.rfftfreq(shape[1])[None, :]
    i1 = np.arange(shape[1] // 2 + 1)[None, :]
    spectrum = np.fft.rfft2(x) * np.exp(-(f0 ** 2 + f1 ** 2) * 50.0) + i1 * 1e-3
    _close(got, np.fft.irfft2(spectrum, s=shape), "float64")

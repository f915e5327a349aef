"""Every construct a fused expression takes, as a function of an element ``x``, an array
``y`` and a scalar ``s``, with the dtypes it is defined for: the tests of the tracer, the
NumPy evaluator, the CUDA source and the fused kernels all walk this one table."""

import numpy as np

from accelmath.fusion import gelu, relu, sigmoid

REAL = ("float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
ALL = REAL + COMPLEX

# name -> (function of (x, y, s), dtypes); the inputs are drawn away from 0 and of either sign
CONSTRUCTS = {
    "add": (lambda x, y, s: x + y + s, ALL),
    "subtract": (lambda x, y, s: x - y - s, ALL),
    "multiply": (lambda x, y, s: x * y * s, ALL),
    "divide": (lambda x, y, s: x / y / s, ALL),
    "power": (lambda x, y, s: abs(x) ** y, REAL),
    "complex power": (lambda x, y, s: x ** y, COMPLEX),
    "square and reciprocal": (lambda x, y, s: x ** 2 + x ** -1 + abs(x) ** 0.5, ALL),
    "negative and abs": (lambda x, y, s: -x + abs(y), ALL),
    "exp": (lambda x, y, s: np.exp(x * 0.5), ALL),
    "log": (lambda x, y, s: np.log(abs(x) + 0.5) + np.log(y * y), ALL),
    "sqrt": (lambda x, y, s: np.sqrt(abs(x)) + np.sqrt(y * y), ALL),
    "sin cos": (lambda x, y, s: np.sin(x) * np.cos(y), ALL),
    "tanh": (lambda x, y, s: np.tanh(x), ALL),
    "conj real imag": (lambda x, y, s: np.conj(x) * y.real + np.real(y) - np.imag(x) + x.imag,
                       ALL),
    "maximum minimum": (lambda x, y, s: np.maximum(x, y) - np.minimum(x, s), REAL),
    "comparisons and where": (lambda x, y, s: np.where((x < y) & (x >= s) | (x == y), x, -y)
                              + np.where(~(x > 0.5) | (x <= y) & (x != s), 1.0, 2.0), REAL),
    "complex equality": (lambda x, y, s: np.where((x == y) | (x != 0), x, y), COMPLEX),
    "activations": (lambda x, y, s: relu(x) + gelu(y) * sigmoid(x) * s, REAL),
    "astype": (lambda x, y, s: x.astype(np.float64) + y.astype(np.complex128), REAL),
    "astype complex": (lambda x, y, s: x.astype(np.complex64) * y, ALL),
    "numpy scalar": (lambda x, y, s: x * np.float32(1.5) + y * s, ALL),
    "constants folded": (lambda x, y, s: x * (2.0 * 3.0) + np.exp(1.0) * y, ALL),
}


def draw(rng, dtype, shape):
    """Random values of ``dtype`` away from 0, of either sign (complex: both parts)."""
    def part():
        magnitude = rng.uniform(0.25, 2.0, shape)
        return magnitude * rng.choice([-1.0, 1.0], shape)

    value = part() + 1j * part() if np.dtype(dtype).kind == "c" else part()
    return np.asarray(value).astype(dtype)


def cases():
    """(name, dtype) for every construct and each of its dtypes."""
    return [(name, dtype) for name, (_, dtypes) in CONSTRUCTS.items() for dtype in dtypes]


# What makes a fused kernel's CUDA source compile as host C++ (g++): ``__global__`` a plain
# function, one "thread" that walks every element, and the CUDA intrinsics it calls
HOST_SHIM = r"""
#include <math.h>
#include <cmath>
#define __device__
#define __forceinline__ inline
#define __global__
using std::cosh; using std::sinh; using std::exp; using std::log; using std::sqrt;
using std::sin; using std::cos; using std::tanh; using std::pow; using std::hypot;
using std::atan2; using std::fabs;
struct am_dim { unsigned int x; };
static const am_dim blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline double __longlong_as_double(long long b) {
  double d; __builtin_memcpy(&d, &b, 8); return d; }
static inline float __int_as_float(int b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
"""


def compile_for_host(sources, folder):
    """A ctypes library of the kernel sources ``sources`` (name -> the source after the
    prelude), each kernel renamed ``name``, compiled with g++ in ``folder``."""
    import ctypes
    import subprocess

    from accelmath.fusion._cuda import _PRELUDE

    body = [HOST_SHIM, _PRELUDE]
    for number, (name, text) in enumerate(sources.items()):
        body.append(f"#define accelmath_fused {name}\nnamespace kernel{number} {{\n{text}}}\n"
                    "#undef accelmath_fused\n")
    path = folder / "kernels.cpp"
    path.write_text("\n".join(body))
    built = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", str(path), "-o",
                            str(folder / "kernels.so")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-4000:]
    return ctypes.CDLL(str(folder / "kernels.so"))

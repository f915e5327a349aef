"""The subtract stage on a GPU as one kernel: the spatially varying convolution done directly.

The difference image is ``J - sum_ij (I x^i y^j) (*) k_ij`` (circular, as the Fourier form
computes it; the background is taken off afterwards). Its Fourier form needs the planes'
spectra of the unmasked images: where a mask was given for the fit, seven more transforms of
the image's size, then the kernels' spectra, their products and an inverse transform. Done
directly it is ``6 x (2w + 1)^2`` multiply-adds per pixel, about 2 ms of float64 work on an
H200 at 4088^2, with no transform and no spectrum.

The kernel (:data:`SOURCE`, compiled per half width and kernel terms) gives each block a
64 x 32 tile of the result: for each term it loads the tile of ``I x^i y^j`` with its halo
into shared memory, and each thread accumulates 32 results of a column, keeping the column of
tile values it reads in registers and reading each kernel coefficient once per 32 products.
(Measured on an H200 at 4088^2, w = 9, 6 terms: 3.9 ms, against 6.0 with 24 results per
thread, 6.8 with 16 and 8.4 for the Fourier form with its transforms of the unmasked planes;
without a mask to undo, the Fourier form's 3.3 ms is the faster.)
The coefficients come as one kernel parameter (in constant memory, at most 32 KB: CUDA 12.1
and later), so every result reads the same ones without a load of its own.
"""

import ctypes
import functools

import numpy

from accelmath.fusion import RawKernel

__all__ = ["applies", "direct_difference", "prepare", "ready"]

TILE_X = 32  # results per block along a row
ROWS = 32  # results per thread, down a column
THREAD_ROWS = 2  # threads per block down a column: a block makes 64 x 32 results
_PARAMETER_BYTES = 32000  # CUDA's limit for a kernel's parameters is 32764 bytes

SOURCE = r"""
typedef long long i64;
#define SIDE (2 * W + 1)
#define SPAN_X (TILE_X + 2 * W)
#define SPAN_Y (TILE_Y + 2 * W)
#define THREADS (TILE_X * TILE_Y / ROWS)

struct Taps { double k[TERMS * SIDE * SIDE]; };  // k[t][a][b] of term t

__constant__ int exponents[2 * TERMS] = {EXPONENTS};

// i + offset modulo n, for offsets with |offset| < n
__device__ __forceinline__ int wrap(int i, int n) { return i < 0 ? i + n : (i >= n ? i - n : i); }

// out[p] = sign * (other[p] - sum_t sum_ab k[t][a][b] * (conv x^i_t y^j_t)(p + W - (a, b))),
// the indices modulo the shape, for the terms' exponents EXPONENTS (i0, j0, i1, j1, ...).
// A block makes a TILE_Y x TILE_X tile, each thread ROWS results of a column.
extern "C" __global__ void __launch_bounds__(THREADS) sfft_direct(
        const double* __restrict__ conv, const double* __restrict__ other,
        const double* __restrict__ x, const double* __restrict__ y, int rows, int cols,
        double sign, double* __restrict__ out, const __grid_constant__ Taps taps) {
    __shared__ double tile[SPAN_Y][SPAN_X];
    const int tx = threadIdx.x, ty = threadIdx.y, thread = ty * TILE_X + tx;
    const int r0 = blockIdx.y * TILE_Y, c0 = blockIdx.x * TILE_X;
    double acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = 0.0;
#pragma unroll 1
    for (int t = 0; t < TERMS; ++t) {
        const int pi = exponents[2 * t], pj = exponents[2 * t + 1];
        __syncthreads();
#pragma unroll 8
        for (int e = thread; e < SPAN_Y * SPAN_X; e += THREADS) {  // (unrolled: loads in flight)
            const int m = e / SPAN_X, n = e - m * SPAN_X;
            const int q0 = wrap(r0 - W + m, rows), q1 = wrap(c0 - W + n, cols);
            double v = conv[(i64)q0 * cols + q1];
            const double xq = x[q0], yq = y[q1];
            for (int k = 0; k < pi; ++k) v *= xq;
            for (int k = 0; k < pj; ++k) v *= yq;
            tile[m][n] = v;
        }
        __syncthreads();
        const double* k = taps.k + t * SIDE * SIDE;
#pragma unroll 1
        for (int b = 0; b < SIDE; ++b) {
            double column[ROWS + 2 * W];
#pragma unroll
            for (int s = 0; s < ROWS + 2 * W; ++s) column[s] = tile[ty * ROWS + s][tx + 2 * W - b];
#pragma unroll
            for (int a = 0; a < SIDE; ++a) {
                const double c = k[a * SIDE + b];
#pragma unroll
                for (int r = 0; r < ROWS; ++r) acc[r] = fma(c, column[r + 2 * W - a], acc[r]);
            }
        }
    }
    const int p1 = c0 + tx;
    if (p1 >= cols) return;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const int p0 = r0 + ty * ROWS + r;
        if (p0 < rows) {
            const i64 p = (i64)p0 * cols + p1;
            out[p] = sign * (other[p] - acc[r]);
        }
    }
}
"""


def applies(half_width, terms, shape):
    """Whether the direct kernel takes this configuration: its coefficients fit in a kernel
    parameter and the halo in the image."""
    side = 2 * half_width + 1
    tile_y = ROWS * THREAD_ROWS
    return (len(terms) * side * side * 8 <= _PARAMETER_BYTES
            and max(TILE_X, tile_y) + half_width <= min(shape) and max(shape) < 2 ** 31
            and (TILE_X + 2 * half_width) * (tile_y + 2 * half_width) * 8 <= 48 * 1024)


@functools.lru_cache(maxsize=16)
def _kernel(half_width, terms, rows=ROWS, thread_rows=THREAD_ROWS):
    exponents = ",".join(f"{i},{j}" for i, j in terms)
    options = (f"-DW={half_width}", f"-DTERMS={len(terms)}", f"-DEXPONENTS={exponents}",
               f"-DTILE_X={TILE_X}", f"-DTILE_Y={rows * thread_rows}", f"-DROWS={rows}")
    return RawKernel(SOURCE, "sfft_direct", options=options)


@functools.lru_cache(maxsize=16)
def _taps_type(count):
    """The ctypes struct ``Taps`` of ``count`` coefficients (made once per size)."""
    return type("Taps", (ctypes.Structure,), {"_fields_": [("k", ctypes.c_double * count)]})


def _taps(kernels):
    """The ``Taps`` struct of the terms' kernels (a (terms, 2w + 1, 2w + 1) float64 NumPy
    array)."""
    flat = numpy.ascontiguousarray(kernels, dtype=numpy.float64).ravel()
    return _taps_type(flat.size).from_buffer_copy(flat)


def prepare(device, half_width, terms, wait=False):
    """Compile the kernel of this configuration for ``device`` (in the background unless
    ``wait``)."""
    _kernel(half_width, tuple(terms)).compile(device, wait=wait)


def ready(device, half_width, terms):
    """Whether the kernel of this configuration launches on ``device`` without waiting for
    its compile (the subtraction takes the Fourier form meanwhile)."""
    return _kernel(half_width, tuple(terms)).ready(device)


def direct_difference(convolved, other, x, y, kernels, terms, flip, out, rows_=ROWS,
                      thread_rows=THREAD_ROWS):
    """``out = s (other - sum_t (convolved x^i y^j) (*) kernels[t])``, ``s = -1`` where
    ``flip``: device arrays of one C-contiguous float64 shape (``x`` and ``y`` the scaled
    coordinates of its rows and columns), ``kernels`` the (terms, 2w + 1, 2w + 1) NumPy
    array of the terms' effective kernels."""
    rows, cols = out.shape
    half_width = kernels.shape[-1] // 2
    kernel = _kernel(half_width, tuple(terms), rows_, thread_rows)
    grid = (-(-cols // TILE_X), -(-rows // (rows_ * thread_rows)))
    kernel(grid, (TILE_X, thread_rows), (convolved, other, x, y, ctypes.c_int(rows),
                                          ctypes.c_int(cols), -1.0 if flip else 1.0, out,
                                          _taps(kernels)))
    return out

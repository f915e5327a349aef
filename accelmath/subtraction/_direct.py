"""The subtract stage on a GPU as one kernel: the spatially varying convolution done directly.

The difference image is ``J - sum_ij (I x^i y^j) (*) k_ij`` (circular, as the Fourier form
computes it; the background is taken off afterwards). Its Fourier form needs the planes'
spectra of the unmasked images: where a mask was given for the fit, seven more transforms of
the image's size, then the kernels' spectra, their products and an inverse transform. Done
directly it is ``6 x (2w + 1)^2`` multiply-adds per pixel (half that with the passes shared
as below), about 1 ms of float64 work on an H200 at 4088^2, with no transform and no
spectrum.

The terms ``x^i y^j`` of one power ``i`` of x share a pass: within a thread's column y is
one value, so their kernels combine into one, ``sum_j k_ij y^j``, computed per column offset,
and a pass costs one kernel's multiply-adds (three passes for the six terms of kernel order 2,
where one per term made six). The kernel (:data:`SOURCE`, compiled per half width, kernel
terms and tile) gives each block a tile of 2 R x 32 results (R of :data:`ROWS`, the most whose
tile fits): for each pass it loads the tile of ``I x^i`` with its halo into shared memory,
and each thread accumulates R results of a column, keeping the column of tile values it reads
in registers and reading each combined coefficient once per R products. (Measured on an H200
at 4088^2, w = 9, 6 terms, the kernel alone: 1.74-1.78 ms with R = 48, 1.83 with 40, 2.37-2.41
with 32, against 3.9 with a pass per term; the whole subtract stage, a mask given, took 3.80
ms with a pass per term and R = 32, 2.67 with the passes shared. Without a mask to undo, the
Fourier form of the subtract stage, about 2.5 ms there, is as fast.)
The coefficients come as one kernel parameter (in constant memory, at most 32 KB: CUDA 12.1
and later), so every result reads the same ones without a load of its own.
"""

import ctypes
import functools

import numpy

from accelmath.fusion import RawKernel

__all__ = ["applies", "direct_difference", "prepare", "ready"]

TILE_X = 32  # results per block along a row
ROWS = (48, 40, 32)  # results per thread down a column: the most whose tile fits
THREAD_ROWS = 2  # threads per block down a column: a block makes 2 ROWS x 32 results
_PARAMETER_BYTES = 32000  # CUDA's limit for a kernel's parameters is 32764 bytes
_SHARED_BYTES = 48 * 1024  # a block's static shared memory

SOURCE = r"""
typedef long long i64;
#define SIDE (2 * W + 1)
#define SPAN_X (TILE_X + 2 * W)
#define SPAN_Y (TILE_Y + 2 * W)
#define THREADS (TILE_X * TILE_Y / ROWS)

struct Taps { double k[TERMS * SIDE * SIDE]; };  // k[t][a][b] of term t

// i + offset modulo n, for offsets with |offset| < n
__device__ __forceinline__ int wrap(int i, int n) { return i < 0 ? i + n : (i >= n ? i - n : i); }

// The terms t = FIRST, FIRST + 1, ... of one power PI of x, whose powers of y are J...: the
// tile of conv x^PI (with its halo) into shared memory, then for each column offset b the
// coefficients sum_t k[t][a][b] y^j_t at this thread's column (y is one value there), each
// applied to the thread's ROWS results.
template <int PI, int FIRST, int... J>
__device__ __forceinline__ void group(double (&tile)[SPAN_Y][SPAN_X], double (&acc)[ROWS],
                                      const double* __restrict__ conv,
                                      const double* __restrict__ x,
                                      const double* __restrict__ y, int rows, int cols,
                                      int r0, int c0, int tx, int ty, int thread,
                                      const Taps& taps) {
    constexpr int js[] = {J...};
    constexpr int count = sizeof...(J);
    __syncthreads();
#pragma unroll 8
    for (int e = thread; e < SPAN_Y * SPAN_X; e += THREADS) {  // (unrolled: loads in flight)
        const int m = e / SPAN_X, n = e - m * SPAN_X;
        const int q0 = wrap(r0 - W + m, rows), q1 = wrap(c0 - W + n, cols);
        double v = conv[(i64)q0 * cols + q1];
        if (PI > 0) {
            const double xq = x[q0];
            for (int k = 0; k < PI; ++k) v *= xq;
        }
        tile[m][n] = v;
    }
    __syncthreads();
#pragma unroll 1
    for (int b = 0; b < SIDE; ++b) {
        double power[JMAX + 1];
        power[0] = 1.0;
        const double yq = y[wrap(c0 + tx + W - b, cols)];
#pragma unroll
        for (int k = 1; k <= JMAX; ++k) power[k] = power[k - 1] * yq;
        double column[ROWS + 2 * W];
#pragma unroll
        for (int s = 0; s < ROWS + 2 * W; ++s) column[s] = tile[ty * ROWS + s][tx + 2 * W - b];
#pragma unroll
        for (int a = 0; a < SIDE; ++a) {
            double c = 0.0;
#pragma unroll
            for (int u = 0; u < count; ++u)
                c = fma(taps.k[((FIRST + u) * SIDE + a) * SIDE + b], power[js[u]], c);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = fma(c, column[r + 2 * W - a], acc[r]);
        }
    }
}

#define G(PI, FIRST, ...) group<PI, FIRST, __VA_ARGS__>(tile, acc, conv, x, y, rows, cols, \
                                                         r0, c0, tx, ty, thread, taps);

// out[p] = sign * (other[p] - sum_t sum_ab k[t][a][b] * (conv x^i_t y^j_t)(p + W - (a, b))),
// the indices modulo the shape, for the terms GROUPS lists: G(i, first term, j...) per power
// i of x, the terms in the order of taps. A block makes a TILE_Y x TILE_X tile, each thread
// ROWS results of a column.
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
    GROUPS
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


@functools.lru_cache(maxsize=16)
def _groups(terms):
    """The order in which the kernel reads the terms (by power of x, then of y) and its
    ``GROUPS``: ``G(i, first, j...)`` per power ``i`` of x."""
    order = sorted(range(len(terms)), key=lambda t: tuple(terms[t]))
    groups, first = [], 0
    while first < len(order):
        i = terms[order[first]][0]
        js = [terms[t][1] for t in order[first:] if terms[t][0] == i]
        groups.append(f"G({i},{first},{','.join(map(str, js))})")
        first += len(js)
    return tuple(order), "".join(groups)


def rows_per_thread(half_width, shape):
    """The results per thread down a column for this half width and image shape: the most
    of :data:`ROWS` whose tile and halo fit in shared memory and wrap around the image at
    most once; None where none does."""
    for rows in ROWS:
        tile_y = rows * THREAD_ROWS
        if (max(TILE_X, tile_y) + half_width <= min(shape)
                and (TILE_X + 2 * half_width) * (tile_y + 2 * half_width) * 8 <= _SHARED_BYTES):
            return rows
    return None


def applies(half_width, terms, shape):
    """Whether the direct kernel takes this configuration: its coefficients fit in a kernel
    parameter, the halo in the image and the tile in shared memory."""
    side = 2 * half_width + 1
    return (len(terms) * side * side * 8 <= _PARAMETER_BYTES and max(shape) < 2 ** 31
            and rows_per_thread(half_width, shape) is not None)


@functools.lru_cache(maxsize=16)
def _kernel(half_width, terms, rows, thread_rows=THREAD_ROWS):
    groups = _groups(terms)[1]
    options = (f"-DW={half_width}", f"-DTERMS={len(terms)}", f"-DGROUPS={groups}",
               f"-DJMAX={max(j for _, j in terms)}", f"-DTILE_X={TILE_X}",
               f"-DTILE_Y={rows * thread_rows}", f"-DROWS={rows}")
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


def prepare(device, half_width, terms, shape, wait=False):
    """Compile the kernel of this configuration and image shape for ``device``: unless
    ``wait``, in the background once no other compile runs, and return the compile's
    thread (None where the kernel is loaded already)."""
    return _kernel(half_width, tuple(terms), rows_per_thread(half_width, shape)).compile(
        device, wait=wait, deferred=True)


def ready(device, half_width, terms, shape):
    """Whether the kernel of this configuration and image shape launches on ``device``
    without waiting for its compile (the subtraction takes the Fourier form meanwhile)."""
    return _kernel(half_width, tuple(terms), rows_per_thread(half_width, shape)).ready(device)


def direct_difference(convolved, other, x, y, kernels, terms, flip, out, rows=None,
                      thread_rows=THREAD_ROWS):
    """``out = s (other - sum_t (convolved x^i y^j) (*) kernels[t])``, ``s = -1`` where
    ``flip``: device arrays of one C-contiguous float64 shape (``x`` and ``y`` the scaled
    coordinates of its rows and columns), ``kernels`` the (terms, 2w + 1, 2w + 1) NumPy
    array of the terms' effective kernels; ``rows`` per thread (default
    :func:`rows_per_thread`'s)."""
    shape = out.shape
    half_width = kernels.shape[-1] // 2
    terms = tuple(terms)
    if rows is None:
        rows = rows_per_thread(half_width, shape)
    kernel = _kernel(half_width, terms, rows, thread_rows)
    kernels = kernels[list(_groups(terms)[0])]  # (in the order the kernel reads them)
    grid = (-(-shape[1] // TILE_X), -(-shape[0] // (rows * thread_rows)))
    kernel(grid, (TILE_X, thread_rows), (convolved, other, x, y, ctypes.c_int(shape[0]),
                                          ctypes.c_int(shape[1]), -1.0 if flip else 1.0, out,
                                          _taps(kernels)))
    return out

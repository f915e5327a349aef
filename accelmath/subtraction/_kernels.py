"""The subtraction's element-wise passes on a GPU, as kernels of its own
(``accelmath.fusion.RawKernel``): one module of CUDA C++, compiled once per device and kept
in the on-disk store, so that a new process's first subtraction compiles nothing of the
array package's (CuPy compiles each element-wise operation it meets, about 0.13 s each).

Each pass does in one launch what took several of the package's operations:

- :func:`planes`: the planes ``I x^i y^j`` and J, times the mask, and the mask's count;
- :func:`pair_products`: ``conj(S_a) S_b`` for every pair of planes, for a block of rows;
- :func:`difference_spectrum`: ``S_J - sum_a S_a Khat_a`` (or its negative);
- :func:`normal_diagonal`, :func:`normal_system`: the normal equations' entries for the free
  unknowns, read from the correlation maps by the lag rules, scaled.

Every array is C-contiguous; the launchers take the arrays and their sizes, and run on the
current stream of the arrays' package.
"""

import ctypes

import numpy

from accelmath.fusion import RawKernel

__all__ = ["SOURCE", "Normal", "prepare", "planes", "pair_products", "difference_spectrum",
           "normal", "normal_diagonal", "normal_system", "diagonal", "extra_index"]

SOURCE = r"""
typedef long long i64;

#define GRID_STRIDE(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (i64)gridDim.x * blockDim.x)

__device__ __forceinline__ double2 times(double2 a, double2 b) {
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__device__ __forceinline__ double2 conj_times(double2 a, double2 b) {  // conj(a) * b
    return make_double2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

// stack[0] = I m, stack[k] = I m x^i y^j for the terms (i, j) = exponents[2k], [2k + 1]
// (k = 1..terms-1), stack[terms] = J m, with m = mask ? mask[p] : 1; selected (where not
// null) gets the count of the mask's true pixels added.
extern "C" __global__ void sfft_planes(
        const double* convolved, const double* other, const unsigned char* mask,
        const double* x, const double* y, const i64* exponents, i64 terms, i64 rows,
        i64 cols, double* stack, unsigned long long* selected) {
    const i64 pixels = rows * cols;
    unsigned int count = 0;
    GRID_STRIDE(p, pixels) {
        double v = convolved[p], o = other[p];
        if (mask) {
            const double m = mask[p] ? 1.0 : 0.0;
            v *= m;
            o *= m;
            count += mask[p] != 0;
        }
        stack[p] = v;
        const double xr = x[p / cols], yc = y[p % cols];
        for (i64 k = 1; k < terms; ++k) {
            double t = v;
            for (i64 e = 0; e < exponents[2 * k]; ++e) t *= xr;
            for (i64 e = 0; e < exponents[2 * k + 1]; ++e) t *= yc;
            stack[k * pixels + p] = t;
        }
        stack[terms * pixels + p] = o;
    }
    if (selected) {
        for (int offset = 16; offset > 0; offset /= 2)
            count += __shfl_down_sync(0xffffffffu, count, offset);
        if ((threadIdx.x & 31) == 0 && count) atomicAdd(selected, (unsigned long long)count);
    }
}

// Rows [start, start + rows) of the half spectra (plane k at spectra + k * plane, rows of
// m): products[(r * maps + k) * m + c] = conj(S_a) S_b for the pairs a <= b < terms in
// order, then conj(S_a) S_J (plane terms) for each a.
extern "C" __global__ void sfft_pair_products(
        const double2* spectra, i64 plane, i64 start, i64 rows, i64 m, i64 terms,
        double2* products) {
    const i64 maps = terms * (terms + 1) / 2 + terms;
    GRID_STRIDE(e, rows * m) {
        const i64 r = e / m, c = e % m;
        const double2* s = spectra + (start + r) * m + c;
        double2* out = products + r * maps * m + c;
        i64 k = 0;
        for (i64 a = 0; a < terms; ++a) {
            const double2 sa = s[a * plane];
            for (i64 b = a; b < terms; ++b) out[(k++) * m] = conj_times(sa, s[b * plane]);
        }
        const double2 sj = s[terms * plane];
        for (i64 a = 0; a < terms; ++a) out[(k++) * m] = conj_times(s[a * plane], sj);
    }
}

// Rows [start, start + rows) of fd = S_J - sum_a S_a Khat_a (its negative where flip), with
// Khat_a at khat[(r * terms + a) * m + c].
extern "C" __global__ void sfft_difference(
        const double2* spectra, i64 plane, i64 start, i64 rows, i64 m, i64 terms,
        const double2* khat, i64 flip, double2* fd) {
    GRID_STRIDE(e, rows * m) {
        const i64 r = e / m, c = e % m;
        const double2* s = spectra + (start + r) * m + c;
        const double2* k = khat + r * terms * m + c;
        double2 sum = times(s[0], k[0]);
        for (i64 a = 1; a < terms; ++a) {
            const double2 t = times(s[a * plane], k[a * m]);
            sum.x += t.x;
            sum.y += t.y;
        }
        const double2 j = s[terms * plane];
        fd[(start + r) * m + c] = flip ? make_double2(sum.x - j.x, sum.y - j.y)
                                       : make_double2(j.x - sum.x, j.y - sum.y);
    }
}

// What the normal equations read (see accelmath.subtraction._model.LagRules).
struct Normal {
    const double2* maps;       // the correlation maps' sums, [l0][map][l1] (real parts read)
    const double* polynomial;  // (terms + 1, side_b, side_b): planes against T_pq
    const double* background;  // (fpq, fpq): <T_pq, T_p'q'>
    const i64* difference;     // (fab, fab) lag of s - t
    const i64* shift;          // (fab,) lag of s
    const i64* mirror;         // (fab,) lag of -s
    const double* moved;       // (fab,) 1 where s != 0
    const i64* pair_of;        // (terms, terms): map of the pair (a, b), a <= b
    const i64* background_terms;  // (fpq, 2): (p, q)
    i64 count;                 // maps
    i64 nl;                    // lags per axis
    i64 zero;                  // lag (0, 0)
    i64 terms, fab, side, w, pairs, fpq, side_b;
};

__device__ __forceinline__ double lag(const Normal& q, i64 map, i64 l) {
    return q.maps[((l / q.nl) * q.count + map) * q.nl + l % q.nl].x;
}

__device__ __forceinline__ double gamma(const Normal& q, i64 plane, i64 s, i64 k) {
    const i64 p = q.background_terms[2 * k], b = q.background_terms[2 * k + 1];
    return q.polynomial[(plane * q.side_b + p * q.side + s / q.side) * q.side_b
                        + b * q.side + s % q.side];
}

// Entry (I, J) of the normal matrix of all the unknowns.
__device__ double entry(const Normal& q, i64 I, i64 J) {
    const i64 n = q.terms * q.fab;
    if (I < n && J < n) {
        i64 a = I / q.fab, s = I % q.fab, b = J / q.fab, t = J % q.fab;
        if (a > b) {
            i64 u = a; a = b; b = u;
            u = s; s = t; t = u;
        }
        const i64 map = q.pair_of[a * q.terms + b];
        const double ms = q.moved[s], mt = q.moved[t];
        return lag(q, map, q.difference[s * q.fab + t]) - lag(q, map, q.shift[s]) * mt
               - ms * lag(q, map, q.mirror[t]) + lag(q, map, q.zero) * (ms * mt);
    }
    if (I >= n && J >= n) return q.background[(I - n) * q.fpq + (J - n)];
    if (I >= n) {
        const i64 u = I; I = J; J = u;
    }
    const i64 a = I / q.fab, s = I % q.fab, k = J - n;
    return gamma(q, a, s, k) - gamma(q, a, q.w * q.side + q.w, k) * q.moved[s];
}

// Entry I of the right-hand side of all the unknowns.
__device__ double rhs_entry(const Normal& q, i64 I) {
    const i64 n = q.terms * q.fab;
    if (I < n) {
        const i64 a = I / q.fab, s = I % q.fab;
        return lag(q, q.pairs + a, q.shift[s]) - lag(q, q.pairs + a, q.zero) * q.moved[s];
    }
    return gamma(q, q.terms, q.w * q.side + q.w, I - n);
}

extern "C" __global__ void sfft_normal_diagonal(Normal q, const i64* free, i64 nf,
                                                double* diagonal) {
    GRID_STRIDE(i, nf) diagonal[i] = entry(q, free[i], free[i]);
}

// matrix[i, j] = entry(free[i], free[j]) scale[i] scale[j] (the mean with its transpose
// where symmetric), rhs[i] = rhs_entry(free[i]) scale[i].
extern "C" __global__ void sfft_normal_system(Normal q, const i64* free, i64 nf,
                                              const double* scale, i64 symmetric,
                                              double* matrix, double* rhs) {
    GRID_STRIDE(e, nf * nf + nf) {
        if (e < nf * nf) {
            const i64 i = e / nf, j = e % nf;
            double v = __dmul_rn(__dmul_rn(entry(q, free[i], free[j]), scale[i]), scale[j]);
            if (symmetric)  // (rounded op by op: the same value at (i, j) and (j, i))
                v = __dmul_rn(__dadd_rn(v, __dmul_rn(__dmul_rn(entry(q, free[j], free[i]),
                                                               scale[j]), scale[i])), 0.5);
            matrix[e] = v;
        } else {
            const i64 i = e - nf * nf;
            rhs[i] = rhs_entry(q, free[i]) * scale[i];
        }
    }
}

// out[i] = a[i * step], i < n.
extern "C" __global__ void sfft_take_diagonal(const double* a, i64 n, i64 step, double* out) {
    GRID_STRIDE(i, n) out[i] = a[i * step];
}
"""

_NAMES = ("sfft_planes", "sfft_pair_products", "sfft_difference", "sfft_normal_diagonal",
          "sfft_normal_system", "sfft_take_diagonal")
_KERNELS = {name: RawKernel(SOURCE, name) for name in _NAMES}
_THREADS = 256
_MOST_BLOCKS = 4096  # grid-stride: enough blocks to fill any GPU


class Normal(ctypes.Structure):
    """The ``Normal`` struct of :data:`SOURCE`: the correlation maps, the polynomial
    correlations and the lag rules, by address, with their sizes."""

    _fields_ = [(name, ctypes.c_void_p) for name in (
        "maps", "polynomial", "background", "difference", "shift", "mirror", "moved",
        "pair_of", "background_terms")] + [(name, ctypes.c_longlong) for name in (
            "count", "nl", "zero", "terms", "fab", "side", "w", "pairs", "fpq", "side_b")]


def _launch(name, elements, args):
    blocks = max(1, min(-(-elements // _THREADS), _MOST_BLOCKS))
    _KERNELS[name](blocks, _THREADS, args)


def prepare(device, wait=False):
    """Compile the kernels for ``device`` (in the background unless ``wait``): one module,
    from the store where it was compiled before."""
    _KERNELS[_NAMES[0]].compile(device, wait=wait)


def planes(convolved, other, mask, x, y, exponents, stack, selected):
    """Fill ``stack`` (terms + 1, N0, N1) with the planes (see :data:`SOURCE`);
    ``exponents`` is the (terms, 2) int64 array of the terms' (i, j); ``mask`` (bool) and
    ``selected`` (a zeroed int64 scalar) may be None."""
    terms, rows, cols = stack.shape[0] - 1, stack.shape[1], stack.shape[2]
    _launch("sfft_planes", rows * cols,
            (convolved, other, mask, x, y, exponents, terms, rows, cols, stack, selected))


def pair_products(spectra, start, rows, products):
    """``products`` (rows, maps, m) of rows [start, start + rows) of ``spectra``
    (terms + 1, N0, m) (see :data:`SOURCE`)."""
    planes_, n0, m = spectra.shape
    _launch("sfft_pair_products", rows * m,
            (spectra, n0 * m, start, rows, m, planes_ - 1, products))


def difference_spectrum(spectra, start, rows, khat, flip, fd):
    """Rows [start, start + rows) of ``fd`` (N0, m) from ``spectra`` and ``khat``
    (rows, terms, m) (see :data:`SOURCE`)."""
    planes_, n0, m = spectra.shape
    _launch("sfft_difference", rows * m,
            (spectra, n0 * m, start, rows, m, planes_ - 1, khat, int(bool(flip)), fd))


def normal(maps, polynomial, background, index, rules, configuration):
    """The :class:`Normal` of the maps (nl, count, nl) complex, ``polynomial``
    (terms + 1, side_b, side_b), ``background`` (fpq, fpq) and the device ``index`` arrays
    (``rules.on`` and :func:`extra_index`), all C-contiguous; they must outlive its
    launches."""
    nl, count = maps.shape[0], maps.shape[1]
    side = configuration.side
    terms = len(configuration.kernel_terms)
    return Normal(
        *(_address(a) for a in (maps, polynomial, background, index["difference"],
                                index["shift"], index["mirror"], index["moved"],
                                index["pair_of"], index["background_terms"])),
        count, nl, rules.zero, terms, side * side, side, configuration.half_width,
        len(rules.pairs[0]), background.shape[0], polynomial.shape[1])


def normal_diagonal(description, free, diagonal):
    """``diagonal`` (nf,) of the normal matrix for the unknowns ``free`` (device int64)."""
    nf = diagonal.shape[0]
    _launch("sfft_normal_diagonal", nf, (description, free, nf, diagonal))


def normal_system(description, free, scale, symmetric, matrix, rhs):
    """The scaled system of the unknowns ``free`` into ``matrix`` (nf, nf) and ``rhs``."""
    nf = rhs.shape[0]
    _launch("sfft_normal_system", nf * nf + nf,
            (description, free, nf, scale, int(bool(symmetric)), matrix, rhs))


def diagonal(a, step, out):
    """``out[i] = a.flat[i * step]`` for the n = ``out.shape[0]`` diagonal entries of a
    float64 matrix (step: the sum of its element strides)."""
    n = out.shape[0]
    _launch("sfft_take_diagonal", n, (a, n, step, out))


def _address(a):
    """The address of a CuPy array's or torch tensor's first element."""
    if hasattr(a, "data_ptr"):
        return a.data_ptr()
    return a.data.ptr


def extra_index(rules, configuration):
    """The index arrays the normal-equation kernels read beyond ``rules.on``'s, NumPy int64:
    ``pair_of`` (terms, terms), the map of each pair of kernel planes (a <= b), and
    ``background_terms`` (fpq, 2), the background's (p, q)."""
    terms = len(configuration.kernel_terms)
    pair_of = numpy.full((terms, terms), -1, dtype=numpy.int64)
    pair_of[rules.pairs] = numpy.arange(len(rules.pairs[0]))
    return {"pair_of": pair_of,
            "background_terms": numpy.array(configuration.background_terms,
                                            dtype=numpy.int64).reshape(-1, 2)}

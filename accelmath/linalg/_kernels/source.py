"""The CUDA C++ source of the linear-algebra device path's auxiliary kernels (launched by
:mod:`accelmath.linalg._kernels.auxiliary`): strided batched matrix copies (element-wise, and through
shared-memory tiles), determinants from LU factorizations, pivot conversions, the row
interchanges of LU factorizations on their right-hand sides, NaN for failed factorizations,
flags of the matrices that hold a NaN or an infinity, the first zero on each matrix's
diagonal, identities and the arrays of matrix addresses that batched routines take.

Kernels are templated on the element type, with ``extern "C"`` entry points per dtype
(``<kernel>_<dtype>``), each dtype's behind ``#ifdef ACCELMATH_<dtype>`` (see
``SourceModules``); the dtype-free ones are in every variant.
"""

from accelmath.linalg._kernels.arithmetic import ARITHMETIC

__all__ = ["SOURCE"]

SOURCE = ARITHMETIC + r"""
struct Batch { long long shape[6]; long long src[6]; long long dst[6]; };

template <typename T> struct Real { typedef T type; };
template <> struct Real<float2> { typedef float type; };
template <> struct Real<double2> { typedef double type; };


// -- strided batched matrix copy ------------------------------------------------------------
// Logical source element (b, i, j) of m x n matrices goes to dst offset i*d_i + j*d_j (+ the
// batch offset): a transpose is the launcher swapping d_i and d_j. mode: bits 0-1 the
// triangle of the source kept (0 all, 1 lower, 2 upper; zeros elsewhere), bit 2 conjugates.
// Threads run i fastest; the launcher makes i the axis the destination runs along, so writes
// are coalesced (and reads too where the source runs along it as well). Where `bad` is set,
// every source element is read (both triangles), and bad[b] set to 1 for the (flat) batch
// index b of each matrix holding a NaN or an infinity (the others left as they are).
template <typename T, typename I>
__device__ void copy_matrices(const T* src, T* dst, I total, I m, I n, int ndim, Batch d,
                              long long s_i, long long s_j, long long d_i, long long d_j,
                              int mode, int* bad) {
    const I step = (I)blockDim.x * gridDim.x;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        const I i = e % m, rest = e / m, j = rest % n, flat = rest / n;
        I b = flat;
        long long so = i * s_i + j * s_j, dof = i * d_i + j * d_j;
        for (int k = ndim - 1; k >= 0; --k) {
            const I idx = b % (I)d.shape[k];
            b /= (I)d.shape[k];
            so += idx * d.src[k];
            dof += idx * d.dst[k];
        }
        const int tri = mode & 3;
        const bool keep = tri == 0 || (tri == 1 ? i >= j : i <= j);
        T v = keep || bad ? src[so] : zero_of(T());
        if (bad && !finite_of(v)) bad[flat] = 1;
        if (!keep) v = zero_of(T());
        if (mode & 4) v = conj_of(v);
        dst[dof] = v;
    }
}

// -- the same copy where source and destination run along different axes --------------------
// A 32 x 32 tile goes through shared memory: read along j (the source's fast axis, x threads),
// written along i (the destination's), so both sides are coalesced. Blocks are 32 x 8 threads
// and take tiles grid-stride: tile t is tile (t % per_matrix) of matrix t / per_matrix.
// `bad` as copy_matrices takes it.
template <typename T, typename I>
__device__ void copy_tiles(const T* src, T* dst, I tiles, I tiles_j, I per_matrix, I m, I n,
                           int ndim, Batch d, long long s_i, long long s_j, long long d_i,
                           long long d_j, int mode, int* bad) {
    __shared__ T tile[32][33];
    const int tri = mode & 3;
    for (I t = blockIdx.x; t < tiles; t += gridDim.x) {
        const I flat = t / per_matrix;
        I b = flat;
        const I r = t - b * per_matrix;
        const I i0 = r / tiles_j * 32, j0 = r % tiles_j * 32;
        long long so = 0, dof = 0;
        for (int k = ndim - 1; k >= 0; --k) {
            const I idx = b % (I)d.shape[k];
            b /= (I)d.shape[k];
            so += idx * d.src[k];
            dof += idx * d.dst[k];
        }
        for (int y = threadIdx.y; y < 32; y += blockDim.y) {
            const I i = i0 + y, j = j0 + threadIdx.x;
            if (i < m && j < n) {
                const bool keep = tri == 0 || (tri == 1 ? i >= j : i <= j);
                T v = keep || bad ? src[so + i * s_i + j * s_j] : zero_of(T());
                if (bad && !finite_of(v)) bad[flat] = 1;
                if (!keep) v = zero_of(T());
                if (mode & 4) v = conj_of(v);
                tile[y][threadIdx.x] = v;
            }
        }
        __syncthreads();
        for (int y = threadIdx.y; y < 32; y += blockDim.y) {
            const I i = i0 + threadIdx.x, j = j0 + y;
            if (i < m && j < n) dst[dof + i * d_i + j * d_j] = tile[threadIdx.x][y];
        }
        __syncthreads();
    }
}

// -- determinants from an LU factorization ----------------------------------------------------
// One block per matrix: a tree reduction over the diagonal of the sum of log|u_ii| and of the
// sign (real: the count of negative entries; complex: the product of the phases), with the
// pivots' parity. Writes sign and log|det| where sign_out is set, det where det_out is set
// (NumPy's det is sign * exp(log|det|), and so is this one).
template <typename T> struct Phase;   // what a thread accumulates for the sign
template <> struct Phase<float> { typedef int type; };
template <> struct Phase<double> { typedef int type; };
template <> struct Phase<float2> { typedef float2 type; };
template <> struct Phase<double2> { typedef double2 type; };

__device__ __forceinline__ int phase_one(float) { return 0; }
__device__ __forceinline__ int phase_one(double) { return 0; }
__device__ __forceinline__ float2 phase_one(float2) { return make_float2(1.f, 0.f); }
__device__ __forceinline__ double2 phase_one(double2) { return make_double2(1., 0.); }
// fold one diagonal entry (|d| > 0) into the sign
__device__ __forceinline__ int phase_of(float d, float) { return d < 0.f; }
__device__ __forceinline__ int phase_of(double d, double) { return d < 0.; }
__device__ __forceinline__ float2 phase_of(float2 d, float a) { return make_float2(d.x / a, d.y / a); }
__device__ __forceinline__ double2 phase_of(double2 d, double a) { return make_double2(d.x / a, d.y / a); }
__device__ __forceinline__ int phase_join(int a, int b) { return a + b; }
__device__ __forceinline__ float2 phase_join(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ __forceinline__ double2 phase_join(double2 a, double2 b) {
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ __forceinline__ int shfl_down(int v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float shfl_down(float v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double shfl_down(double v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float2 shfl_down(float2 v, int o) {
    return make_float2(shfl_down(v.x, o), shfl_down(v.y, o)); }
__device__ __forceinline__ double2 shfl_down(double2 v, int o) {
    return make_double2(shfl_down(v.x, o), shfl_down(v.y, o)); }
// the sign as the matrix's dtype, from the accumulated phase and the pivots' parity
__device__ __forceinline__ float sign_of(int negatives, int swaps, float) {
    return ((negatives + swaps) & 1) ? -1.f : 1.f; }
__device__ __forceinline__ double sign_of(int negatives, int swaps, double) {
    return ((negatives + swaps) & 1) ? -1. : 1.; }
__device__ __forceinline__ float2 sign_of(float2 p, int swaps, float2) {
    const float a = hypotf(p.x, p.y), s = (swaps & 1) ? -1.f : 1.f;  // renormalized
    return make_float2(s * p.x / a, s * p.y / a); }
__device__ __forceinline__ double2 sign_of(double2 p, int swaps, double2) {
    const double a = hypot(p.x, p.y), s = (swaps & 1) ? -1. : 1.;
    return make_double2(s * p.x / a, s * p.y / a); }
__device__ __forceinline__ float scale_by(float s, float r) { return s * r; }
__device__ __forceinline__ double scale_by(double s, double r) { return s * r; }
__device__ __forceinline__ float2 scale_by(float2 s, float r) { return make_float2(s.x * r, s.y * r); }
__device__ __forceinline__ double2 scale_by(double2 s, double r) { return make_double2(s.x * r, s.y * r); }

template <typename T, typename P>
__device__ void lu_det(const T* lu, const P* ipiv, long long n, long long batch, T* sign_out,
                       typename Real<T>::type* logabs_out, T* det_out) {
    typedef typename Real<T>::type R;
    typedef typename Phase<T>::type Ph;
    __shared__ R s_log[32];
    __shared__ Ph s_phase[32];
    __shared__ int s_swaps[32], s_zero[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (long long b = blockIdx.x; b < batch; b += gridDim.x) {
        R log_sum = 0;
        Ph phase = phase_one(T());
        int swaps = 0, zero = 0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const T d = lu[b * n * n + i * (n + 1)];
            const R a = abs_of(d);
            log_sum += log(a);
            if (a == R(0)) zero = 1;
            else phase = phase_join(phase, phase_of(d, a));
            swaps += ipiv[b * n + i] != (P)(i + 1);
        }
        for (int o = 16; o > 0; o >>= 1) {
            log_sum += shfl_down(log_sum, o);
            phase = phase_join(phase, shfl_down(phase, o));
            swaps += shfl_down(swaps, o);
            zero |= shfl_down(zero, o);
        }
        if (lane == 0) { s_log[warp] = log_sum; s_phase[warp] = phase; s_swaps[warp] = swaps; s_zero[warp] = zero; }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < warps; ++w) {
                log_sum += s_log[w]; phase = phase_join(phase, s_phase[w]);
                swaps += s_swaps[w]; zero |= s_zero[w];
            }
            const T sign = zero ? zero_of(T()) : sign_of(phase, swaps, T());
            if (sign_out) { sign_out[b] = sign; logabs_out[b] = log_sum; }
            if (det_out) det_out[b] = scale_by(sign, exp(log_sum));
        }
        __syncthreads();  // the shared slots are rewritten for the next matrix
    }
}

// -- the row interchanges of an LU factorization, on its right-hand sides ------------------
// getrf's 1-based pivots (row i swapped with row ipiv[i] - 1), applied to each n-row column of
// the batch's dense n x k right-hand sides: in order (reverse = 0: P^T x) or in reverse order
// (P x). A block takes a column at a time into shared memory with the pivots (dynamic shared
// memory: n * (sizeof(T) + 4) bytes), where one thread swaps; columns in x, matrices in y.
template <typename T>
__device__ void swap_rows(T* x, const long long* ipiv, int n, long long k, long long batch,
                          int reverse) {
    extern __shared__ __align__(16) unsigned char swap_shared[];
    T* col = reinterpret_cast<T*>(swap_shared);
    int* piv = reinterpret_cast<int*>(col + n);
    for (long long b = blockIdx.y; b < batch; b += gridDim.y) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) piv[i] = (int)ipiv[b * n + i] - 1;
        for (long long c = blockIdx.x; c < k; c += gridDim.x) {
            T* v = x + (b * k + c) * n;
            for (int i = threadIdx.x; i < n; i += blockDim.x) col[i] = v[i];
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int s = 0; s < n; ++s) {
                    const int i = reverse ? n - 1 - s : s;
                    const int j = piv[i];
                    if (j != i) { const T t = col[i]; col[i] = col[j]; col[j] = t; }
                }
            }
            __syncthreads();
            for (int i = threadIdx.x; i < n; i += blockDim.x) v[i] = col[i];
            __syncthreads();  // the shared column is rewritten for the next one
        }
    }
}

// -- small element-wise kernels -----------------------------------------------------------
// matrices in y, elements in x: a block reads its matrix's info once, and most blocks
// (info == 0) write nothing
template <typename T>
__device__ void fail_to_nan(const int* info, T* data, long long count, long long batch) {
    for (long long b = blockIdx.y; b < batch; b += gridDim.y) {
        if (info[b] == 0) continue;
        for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < count;
             e += (long long)blockDim.x * gridDim.x)
            data[b * count + e] = nan_of(T());
    }
}

// matrices in y, elements in x: each block writes whether its part of matrix b holds a NaN
// or an infinity to flags[b * gridDim.x + blockIdx.x] (every flag written: nothing to zero)
template <typename T>
__device__ void flag_nonfinite(const T* data, long long count, long long batch, int* flags) {
    for (long long b = blockIdx.y; b < batch; b += gridDim.y) {
        int bad = 0;
        for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < count;
             e += (long long)blockDim.x * gridDim.x)
            bad |= !finite_of(data[b * count + e]);
        bad = __syncthreads_or(bad);
        if (threadIdx.x == 0) flags[b * gridDim.x + blockIdx.x] = bad;
    }
}

// matrices in y, one block each: info[b] = 1 + the first j where a[j, j] of dense n x n
// matrix b is zero (its other triangle, order or conjugation alike), else 0
template <typename T>
__device__ void zero_diagonal(const T* data, int n, long long batch, int* info) {
    __shared__ int first;
    for (long long b = blockIdx.y; b < batch; b += gridDim.y) {
        if (threadIdx.x == 0) first = n;
        __syncthreads();
        const T* a = data + b * (long long)n * n;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            if (is_zero(a[(long long)j * (n + 1)])) atomicMin(&first, j);
        __syncthreads();
        if (threadIdx.x == 0) info[b] = first < n ? first + 1 : 0;
        __syncthreads();  // (first is set again for the next matrix)
    }
}

template <typename T>
__device__ void identity(T* dst, unsigned n, long long batch) {
    const unsigned nn = n * n;
    for (long long b = blockIdx.y; b < batch; b += gridDim.y)
        for (unsigned r = blockIdx.x * blockDim.x + threadIdx.x; r < nn; r += blockDim.x * gridDim.x)
            dst[b * nn + r] = r % (n + 1) == 0 ? one_of(T()) : zero_of(T());
}

template <typename P>
__device__ void pivots_to_scipy(const P* ipiv, int* out, long long count) {
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < count;
         e += (long long)blockDim.x * gridDim.x)
        out[e] = (int)ipiv[e] - 1;
}
extern "C" __global__ void pivots_int32(const int* p, int* o, long long c) { pivots_to_scipy(p, o, c); }
extern "C" __global__ void pivots_int64(const long long* p, int* o, long long c) { pivots_to_scipy(p, o, c); }
// SciPy's 0-based pivots (int32 or int64), n per matrix, as cuSOLVER's 1-based int64 ones:
// a matrix to each row of a block (threadIdx.y), its pivots along x (blocks in x share them
// out). A pivot out of 0..n-1 (which no factorization makes) becomes its own row, so that
// no row is read or written out of its matrix; its matrix's right-hand sides (per_matrix
// elements at rhs, which the solve works on next) become NaN, so that its solution is NaN,
// never a wrong one; and the host flag (null: none) is raised for the caller's check.
template <typename T, typename P>
__device__ void pivots_from_scipy(const P* __restrict__ piv, long long* __restrict__ ipiv,
                                  int n, long long batch, T* rhs, long long per_matrix,
                                  int* flag) {
    __shared__ int bad[32];  // per row of the block
    for (long long first = (long long)blockIdx.y * blockDim.y; first < batch;
         first += (long long)gridDim.y * blockDim.y) {
        const long long b = first + threadIdx.y;
        if (threadIdx.x == 0) bad[threadIdx.y] = 0;
        __syncthreads();
        if (b < batch) {
            for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
                 i += blockDim.x * gridDim.x) {
                const P v = piv[b * n + i];
                const bool in = v >= 0 && v < n;
                ipiv[b * n + i] = (in ? (long long)v : (long long)i) + 1;
                if (!in) bad[threadIdx.y] = 1;
            }
        }
        __syncthreads();
        if (b < batch && bad[threadIdx.y]) {
            if (flag && threadIdx.x == 0) *(volatile int*)flag = 1;
            T* x = rhs + b * per_matrix;
            for (long long e = threadIdx.x; e < per_matrix; e += blockDim.x) x[e] = nan_of(T());
        }
        __syncthreads();  // (bad is cleared for the next matrices)
    }
}

// -- the arrays of matrix addresses that the batched cuSOLVER and cuBLAS routines take -------
extern "C" __global__ void pointer_array(unsigned long long base, long long stride,
                                         long long count, unsigned long long* out) {
    long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step)
        out[i] = base + (unsigned long long)(i * stride);
}

#define DEFINE_LU_DET(NAME, T, PNAME, P) \
extern "C" __global__ void lu_det_##NAME##_##PNAME(const T* lu, const P* ipiv, long long n, \
        long long batch, T* sign, Real<T>::type* logabs, T* det) { \
    lu_det<T, P>(lu, ipiv, n, batch, sign, logabs, det); }

#define DEFINE(NAME, T) \
extern "C" __global__ void copy_##NAME(const T* s, T* d, long long total, long long m, \
        long long n, int ndim, Batch b, long long s_i, long long s_j, long long d_i, \
        long long d_j, int mode, int* bad) { \
    copy_matrices<T, unsigned long long>(s, d, total, m, n, ndim, b, s_i, s_j, d_i, d_j, mode, \
                                         bad); } \
extern "C" __global__ void copy32_##NAME(const T* s, T* d, long long total, long long m, \
        long long n, int ndim, Batch b, long long s_i, long long s_j, long long d_i, \
        long long d_j, int mode, int* bad) { \
    copy_matrices<T, unsigned>(s, d, (unsigned)total, (unsigned)m, (unsigned)n, ndim, b, \
                               s_i, s_j, d_i, d_j, mode, bad); } \
extern "C" __global__ void tiles_##NAME(const T* s, T* d, long long tiles, long long tiles_j, \
        long long per_matrix, long long m, long long n, int ndim, Batch b, long long s_i, \
        long long s_j, long long d_i, long long d_j, int mode, int* bad) { \
    copy_tiles<T, unsigned long long>(s, d, tiles, tiles_j, per_matrix, m, n, ndim, b, s_i, \
                                      s_j, d_i, d_j, mode, bad); } \
extern "C" __global__ void tiles32_##NAME(const T* s, T* d, long long tiles, long long tiles_j, \
        long long per_matrix, long long m, long long n, int ndim, Batch b, long long s_i, \
        long long s_j, long long d_i, long long d_j, int mode, int* bad) { \
    copy_tiles<T, unsigned>(s, d, (unsigned)tiles, (unsigned)tiles_j, (unsigned)per_matrix, \
                            (unsigned)m, (unsigned)n, ndim, b, s_i, s_j, d_i, d_j, mode, bad); } \
DEFINE_LU_DET(NAME, T, int32, int) \
DEFINE_LU_DET(NAME, T, int64, long long) \
extern "C" __global__ void fail_to_nan_##NAME(const int* info, T* data, long long count, \
        long long batch) { fail_to_nan<T>(info, data, count, batch); } \
extern "C" __global__ void flag_nonfinite_##NAME(const T* data, long long count, \
        long long batch, int* flags) { flag_nonfinite<T>(data, count, batch, flags); } \
extern "C" __global__ void zero_diagonal_##NAME(const T* data, int n, long long batch, \
        int* info) { zero_diagonal<T>(data, n, batch, info); } \
extern "C" __global__ void identity_##NAME(T* dst, unsigned n, long long batch) { \
    identity<T>(dst, n, batch); } \
extern "C" __global__ void swap_rows_##NAME(T* x, const long long* ipiv, int n, long long k, \
        long long batch, int reverse) { swap_rows<T>(x, ipiv, n, k, batch, reverse); } \
extern "C" __global__ void pivots_from_scipy_##NAME##_int32(const int* p, long long* o, int n, \
        long long batch, T* rhs, long long per_matrix, int* flag) { \
    pivots_from_scipy<T, int>(p, o, n, batch, rhs, per_matrix, flag); } \
extern "C" __global__ void pivots_from_scipy_##NAME##_int64(const long long* p, long long* o, \
        int n, long long batch, T* rhs, long long per_matrix, int* flag) { \
    pivots_from_scipy<T, long long>(p, o, n, batch, rhs, per_matrix, flag); }

#ifdef ACCELMATH_float32
DEFINE(float32, float)
#endif
#ifdef ACCELMATH_float64
DEFINE(float64, double)
#endif
#ifdef ACCELMATH_complex64
DEFINE(complex64, float2)
#endif
#ifdef ACCELMATH_complex128
DEFINE(complex128, double2)
#endif
"""

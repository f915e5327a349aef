"""accelmath's own column FFT: complex64 transforms down the columns of a row-major matrix.

cuFFT transforms strided columns a few at a time per thread block, so each block reads rows
only a few elements wide (4 columns, 32 bytes, for length 4096 on Hopper). This kernel spreads
each transform over a cluster of 8 thread blocks (compute capability 9.0 and later) and so
reads and writes 16 columns (128 bytes) per row. For a length ``L = 8 M`` it runs a four-step
FFT: block ``b`` loads the rows ``M n1 + n2`` of its 1/8 of the ``n2``, makes 8-point
transforms over ``n1`` and scales them by their twiddles; each block then stores its output
``k1`` into the shared memory of block ``k1`` (distributed shared memory), which so holds one
output of every block, and makes the ``M``-point transforms (``M = 32 R``) in its own
shared memory in two passes: a thread's 32-point transform in registers, then, after one
exchange through shared memory, ``R``-point ones; their results are the output rows
``b + 8 k``. The round trip's inverse runs the same steps in the reverse order, so it takes
the forward's output where the forward left it. A thread holds 32 values; its registers are
capped at 128 (``MIN_BLOCKS``) so that blocks of 512 threads in all share each
multiprocessor, one block's memory traffic filling another's synchronizations.

The executor offers it as one of a plan's timed candidates (see ``CudaExecutor``), so it runs
only where it measures faster than cuFFT; where it is not compiled yet (a new machine's empty
store), a plan goes without it and it compiles in the background for the plans made after.
Lengths: powers of two from 512 to 8192 (``R`` at most 32).
"""

import ctypes
import math
import threading

from accelmath._core.gpu.device import compute_capability
from accelmath._core.gpu.launch import LaunchConfig, allow_dynamic_shared, launch
from accelmath._core.gpu.modules import compile_soon as modules_compile_soon
from accelmath._core.gpu.modules import device_options, is_compiled, loaded
from accelmath.bindings import driver

__all__ = ["LENGTHS", "SOURCE", "available", "code", "compile_soon", "compiled", "fits",
           "launcher", "options", "round_trip", "round_trip_source", "widths"]

LENGTHS = tuple(1 << k for k in range(9, 14))
_CLUSTER = 8
_SMEM_VALUES = 8192  # complex64 values of shared memory per block (64 KiB)

# exp(2 pi i j / 32): constants of the 32-point transforms
_ROOT32 = "__constant__ float2 ROOT32[32] = {%s};\n" % ", ".join(
    f"{{{math.cos(2 * math.pi * j / 32)!r}f, {math.sin(2 * math.pi * j / 32)!r}f}}"
    for j in range(32))

SOURCE = r"""
// L: the transform length (8 M); W: columns per cluster; THREADS: per block. A thread holds
// 32 values of a column (M = 32 ROWS), in PAIRS = 4 sets of 8.
#define M (L / 8)
#define P (M / 8)
#define ROWS (THREADS / W)
#define PAIRS (P / ROWS)
#define U (32 / ROWS)
// Blocks per multiprocessor the registers must leave room for: a cap of 128 registers a
// thread (a block is idle through its own synchronizations; its neighbours' loads and
// stores fill them)
#ifndef MIN_BLOCKS
#define MIN_BLOCKS (512 / THREADS > 0 ? 512 / THREADS : 1)
#endif

__device__ __forceinline__ float2 mul(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ __forceinline__ float2 add(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 sub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
// u times i s (s = -1 forward, +1 inverse)
__device__ __forceinline__ float2 rot(float2 u, float s) { return make_float2(-s * u.y, s * u.x); }

__device__ __forceinline__ void dft2(float2 &a, float2 &b) {
    float2 t = sub(a, b); a = add(a, b); b = t; }
__device__ __forceinline__ void dft4(float2 &a, float2 &b, float2 &c, float2 &d, float s) {
    float2 t0 = add(a, c), t1 = sub(a, c), t2 = add(b, d), t3 = rot(sub(b, d), s);
    a = add(t0, t2); c = sub(t0, t2); b = add(t1, t3); d = sub(t1, t3); }
__device__ __forceinline__ void dft8(float2 *x, float s) {
    const float r = 0.70710678118654752f;
    float2 e0 = x[0], e1 = x[2], e2 = x[4], e3 = x[6], o0 = x[1], o1 = x[3], o2 = x[5], o3 = x[7];
    dft4(e0, e1, e2, e3, s);
    dft4(o0, o1, o2, o3, s);
    o1 = make_float2(r * (o1.x - s * o1.y), r * (o1.y + s * o1.x));
    o2 = rot(o2, s);
    o3 = make_float2(-r * (o3.x + s * o3.y), r * (s * o3.x - o3.y));
    x[0] = add(e0, o0); x[4] = sub(e0, o0); x[1] = add(e1, o1); x[5] = sub(e1, o1);
    x[2] = add(e2, o2); x[6] = sub(e2, o2); x[3] = add(e3, o3); x[7] = sub(e3, o3); }

__device__ float2 table[L];  // exp(2 pi i m / L)

extern "C" __global__ void init_table() {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m < L) {
        double sine, cosine;
        sincospi(2.0 * m / L, &sine, &cosine);
        table[m] = make_float2((float)cosine, (float)sine);
    }
}

// exp(2 pi i s m / L)
__device__ __forceinline__ float2 twiddle(int m, float s) {
    float2 w = __ldg(table + m); return make_float2(w.x, s * w.y); }

// exp(2 pi i s r m / L), r = 1..7, from three table reads and four products (at most 2.3
// ulp from the table's values, against 0.7; fewer reads in flight are faster)
struct Powers { float2 w[8]; };
template <int N>
__device__ __forceinline__ Powers powers(int m, float s) {
    Powers q;
    q.w[1] = twiddle(m, s);
    q.w[2] = N > 2 ? twiddle(2 * m, s) : q.w[1];  // (only the powers below N: m N <= L)
    q.w[4] = N > 4 ? twiddle(4 * m, s) : q.w[1];
    q.w[3] = mul(q.w[1], q.w[2]); q.w[5] = mul(q.w[1], q.w[4]);
    q.w[6] = mul(q.w[2], q.w[4]); q.w[7] = mul(q.w[3], q.w[4]);
    return q; }

// x[r] times exp(2 pi i s r m / L), r < N (N m <= L)
template <int N>
__device__ __forceinline__ void twiddle_run(float2 *x, int m, float s) {
    const Powers q = powers<N>(m, s);
    #pragma unroll
    for (int h = 0; h < (N + 7) / 8; ++h) {
        float2 *o = x + 8 * h;
        #pragma unroll
        for (int r = 1; r < (N < 8 ? N : 8); ++r) o[r] = mul(o[r], q.w[r]);
        if (h) {
            const float2 b = twiddle(8 * h * m, s);
            #pragma unroll
            for (int r = 0; r < 8; ++r) o[r] = mul(o[r], b);
        }
    }
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory"); }

// The first half of a cluster barrier, with no memory ordering: the wait that completes it
// (cluster_wait) returns once every block of the cluster has started
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// v into the shared memory of the cluster's block `rank`, at the offset of p in this block's
// (a store: the sender does not wait for it; a cluster barrier makes it seen)
__device__ __forceinline__ void remote_store(float2 *p, unsigned rank, float2 v) {
    unsigned local = (unsigned)__cvta_generic_to_shared(p), at;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(local), "r"(rank));
    asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};"
                 :: "r"(at), "f"(v.x), "f"(v.y) : "memory"); }

""" + _ROOT32 + r"""
// c times exp(2 pi i s j / 32)
__device__ __forceinline__ float2 root32(float2 c, int j, float s) {
    const float2 w = ROOT32[j & 31]; return mul(c, make_float2(w.x, s * w.y)); }

// Transforms of N values in registers, in natural order in and out (N = 2, 4, 8, 16, 32)
template <int N> struct DFT;
template <> struct DFT<2> {
    static __device__ __forceinline__ void run(float2 *c, float s) { dft2(c[0], c[1]); } };
template <> struct DFT<4> {
    static __device__ __forceinline__ void run(float2 *c, float s) {
        dft4(c[0], c[1], c[2], c[3], s); } };
template <> struct DFT<8> {
    static __device__ __forceinline__ void run(float2 *c, float s) { dft8(c, s); } };
// (n = a + 4 b, k = k1 + B k2 for N = 4 B: B-point transforms over b, twiddles, then 4-point
// ones over a)
template <int B>
__device__ __forceinline__ void dft_4b(float2 *c, float s) {
    float2 t[4][B];
    #pragma unroll
    for (int a = 0; a < 4; ++a) {
        #pragma unroll
        for (int b = 0; b < B; ++b) t[a][b] = c[a + 4 * b];
        DFT<B>::run(t[a], s);
        #pragma unroll
        for (int k1 = 1; k1 < B; ++k1) if (a) t[a][k1] = root32(t[a][k1], (32 / (4 * B)) * a * k1, s);
    }
    #pragma unroll
    for (int k1 = 0; k1 < B; ++k1) {
        dft4(t[0][k1], t[1][k1], t[2][k1], t[3][k1], s);
        #pragma unroll
        for (int k2 = 0; k2 < 4; ++k2) c[k1 + B * k2] = t[k2][k1];
    }
}
template <> struct DFT<16> {
    static __device__ __forceinline__ void run(float2 *c, float s) { dft_4b<4>(c, s); } };
template <> struct DFT<32> {
    static __device__ __forceinline__ void run(float2 *c, float s) { dft_4b<8>(c, s); } };

// The 32-point transform of v[i][r] = a[i + 4 r]: on return v[k2][k1] is its output k1 + 8 k2
__device__ __forceinline__ void dft32_rows(float2 (&v)[PAIRS][8], float s) {
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        dft8(v[i], s);
        #pragma unroll
        for (int k1 = 1; k1 < 8; ++k1) if (i) v[i][k1] = root32(v[i][k1], i * k1, s);
    }
    #pragma unroll
    for (int k1 = 0; k1 < 8; ++k1) dft4(v[0][k1], v[1][k1], v[2][k1], v[3][k1], s);
}

// Its mirror: v[k2][k1] holds input k1 + 8 k2; on return v[i][r] is the output i + 4 r
__device__ __forceinline__ void dft32_cols(float2 (&v)[PAIRS][8], float s) {
    #pragma unroll
    for (int k1 = 0; k1 < 8; ++k1) dft4(v[0][k1], v[1][k1], v[2][k1], v[3][k1], s);
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        #pragma unroll
        for (int k1 = 1; k1 < 8; ++k1) if (i) v[i][k1] = root32(v[i][k1], i * k1, s);
        dft8(v[i], s);
    }
}

// The index k (the block's row rank + 8 k) of inner's output f (0..31, of &v[0][0]) in thread p
__device__ __forceinline__ int out_row(int p, int f) { return p + ROWS * (f / ROWS) + 32 * (f % ROWS); }

// The M-point transforms (M = 32 ROWS) of a block's W columns through its shared memory A (M
// rows of W values), in two passes: v[i][r] holds input p + ROWS (i + 4 r) of the block's
// column w; 32-point transforms over those (one a thread), twiddles, then ROWS-point ones over
// p, in U = 32 / ROWS groups a thread. Group u of thread p is rows (p + ROWS u) ROWS + q of A
// (q < ROWS), which no other thread touches between the passes: so a group can go forward,
// through the element and back to A before the next one is read (the round trip).
//
// The first pass, into A: no thread may still read A when it starts.
__device__ __forceinline__ void columns_pass(float2 (&v)[PAIRS][8], float2 *A, int p, int w,
                                             float s) {
    float2 *F = &v[0][0];
    dft32_rows(v, s);  // F[K]: output K
    twiddle_run<32>(F, 8 * p, s);  // times exp(2 pi i s p K / M)
    #pragma unroll
    for (int K = 0; K < 32; ++K) A[(K * ROWS + p) * W + w] = F[K];
    __syncthreads();
}

// The second pass of group u, into g[0..ROWS): g[q] is output out_row(p, u ROWS + q)
__device__ __forceinline__ void rows_pass(float2 *g, const float2 *A, int p, int w, int u,
                                          float s) {
    #pragma unroll
    for (int q = 0; q < ROWS; ++q) g[q] = A[((p + ROWS * u) * ROWS + q) * W + w];
    DFT<ROWS>::run(g, s);
}

// Both passes: on return (&v[0][0])[f] is output out_row(p, f)
__device__ __forceinline__ void inner(float2 (&v)[PAIRS][8], float2 *A, int p, int w, float s) {
    columns_pass(v, A, p, w, s);
    #pragma unroll
    for (int u = 0; u < U; ++u) rows_pass(&v[0][0] + u * ROWS, A, p, w, u, s);
}

// The mirror of rows_pass: g[q] holds input out_row(p, u ROWS + q); transformed, twiddled and
// stored back into group u's rows of A
__device__ __forceinline__ void rows_back(float2 *g, float2 *A, int p, int w, int u, float s) {
    DFT<ROWS>::run(g, s);
    twiddle_run<ROWS>(g, 8 * (p + ROWS * u), s);  // exp(2 pi i s q K / M)
    #pragma unroll
    for (int q = 0; q < ROWS; ++q) A[((p + ROWS * u) * ROWS + q) * W + w] = g[q];
}

// The mirror of columns_pass, once every group is back (after a __syncthreads): on return
// v[i][r] holds output p + ROWS (i + 4 r)
__device__ __forceinline__ void columns_back(float2 (&v)[PAIRS][8], const float2 *A, int p,
                                             int w, float s) {
    float2 *F = &v[0][0];
    #pragma unroll
    for (int K = 0; K < 32; ++K) F[K] = A[(K * ROWS + p) * W + w];
    dft32_cols(v, s);
}

// The first half of a cluster's transforms of its columns, read from `in` (row pitch `pitch`):
// 8-point transforms over n1 of x[M n1 + n2], n2 = rank P + j, and their twiddles; each block
// then sends its output k1 to block k1, which so holds its k1 = rank of every block (v[i][r]:
// n2 = j + P r) for inner.
__device__ __forceinline__ void outer_first(const float2 *in, long long pitch, int col, bool live,
                                            float2 (&v)[PAIRS][8], float2 *A, unsigned rank,
                                            int p, int w, float s) {
    cluster_arrive_relaxed();  // (no block stores into another before that one has started)
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int n2 = rank * P + p + ROWS * i;
        #pragma unroll
        for (int n1 = 0; n1 < 8; ++n1)
            v[i][n1] = live ? __ldg(in + (long long)(M * n1 + n2) * pitch + col)
                            : make_float2(0.f, 0.f);
    }
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int n2 = rank * P + p + ROWS * i;
        dft8(v[i], s);
        twiddle_run<8>(v[i], n2, s);
    }
    cluster_wait();
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i;
        #pragma unroll
        for (int k1 = 0; k1 < 8; ++k1) remote_store(A + (rank * P + j) * W + w, k1, v[i][k1]);
    }
    cluster_sync();  // every block's stores seen
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i;
        #pragma unroll
        for (int r = 0; r < 8; ++r) v[i][r] = A[(r * P + j) * W + w];
    }
    __syncthreads();  // (inner writes A)
}

// The mirror of outer_first after inner: v[i][r] holds the block's inner transform at
// n2 = j + P r of the rows rank + 8 k; twiddled by exp(2 pi i s n2 rank / L) and sent to
// block n2 / P, which so holds n2 = rank P + j of every block; 8-point transforms over the
// blocks give the rows M n1 + n2 of `out`.
__device__ __forceinline__ void outer_last(float2 (&v)[PAIRS][8], float2 *A, unsigned rank,
                                           int p, int w, float s, float2 *out, long long pitch,
                                           int col, bool live) {
    cluster_sync();  // (every block's inner done with its A)
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {  // (n2 rank = j rank + P rank r)
        const int j = p + ROWS * i;
        const float2 b = twiddle(j * (int)rank, s);
        #pragma unroll
        for (int r = 0; r < 8; ++r) v[i][r] = mul(v[i][r], b);
        twiddle_run<8>(v[i], P * (int)rank, s);
    }
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i;
        #pragma unroll
        for (int r = 0; r < 8; ++r) {
            const int n2 = j + P * r;
            remote_store(A + (rank * P + n2 % P) * W + w, n2 / P, v[i][r]);
        }
    }
    cluster_sync();  // every block's stores seen; none touches another's memory after this
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i, n2 = rank * P + j;
        #pragma unroll
        for (int r = 0; r < 8; ++r) v[i][r] = A[(r * P + j) * W + w];
        dft8(v[i], s);
        if (live) {
            #pragma unroll
            for (int n1 = 0; n1 < 8; ++n1) out[(long long)(M * n1 + n2) * pitch + col] = v[i][n1];
        }
    }
}

// The length-L transforms of columns [0, ncols) of `in` into `out`, both of row pitch `pitch`;
// in == out is allowed: a cluster reads its columns through the read-only cache
// before it writes them, and no other cluster touches them. s = -1 forward, +1 inverse (unnormalized).
// gridDim.x = 8 * ceil(ncols / W).
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(THREADS, MIN_BLOCKS)
columns(const float2 *in, float2 *out, long long pitch, int ncols,
        float s) {
    extern __shared__ float2 A[];  // M rows of W values
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int w = threadIdx.x % W, p = threadIdx.x / W;
    const int col = (blockIdx.x / 8) * W + w;
    const bool live = col < ncols;
    float2 v[PAIRS][8];
    outer_first(in, pitch, col, live, v, A, rank, p, w, s);
    inner(v, A, p, w, s);
    if (live) {
        const float2 *F = &v[0][0];
        #pragma unroll
        for (int f = 0; f < 32; ++f) out[(long long)(rank + 8 * out_row(p, f)) * pitch + col] = F[f];
    }
}

#ifdef ACCELMATH_ELEMENT
// The element's further values a thread reads ahead of a group's pass: 128 bytes of them (16
// complex64 values, measured the fastest at length 4096; more spill), at most a group
#define AHEAD_VALUES (128 / sizeof(Loaded) > 0 ? 128 / sizeof(Loaded) : 1)
#define AHEAD (ROWS < AHEAD_VALUES ? ROWS : AHEAD_VALUES)
// One fused pass over the spectrum: the forward transforms of the columns of matrix
// blockIdx.y of `data` (its first element at blockIdx.y * batch_stride), accelmath_element
// on each value (row k, column col, then times `scale`), the inverse transforms, in place.
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(THREADS, MIN_BLOCKS)
round_trip(float2 *data, long long pitch, int ncols, long long batch_stride, float scale,
           const Element e) {
    extern __shared__ float2 A[];
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int w = threadIdx.x % W, p = threadIdx.x / W;
    const int col = (blockIdx.x / 8) * W + w;
    const bool live = col < ncols;
    float2 *base = data + blockIdx.y * batch_stride;
    float2 v[PAIRS][8];
    outer_first(base, pitch, col, live, v, A, rank, p, w, -1.f);
    columns_pass(v, A, p, w, -1.f);
    // a group at a time: its forward outputs k = out_row(p, f) of the block's rows rank + 8 k,
    // the element, and back (its registers free for the next group's loads)
    #pragma unroll
    for (int u = 0; u < U; ++u) {
        float2 *g = &v[0][0] + u * ROWS;
        // the element's further values, the first AHEAD read before the pass (their reads'
        // latency hidden by each other and by the pass), the others where they are used
        Loaded l[AHEAD];
        #pragma unroll
        for (int q = 0; q < AHEAD; ++q)
            if (live) l[q] = accelmath_load(blockIdx.y, rank + 8 * out_row(p, u * ROWS + q), col, e);
        rows_pass(g, A, p, w, u, -1.f);
        #pragma unroll
        for (int q = 0; q < ROWS; ++q) {
            float2 y = make_float2(0.f, 0.f);
            if (live) {
                const long long row = rank + 8 * out_row(p, u * ROWS + q);
                const c64 z = accelmath_element(
                    mk(g[q].x, g[q].y), q < AHEAD ? l[q] : accelmath_load(blockIdx.y, row, col, e),
                    blockIdx.y, row, col, e);
                y = make_float2(z.x * scale, z.y * scale);
            }
            g[q] = y;
        }
        rows_back(g, A, p, w, u, 1.f);
    }
    __syncthreads();
    columns_back(v, A, p, w, 1.f);
    outer_last(v, A, rank, p, w, 1.f, base, pitch, col, live);
}
#endif
"""


def _config(length, width=None):
    """``(columns per cluster, threads per block)`` for a length: 16 columns (128-byte rows)
    where a block's 1/8 of them fits 64 KiB, fewer for longer ones (or ``width``); 32 values
    of a column per thread."""
    m = length // _CLUSTER
    width = width or min(16, _SMEM_VALUES // m)
    return width, m // 32 * width


def options(length, width=None):
    """The NVRTC options that specialize :data:`SOURCE` for a length (and a width other than
    the length's own, :func:`widths`)."""
    width, threads = _config(length, width)
    return f"-DL={length}", f"-DW={width}", f"-DTHREADS={threads}"


def widths(length):
    """The columns per cluster the round trip may take for a length: the length's own and,
    where it is 16, 8 (half the shared memory per block, so more blocks per multiprocessor;
    which is faster depends on the GPU and the problem, and is measured)."""
    own = _config(length)[0]
    return (own, 8) if own == 16 and length >= 2048 else (own,)


_NAME = "accelmath_columns.cu"
_ready = set()  # (device, length, source, width) of the kernels set up
_lock = threading.Lock()


def round_trip_source(element):
    """The source of the ``round_trip`` kernel (forward transforms of the columns, an
    element function, inverse transforms, in one pass) with ``element``, the function's
    source (:func:`accelmath.fusion._cuda.element_source`)."""
    return element + "#define ACCELMATH_ELEMENT\n" + SOURCE


def code(device_id, length, source=SOURCE, width=None):
    """``(source, options, name)`` of the kernel for a length on a device, as
    ``modules.compile_soon`` and ``modules.is_compiled`` take them. ``source``:
    :data:`SOURCE` or a :func:`round_trip_source`; ``width``: one of :func:`widths`."""
    return source, device_options(device_id, options(length, width)), _NAME


def compiled(device_id, length, source=SOURCE, width=None):
    """Whether the kernel for a length is compiled for a device (kept in the store, or
    compiled in the background by :func:`compile_soon`, or set up in this process already):
    a plan can time it at once (the arguments as :func:`code` takes them)."""
    return ((device_id, length, source, width) in _ready
            or is_compiled(*code(device_id, length, source, width)))


def compile_soon(device_id, length, source=SOURCE, width=None):
    """Start compiling the kernel for a length for a device in the background (about a
    second of NVRTC), for the plans made after it; the thread (see ``modules.compile_soon``)."""
    return modules_compile_soon(*code(device_id, length, source, width))


def _kernel(device_id, length, source=SOURCE, name="columns", width=None):
    """``(function, columns per cluster, threads, shared bytes)`` of the kernel ``name`` of
    ``source`` for a length, loaded on a device (its twiddle table made the first time)."""
    key = (device_id, length, source, width)
    width, threads = _config(length, width)
    module = loaded(device_id, source, _NAME, options(length, key[3]))
    function, shared = module.function(name), length // _CLUSTER * width * 8
    if key not in _ready:
        with _lock:
            if key not in _ready:
                allow_dynamic_shared(function, shared)
                launch(module.function("init_table"), LaunchConfig((length + 255) // 256, 256),
                       (), None)
                driver.lib.stream_synchronize(None)  # the table is ready before any stream
                _ready.add(key)
    return function, width, threads, shared


_round_trips = {}  # (device, length, width, source, columns, batches) -> (function, config)
_ROUND_TRIP_LIMIT = 256


def round_trip(device_id, length, width, source, address, pitch, ncols, batches, scale,
               element, stream):
    """Enqueue the ``round_trip`` kernel of ``source`` (:func:`round_trip_source`) on
    ``stream``: in place on the ``batches`` matrices of complex64 at ``address``, each of
    ``length`` rows of ``pitch`` elements (``ncols`` of them transformed; the matrices
    ``length * pitch`` apart), the element function's struct ``element`` and the factor
    ``scale`` applied between the forward and the inverse transforms; ``width`` columns per
    cluster (one of :func:`widths`)."""
    key = (device_id, length, width, source, ncols, batches)
    found = _round_trips.get(key)
    if found is None:
        function, width, threads, shared = _kernel(device_id, length, source, "round_trip",
                                                   width)
        config = LaunchConfig(grid=(_CLUSTER * ((ncols + width - 1) // width), batches),
                              block=threads, shared_bytes=shared)
        if len(_round_trips) >= _ROUND_TRIP_LIMIT:
            _round_trips.clear()
        found = _round_trips[key] = (function, config)
    function, config = found
    launch(function, config, (ctypes.c_void_p(address), ctypes.c_longlong(pitch),
                              ctypes.c_int(ncols), ctypes.c_longlong(length * pitch),
                              ctypes.c_float(scale), element), stream)


def available(device_id):
    """True where a GPU runs the kernel: compute capability 9.0 or later (thread block
    clusters)."""
    return compute_capability(device_id) >= (9, 0)


def fits(step, dtype):
    """True where the kernel can run a plan step: a complex64 c2c of one axis of a length in
    :data:`LENGTHS` down columns (adjacent transforms adjacent in memory, rows at least as
    wide as the batch, the same row pitch in and out)."""
    return (step.kind == "c2c" and dtype == "complex64" and len(step.n) == 1
            and step.n[0] in LENGTHS and step.idist == 1 and step.odist == 1
            and step.istride == step.ostride >= step.batch)


def launcher(step, device_id):
    """A function ``run(src, dst, inverse, stream)`` that enqueues the transforms of a step
    that :func:`fits` from the device address ``src`` to ``dst`` (equal for a step in place)
    on ``stream``. The kernel is compiled and loaded here, not at the first run."""
    function, width, threads, shared = _kernel(device_id, step.n[0])
    # The kernel declares its clusters (__cluster_dims__): the launch needs none.
    config = LaunchConfig(grid=_CLUSTER * ((step.batch + width - 1) // width), block=threads,
                          shared_bytes=shared)
    pitch, ncols = ctypes.c_longlong(step.istride), ctypes.c_int(step.batch)
    signs = {False: ctypes.c_float(-1.0), True: ctypes.c_float(1.0)}

    def run(src, dst, inverse, stream):
        args = (ctypes.c_void_p(src), ctypes.c_void_p(dst), pitch, ncols, signs[inverse])
        launch(function, config, args, stream)

    return run

"""accelmath's own column FFT: complex64 transforms down the columns of a row-major matrix.

cuFFT transforms strided columns a few at a time per thread block, so each block reads rows
only a few elements wide (4 columns, 32 bytes, for length 4096 on Hopper). This kernel spreads
each transform over a cluster of 8 thread blocks (compute capability 9.0 and later) and so
reads and writes 16 columns (128 bytes) per row. For a length ``L = 8 M`` it runs a four-step
FFT: block ``b`` loads the rows ``M n1 + n2`` of its 1/8 of the ``n2``, makes 8-point
transforms over ``n1`` and scales them by their twiddles; each block then stores its output
``k1`` into the shared memory of block ``k1`` (distributed shared memory), which so holds one
output of every block, and makes the ``M``-point transforms in its own shared memory
(Stockham radix-8 passes and one last radix-2, -4 or -8 pass), whose results are the output
rows ``b + 8 k``. A thread holds 32 values; its registers are capped at 128 (``MIN_BLOCKS``)
so that blocks of 512 threads in all share each multiprocessor, one block's memory traffic
filling another's synchronizations.

The executor offers it as one of a plan's timed candidates (see ``CudaExecutor``), so it runs
only where it measures faster than cuFFT; where it is not compiled yet (a new machine's empty
store), a plan goes without it and it compiles in the background for the plans made after.
Lengths: powers of two from 512 to 16384.
"""

import ctypes
import threading

from accelmath._core.gpu.device import compute_capability
from accelmath._core.gpu.launch import LaunchConfig, allow_dynamic_shared, launch
from accelmath._core.gpu.modules import compile_soon as modules_compile_soon
from accelmath._core.gpu.modules import device_options, is_compiled, loaded
from accelmath.bindings import driver

__all__ = ["LENGTHS", "SOURCE", "available", "compile_soon", "compiled", "fits", "launcher",
           "options", "round_trip", "round_trip_source", "widths"]

LENGTHS = tuple(1 << k for k in range(9, 15))
_CLUSTER = 8
_SMEM_VALUES = 8192  # complex64 values of shared memory per block (64 KiB)

SOURCE = r"""
// L: the transform length (8 M); W: columns per cluster; THREADS: per block; MIDDLE: the
// radix-8 Stockham passes between the first and the last; LAST: the last one's radix.
#define M (L / 8)
#define P (M / 8)
#define ROWS (THREADS / W)
#define PAIRS (P / ROWS)
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

// x[r] times exp(2 pi i s r m / L), r = 1..7 (7 m < L): three table reads and four products
// (at most 2.3 ulp from the table's values, against 0.7; fewer reads in flight, 5% faster)
__device__ __forceinline__ void twiddles(float2 *x, int m, float s) {
    const float2 w1 = twiddle(m, s), w2 = twiddle(2 * m, s), w4 = twiddle(4 * m, s);
    const float2 w3 = mul(w1, w2);
    x[1] = mul(x[1], w1); x[2] = mul(x[2], w2); x[3] = mul(x[3], w3); x[4] = mul(x[4], w4);
    x[5] = mul(x[5], mul(w1, w4)); x[6] = mul(x[6], mul(w2, w4)); x[7] = mul(x[7], mul(w3, w4)); }

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

// The M-point transforms of a block's W columns through its shared memory A (M rows of W
// values): v[i][r] holds input j + P r (j = p + ROWS i); on return, output j + P r too (the
// last pass's outputs j + P u + (M / R) q, r = u + (8 / R) q, are that index), so an inverse
// takes a forward's output where it is. No thread may still read A when it starts.
__device__ __forceinline__ void inner(float2 (&v)[PAIRS][8], float2 *A, int p, int w, float s) {
    // The first Stockham pass (Ns = 1)
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i;
        dft8(v[i], s);
        #pragma unroll
        for (int r = 0; r < 8; ++r) A[(j * 8 + r) * W + w] = v[i][r];
    }
    // Radix-8 Stockham passes in place through registers, all but the last
    #pragma unroll
    for (int pass = 0; pass < MIDDLE; ++pass) {
        const int ns = 8 << (3 * pass);
        __syncthreads();
        #pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            const int j = p + ROWS * i;
            #pragma unroll
            for (int r = 0; r < 8; ++r) v[i][r] = A[(j + P * r) * W + w];
        }
        __syncthreads();
        #pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            const int j = p + ROWS * i, d = (j / ns) * ns * 8 + j % ns;
            twiddles(v[i], (j % ns) * (L / (ns * 8)), s);
            dft8(v[i], s);
            #pragma unroll
            for (int r = 0; r < 8; ++r) A[(d + ns * r) * W + w] = v[i][r];
        }
    }
    __syncthreads();
    // The last pass, radix R = LAST: for each j, 8 / R transforms of the values j + P r,
    // r = u + (8 / R) q; its outputs are j + P u + (M / R) q = j + P r
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i;
        #pragma unroll
        for (int r = 0; r < 8; ++r) v[i][r] = A[(j + P * r) * W + w];
        #pragma unroll
        for (int u = 0; u < 8 / LAST; ++u) {
            float2 *x = v[i];
            const int jj = j + P * u;
            if (LAST == 8) {
                twiddles(x, jj * 8, s);
            } else {
                #pragma unroll
                for (int q = 1; q < LAST; ++q)
                    x[u + (8 / LAST) * q] = mul(x[u + (8 / LAST) * q], twiddle(jj * q * 8, s));
            }
        }
        if (LAST == 8) {
            dft8(v[i], s);
        } else if (LAST == 4) {
            dft4(v[i][0], v[i][2], v[i][4], v[i][6], s);
            dft4(v[i][1], v[i][3], v[i][5], v[i][7], s);
        } else {
            #pragma unroll
            for (int u = 0; u < 4; ++u) dft2(v[i][u], v[i][u + 4]);
        }
    }
}

// The first half of a cluster's transforms of its columns, read from `in` (row pitch `pitch`):
// 8-point transforms over n1 of x[M n1 + n2], n2 = rank P + j, and their twiddles; each block
// then sends its output k1 to block k1, which so holds its k1 = rank of every block (v[i][r]:
// n2 = j + P r) for inner. Where x = y, the output rows rank + 8 (j + P r).
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
        twiddles(v[i], n2, s);
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
        twiddles(v[i], P * (int)rank, s);
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
        #pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            const int j = p + ROWS * i;
            #pragma unroll
            for (int r = 0; r < 8; ++r) out[(long long)(rank + 8 * (j + P * r)) * pitch + col] = v[i][r];
        }
    }
}

#ifdef ACCELMATH_ELEMENT
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
    inner(v, A, p, w, -1.f);
    // (v[i][r]: output k = j + P r of the block's rows rank + 8 k, the inverse's input k)
    #pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int j = p + ROWS * i;
        #pragma unroll
        for (int r = 0; r < 8; ++r) {
            float2 y = make_float2(0.f, 0.f);
            if (live) {
                const c64 z = accelmath_element(mk(v[i][r].x, v[i][r].y), blockIdx.y,
                                                rank + 8 * (j + P * r), col, e);
                y = make_float2(z.x * scale, z.y * scale);
            }
            v[i][r] = y;
        }
    }
    __syncthreads();  // (the forward's last reads of A before the inverse writes it)
    inner(v, A, p, w, 1.f);
    outer_last(v, A, rank, p, w, 1.f, base, pitch, col, live);
}
#endif
"""


def _config(length, width=None):
    """``(columns per cluster, threads per block, radix-8 passes between the first and the
    last, radix of the last pass)`` for a length: 16 columns (128-byte rows) where a block's
    1/8 of them fits 64 KiB, fewer for longer ones (or ``width``); 4 transforms of 8 values
    per thread."""
    m = length // _CLUSTER
    width = width or min(16, _SMEM_VALUES // m)
    middle, ns = 0, 8
    while ns * 8 < m:
        middle, ns = middle + 1, ns * 8
    return width, m // _CLUSTER * width // 4, middle, m // ns


def options(length, width=None):
    """The NVRTC options that specialize :data:`SOURCE` for a length (and a width other than
    the length's own, :func:`widths`)."""
    width, threads, middle, last = _config(length, width)
    return (f"-DL={length}", f"-DW={width}", f"-DTHREADS={threads}", f"-DMIDDLE={middle}",
            f"-DLAST={last}")


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


def compiled(device_id, length, source=SOURCE, width=None):
    """Whether the kernel for a length is compiled for a device (kept in the store, or
    compiled in the background by :func:`compile_soon`, or set up in this process already):
    a plan can time it at once. ``source``: :data:`SOURCE` or a :func:`round_trip_source`;
    ``width``: one of :func:`widths`."""
    return ((device_id, length, source, width) in _ready
            or is_compiled(source, device_options(device_id, options(length, width)), _NAME))


def compile_soon(device_id, length, source=SOURCE, width=None):
    """Start compiling the kernel for a length for a device in the background (about a
    second of NVRTC), for the plans made after it; the thread (see ``modules.compile_soon``)."""
    return modules_compile_soon(source, device_options(device_id, options(length, width)),
                                _NAME)


def _kernel(device_id, length, source=SOURCE, name="columns", width=None):
    """``(function, columns per cluster, threads, shared bytes)`` of the kernel ``name`` of
    ``source`` for a length, loaded on a device (its twiddle table made the first time)."""
    key = (device_id, length, source, width)
    width, threads, _, _ = _config(length, width)
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

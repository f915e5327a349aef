"""accelmath's own batched solvers for small matrices (n <= :data:`MAX_N`): LU solve, inverse
and Cholesky. Up to :data:`WARP_N` rows, many systems per warp, each matrix held in
registers (below); past that, one block per system, the matrix in shared memory
(:mod:`accelmath.linalg._kernels.medium`, which the launchers here hand those orders to).

Design
------
Each system is handled by a *segment* of ``W`` lanes of a warp, ``W`` the power of two at or
above ``n``, so a warp handles ``32 / W`` systems at once; lane ``i`` of a segment holds row
``i`` of its matrix in registers (``n`` is a compile-time constant: one instantiation per
operation, ``n``, dtype and right-hand-side block width, compiled lazily and kept in the
on-disk store like every accelmath kernel).

* Loading. A warp's matrices are one contiguous run of memory (row-major, C order), so the
  warp reads that run with consecutive lanes on consecutive addresses (coalesced) into shared
  memory, then each lane takes its row from there. Rows are stored at an odd stride in shared
  memory, which makes the row reads free of bank conflicts for 4-, 8- and 16-byte elements.
  A lane reading its own row straight from global memory would touch 32 lines per
  instruction, which at n = 32 lets the L1 cache evict lines before their second half is
  used; the staging costs one shared-memory round trip and no extra global traffic.
* LU (solve, inv): partial pivoting without moving rows. At step k the segment finds the
  largest ``|a_ik|`` (``|re| + |im|`` for complex, as LAPACK's ``i?amax``) among the rows not
  yet pivoted by a butterfly of shuffles on one integer key (the magnitude's bits with the
  lane in the low bits, so ties go to the first row, as LAPACK's); the pivot row is
  broadcast through shared memory in 16-byte vectors (one ``STS.128``/``LDS.128`` pair moves
  what two or four 32-bit shuffles would) and every other unpivoted row eliminates against
  it in registers. Each row remembers the step at which it became the pivot, which is all
  the substitutions need: the permutation is never applied to data.
* Right-hand sides are streamed in blocks of ``KB`` columns (a lane holds its row of the
  block): forward substitution through ``L``, back substitution through ``U``, each step one
  shared-memory broadcast of the pivot row's block. ``inv`` makes identity columns in
  registers instead of reading them, and stages its output through shared memory for a
  coalesced store.
* Cholesky: right-looking, column ``k`` broadcast through shared memory at each step;
  ``upper`` reads the upper triangle (the transpose, conjugated, of what the lower
  factorization reads) and writes ``U = L^H``; the other triangle of the output is zero. The
  output goes through shared memory for a coalesced store.

Failure: an int32 ``info`` per system, 0 when it succeeded; ``i > 0`` when the ``i``-th pivot
(1-based) was exactly zero (solve, inv) or the leading minor of order ``i`` is not positive
definite (cholesky); -1 when ``A`` holds a NaN or an infinity (any element, either triangle;
for cholesky where the launcher asks for it), else -2 when ``B`` does, before a zero pivot
(:data:`~accelmath.linalg._kernels.arithmetic.NONFINITE`: each lane checks the row it loads, and a
segment's lanes join their findings with shuffles, so the check costs no memory traffic). Where ``info > 0`` or ``info == -1`` every output element of that system
is NaN (a NaN or an infinity in ``B`` reaches only its own columns of ``X``, as arithmetic
carries it).

Layouts: every matrix is a dense row-major (C order) batch: ``A[b, i, j]`` at
``b*n*n + i*n + j``; ``B[b, i, c]`` and ``X[b, i, c]`` at ``b*n*k + i*k + c``. Outputs may be
the inputs (in place): each warp reads a system wholly before it writes it.

Every launcher enqueues on ``stream``; none synchronizes or allocates.
"""

import ctypes

from accelmath._core.gpu.launch import config, launch
from accelmath._core.gpu.modules import loaded
from accelmath._core.operand import ITEMSIZE
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._kernels import medium as _medium
from accelmath.linalg._kernels.arithmetic import ARITHMETIC, DTYPES, ELEMENT_TYPES, OPS

__all__ = ["DTYPES", "MAX_N", "SOURCE", "WARP_N", "cholesky", "compile_options", "inv",
           "solve"]

WARP_N, MAX_N = 32, _medium.MAX_N
_KERNEL = {"solve": "small_lu", "inv": "small_lu", "cholesky": "small_cholesky"}
_STATIC_SHARED = 48 * 1024  # what a block may hold without opting in

SOURCE = ARITHMETIC + ELEMENT_TYPES + r"""
constexpr int N = SMALL_N;
constexpr int KB = SMALL_KB;
constexpr int WARPS = SMALL_WARPS;
constexpr int W = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : N <= 8 ? 8 : N <= 16 ? 16 : 32;
constexpr int G = 32 / W;                        // systems per warp
constexpr int S = (N % 2) ? N : N + 1;           // odd row stride: no bank conflicts
constexpr int V = 16 / (int)sizeof(T);           // elements per 16-byte vector
constexpr int NV = (N + V - 1) / V;              // vectors per broadcast row
constexpr int NVK = (KB + V - 1) / V;            // vectors per right-hand-side block row
constexpr unsigned FULL = 0xffffffffu;

union Pack { float4 v; T e[V]; };

struct WarpShared {
    float4 row[G][2][NV];     // pivot rows (LU) or columns (Cholesky), double-buffered
    float4 rhs[G][2][NVK];    // the pivot row's right-hand-side block, double-buffered
    T stage[G * N * S];       // the warp's matrices, for coalesced loads and stores
};
static_assert(WARPS * sizeof(WarpShared) <= 48 * 1024, "static shared memory over 48 KiB");

// ---- staging: the warp's run of matrices <-> shared memory, coalesced -----------------
__device__ __forceinline__ void stage_load(T* st, const T* src, int count, int lane) {
#pragma unroll
    for (int t = 0; t < (G * N * N + 31) / 32; ++t) {
        const int e = t * 32 + lane;
        if (e < count) { const int r = e / N; st[r * S + (e - r * N)] = src[e]; }
    }
}
__device__ __forceinline__ void stage_store(T* dst, const T* st, int count, int lane) {
#pragma unroll
    for (int t = 0; t < (G * N * N + 31) / 32; ++t) {
        const int e = t * 32 + lane;
        if (e < count) { const int r = e / N; dst[e] = st[r * S + (e - r * N)]; }
    }
}

// whether any lane of the segment has v set (every lane of the warp takes part)
__device__ __forceinline__ int segment_any(int v) {
#pragma unroll
    for (int off = W / 2; off > 0; off >>= 1) v |= __shfl_xor_sync(FULL, v, off, W);
    return v;
}

// whether any of a lane's n elements is a NaN or an infinity
__device__ __forceinline__ int any_nonfinite(const T* a) {
    int bad = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) bad |= !finite_of(a[j]);
    return bad;
}

// the segment's first system, how many of the warp's systems exist, and the warp's state
#define WARP_SETUP                                                                         \
    __shared__ WarpShared shared_all[WARPS];                                               \
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;                            \
    WarpShared& sh = shared_all[warp];                                                     \
    const int g = lane / W, i = lane % W;                                                  \
    const long long first = ((long long)blockIdx.x * WARPS + warp) * G;                    \
    if (first >= batch) return;  /* the whole warp: no shuffle or syncwarp misses it */    \
    const long long b = first + g;                                                         \
    const int systems = (int)(batch - first < G ? batch - first : G);                      \
    const T zero = zero_of(T());

#if SMALL_OP != 2
// LU with partial pivoting, then X = A^-1 B (OP 0) or X = A^-1 (OP 1), KB columns at a time.
extern "C" __global__ void __launch_bounds__(WARPS * 32)
small_lu(const T* A, const T* B, T* X, int* info, int* flag, long long batch, int k) {
    WARP_SETUP
    stage_load(sh.stage, A + first * N * N, systems * N * N, lane);
    __syncwarp();
    T a[N];
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = i < N ? sh.stage[(g * N + i) * S + j] : zero;
    __syncwarp();

    int step = N;        // the step at which this row became the pivot (N: not yet)
    T rdiag = zero;      // 1 / U[step, step]
    int failed = segment_any(any_nonfinite(a)) ? NONFINITE_A : 0;
#pragma unroll
    for (int kk = 0; kk < N; ++kk) {
        Key key = (i < N && step == N) ? key_of(mag1(a[kk]), i) : Key(0);
#pragma unroll
        for (int off = W / 2; off > 0; off >>= 1) {
            const Key other = __shfl_xor_sync(FULL, key, off, W);
            key = other > key ? other : key;
        }
        const int p = 63 - (int)(key & 63);
        float4* prow = sh.row[g][kk & 1];
        if (i == p) {
#pragma unroll
            for (int q = kk / V; q < NV; ++q) {
                Pack u;
#pragma unroll
                for (int e = 0; e < V; ++e) u.e[e] = q * V + e < N ? a[q * V + e] : zero;
                prow[q] = u.v;
            }
        }
        __syncwarp();
        Pack head;
        head.v = prow[kk / V];
        const T pivot = head.e[kk % V];
        const bool singular = is_zero(pivot);
        if (singular && failed == 0) failed = kk + 1;
        // a zero pivot leaves its column as it is, as LAPACK's getrf does
        const T r = singular ? zero : recip(pivot);
        if (i == p) {
            step = kk;
            rdiag = r;
        } else if (step == N) {
            const T l = mul(a[kk], r);
            a[kk] = l;
#pragma unroll
            for (int q = kk / V; q < NV; ++q) {
                Pack u;
                u.v = q == kk / V ? head.v : prow[q];
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const int j = q * V + e;
                    if (j > kk && j < N) a[j] = sub_mul(a[j], l, u.e[e]);
                }
            }
        }
    }

#if SMALL_OP == 1
    const int cols = N;
#else
    const int cols = k;
    const bool live = b < batch && i < N;
    const long long xbase = b * N * (long long)k;
    int bad_b = 0;       // a NaN or an infinity read from B
#endif
    for (int c0 = 0; c0 < cols; c0 += KB) {
        T x[KB];
#pragma unroll
        for (int c = 0; c < KB; ++c) {
#if SMALL_OP == 1
            x[c] = i == c0 + c ? real_to(R(1), zero) : zero;
#else
            x[c] = live && c0 + c < k ? B[xbase + (long long)i * k + c0 + c] : zero;
            bad_b |= !finite_of(x[c]);
#endif
        }
        // forward: L y = P b; then back: U x = y. t counts broadcasts to alternate buffers.
#pragma unroll
        for (int t = 0; t < 2 * N; ++t) {
            const int kk = t < N ? t : 2 * N - 1 - t;
            float4* buf = sh.rhs[g][t & 1];
            if (step == kk) {
                if (t >= N) {
#pragma unroll
                    for (int c = 0; c < KB; ++c) x[c] = mul(x[c], rdiag);
                }
#pragma unroll
                for (int q = 0; q < NVK; ++q) {
                    Pack u;
#pragma unroll
                    for (int e = 0; e < V; ++e) u.e[e] = q * V + e < KB ? x[q * V + e] : zero;
                    buf[q] = u.v;
                }
            }
            __syncwarp();
            if (t < N ? step > kk : step < kk) {
#pragma unroll
                for (int q = 0; q < NVK; ++q) {
                    Pack u;
                    u.v = buf[q];
#pragma unroll
                    for (int e = 0; e < V; ++e)
                        if (q * V + e < KB) x[q * V + e] = sub_mul(x[q * V + e], a[kk], u.e[e]);
                }
            }
        }
        // the lane whose row was pivot at step s holds row s of X
#pragma unroll
        for (int c = 0; c < KB; ++c) {
            const T v = failed ? nan_of(zero) : x[c];
#if SMALL_OP == 1
            if (i < N && c0 + c < N) sh.stage[(g * N + step) * S + c0 + c] = v;
#else
            if (live && c0 + c < k) X[xbase + (long long)step * k + c0 + c] = v;
#endif
        }
    }
#if SMALL_OP == 1
    __syncwarp();
    stage_store(X + first * N * N, sh.stage, systems * N * N, lane);
#else
    if (segment_any(bad_b) && failed >= 0) failed = NONFINITE_B;  // (before a zero pivot)
#endif
    if (i == 0 && b < batch) report(info, flag, b, failed);
}

#else
// Cholesky, right-looking: A = L L^H (mode bit 0 clear) or A = U^H U (bit 0 set); NaN and
// Inf anywhere in A reported (NONFINITE_A) where bit 1 is set.
extern "C" __global__ void __launch_bounds__(WARPS * 32)
small_cholesky(const T* A, T* L, int* info, int* flag, long long batch, int mode) {
    WARP_SETUP
    const int upper = mode & 1;
    stage_load(sh.stage, A + first * N * N, systems * N * N, lane);
    __syncwarp();
    // the lower factorization reads the lower triangle; the upper one the upper triangle,
    // which conjugated and transposed is the lower triangle of the same Hermitian matrix
    T a[N];
#pragma unroll
    for (int j = 0; j < N; ++j)
        a[j] = i >= N ? zero : upper ? conj_of(sh.stage[(g * N + j) * S + i])
                                     : sh.stage[(g * N + i) * S + j];
    __syncwarp();

    // (mode is the same in every lane: the shuffles see the whole warp)
    int failed = (mode & 2) && segment_any(any_nonfinite(a)) ? NONFINITE_A : 0;
#pragma unroll
    for (int kk = 0; kk < N; ++kk) {
        float4* col4 = sh.row[g][kk & 1];
        T* col = reinterpret_cast<T*>(col4);
        if (i < N) col[i] = a[kk];
        __syncwarp();
        const R d = real_of(col[kk]);
        if (!(d > R(0)) && failed == 0) failed = kk + 1;  // also NaN
        const R root = sqrt(d);
        const R rinv = R(1) / root;
        const T l = scale(a[kk], rinv);
        a[kk] = i == kk ? real_to(root, zero) : l;
        if (i > kk) {
            // A[i, j] -= L[i, k] conj(L[j, k]) with L[j, k] = col[j] / root
            const T coef = scale(l, rinv);
#pragma unroll
            for (int q = (kk + 1) / V; q < NV; ++q) {
                Pack u;
                u.v = col4[q];
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const int j = q * V + e;
                    if (j > kk && j < N) a[j] = sub_mul_conj(a[j], coef, u.e[e]);
                }
            }
        }
    }
    // zeros in the other triangle, NaN everywhere where the factorization failed
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (i < N) {
            T v = j <= i ? a[j] : zero;
            if (failed) v = nan_of(zero);
            if (upper) sh.stage[(g * N + j) * S + i] = conj_of(v);
            else sh.stage[(g * N + i) * S + j] = v;
        }
    }
    __syncwarp();
    stage_store(L + first * N * N, sh.stage, systems * N * N, lane);
    if (i == 0 && b < batch) report(info, flag, b, failed);
}
#endif
"""


def _segment(n):
    """Lanes per system: the power of two at or above ``n``."""
    w = 1
    while w < n:
        w *= 2
    return w


def _block_width(columns):
    """Right-hand-side columns per block: a power of two, at most 8 (more registers would
    cost occupancy at n = 32 without saving broadcasts)."""
    return min(8, _segment(columns))


def _warps_per_block(n, dtype, kb):
    """Warps per block: 4 where their shared memory fits 48 KiB, else fewer (the source
    checks the same sum with a static_assert)."""
    size = ITEMSIZE[dtype]
    w = _segment(n)
    g = 32 // w
    vectors = -(-n * size // 16), -(-kb * size // 16)
    per_warp = 2 * g * 16 * (vectors[0] + vectors[1]) + g * n * (n if n % 2 else n + 1) * size
    per_warp = -(-per_warp // 16) * 16  # the struct's size is a multiple of its alignment
    for warps in (4, 2, 1):
        if warps * per_warp <= _STATIC_SHARED:
            return warps
    raise AssertionError(f"n={n} {dtype}: one warp's shared memory exceeds 48 KiB")


def compile_options(op, n, dtype, kb=1):
    """The NVRTC defines that instantiate :data:`SOURCE` for an operation, order, dtype
    and right-hand-side block width, and the warps per block they imply.

    Parameters
    ----------
    op : str
        "solve", "inv" or "cholesky".
    n : int
        The order of the matrices, 1 to :data:`WARP_N`.
    dtype : str
        One of :data:`DTYPES`.
    kb : int
        Right-hand-side columns per block (solve, inv): 1, 2, 4 or 8.

    Returns
    -------
    (tuple of str, int)
        The ``-D`` options and the warps per block.
    """
    warps = _warps_per_block(n, dtype, kb)
    return (f"-DSMALL_OP={OPS[op]}", f"-DSMALL_N={n}", f"-DSMALL_KB={kb}",
            f"-DSMALL_WARPS={warps}", f"-DSMALL_DTYPE={DTYPES[dtype]}"), warps


_kernels = {}  # (device_id, op, n, dtype, kb) -> (function, warps per block, systems per block)


def _check(n, dtype, batch):
    """Refuse what the kernels cannot do, naming the value and what is allowed."""
    if dtype not in DTYPES:
        raise UnsupportedDTypeError(
            f"dtype={dtype!r} is not supported by the small-matrix kernels: expected one of "
            f"{', '.join(repr(d) for d in DTYPES)}")
    if not isinstance(n, int) or not 1 <= n <= MAX_N:
        raise InvalidArgumentError(
            f"n={n!r} is out of range for the small-matrix kernels: expected 1 <= n <= {MAX_N}")
    if not isinstance(batch, int) or batch < 0:
        raise InvalidArgumentError(f"batch={batch!r} is not a count of matrices (an int >= 0)")


def _kernel(device_id, op, n, dtype, kb):
    """The kernel instantiated for ``(op, n, dtype, kb)`` on a device, compiled on first use."""
    key = (device_id, op, n, dtype, kb)
    found = _kernels.get(key)
    if found is None:
        extra, warps = compile_options(op, n, dtype, kb)
        module = loaded(device_id, SOURCE, "accelmath_linalg_small.cu", extra)
        found = _kernels[key] = (module.function(_KERNEL[op]), warps,
                                 warps * (32 // _segment(n)))
    return found


def _launch(function, warps, per_block, batch, args, stream):
    launch(function, config(-(-batch // per_block), 32 * warps), args, stream)


def solve(a_ptr, b_ptr, x_ptr, info_ptr, n, k, batch, dtype, stream, device_id,
          flag_ptr=0):
    """Enqueue ``X = A^-1 B`` for a batch of small systems (LU with partial pivoting).

    Parameters
    ----------
    a_ptr : int
        Device address of ``A``: ``batch`` row-major n x n matrices, dense.
    b_ptr : int
        Device address of ``B``: ``batch`` row-major n x k matrices, dense.
    x_ptr : int
        Device address of ``X``, laid out as ``B``; it may be ``b_ptr``.
    info_ptr : int
        Device address of ``batch`` int32: 0 where the system was solved, ``i`` where the
        ``i``-th pivot (1-based) was exactly zero (that system's ``X`` is then NaN), -1
        where ``A`` holds a NaN or an infinity (``X`` NaN), else -2 where ``B`` does (even
        with a zero pivot).
    n : int
        The order, 1 to :data:`MAX_N`.
    k : int
        Right-hand sides per system (any count >= 0).
    batch : int
        The number of systems.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    flag_ptr : int, optional
        Address of an int32 set to 1 where any system failed (left as it is otherwise), in
        memory the kernel can write (page-locked host memory at its host address); 0: none.
    """
    _check(n, dtype, batch)
    if not isinstance(k, int) or k < 0:
        raise InvalidArgumentError(f"k={k!r} is not a count of right-hand sides (an int >= 0)")
    if batch == 0:
        return
    if n > WARP_N:
        return _medium.solve(a_ptr, b_ptr, x_ptr, info_ptr, n, k, batch, dtype, stream,
                             device_id, flag_ptr)
    function, warps, per_block = _kernel(device_id, "solve", n, dtype, _block_width(max(k, 1)))
    args = (ctypes.c_void_p(a_ptr), ctypes.c_void_p(b_ptr), ctypes.c_void_p(x_ptr),
            ctypes.c_void_p(info_ptr), ctypes.c_void_p(flag_ptr), ctypes.c_longlong(batch),
            ctypes.c_int(k))
    _launch(function, warps, per_block, batch, args, stream)


def inv(a_ptr, out_ptr, info_ptr, n, batch, dtype, stream, device_id, flag_ptr=0):
    """Enqueue ``out = A^-1`` for a batch of small matrices (LU with partial pivoting,
    solved against identity columns made in registers).

    Parameters
    ----------
    a_ptr, out_ptr : int
        Device addresses of ``batch`` row-major n x n matrices, dense; they may be equal.
    info_ptr : int
        Device address of ``batch`` int32, as :func:`solve` sets them (``out`` is NaN where
        it is not 0; -2 never).
    n : int
        The order, 1 to :data:`MAX_N`.
    batch : int
        The number of matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    flag_ptr : int, optional
        Address of an int32 set to 1 where any system failed (left as it is otherwise), in
        memory the kernel can write (page-locked host memory at its host address); 0: none.
    """
    _check(n, dtype, batch)
    if batch == 0:
        return
    if n > WARP_N:
        return _medium.inv(a_ptr, out_ptr, info_ptr, n, batch, dtype, stream, device_id,
                           flag_ptr)
    function, warps, per_block = _kernel(device_id, "inv", n, dtype, _block_width(n))
    args = (ctypes.c_void_p(a_ptr), ctypes.c_void_p(0), ctypes.c_void_p(out_ptr),
            ctypes.c_void_p(info_ptr), ctypes.c_void_p(flag_ptr), ctypes.c_longlong(batch),
            ctypes.c_int(n))
    _launch(function, warps, per_block, batch, args, stream)


def cholesky(a_ptr, l_ptr, info_ptr, n, batch, dtype, upper, stream, device_id,
             flag_ptr=0, check_finite=True):
    """Enqueue the Cholesky factors of a batch of small Hermitian positive-definite
    matrices.

    Parameters
    ----------
    a_ptr : int
        Device address of ``batch`` row-major n x n matrices, dense. Only the lower triangle
        is read (the upper one where ``upper``), as LAPACK's ``potrf`` reads.
    l_ptr : int
        Device address of the factors, laid out as ``A``; it may be ``a_ptr``. ``L`` with
        ``A = L L^H`` (``U`` with ``A = U^H U`` where ``upper``), zeros in the other triangle.
    info_ptr : int
        Device address of ``batch`` int32: 0 where the factorization succeeded, ``i`` where
        the leading minor of order ``i`` is not positive definite, -1 where ``A`` holds a
        NaN or an infinity (see ``check_finite``); the factor is then NaN.
    n : int
        The order, 1 to :data:`MAX_N`.
    batch : int
        The number of matrices.
    dtype : str
        "float32", "float64", "complex64" or "complex128".
    upper : bool
        Factor as ``U^H U`` instead of ``L L^H``.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    flag_ptr : int, optional
        Address of an int32 set to 1 where any system failed (left as it is otherwise), in
        memory the kernel can write (page-locked host memory at its host address); 0: none.
    check_finite : bool, optional
        Report a matrix holding a NaN or an infinity anywhere (either triangle) with info
        code -1, its factor NaN (default); False: only the triangle read counts, as in
        LAPACK's ``potrf`` (a NaN there fails the factorization).
    """
    _check(n, dtype, batch)
    if batch == 0:
        return
    if n > WARP_N:
        return _medium.cholesky(a_ptr, l_ptr, info_ptr, n, batch, dtype, upper, stream,
                                device_id, flag_ptr, check_finite)
    function, warps, per_block = _kernel(device_id, "cholesky", n, dtype, 1)
    args = (ctypes.c_void_p(a_ptr), ctypes.c_void_p(l_ptr), ctypes.c_void_p(info_ptr),
            ctypes.c_void_p(flag_ptr), ctypes.c_longlong(batch),
            ctypes.c_int((1 if upper else 0) | (2 if check_finite else 0)))
    _launch(function, warps, per_block, batch, args, stream)

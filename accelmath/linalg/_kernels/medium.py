"""accelmath's own batched solvers for matrices of 33 to :data:`MAX_N` rows: LU solve,
inverse and Cholesky, one thread block per system, the matrix in shared memory (as much as
the GPU gives a block: :func:`fits`). The launchers of :mod:`accelmath.linalg._kernels.small` (which
hold each matrix of up to 32 rows in a warp's registers) hand these orders here, with the
same arguments, layouts and results.

Design
------
A block of :data:`THREADS` threads loads its matrix, row-major at an odd row stride, into
dynamic shared memory with consecutive threads on consecutive addresses (coalesced). Thread
``t`` owns column ``t % C`` and the rows ``t // C + (256 / C) r`` of every update (``C`` 64,
or 128 past 64 rows), so the threads of a warp run along a row (shared-memory accesses free
of bank conflicts) and read the pivot column's element of their row as one broadcast. A
block takes systems ``blockIdx.x``, ``blockIdx.x + gridDim.x``, ... (one each, but for
batches past the grid's reach).

* LU (solve, inv): right-looking, partial pivoting. At step k the first warp finds the
  largest ``|a_ik|`` (``|re| + |im|`` for complex, as LAPACK's ``i?amax``; ties to the first
  row) among rows k and below by a butterfly of shuffles, swaps that row with row k (the
  whole row, as LAPACK's ``getrf``) and the permutation with it; then every thread updates
  its part of the trailing matrix, ``a_ij -= a_ik / a_kk * a_kj``. The multipliers are left
  unscaled (``1 / a_kk`` is kept per step and applied where they are read), so a step needs
  two barriers. Right-hand sides are taken :func:`block_width` columns a pass (the whole
  inverse in one), each thread holding its row of a quarter of them in registers: forward
  substitution through ``L``, back substitution through ``U``, a barrier a step, at which the
  row just made final is published through shared memory; ``inv`` makes the permuted
  identity's columns instead of reading them.
* Cholesky: right-looking on the lower triangle (the upper one read as its conjugate
  transpose where ``upper``): ``a_ij -= a_ik conj(a_jk) / a_kk`` at step k, one barrier a
  step; the factor's columns are scaled by ``1 / sqrt(a_kk)`` as they are written out.

Failures are reported as :mod:`accelmath.linalg._kernels.small`'s: an int32 ``info`` per system (the
1-based order of the first zero pivot, or of the first leading minor not positive definite;
-1 where ``A`` holds a NaN or an infinity, else -2 where ``B`` does, each thread checking
what it loads and the block joining them at a barrier it has anyway; 0 where the system
succeeded) and NaN in every output element of a system that failed (but for ``B``'s NaN and
infinities, which reach only their own columns of ``X``).

Every launcher enqueues on ``stream``; none synchronizes or allocates.
"""

import ctypes

from accelmath._core.gpu.device import block_shared_memory
from accelmath._core.gpu.launch import allow_dynamic_shared, config, launch
from accelmath._core.gpu.modules import loaded
from accelmath._core.operand import ITEMSIZE
from accelmath.errors import InvalidArgumentError
from accelmath.linalg._kernels.arithmetic import ARITHMETIC, DTYPES, ELEMENT_TYPES, OPS

__all__ = ["MAX_N", "MIN_N", "SOURCE", "THREADS", "block_width", "cholesky",
           "compile_options", "fits", "inv", "largest", "shared_bytes", "solve"]

MIN_N, MAX_N = 33, 128
THREADS = 256
_MAX_GRID = 2**31 - 1
_KERNEL = {"solve": "medium_lu", "inv": "medium_lu", "cholesky": "medium_cholesky"}

SOURCE = ARITHMETIC + ELEMENT_TYPES + r"""
constexpr int N = SMALL_N;          // 33 to 128
constexpr int S = N | 1;            // odd row stride in shared memory
constexpr int THREADS = 256;
constexpr int COLS = N <= 64 ? 64 : 128;  // threads along a row
constexpr int SLOTS = THREADS / COLS;     // rows of threads in an update
constexpr int KEY_BITS = N <= 64 ? 6 : 7; // a row's bits in the pivot-search key
constexpr int KB = SMALL_KB;        // right-hand-side columns a pass, a multiple of SLOTS
constexpr int PER = KB / SLOTS;     // of them, a thread's
constexpr unsigned FULL = 0xffffffffu;

extern __shared__ float4 shared_raw[];

// the block's matrix at b, row-major, into shared memory: lower triangle of its conjugate
// transpose where `transpose` (Cholesky's upper); then a barrier, and whether any element
// of the matrix is a NaN or an infinity (the same in every thread)
__device__ __forceinline__ int load(T* sa, const T* src, int t, bool transpose) {
    int bad = 0;
    for (int e = t; e < N * N; e += THREADS) {
        const int r = e / N, c = e - r * N;
        const T v = src[e];
        bad |= !finite_of(v);
        if (transpose) sa[c * S + r] = conj_of(v);
        else sa[r * S + c] = v;
    }
    return __syncthreads_or(bad);
}

#if SMALL_OP != 2
// LU with partial pivoting, then X = A^-1 B (OP 0) or X = A^-1 (OP 1), KB columns at a time.
extern "C" __global__ void __launch_bounds__(THREADS)
medium_lu(const T* A, const T* B, T* X, int* info, int* flag, long long batch, int k) {
    T* sa = reinterpret_cast<T*>(shared_raw);
    T* sx = sa + N * S;             // two published rows of right-hand sides, KB each
    T* sr = sx + 2 * KB;            // 1 / a_kk per step (0 where a_kk is zero)
    int* perm = reinterpret_cast<int*>(sr + N);
    const int t = threadIdx.x, lane = t & 31, col = t % COLS, slot = t / COLS;
    const T zero = zero_of(T());
#if SMALL_OP == 1
    const int cols = N;
#else
    const int cols = k;
#endif
    for (long long b = blockIdx.x; b < batch; b += gridDim.x) {
        if (t < N) perm[t] = t;
        // the same in every thread: each reads every pivot
        int failed = load(sa, A + b * N * N, t, false) ? NONFINITE_A : 0;
        int bad_b = 0;  // a NaN or an infinity this thread read from B
        for (int kk = 0; kk < N; ++kk) {
            if (t < 32) {
                Key key = 0;
                for (int i = lane; i < N; i += 32) {
                    const Key c = i >= kk ? key_of<KEY_BITS>(mag1(sa[i * S + kk]), i) : Key(0);
                    key = c > key ? c : key;
                }
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) {
                    const Key other = __shfl_xor_sync(FULL, key, off);
                    key = other > key ? other : key;
                }
                const int p = (1 << KEY_BITS) - 1 - (int)(key & ((1 << KEY_BITS) - 1));
                if (p != kk) {
                    for (int c = lane; c < N; c += 32) {
                        const T u = sa[kk * S + c];
                        sa[kk * S + c] = sa[p * S + c];
                        sa[p * S + c] = u;
                    }
                    if (lane == 0) { const int u = perm[kk]; perm[kk] = perm[p]; perm[p] = u; }
                }
                __syncwarp();
                if (lane == 0) {
                    const T pivot = sa[kk * S + kk];
                    sr[kk] = is_zero(pivot) ? zero : recip(pivot);
                }
            }
            __syncthreads();
            // a zero pivot leaves its column as it is, as LAPACK's getrf does
            if (failed == 0 && is_zero(sa[kk * S + kk])) failed = kk + 1;
            const T r = sr[kk];
            if (col > kk && col < N) {
                const T u = sa[kk * S + col];
                for (int i = kk + 1 + ((slot - kk - 1) & (SLOTS - 1)); i < N; i += SLOTS)
                    sa[i * S + col] = sub_mul(sa[i * S + col], mul(sa[i * S + kk], r), u);
            }
            __syncthreads();
        }
        // right-hand sides, KB columns a pass: thread (i, slot) holds x_ic for the columns
        // c = c0 + slot + SLOTS q in registers, and publishes its row to the others (one of
        // two buffers, alternating) at the step where it is final
        const int i = col;
        for (int c0 = 0; c0 < cols; c0 += KB) {
            T x[PER];
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int c = c0 + slot + SLOTS * q;
#if SMALL_OP == 1
                x[q] = i < N && perm[i] == c ? one_of(zero) : zero;
#else
                x[q] = i < N && c < cols ? B[(b * N + perm[i]) * (long long)k + c] : zero;
                bad_b |= !finite_of(x[q]);
#endif
            }
            // forward: L y = P b (L unit lower, its multipliers scaled as they are read)
            for (int s = 0; s < N - 1; ++s) {
                T* row = sx + (s & 1) * KB;
                if (i == s) {
#pragma unroll
                    for (int q = 0; q < PER; ++q) row[slot + SLOTS * q] = x[q];
                }
                __syncthreads();
                if (i > s && i < N) {
                    const T l = mul(sa[i * S + s], sr[s]);
#pragma unroll
                    for (int q = 0; q < PER; ++q) x[q] = sub_mul(x[q], l, row[slot + SLOTS * q]);
                }
            }
            // back: U x = y, row s published as x_s = y_s / u_ss
            for (int s = N - 1; s > 0; --s) {
                T* row = sx + (s & 1) * KB;
                if (i == s) {
#pragma unroll
                    for (int q = 0; q < PER; ++q) row[slot + SLOTS * q] = mul(x[q], sr[s]);
                }
                __syncthreads();
                if (i < s) {
                    const T u = sa[i * S + s];
#pragma unroll
                    for (int q = 0; q < PER; ++q) x[q] = sub_mul(x[q], u, row[slot + SLOTS * q]);
                }
            }
            if (i < N) {
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    const int c = c0 + slot + SLOTS * q;
                    if (c < cols) X[(b * N + i) * (long long)cols + c] =
                        failed ? nan_of(zero) : mul(x[q], sr[i]);
                }
            }
        }
        // (the barrier: the next system reuses sa)
        if (__syncthreads_or(bad_b) && failed >= 0) failed = NONFINITE_B;  // (before a zero pivot)
        if (t == 0) report(info, flag, b, failed);
    }
}

#else
// Cholesky, right-looking: A = L L^H (mode bit 0 clear) or A = U^H U (bit 0 set); NaN and
// Inf anywhere in A reported (NONFINITE_A) where bit 1 is set.
extern "C" __global__ void __launch_bounds__(THREADS)
medium_cholesky(const T* A, T* L, int* info, int* flag, long long batch, int mode) {
    const int upper = mode & 1;
    T* sa = reinterpret_cast<T*>(shared_raw);
    R* root = reinterpret_cast<R*>(sa + N * S);  // 1 / sqrt(a_kk)
    const int t = threadIdx.x, col = t % COLS, slot = t / COLS;
    const T zero = zero_of(T());
    for (long long b = blockIdx.x; b < batch; b += gridDim.x) {
        // the same in every thread: each reads every diagonal element
        const int bad = load(sa, A + b * N * N, t, upper != 0);
        int failed = bad && (mode & 2) ? NONFINITE_A : 0;
        for (int kk = 0; kk < N; ++kk) {
            const R d = real_of(sa[kk * S + kk]);
            if (!(d > R(0)) && failed == 0) failed = kk + 1;  // also NaN
            if (col > kk && col < N) {
                // a_ij -= a_ik conj(a_jk) / a_kk for i >= j = col (the lower triangle); the
                // threads of a warp share i (one broadcast of a_ik, consecutive a_ij)
                const T u = scale(conj_of(sa[col * S + kk]), R(1) / d);
                for (int i = kk + 1 + ((slot - kk - 1) & (SLOTS - 1)); i < N; i += SLOTS)
                    if (i >= col) sa[i * S + col] = sub_mul(sa[i * S + col], sa[i * S + kk], u);
            }
            __syncthreads();
        }
        if (t < N) root[t] = R(1) / sqrt(real_of(sa[t * S + t]));
        __syncthreads();
        T* dst = L + b * N * N;
        for (int e = t; e < N * N; e += THREADS) {
            const int r = e / N, c = e - r * N;
            const int li = upper ? c : r, lj = upper ? r : c;  // L's element written here
            T v = zero;
            if (lj < li) v = scale(sa[li * S + lj], root[lj]);
            else if (lj == li) v = real_to(R(1) / root[li], zero);
            if (failed) v = nan_of(zero);
            dst[e] = upper ? conj_of(v) : v;
        }
        if (t == 0) report(info, flag, b, failed);
        __syncthreads();  // (the next system reuses sa)
    }
}
#endif
"""


def block_width(columns):
    """Right-hand-side columns a pass of the LU kernel: a power of two from 4 (a column for
    each row of threads) to 64 (an inverse's every column)."""
    width = 4
    while width < min(columns, 64):
        width *= 2
    return width


def shared_bytes(op, n, dtype, kb=4):
    """Dynamic shared memory of a block: the matrix at an odd row stride, and for LU two
    published rows of ``kb`` right-hand sides, the reciprocal pivots and the permutation;
    for Cholesky the reciprocal roots (real)."""
    size = ITEMSIZE[dtype]
    matrix = n * (n | 1) * size
    if op == "cholesky":
        return matrix + n * (size // 2 if dtype.startswith("complex") else size)
    return matrix + 2 * kb * size + n * size + n * 4


def fits(op, n, dtype, device_id):
    """Whether a block of the kernel of ``op`` for n x n matrices of ``dtype`` (and up to
    64 right-hand sides a pass) gets its shared memory on the device."""
    kb = 4 if op == "cholesky" else 64
    return shared_bytes(op, n, dtype, kb) <= block_shared_memory(device_id)


def largest(op, dtype, device_id):
    """The largest order :func:`fits`, at most :data:`MAX_N` (``MIN_N - 1`` where none)."""
    n = MAX_N
    while n >= MIN_N and not fits(op, n, dtype, device_id):
        n -= 1
    return n


def compile_options(op, n, dtype, kb=4):
    """The NVRTC defines that instantiate :data:`SOURCE` for an operation, order, dtype and
    right-hand-side block width.

    Parameters
    ----------
    op : str
        "solve", "inv" or "cholesky".
    n : int
        The order, :data:`MIN_N` to :data:`MAX_N`.
    dtype : str
        One of :data:`DTYPES`.
    kb : int
        Right-hand-side columns a pass (:func:`block_width`; LU only).

    Returns
    -------
    tuple of str
    """
    return (f"-DSMALL_OP={OPS[op]}", f"-DSMALL_N={n}", f"-DSMALL_KB={kb}",
            f"-DSMALL_DTYPE={DTYPES[dtype]}")


_kernels = {}  # (device_id, op, n, dtype, kb) -> (function, shared bytes)


def _kernel(device_id, op, n, dtype, kb):
    """The kernel instantiated for ``(op, n, dtype, kb)`` on a device, compiled on first
    use."""
    key = (device_id, op, n, dtype, kb)
    found = _kernels.get(key)
    if found is None:
        if not fits(op, n, dtype, device_id):
            raise InvalidArgumentError(
                f"n={n} is too large for the block kernels on this GPU: its blocks take "
                f"{dtype} matrices of at most {largest(op, dtype, device_id)} rows in shared "
                f"memory ({block_shared_memory(device_id)} bytes)")
        module = loaded(device_id, SOURCE, "accelmath_linalg_medium.cu",
                        compile_options(op, n, dtype, kb))
        function = module.function(_KERNEL[op])
        nbytes = shared_bytes(op, n, dtype, kb)
        allow_dynamic_shared(function, nbytes)
        found = _kernels[key] = (function, nbytes)
    return found


def _launch(device_id, op, n, dtype, kb, batch, args, stream):
    function, nbytes = _kernel(device_id, op, n, dtype, kb)
    launch(function, config(min(batch, _MAX_GRID), THREADS, nbytes), args, stream)


def solve(a_ptr, b_ptr, x_ptr, info_ptr, n, k, batch, dtype, stream, device_id,
          flag_ptr=0):
    """Enqueue ``X = A^-1 B`` for ``batch`` systems of order ``n`` (:data:`MIN_N` to
    :data:`MAX_N`); the arguments are :func:`accelmath.linalg._kernels.small.solve`'s, checked
    there."""
    args = (ctypes.c_void_p(a_ptr), ctypes.c_void_p(b_ptr), ctypes.c_void_p(x_ptr),
            ctypes.c_void_p(info_ptr), ctypes.c_void_p(flag_ptr), ctypes.c_longlong(batch),
            ctypes.c_int(k))
    _launch(device_id, "solve", n, dtype, block_width(k), batch, args, stream)


def inv(a_ptr, out_ptr, info_ptr, n, batch, dtype, stream, device_id, flag_ptr=0):
    """Enqueue ``out = A^-1`` for ``batch`` matrices of order ``n``; the arguments are
    :func:`accelmath.linalg._kernels.small.inv`'s, checked there."""
    args = (ctypes.c_void_p(a_ptr), ctypes.c_void_p(0), ctypes.c_void_p(out_ptr),
            ctypes.c_void_p(info_ptr), ctypes.c_void_p(flag_ptr), ctypes.c_longlong(batch),
            ctypes.c_int(n))
    _launch(device_id, "inv", n, dtype, block_width(n), batch, args, stream)


def cholesky(a_ptr, l_ptr, info_ptr, n, batch, dtype, upper, stream, device_id,
             flag_ptr=0, check_finite=True):
    """Enqueue the Cholesky factors of ``batch`` matrices of order ``n``; the arguments are
    :func:`accelmath.linalg._small.cholesky`'s, checked there."""
    args = (ctypes.c_void_p(a_ptr), ctypes.c_void_p(l_ptr), ctypes.c_void_p(info_ptr),
            ctypes.c_void_p(flag_ptr), ctypes.c_longlong(batch),
            ctypes.c_int((1 if upper else 0) | (2 if check_finite else 0)))
    _launch(device_id, "cholesky", n, dtype, 4, batch, args, stream)

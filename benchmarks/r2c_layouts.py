"""Ways to a real-to-complex transform of a float32 4096^2 image over both axes, by layout.

torch.fft returns this spectrum transposed (strides (1, 4096)) and is faster at it than any way
to the C-order result that NumPy, CuPy and accelmath return on CuPy arrays. This benchmark times
the ways to the C-order result that were tried, through accelmath's cuFFT bindings: cuFFT's
2-D plan (also with its patient JIT planning), its two passes alone (rows, then columns in
place), the columns first, and a one-pass FFT of the columns in shared memory with, as its
floor, its loads and stores alone. Device time per call (CUDA events around 10 calls back to
back, median of 30). Run on a GPU machine: ``python benchmarks/r2c_layouts.py``; writes
``benchmarks/results/r2c-layouts-<device>.{json,md}``.
"""

import ctypes
import sys

import numpy as np
from _common import device_time_ms, environment, write

import accelmath.fft as afft
from accelmath.bindings import cufft

N = 4096
H = N // 2 + 1
PATIENT_JIT = 1  # NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT

# A length-4096 FFT down columns, in place: each block loads COLS whole columns (4096 rows of
# COLS complex64 values) into shared memory, runs three radix-16 passes there and stores them
# back. NOFFT leaves out the passes: the loads and stores alone.
COLUMN_KERNEL = r"""
#define PADDED(a) ((a) + ((a) >> 4))
#define STRIDE (N + N / 16 + 4)
__device__ __forceinline__ float2 mul(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 add(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 sub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__device__ __forceinline__ void dft4(float2 &a, float2 &b, float2 &c, float2 &d, float s) {
    float2 t0 = add(a, c), t1 = sub(a, c), t2 = add(b, d), u = sub(b, d);
    float2 t3 = make_float2(-s * u.y, s * u.x);
    a = add(t0, t2); c = sub(t0, t2); b = add(t1, t3); d = sub(t1, t3);
}
__device__ __forceinline__ void dft16(float2 *x, float s) {
    const float c1 = 0.92387953251128674f, s1 = 0.38268343236508978f, r = 0.70710678118654752f;
    const float2 w[10] = {{1.f, 0.f}, {c1, s * s1}, {r, s * r}, {s1, s * c1}, {0.f, s},
                          {-s1, s * c1}, {-r, s * r}, {-c1, s * s1}, {-1.f, 0.f}, {-c1, -s * s1}};
    #pragma unroll
    for (int m = 0; m < 4; ++m) dft4(x[m], x[4 + m], x[8 + m], x[12 + m], s);
    #pragma unroll
    for (int k = 1; k < 4; ++k)
        #pragma unroll
        for (int m = 1; m < 4; ++m) x[4 * k + m] = mul(x[4 * k + m], w[m * k]);
    #pragma unroll
    for (int k = 0; k < 4; ++k) dft4(x[4 * k], x[4 * k + 1], x[4 * k + 2], x[4 * k + 3], s);
    float2 y[16];
    #pragma unroll
    for (int i = 0; i < 16; ++i) y[i] = x[i];
    #pragma unroll
    for (int k = 0; k < 4; ++k)
        #pragma unroll
        for (int j = 0; j < 4; ++j) x[k + 4 * j] = y[4 * k + j];
}
extern "C" __global__ void __launch_bounds__(THREADS)
columns(float2 *__restrict__ data, long long pitch, int ncols, const float2 *__restrict__ twiddle,
        float s) {
    extern __shared__ float2 sm[];
    const int t = threadIdx.x, c0 = blockIdx.x * COLS, width = min(COLS, ncols - c0);
    float2 *base = data + c0;
    float2 v[N * COLS / THREADS];
    #pragma unroll
    for (int i = 0; i < N * COLS / THREADS; ++i) {
        int at = i * THREADS + t, c = at % COLS;
        v[i] = c < width ? base[(long long)(at / COLS) * pitch + c] : make_float2(0.f, 0.f);
    }
    #pragma unroll
    for (int i = 0; i < N * COLS / THREADS; ++i) {
        int at = i * THREADS + t;
        sm[(at % COLS) * STRIDE + PADDED(at / COLS)] = v[i];
    }
    __syncthreads();
#ifndef NOFFT
    float2 x[16];
    #pragma unroll
    for (int pass = 0; pass < 2; ++pass) {  // decimation in frequency, spans 4096 and 256
        const int stride = pass == 0 ? 256 : 16, step = pass == 0 ? 1 : 16;
        #pragma unroll
        for (int b = 0; b < 256 * COLS / THREADS; ++b) {
            int q = b * THREADS + t, j = (q % 256) % stride;
            float2 *col = sm + (q / 256) * STRIDE;
            int first = ((q % 256) / stride) * 16 * stride + j;
            #pragma unroll
            for (int m = 0; m < 16; ++m) x[m] = col[PADDED(first + m * stride)];
            dft16(x, s);
            #pragma unroll
            for (int k = 1; k < 16; ++k) {
                float2 w = __ldg(twiddle + ((j * k * step) & (N - 1)));
                w.y *= s;
                x[k] = mul(x[k], w);
            }
            #pragma unroll
            for (int k = 0; k < 16; ++k) col[PADDED(first + k * stride)] = x[k];
        }
        __syncthreads();
    }
    float2 last[256 * COLS / THREADS][16];  // span 16, written back in natural order
    #pragma unroll
    for (int b = 0; b < 256 * COLS / THREADS; ++b) {
        int q = b * THREADS + t;
        float2 *col = sm + (q / 256) * STRIDE;
        #pragma unroll
        for (int m = 0; m < 16; ++m) last[b][m] = col[PADDED((q % 256) * 16 + m)];
        dft16(last[b], s);
    }
    __syncthreads();
    #pragma unroll
    for (int b = 0; b < 256 * COLS / THREADS; ++b) {
        int q = b * THREADS + t, blk = q % 256;
        float2 *col = sm + (q / 256) * STRIDE;
        #pragma unroll
        for (int k = 0; k < 16; ++k) col[PADDED(k * 256 + (blk % 16) * 16 + blk / 16)] = last[b][k];
    }
    __syncthreads();
#endif
    #pragma unroll
    for (int i = 0; i < N * COLS / THREADS; ++i) {
        int at = i * THREADS + t;
        v[i] = sm[(at % COLS) * STRIDE + PADDED(at / COLS)];
    }
    #pragma unroll
    for (int i = 0; i < N * COLS / THREADS; ++i) {
        int at = i * THREADS + t, c = at % COLS;
        if (c < width) base[(long long)(at / COLS) * pitch + c] = v[i];
    }
}
"""


def _plan(n, inembed, istride, idist, onembed, ostride, odist, kind, batch, patient=False):
    """A cuFFT plan through accelmath's bindings (cuFFT's own work area)."""
    handle = ctypes.c_int()
    cufft.lib.create(ctypes.byref(handle))
    if patient:
        set_property = cufft.lib.cdll.cufftSetPlanPropertyInt64
        set_property.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong]
        if set_property(handle.value, PATIENT_JIT, 1):
            raise RuntimeError("cufftSetPlanPropertyInt64 failed")
    arr = ctypes.c_longlong * len(n)
    size = ctypes.c_size_t()
    cufft.lib.make_plan_many64(handle, len(n), arr(*n), inembed and arr(*inembed), istride,
                               idist, onembed and arr(*onembed), ostride, odist,
                               cufft.TYPE[kind], batch, ctypes.byref(size))
    return handle.value


def _column_kernel(cp, cols, threads, fft=True):
    options = (f"-DN={N}", f"-DCOLS={cols}", f"-DTHREADS={threads}", "--use_fast_math")
    options += () if fft else ("-DNOFFT",)
    kernel = cp.RawKernel(COLUMN_KERNEL, "columns", options=options)
    smem = cols * (N + N // 16 + 4) * 8
    kernel.max_dynamic_shared_size_bytes = smem
    twiddle = cp.exp(2j * cp.pi * cp.arange(N) / N).astype(cp.complex64)
    grid = ((H + cols - 1) // cols,)
    return lambda z: kernel(grid, (threads,), (z, np.int64(H), np.int32(H), twiddle,
                                                np.float32(-1)), shared_mem=smem)


def _close(got, ref, tol):
    error = float(abs(got - ref).max() / abs(ref).max())
    assert error < tol, error


def main():
    import cupy as cp
    import torch

    env = environment()
    rng = np.random.default_rng()
    x = cp.asarray(rng.standard_normal((N, N), dtype=np.float32))
    z = cp.empty((N, H), cp.complex64)  # the C-order result
    zt = cp.empty((H, N), cp.complex64)  # the transposed result: columns contiguous
    y = cp.empty((H, N), cp.complex64)  # the columns first: rows of the half spectrum
    t = torch.as_tensor(x, device="cuda")
    ref = cp.fft.rfft2(x.astype(cp.float64))
    joint = _plan([N, N], None, 1, 0, None, 1, 0, "R2C", 1)
    patient = _plan([N, N], None, 1, 0, None, 1, 0, "R2C", 1, patient=True)
    rows = _plan([N], [N], 1, N, [H], 1, H, "R2C", N)
    columns = _plan([N], [N], H, 1, [N], H, 1, "C2C", H)
    columns_out = _plan([N], [N], H, 1, [N], 1, N, "C2C", H)
    down = _plan([N], [N], N, 1, [N], N, 1, "R2C", N)
    kernel, floor = _column_kernel(cp, 4, 512), _column_kernel(cp, 4, 512, fft=False)

    cufft.lib.exec_r2c(rows, x.data.ptr, z.data.ptr)
    kernel(z)
    _close(z, ref, 1e-5)
    cufft.lib.exec_r2c(patient, x.data.ptr, z.data.ptr)
    _close(z, ref, 1e-5)
    _close(cp.asarray(torch.fft.rfft2(t)), ref, 1e-5)

    ways = [
        ("accelmath rfft2 (C order)", "C", lambda: afft.rfft2(x)),
        ("torch.fft.rfft2 (transposed)", "transposed", lambda: torch.fft.rfft2(t)),
        ("cuFFT 2-D plan", "C", lambda: cufft.lib.exec_r2c(joint, x.data.ptr, z.data.ptr)),
        ("cuFFT 2-D plan, patient JIT", "C",
         lambda: cufft.lib.exec_r2c(patient, x.data.ptr, z.data.ptr)),
        ("rows r2c alone", "-", lambda: cufft.lib.exec_r2c(rows, x.data.ptr, z.data.ptr)),
        ("columns c2c in place alone", "-",
         lambda: cufft.lib.exec_c2c(columns, z.data.ptr, z.data.ptr, cufft.FORWARD)),
        ("columns c2c into the transposed layout alone", "-",
         lambda: cufft.lib.exec_c2c(columns_out, z.data.ptr, zt.data.ptr, cufft.FORWARD)),
        ("columns first: r2c down columns alone", "-",
         lambda: cufft.lib.exec_r2c(down, x.data.ptr, y.data.ptr)),
        ("shared-memory column FFT alone", "-", lambda: kernel(z)),
        ("its loads and stores alone", "-", lambda: floor(z)),
    ]
    results = []
    for name, layout, fn in ways:
        event = (lambda: torch.cuda.Event(enable_timing=True)) if "torch" in name else cp.cuda.Event
        results.append({"way": name, "result layout": layout, "ms": device_time_ms(fn, event)})
        print(results[-1], flush=True)
    for handle in (joint, patient, rows, columns, columns_out, down):
        cufft.lib.destroy(handle)
    print(write("r2c-layouts", env, results, ["way", "result layout", "ms"],
                "Device time per call, milliseconds (CUDA events around 10 calls back to back, "
                "median of 30) of the ways to rfft2 of a float32 4096^2 image. The cuFFT rows "
                "use accelmath's bindings; the shared-memory kernel loads 4 whole columns per "
                "block (benchmarks/r2c_layouts.py)."))
    return 0


if __name__ == "__main__":
    sys.exit(main())

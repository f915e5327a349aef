"""Small element-wise kernels accelmath needs around library calls: strided copy and scaling.

One kernel covers copy, scale and copy-with-scale for any strided layout of up to
:data:`MAX_DIMS` dimensions and every dtype accelmath transforms. It is compiled, loaded and
launched through :mod:`accelmath._core.gpu.modules` and :mod:`accelmath._core.gpu.launch`, on the
caller's stream.
"""

import ctypes
import functools

from accelmath._core.gpu.launch import config, launch
from accelmath._core.gpu.modules import SourceModules
from accelmath.errors import InvalidArgumentError

__all__ = ["MAX_DIMS", "SOURCE", "copy_scale", "merge_dims"]

MAX_DIMS = 8

SOURCE = r"""
struct Dims { long long shape[8]; long long src[8]; long long dst[8]; };

__device__ __forceinline__ float h2f(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short f2h(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }

struct half1 { unsigned short x; };
struct half2c { unsigned short x, y; };

__device__ __forceinline__ int scale_of(int v, double s) { return (int)(v * s); }
__device__ __forceinline__ float scale_of(float v, double s) { return v * (float)s; }
__device__ __forceinline__ double scale_of(double v, double s) { return v * s; }
__device__ __forceinline__ float2 scale_of(float2 v, double s) {
    return make_float2(v.x * (float)s, v.y * (float)s); }
__device__ __forceinline__ double2 scale_of(double2 v, double s) {
    return make_double2(v.x * s, v.y * s); }
__device__ __forceinline__ half1 scale_of(half1 v, double s) {
    half1 r; r.x = f2h(h2f(v.x) * (float)s); return r; }
__device__ __forceinline__ half2c scale_of(half2c v, double s) {
    half2c r; r.x = f2h(h2f(v.x) * (float)s); r.y = f2h(h2f(v.y) * (float)s); return r; }

__device__ __forceinline__ int conj_of(int v) { return v; }
__device__ __forceinline__ float conj_of(float v) { return v; }
__device__ __forceinline__ double conj_of(double v) { return v; }
__device__ __forceinline__ half1 conj_of(half1 v) { return v; }
__device__ __forceinline__ float2 conj_of(float2 v) { return make_float2(v.x, -v.y); }
__device__ __forceinline__ double2 conj_of(double2 v) { return make_double2(v.x, -v.y); }
__device__ __forceinline__ half2c conj_of(half2c v) { v.y ^= 0x8000; return v; }

// mode: bit 0 scales by s, bit 1 conjugates
template <typename T>
__device__ __forceinline__ T apply(T v, double s, int mode) {
    if (mode & 1) v = scale_of(v, s);
    if (mode & 2) v = conj_of(v);
    return v;
}

template <typename T>
__device__ void copy_scale(const T* src, T* dst, long long n,
                           int ndim, Dims d, double s, int mode) {
    long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        long long rest = i, so = 0, dof = 0;
        for (int k = ndim - 1; k >= 0; --k) {
            long long idx = rest % d.shape[k];
            rest /= d.shape[k];
            so += idx * d.src[k];
            dof += idx * d.dst[k];
        }
        dst[dof] = apply(src[so], s, mode);
    }
}

template <typename T>
__device__ void copy_scale_flat(const T* src, T* dst, long long n,
                                double s, int mode) {
    long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        dst[i] = apply(src[i], s, mode);
    }
}

#define DEFINE(NAME, T) \
extern "C" __global__ void copy_##NAME(const T* src, T* dst, long long n, int ndim, Dims d, \
                                       double s, int mode) { \
    copy_scale<T>(src, dst, n, ndim, d, s, mode); } \
extern "C" __global__ void flat_##NAME(const T* src, T* dst, long long n, double s, \
                                       int mode) { \
    copy_scale_flat<T>(src, dst, n, s, mode); }

#ifdef ACCELMATH_float16
DEFINE(float16, half1)
#endif
#ifdef ACCELMATH_complex32
DEFINE(complex32, half2c)
#endif
#ifdef ACCELMATH_float32
DEFINE(float32, float)
#endif
#ifdef ACCELMATH_int32
DEFINE(int32, int)
#endif
#ifdef ACCELMATH_complex64
DEFINE(complex64, float2)
#endif
#ifdef ACCELMATH_float64
DEFINE(float64, double)
#endif
#ifdef ACCELMATH_complex128
DEFINE(complex128, double2)
#endif
"""


class _Dims(ctypes.Structure):
    _fields_ = [("shape", ctypes.c_longlong * MAX_DIMS), ("src", ctypes.c_longlong * MAX_DIMS),
                ("dst", ctypes.c_longlong * MAX_DIMS)]


_THREADS = 256
# the kernels' module on a device, and the most blocks worth launching there
_kernel_module = SourceModules(SOURCE, "accelmath_kernels.cu")


def merge_dims(dims):
    """Merge ``(extent, stride_a, stride_b)`` dimensions, slowest first, into one wherever a
    dimension steps over the next one exactly in both layouts."""
    merged = []
    for n, a, b in dims:
        if merged:
            pn, pa, pb = merged[-1]
            if pa == a * n and pb == b * n:
                merged[-1] = (pn * n, a, b)
                continue
        merged.append((n, a, b))
    return merged


def _merge(shape, src, dst):
    """Drop extent-1 dimensions and merge dimensions contiguous in both layouts."""
    return merge_dims([(n, a, b) for n, a, b in zip(shape, src, dst) if n != 1])


def copy_scale(src_ptr, dst_ptr, shape, src_strides, dst_strides, dtype, scale, stream,
               device_id, conj=False):
    """Enqueue ``dst = src * scale`` (conjugated if ``conj``) over a strided layout.

    Parameters
    ----------
    src_ptr, dst_ptr : int
        Device addresses of the first elements (they may be equal for an in-place scale).
    shape : tuple of int
        The extents.
    src_strides, dst_strides : tuple of int
        Strides in elements.
    dtype : str
        One of float16, complex32, float32, complex64, float64, complex128, or int32
        (copied; a scale is rounded toward zero).
    scale : float or None
        The factor; None (or 1) copies.
    stream : int
        The stream handle.
    device_id : int
        The device the data lives on.
    conj : bool
        Conjugate the values (complex dtypes).
    """
    prepared = _copy_scale_launch(tuple(shape), tuple(src_strides), tuple(dst_strides), dtype,
                                  scale, device_id, bool(conj))
    if prepared is not None:
        function, launch_config, args = prepared
        launch(function, launch_config,
               (ctypes.c_void_p(src_ptr), ctypes.c_void_p(dst_ptr)) + args, stream)


@functools.lru_cache(maxsize=512)
def _copy_scale_launch(shape, src_strides, dst_strides, dtype, scale, device_id, conj):
    """What :func:`copy_scale` launches for its arguments but the addresses and the stream,
    checked and made once: ``(kernel, launch configuration, the arguments after the two
    addresses)``, or None for an empty copy. (The ctypes values are only read.)"""
    n = 1
    for extent in shape:
        n *= extent
    if n == 0:
        return None
    dims = _merge(shape, src_strides, dst_strides)
    if len(dims) > MAX_DIMS:
        raise InvalidArgumentError(
            f"a strided copy over {len(dims)} non-mergeable dimensions exceeds {MAX_DIMS}")
    module, most = _kernel_module(device_id, dtype)
    do_scale = (0 if scale is None or scale == 1 else 1) | (2 if conj else 0)
    s = ctypes.c_double(1.0 if scale is None else scale)
    launch_config = config(min((n + _THREADS - 1) // _THREADS, most), _THREADS)
    count, flag = ctypes.c_longlong(n), ctypes.c_int(do_scale)
    if not dims or (len(dims) == 1 and dims[0][1] == 1 and dims[0][2] == 1):
        return module.function("flat_" + dtype), launch_config, (count, s, flag)
    d = _Dims()
    for k, (extent, a, b) in enumerate(dims):
        d.shape[k], d.src[k], d.dst[k] = extent, a, b
    return (module.function("copy_" + dtype), launch_config,
            (count, ctypes.c_int(len(dims)), d, s, flag))

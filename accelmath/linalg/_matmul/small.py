"""Small products on accelmath's own kernel: ``d = alpha * a @ b`` for float32 and float64
matrices of at most :data:`MAX_SIDE` a side, where the library call's own cost is most of the
call.

A cuBLASLt call costs the host several microseconds before the GPU sees any work, more than the
GPU takes for a 64 x 64 product; a kernel launch costs about 2 us. On an H200, a 64^3 float32
``Matmul.execute(out=)`` on torch tensors took 10.5 us of host time on cuBLASLt and 6.1 on this
kernel, and the GPU 3.8 and 3.4 us. This kernel computes a 16 x 16 tile of ``d`` per block of
16 x 16 threads, the operands' tiles staged through shared memory, for operands of any strides
(transposed views too) and a batch along the grid's z; one compiled kernel per dtype serves
every shape, the sizes and strides given as parameters. It accumulates in the operands'
precision, as cuBLASLt does without TF32.

:func:`takes` is the rule: which products run here (the plain product of two real float32 or
float64 operands, no ``c``, no epilogue, no conjugated view, no TF32, a nonzero ``alpha``, at
most :data:`MAX_SIDE` along m, n and k and :data:`MAX_WORK` multiply-adds in all). The kernel
is compiled once per machine (NVRTC, kept in the store): a plan made while it compiles, in the
background, runs on cuBLASLt, as does every plan where ``ACCELMATH_SMALL_PRODUCTS=0``.
"""

import ctypes
import logging
import math
import struct
import threading
from typing import NamedTuple

from accelmath._core import hostcall
from accelmath._core.gpu import modules
from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.launch import config, launch_parameters
from accelmath._core.switches import switched_off
from accelmath.bindings import driver
from accelmath.linalg._matmul import rules

__all__ = ["MAX_SIDE", "MAX_WORK", "SmallProduct", "kernel", "prepare", "takes"]

#: The longest m, n or k a product of this kernel has
MAX_SIDE = 128
#: The most multiply-adds (batch x m x n x k) a product of this kernel has
MAX_WORK = 2 ** 19
_SWITCH = "ACCELMATH_SMALL_PRODUCTS"
_TILE = 16
_INT32 = 2 ** 31
_NAME = "small_product.cu"
_SCALE = {"float32": ctypes.c_float, "float64": ctypes.c_double}
_log = logging.getLogger("accelmath")
_kernels = {}  # (device_id, dtype) -> the kernel, once loaded
_failed = set()  # (device_id, dtype) whose kernel could not be had (logged once)

SOURCE = r"""
// d[z] = alpha * a[z] @ b[z]: one 16 x 16 tile of d per block, z along the grid's z. Every
// parameter is 8 bytes. dims: m | n << 16 | k << 32; a_strides: along m | along k << 32,
// b_strides: along k | along n << 32, d_strides: along m | along n << 32, ab_batch: a's batch
// stride | b's << 32 (each a signed 32-bit element count); d_batch: d's batch stride.
__device__ __forceinline__ long long low(unsigned long long w) { return (int)(unsigned)w; }
__device__ __forceinline__ long long high(unsigned long long w) {
    return (int)(unsigned)(w >> 32);
}

template <typename T>
__device__ __forceinline__ void product(const T *a, const T *b, T *d, unsigned long long dims,
                                        long long batch, unsigned long long a_strides,
                                        unsigned long long b_strides,
                                        unsigned long long d_strides,
                                        unsigned long long ab_batch, long long d_batch,
                                        double alpha) {
    __shared__ T ta[16][17], tb[16][17];
    const int m = dims & 0xffff, n = (dims >> 16) & 0xffff, k = (dims >> 32) & 0xffff;
    const long long am = low(a_strides), ak = high(a_strides);
    const long long bk = low(b_strides), bn = high(b_strides);
    const long long dm = low(d_strides), dn = high(d_strides);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    const T scale = (T)alpha;
    for (long long z = blockIdx.z; z < batch; z += gridDim.z) {
        const T *az = a + z * low(ab_batch);
        const T *bz = b + z * high(ab_batch);
        T acc = 0;
        for (int k0 = 0; k0 < k; k0 += 16) {
            ta[ty][tx] = row < m && k0 + tx < k ? az[row * am + (k0 + tx) * ak] : (T)0;
            tb[ty][tx] = k0 + ty < k && col < n ? bz[(k0 + ty) * bk + col * bn] : (T)0;
            __syncthreads();
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                acc += ta[ty][i] * tb[i][tx];
            }
            __syncthreads();
        }
        if (row < m && col < n) {
            d[z * d_batch + row * dm + col * dn] = scale * acc;
        }
    }
}

#define SMALL_PRODUCT(T, NAME)                                                                  \
    extern "C" __global__ void __launch_bounds__(256)                                          \
        NAME(const T *a, const T *b, T *d, unsigned long long dims, long long batch,           \
             unsigned long long a_strides, unsigned long long b_strides,                       \
             unsigned long long d_strides, unsigned long long ab_batch, long long d_batch,     \
             double alpha) {                                                                   \
        product<T>(a, b, d, dims, batch, a_strides, b_strides, d_strides, ab_batch, d_batch,   \
                   alpha);                                                                     \
    }

#ifdef ACCELMATH_float32
SMALL_PRODUCT(float, small_product_float32)
#endif
#ifdef ACCELMATH_float64
SMALL_PRODUCT(double, small_product_float64)
#endif
"""


def takes(spec, alpha):
    """Whether the device product ``spec`` (a :class:`~.cublaslt.Spec`) with scalar ``alpha``
    runs on this kernel (where it is compiled, see :func:`kernel`).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._matmul import problem, small
    >>> p = problem.prepare(np.ones((64, 32), "f4"), np.ones((32, 8), "f4"), None, None, None,
    ...                     1.0, 0.0, None, "cpu", False)
    >>> small.takes(problem.spec_of(p, None, 256), 1.0), small.takes(
    ...     problem.spec_of(p, None, 256), 0.0)
    (True, False)
    """
    product = spec.product
    if (spec.dtype not in _SCALE or spec.precision != rules.DTYPES[spec.dtype]
            or spec.epilogue.name is not None or spec.c is not None or spec.aux is not None
            or spec.a.conj or spec.b.conj or alpha == 0 or len(product.batch) > 1):
        return False
    sides = (product.m, product.n, product.k)
    if min(sides) < 1 or max(sides) > MAX_SIDE:
        return False
    if math.prod(product.batch) * product.m * product.n * product.k > MAX_WORK:
        return False
    strides = (*spec.a.strides[-2:], *spec.b.strides[-2:], *spec.d[-2:], *_batch_strides(spec))
    return all(-_INT32 <= s < _INT32 for s in strides)


def _batch_strides(spec):
    """The batch strides of a, b and d (0 without a batch, or where one broadcasts)."""
    batch = spec.product.batch
    if not batch:
        return 0, 0, 0
    a = rules.own_batch_strides(spec.a.shape, spec.a.strides, batch)[0]
    b = rules.own_batch_strides(spec.b.shape, spec.b.strides, batch)[0]
    return a, b, spec.d[0]


def kernel(device_id, dtype):
    """The kernel of ``dtype`` on a device (a ``CUfunction``), where it is compiled (in this
    process, or kept in the store); else None, its compile started in the background (None
    too where ``ACCELMATH_SMALL_PRODUCTS=0``, or where it cannot be compiled: no NVRTC, say,
    which is logged once)."""
    if switched_off(_SWITCH):
        return None
    found = _kernels.get((device_id, dtype))
    if found is not None or (device_id, dtype) in _failed:
        return found
    variant = _variant(dtype)
    try:
        options = modules.device_options(device_id, variant)
        if not modules.is_compiled(SOURCE, options, _NAME):
            if modules.compile_soon(SOURCE, options, _NAME).is_alive():
                return None
            if not modules.is_compiled(SOURCE, options, _NAME):  # (ended, and nothing made)
                raise RuntimeError("its compile failed (see the log above)")
        module = modules.loaded(device_id, SOURCE, _NAME, variant)
        found = _kernels[device_id, dtype] = module.function(f"small_product_{dtype}")
    except Exception as exc:  # (cuBLASLt runs every product then)
        _failed.add((device_id, dtype))
        _log.warning("accelmath: the small-product kernel is not used: %s", exc)
        return None
    return found


def prepare(device_id, dtype, wait):
    """Compile the kernel of ``dtype`` (where there is one) for a device, or load it from the
    store: on a thread of its own, or at once and loaded where ``wait``
    (:func:`accelmath.linalg.prepare`)."""
    if dtype not in _SCALE:
        return
    variant = _variant(dtype)
    if wait:
        modules.loaded(device_id, SOURCE, _NAME, variant)
    else:
        modules.compile_soon(SOURCE, modules.device_options(device_id, variant), _NAME)


def _variant(dtype):
    """The NVRTC options that compile the kernel of ``dtype`` alone."""
    return (f"-DACCELMATH_{dtype}",)


def _words(values):
    """Ints (signed 32-bit) as one word: ``values[0] | values[1] << 32``."""
    low, high = values
    return (low & 0xffffffff) | (high & 0xffffffff) << 32


class _State(NamedTuple):
    """A thread's state, as the call shim's launcher reads it: the stream it last ran on
    (a kernel launch has no handle or workspace to set to another)."""

    stream: int
    handles: tuple = ()
    workspace: int = 0


class SmallProduct:
    """The product ``spec`` (one :func:`takes` takes) on this kernel: :meth:`run` from
    Python, :meth:`direct_call` for the call shim.

    Parameters
    ----------
    spec : Spec
    function : ctypes.c_void_p
        The kernel (:func:`kernel`).
    device_id : int
    """

    def __init__(self, spec, function, device_id):
        product = spec.product
        self.dtype = spec.dtype
        self.device_id = device_id
        batch = math.prod(product.batch)
        grid = (-(-product.n // _TILE), -(-product.m // _TILE), min(batch, 65535))
        self._config = config(grid, (_TILE, _TILE))
        self._function = function
        a_batch, b_batch, d_batch = _batch_strides(spec)
        self._fixed = (product.m | product.n << 16 | product.k << 32, batch,
                       _words(spec.a.strides[-2:]), _words(spec.b.strides[-2:]),
                       _words(spec.d[-2:]), _words((a_batch, b_batch)), d_batch)
        self._shim = None
        #: the launcher's per-thread state (:func:`~accelmath._core.hostcall.launcher`)
        self.local = threading.local()
        raw = hostcall.kernel_call(*(ctypes.cast(driver.lib.raw(name)[0], ctypes.c_void_p).value
                                     for name in ("launch_kernel", "ctx_get_current",
                                                  "ctx_push_current", "ctx_pop_current")),
                                   ensure_context(device_id))
        if raw is not None:
            call, self._driver = raw
            self._shim = (call, ctypes.addressof(self._driver), function.value,
                          *hostcall.kernel_head(self._config.grid, self._config.block))

    def alpha_word(self, alpha):
        """The kernel's word of the host scalar at address ``alpha`` (of the scale type): its
        double's bits; None for 0, a scalar this kernel does not take (those products stay on
        cuBLASLt as they were: the signs of its zeros, its NaN of 0 times an infinity)."""
        value = _SCALE[self.dtype].from_address(alpha).value
        return None if value == 0 else struct.unpack("<q", struct.pack("<d", value))[0]

    def direct_call(self, alpha_word):
        """The product as one call of the call shim's kernel launch, a
        :class:`~accelmath._core.hostcall.BoundCall` (its operands: a and b), with the scalar
        word ``alpha_word`` (:meth:`alpha_word`); None where the call shim is not used."""
        if self._shim is None:
            return None
        call, driver_address, function, grid, block = self._shim
        return hostcall.BoundCall(
            call, self._fail,  # (the bound method holds the driver its address names)
            (driver_address, function, grid, block, "stream", "in0", "in1", "out",
             *self._fixed, alpha_word))

    def run(self, a, b, d, alpha_word, stream):
        """Enqueue ``d = alpha * a @ b`` on ``stream`` (device addresses; ``alpha_word`` the
        scalar's word, :meth:`alpha_word`)."""
        state = getattr(self.local, "state", None)
        if state is None or state.stream != stream:  # (the launcher takes the stream now)
            self.local.state = _State(stream)
        words = (a, b, d, *self._fixed, alpha_word)  # (hostcall.KERNEL_WORDS of them)
        if self._shim is not None:
            call, driver_address, function, grid, block = self._shim
            status = call(driver_address, function, grid, block, stream, *words)
            if status:
                self._fail(status)
            return
        ensure_context(self.device_id)
        values = [ctypes.c_uint64(w & 0xffffffffffffffff) for w in words]
        launch_parameters(self._function, self._config,
                          (ctypes.c_void_p * len(values))(*map(ctypes.addressof, values)),
                          stream)

    def _fail(self, status):
        driver.lib.raise_status("cuLaunchKernel", status)

"""Ways to a real-to-complex transform of a float32 4096^2 image over both axes, by layout.

torch.fft returns this spectrum transposed (strides (1, 4096)), which cuFFT writes faster than
the C-order result that NumPy, CuPy and accelmath return on CuPy arrays. This benchmark times
the ways to the C-order result that were tried, through accelmath's cuFFT bindings: cuFFT's 2-D plan
(also with its patient JIT planning), its two passes alone (rows, then columns in place), the
columns first, and accelmath's own column kernel (``accelmath.fft._kernels.columns``), which rfft2
chooses where it measures faster than cuFFT's column pass. Device time per call (CUDA events around
10 calls back to back, median of 30). Run on a GPU machine:
``python benchmarks/r2c_layouts.py``; writes ``benchmarks/results/r2c-layouts-<device>.{json,md}``.
"""

import ctypes
import sys

import numpy as np
from _common import device_time_ms, environment, write

import accelmath.fft as afft
from accelmath.bindings import cufft
from accelmath.fft._kernels import columns as _columns
from accelmath.fft._layout import plan_steps

N = 4096
H = N // 2 + 1
PATIENT_JIT = 1  # NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT


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
    step = plan_steps("r2c", (0, 1), (N, N), (N, 1), (N, H), (H, 1), split=True)[1]
    stream = cp.cuda.get_current_stream().ptr

    run = _columns.launcher(step, x.device.id)

    def kernel():
        run(z.data.ptr, z.data.ptr, False, stream)

    cufft.lib.exec_r2c(rows, x.data.ptr, z.data.ptr)
    kernel()
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
        ("accelmath's column kernel in place alone", "-", kernel),
        ("rows r2c, then accelmath's column kernel", "C",
         lambda: (cufft.lib.exec_r2c(rows, x.data.ptr, z.data.ptr), kernel())),
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
                "use accelmath's bindings; accelmath's column kernel spreads each block of 16 "
                "columns over a cluster of 8 thread blocks (benchmarks/r2c_layouts.py)."))
    return 0


if __name__ == "__main__":
    sys.exit(main())

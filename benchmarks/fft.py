"""accelmath.fft beside CuPy, torch.fft, nvmath-python and raw cuFFT, in one process.

Small cases: host time per call (loops of 2000 calls), each call beside the same function of
the package whose arrays it takes (CuPy or torch) and the FFT plans beside the raw cuFFT call,
with their targets. Large cases: device time per call (CUDA events around 10 calls
back to back, median of 30). Run on a GPU machine: ``python benchmarks/fft.py``; writes
``benchmarks/results/fft-<device>.{json,md}``. Without a GPU it says so and exits.
"""

import ctypes
import functools
import sys
from typing import NamedTuple

import numpy as np
from _common import (device_time_ms, environment, error_text, host_times_us, no_gpu, settle,
                     write)

import accelmath.fft as afft
from accelmath._core import hostcall
from accelmath.bindings import cufft

# (name, shape, axes, function, keyword arguments): the stateless calls, the same
# function in each package (torch names ``axis`` ``dim``); ``axes`` are the raw cuFFT plan's
# and the FFT plans'
SMALL = [("c64 256", (256,), (0,), "fft", {}),
         ("c64 64x64", (64, 64), (0, 1), "fft2", {}),
         ("c64 32x1024 (batched 1-D)", (32, 1024), (1,), "fft", {"axis": -1})]
SMALL_TOLERANCE = 1e-5  # relative error of a complex64 result against NumPy in complex128


class Ratio(NamedTuple):
    """A ratio of the small cases' table, ``column`` = ``ours`` / ``theirs`` (columns of
    times), and its target: at most ``most`` (the column :attr:`target`)."""

    column: str
    ours: str
    theirs: str
    most: float

    @property
    def target(self):
        return f"{self.column} <= {self.most:.1f}"

    @property
    def columns(self):
        return [self.column, self.target]


STATELESS_CUPY = Ratio("stateless, CuPy / cupy.fft", "accelmath stateless, CuPy", "cupy.fft", 0.9)
STATELESS_TORCH = Ratio("stateless, torch / torch.fft", "accelmath stateless, torch", "torch.fft",
                        0.9)
EXECUTE_CUPY_SHIM = Ratio("execute(out=), CuPy / raw (call shim)",
                          "accelmath FFT.execute(x, out=), CuPy", "raw cuFFT (call shim)", 1.1)
EXECUTE_CUPY_CTYPES = Ratio("execute(out=), CuPy / raw (ctypes)",
                            "accelmath FFT.execute(x, out=), CuPy", "raw cuFFT (ctypes)", 1.1)
EXECUTE_TORCH_SHIM = Ratio("execute(out=), torch / raw (call shim)",
                           "accelmath FFT.execute(x, out=), torch", "raw cuFFT (call shim)", 1.1)
EXECUTE_TORCH_CTYPES = Ratio("execute(out=), torch / raw (ctypes)",
                             "accelmath FFT.execute(x, out=), torch", "raw cuFFT (ctypes)", 1.1)
SMALL_RATIOS = [STATELESS_CUPY, STATELESS_TORCH, EXECUTE_CUPY_SHIM, EXECUTE_CUPY_CTYPES,
                EXECUTE_TORCH_SHIM, EXECUTE_TORCH_CTYPES]
SMALL_COLUMNS = ["case", "calls",
                 "accelmath stateless, CuPy", "cupy.fft", *STATELESS_CUPY.columns,
                 "accelmath stateless, torch", "torch.fft", *STATELESS_TORCH.columns,
                 "raw cuFFT (ctypes)", "raw cuFFT (call shim)",
                 "accelmath FFT.execute(x, out=), CuPy", *EXECUTE_CUPY_SHIM.columns,
                 *EXECUTE_CUPY_CTYPES.columns,
                 "accelmath FFT.execute(x, out=), torch", *EXECUTE_TORCH_SHIM.columns,
                 *EXECUTE_TORCH_CTYPES.columns,
                 "accelmath FFT.execute(x), CuPy", "nvmath FFT.execute()",
                 "nvmath reset_operand+execute", "nvmath stateless", "check"]
#: What ``accelmath bench`` compares in fft-small (the result file's "summary"): each stateless
#: call against the same function of the package whose arrays it takes
SMALL_SUMMARY = [{"accelmath": "accelmath stateless, CuPy",
                  "peers": ["cupy.fft", "nvmath stateless"], "unit": "host us",
                  "label": "CuPy arrays"},
                 {"accelmath": "accelmath stateless, torch", "peers": ["torch.fft"],
                  "unit": "host us", "label": "torch tensors"}]
# (name, shape, real dtype, axes, kind); the c2r inputs are the spectra of real arrays, in
# torch's own layout for torch (transposed for axes 0 and 1)
LARGE = [("c2c c64 4096^2", (4096, 4096), "float32", (0, 1), "c2c"),
         ("r2c f32 4096^2", (4096, 4096), "float32", (0, 1), "r2c"),
         ("c2r f32 4096^2", (4096, 4096), "float32", (0, 1), "c2r"),
         ("c2c c64 2^20 x 16 (1-D)", (16, 1 << 20), "float32", (1,), "c2c"),
         ("c2c c64 512^3", (512, 512, 512), "float32", (0, 1, 2), "c2c"),
         ("c2c c128 4096^2", (4096, 4096), "float64", (0, 1), "c2c"),
         ("c2c c128 4088^2", (4088, 4088), "float64", (0, 1), "c2c"),
         ("r2c f64 4088^2", (4088, 4088), "float64", (0, 1), "r2c"),
         ("c2r f64 4088^2", (4088, 4088), "float64", (0, 1), "c2r")]
_FUNCTION = {"c2c": "fftn", "r2c": "rfftn", "c2r": "irfftn"}


def _nvmath():
    try:
        import numpy

        if not hasattr(numpy, "row_stack"):
            numpy.row_stack = numpy.vstack
        import nvmath.fft

        return nvmath.fft
    except Exception:
        return None


def _raw_plan(shape, axes, x, out):
    """A cuFFT plan through accelmath's bindings, with cuFFT's own work area, and two ways to
    execute it with the status tested inline: a bare ctypes prototype (the floor of a ctypes
    call), and accelmath's compiled call shim (the floor of a call from Python)."""
    handle = ctypes.c_int()
    cufft.lib.create(ctypes.byref(handle))
    n = [shape[a] for a in axes]
    batch = int(np.prod(shape)) // int(np.prod(n))
    arr = ctypes.c_longlong * len(n)
    dist = int(np.prod(n))
    size = ctypes.c_size_t()
    cufft.lib.make_plan_many64(handle, len(n), arr(*n), None, 1, dist, None, 1, dist,
                               cufft.TYPE["C2C"], batch, ctypes.byref(size))
    exec_c2c, _ = cufft.lib.raw("exec_c2c")
    h, a, b = handle.value, x.data.ptr, out.data.ptr

    def caller(func):
        def call():
            if func(h, a, b, -1):
                raise RuntimeError("cufftExecC2C failed")

        return call

    return caller(exec_c2c), caller(hostcall.fast(exec_c2c)), handle


def small_cases(rows):
    import cupy as cp
    import torch

    nvfft = _nvmath()
    sync = cp.cuda.Device().synchronize
    for name, shape, axes, func, kwargs in SMALL:
        rng = np.random.default_rng()
        host = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
        ref = getattr(np.fft, func)(host.astype(np.complex128), **kwargs)
        x, out = cp.asarray(host), cp.empty(shape, cp.complex64)
        t = torch.from_numpy(host).cuda()
        t_out = torch.empty_like(t)
        raw, raw_shim, handle = _raw_plan(shape, axes, x, out)
        plan = afft.FFT(x, axes=axes)
        t_plan = afft.FFT(t, axes=axes)
        # each stateless function looked up once, as each plan is made once
        ours = getattr(afft, func)
        t_kwargs = {"dim" if key == "axis" else key: value for key, value in kwargs.items()}
        settle(functools.partial(ours, x, **kwargs))
        cases = {
            "raw cuFFT (ctypes)": raw,
            "raw cuFFT (call shim)": raw_shim,
            "accelmath FFT.execute(x, out=), CuPy": lambda: plan.execute(x, out=out),
            "accelmath FFT.execute(x, out=), torch": lambda: t_plan.execute(t, out=t_out),
            "accelmath FFT.execute(x), CuPy": lambda: plan.execute(x),
            "accelmath stateless, CuPy": functools.partial(ours, x, **kwargs),
            "cupy.fft": functools.partial(getattr(cp.fft, func), x, **kwargs),
            "accelmath stateless, torch": functools.partial(ours, t, **kwargs),
            "torch.fft": functools.partial(getattr(torch.fft, func), t, **t_kwargs),
        }
        if nvfft is not None:
            nvplan = nvfft.FFT(x, axes=axes)
            nvplan.plan()
            cases["nvmath FFT.execute()"] = nvplan.execute
            cases["nvmath reset_operand+execute"] = lambda: (nvplan.reset_operand(x),
                                                             nvplan.execute())
            cases["nvmath stateless"] = lambda: nvfft.fft(x, axes=axes)
        problems = _check_small(cases, ref, out)
        row = {"case": name,
               "calls": f"{func}({', '.join(['x'] + [f'{k}={v}' for k, v in kwargs.items()])})"}
        calls = {peer: 200 if "nvmath stateless" in peer else 2000 for peer in cases}
        row.update(host_times_us(cases, calls, repeats=15, sync=sync))
        torch.cuda.synchronize()
        for ratio in SMALL_RATIOS:
            ours_us, theirs_us = row.get(ratio.ours), row.get(ratio.theirs)
            if isinstance(ours_us, float) and isinstance(theirs_us, float):
                row[ratio.column] = ours_us / theirs_us
                row[ratio.target] = "met" if row[ratio.column] <= ratio.most else "missed"
        row["check"] = "WRONG: " + "; ".join(problems) if problems else "ok"
        rows.append(row)
        print(row, flush=True)
        plan.free()
        t_plan.free()
        cufft.lib.destroy(handle)


def _check_small(cases, ref, out):
    """Call each function of ``cases`` but nvmath's once and compare its result (a raw cuFFT
    call's: ``out``) with ``ref``; a function that raises is taken out of ``cases``. Returns
    the problems found."""
    import torch

    problems = []
    for label in [label for label in cases if not label.startswith("nvmath")]:
        try:
            result = cases[label]()
            result = out if result is None else result
            got = result.cpu().numpy() if isinstance(result, torch.Tensor) else result.get()
        except Exception as exc:
            problems.append(f"{label}: {error_text(exc)}")
            del cases[label]
            continue
        if got.shape != ref.shape or got.dtype != np.complex64:
            problems.append(f"{label}: {got.dtype} {got.shape}, expected complex64 {ref.shape}")
            continue
        error = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        if not error <= SMALL_TOLERANCE:
            problems.append(f"{label}: relative error {error:.1e} > {SMALL_TOLERANCE:.0e}")
    return problems


def large_cases(rows):
    import cupy as cp
    import torch

    nvfft = _nvmath()
    cp_event = lambda: cp.cuda.Event()  # noqa: E731
    torch_event = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    for name, shape, dtype, axes, kind in LARGE:
        rng = np.random.default_rng()
        x = cp.asarray(rng.standard_normal(shape).astype(dtype))
        if kind == "c2c":
            x = x + 1j * cp.asarray(rng.standard_normal(shape).astype(dtype))
        func = _FUNCTION[kind]
        kwargs = {"s": [shape[a] for a in axes]} if kind == "c2r" else {}
        t = torch.as_tensor(x, device="cuda")
        if kind == "c2r":
            t = torch.fft.rfftn(t, dim=axes)
            x = cp.fft.rfftn(x, axes=axes)
        ours = lambda: getattr(afft, func)(x, axes=axes, **kwargs)  # noqa: E731
        theirs = lambda: getattr(cp.fft, func)(x, axes=axes, **kwargs)  # noqa: E731
        settle(ours)
        plan = afft.FFT(x, axes=axes, kind=kind,
                        last_axis_size=shape[axes[-1]] if kind == "c2r" else None)
        out = plan.execute()
        row = {"case": name,
               "accelmath stateless": device_time_ms(ours, cp_event),
               "accelmath FFT.execute(out=)": device_time_ms(lambda: plan.execute(x, out=out),
                                                            cp_event),
               "cupy.fft": device_time_ms(theirs, cp_event)}
        del out
        plan.free()
        fn = lambda: getattr(torch.fft, func)(t, dim=axes, **kwargs)  # noqa: E731
        row["torch.fft"] = device_time_ms(fn, torch_event)
        ours_t = lambda: getattr(afft, func)(t, axes=axes, **kwargs)  # noqa: E731
        row["accelmath stateless, torch"] = device_time_ms(ours_t, torch_event)
        # torch's multi-axis r2c returns a transposed (non-contiguous) result; with a C-order
        # out= it gives the layout CuPy and accelmath return
        t_ref = fn()
        t_out = torch.empty(tuple(t_ref.shape), dtype=t_ref.dtype, device="cuda")
        row["torch.fft, C-order out="] = device_time_ms(
            lambda: getattr(torch.fft, func)(t, dim=axes, out=t_out, **kwargs), torch_event)
        # the fastest way to a C-order result in torch: its own layout where that is C order,
        # else the faster of out= and a copy
        c_order = row["torch.fft"]
        if t_ref.stride() != t_out.stride():
            row["torch.fft + .contiguous()"] = device_time_ms(lambda: fn().contiguous(),
                                                              torch_event)
            c_order = min(row["torch.fft, C-order out="], row["torch.fft + .contiguous()"])
            # our plan, made for the layout torch returns
            with afft.FFT(x, axes=axes, kind=kind, out_strides=t_ref.stride()) as tplan:
                out = tplan.execute()
                row["accelmath FFT.execute(out=), torch's layout"] = device_time_ms(
                    lambda: tplan.execute(x, out=out), cp_event)
                del out
        del t, t_out, t_ref
        if nvfft is not None:
            try:
                options = ({"fft_type": "C2R", "last_axis_parity": "even"} if kind == "c2r"
                           else None)
                with nvfft.FFT(x, axes=axes, options=options) as nvplan:
                    nvplan.plan()
                    if kind == "c2r":  # nvmath copies a C2R input anew for each execute
                        call = lambda: (nvplan.reset_operand_unchecked(x),  # noqa: E731
                                        nvplan.execute(direction="inverse"))
                    else:
                        call = nvplan.execute
                    row["nvmath FFT.execute()"] = device_time_ms(call, cp_event)
            except Exception as exc:  # nvmath refuses some layouts
                row["nvmath FFT.execute()"] = f"failed: {type(exc).__name__}"
                print(f"nvmath, {name}: {exc!r}", flush=True)
        # on CuPy arrays the results are C order, as CuPy's: against the peers' C order
        row["stateless / best(cupy, torch), C order"] = (row["accelmath stateless"]
                                                        / min(row["cupy.fft"], c_order))
        _record(rows, row)


def _record(rows, row):
    """Add the ratios of the stateless calls to the peers' to ``row`` (on torch tensors,
    results have torch's layout: transposed for the r2c cases), keep and print it, and free
    the memory the case held."""
    import cupy as cp
    import torch

    row["stateless / best(cupy, torch)"] = (row["accelmath stateless"]
                                            / min(row["cupy.fft"], row["torch.fft"]))
    row["stateless, torch / torch.fft"] = row["accelmath stateless, torch"] / row["torch.fft"]
    rows.append(row)
    print(row, flush=True)
    afft.clear_cache()
    cp.get_default_memory_pool().free_all_blocks()
    torch.cuda.empty_cache()


ROUND_TRIP = [("f32 4096^2", (4096, 4096), "float32"), ("f64 4088^2", (4088, 4088), "float64")]


def round_trip_cases(rows):
    """The convolution at the heart of image subtraction: ``irfft2(rfft2(x) * k)``, with the
    product in place, and which result layout serves it best on each package."""
    import cupy as cp
    import torch

    cp_event = lambda: cp.cuda.Event()  # noqa: E731
    torch_event = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    for name, shape, dtype in ROUND_TRIP:
        rng = np.random.default_rng()
        host = rng.standard_normal(shape).astype(dtype)
        kernel = rng.standard_normal(shape).astype(dtype)
        ref = np.fft.irfft2(np.fft.rfft2(host) * np.fft.rfft2(kernel), s=shape)
        x, t = cp.asarray(host), torch.as_tensor(host, device="cuda")

        def check(result):
            got = result.cpu().numpy() if isinstance(result, torch.Tensor) else result.get()
            error = np.linalg.norm(got - ref) / np.linalg.norm(ref)
            assert error < (1e-5 if dtype == "float32" else 1e-12), (name, error)

        def stateless(fft, a, k):
            def run():
                spectrum = fft.rfft2(a)
                spectrum *= k
                return fft.irfft2(spectrum, s=shape)
            check(run())
            return run

        k = cp.asarray(np.fft.rfft2(kernel).astype(np.result_type(dtype, np.complex64)))
        k_t = torch.fft.rfft2(torch.as_tensor(kernel, device="cuda"))
        settle(stateless(afft, x, k))
        row = {"case": name,
               "accelmath stateless": device_time_ms(stateless(afft, x, k), cp_event),
               "cupy.fft": device_time_ms(stateless(cp.fft, x, k), cp_event),
               "accelmath stateless, torch": device_time_ms(stateless(afft, t, k_t),
                                                            torch_event),
               "torch.fft": device_time_ms(stateless(torch.fft, t, k_t), torch_event)}
        # plans on CuPy arrays, the spectrum C order or in torch's transposed layout
        for label, strides in (("C order", None), ("torch's layout", k_t.stride())):
            forward = afft.FFT(x, axes=(0, 1), out_strides=strides)
            spectrum = forward.execute()
            k_layout = forward.execute(cp.asarray(kernel))
            inverse = afft.FFT(spectrum, axes=(0, 1), kind="c2r", last_axis_size=shape[1],
                               out_strides=(shape[1], 1))
            image = inverse.execute()

            def run():
                forward.execute(x, out=spectrum)
                spectrum.__imul__(k_layout)
                return inverse.execute(spectrum, out=image)
            check(run())
            row[f"accelmath plans, {label}"] = device_time_ms(run, cp_event)
            row[f"product alone, {label}"] = device_time_ms(lambda: spectrum.__imul__(k_layout),
                                                            cp_event)
            forward.free()
            inverse.free()
        _record(rows, row)


def main():
    if no_gpu("fft"):
        return 0
    try:
        import cupy
        import torch

        cupy.cuda.runtime.getDeviceCount()
        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA")
    except Exception as exc:
        print(f"fft: needs CuPy and torch with CUDA ({error_text(exc)}); nothing to measure.")
        return 0
    env = environment()
    small, large = [], []
    small_cases(small)
    print(write("fft-small", env, small, SMALL_COLUMNS,
                "Host time per call, microseconds: the best of 15 loops of 2000 calls "
                "(nvmath stateless: 200), the cases taking turns loop by loop; complex64 "
                "forward, on CuPy arrays or torch tensors as the column says (nvmath-python "
                "on CuPy arrays). The stateless columns call the same function in every "
                "package, the one in 'calls': accelmath.fft.fft(x), cupy.fft.fft(x) and "
                "torch.fft.fft(t) for 256; fft2 for 64x64; fft along the last axis for the "
                "batch (axis=-1, torch's dim=-1). The raw cuFFT calls (the plan through "
                "accelmath's bindings, cuFFT's own work area, the status tested inline) take "
                "addresses, whatever the package: one floor for CuPy and torch alike, called "
                "through ctypes and through accelmath's call shim; accelmath calls C "
                f"functions through: {hostcall.status().split(' (')[0]}. Targets, each a "
                "column '<ratio> <= <most>' that says met or missed: stateless "
                "at most 0.9 times the "
                "package's own function (CuPy arrays: cupy.fft; torch tensors: torch.fft); "
                "FFT.execute(x, out=) at most 1.1 times the raw call (against both ways of "
                "calling it). 'check': every result but nvmath-python's against NumPy in "
                f"complex128, relative error at most {SMALL_TOLERANCE:.0e}.",
                summary=SMALL_SUMMARY))
    if "--small" in sys.argv[1:]:  # (the host-time cases alone)
        return 0
    large_cases(large)
    cols = ["case", "accelmath stateless", "accelmath FFT.execute(out=)", "cupy.fft",
            "accelmath stateless, torch", "torch.fft", "torch.fft, C-order out=",
            "torch.fft + .contiguous()", "accelmath FFT.execute(out=), torch's layout",
            "nvmath FFT.execute()", "stateless / best(cupy, torch)",
            "stateless / best(cupy, torch), C order", "stateless, torch / torch.fft"]
    print(write("fft-large", env, large, cols,
                "Device time per call, milliseconds (CUDA events around 10 calls back to back, "
                "median of 30). The arrays "
                "are CuPy arrays except in the torch columns; on torch tensors, a real "
                "transform over axes 0 and 1 returns torch's transposed layout. The c2r inputs "
                "are spectra of real arrays: C order on CuPy, torch's layout on torch. "
                "The C-order ratio "
                "divides by the faster of CuPy and torch's quickest way to a C-order result "
                "(its own where that is C order, else out= or .contiguous()). Each case "
                "starts with a stateless call and waits for the kernels it compiles in the "
                "background (a new machine's first plans go without the column kernel), so "
                "that what is timed is what a long-running process gets."))
    trips = []
    round_trip_cases(trips)
    cols = ["case", "accelmath stateless", "cupy.fft", "accelmath stateless, torch",
            "torch.fft", "accelmath plans, C order", "accelmath plans, torch's layout",
            "product alone, C order", "product alone, torch's layout",
            "stateless / best(cupy, torch)", "stateless, torch / torch.fft"]
    print(write("fft-round-trip", env, trips, cols,
                "Device time per call, milliseconds (CUDA events around 10 calls back to back, "
                "median of 30) of irfft2(rfft2(x) * k) over a real image, the product in "
                "place. The arrays are CuPy arrays except in the torch columns. The plan "
                "columns run one FFT plan each way with out=, the spectrum in C order or in "
                "torch's transposed layout, the image in C order."))
    return 0


if __name__ == "__main__":
    sys.exit(main())

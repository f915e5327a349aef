"""accelmath.linalg.matmul and Matmul beside torch, CuPy and nvmath-python, in one process.

Device time per call, ms: CUDA events around calls back to back, every function of a case
timed in turn round after round, each one's median kept (``_common.device_times_ms``); how
many calls and rounds follows a first timed call. In these device cases accelmath and
nvmath-python run on torch tensors (CuPy has no bfloat16), timed with torch's events; CuPy on
CuPy arrays viewing the same memory, timed with CuPy's. Every accelmath result is checked
against the product in float64 (complex128) on the GPU, as a relative Frobenius error, and
marked "ok" or "WRONG"; a case that fails leaves "-" in its cells and its error in the notes.

Cases: 4096^3 in fp16, bf16, fp32, TF32 (``allow_tf32=True``, beside torch with
``torch.backends.cuda.matmul.allow_tf32`` and CuPy's and nvmath-python's TF32 compute types),
fp64 and complex64; 8192^3 bf16; a batch of 64 x 512^3 fp16; the skinny complex128 product of
image subtraction, a stack of 21 matrices 4088 x 2045 against one 2045 x 37 (broadcast); the
small products 64^3 fp32 and a batch of 8 x 32^3 fp64 (accelmath's small-product kernel,
compiled first with ``accelmath.linalg.prepare``, as a warm store has it; a sleep kernel
before each timed run gives the host a head start, so that the device's time alone counts); fp16
4096^3 with the native epilogues ``relu_bias`` (beside ``torch._addmm_activation`` and
nvmath-python's RELU_BIAS) and ``gelu_bias`` (``use_gelu=True``, GELU_BIAS), and
``relu(a @ b + bias) * 0.5`` (one ``relu_bias`` product with ``alpha=0.5`` and the bias
halved, beside the eager expressions), each also against accelmath's plain product of the
same shape; the host time per call of a 64^3 fp32 product, a row on torch tensors and a row
on CuPy arrays, every call of a row on that package's arrays (stateless, stateful ``execute()``
and ``execute(out=)``, the package's own ``a @ b``, nvmath-python's stateful ``execute``), with
the ratios to that ``a @ b`` and the targets (:data:`HOST_TARGETS`). For every
device case, the stateful
``Matmul`` on the heuristic's first choice and another after ``autotune``, timed in turn:
the gain is their ratio.
The store is a fresh temporary folder (unless ``--keep-store``), so that the heuristic's
choice is what a first process gets. The result file's "summary" tells ``accelmath bench``
what to compare (:data:`SUMMARY`).

Run on a GPU machine: ``python benchmarks/matmul.py`` (``--list`` names the cases; ``--only``
and ``--skip`` select them by regular expression). Writes
``benchmarks/results/matmul-<device>.{json,md}``. Without a GPU it says so and exits.
"""

import os
import sys
import tempfile
import time

from _common import (Missing, case_parser, device_times_ms, environment, error_text,
                     first_call_ms, head_start, host_times_us, no_gpu, run_case, run_sizes,
                     selected, write)

DEVICE = "cuda"
N = 4096
AUTOTUNE_ITERATIONS = 10
NOISE = 0.01  # two timings of one kernel differ by this much: "autotuned <= heuristic" allows it
# relative Frobenius error against float64 (the float32 bound also tells fp32 from TF32)
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.5e-2, "float32": 1e-5, "tf32": 5e-3,
             "float64": 1e-12, "complex64": 1e-5, "complex128": 1e-12}
# (name, shape of a, shape of b, dtype, TF32)
PLAIN = [(f"{N}^3 fp16", (N, N), (N, N), "float16", False),
         (f"{N}^3 bf16", (N, N), (N, N), "bfloat16", False),
         (f"{N}^3 fp32", (N, N), (N, N), "float32", False),
         (f"{N}^3 tf32", (N, N), (N, N), "float32", True),
         (f"{N}^3 fp64", (N, N), (N, N), "float64", False),
         (f"{N}^3 complex64", (N, N), (N, N), "complex64", False),
         ("8192^3 bf16", (8192, 8192), (8192, 8192), "bfloat16", False),
         ("batched 64 x 512^3 fp16", (64, 512, 512), (64, 512, 512), "float16", False),
         ("skinny complex128 (21 x 4088 x 2045) @ (2045 x 37)", (21, 4088, 2045), (2045, 37),
          "complex128", False),
         ("64^3 fp32", (64, 64), (64, 64), "float32", False),
         ("batched 8 x 32^3 fp64", (8, 32, 32), (8, 32, 32), "float64", False)]
EPILOGUES = [(f"{N}^3 fp16 bias+relu", "relu"), (f"{N}^3 fp16 bias+gelu", "gelu"),
             (f"{N}^3 fp16 relu(a @ b + bias) * 0.5", "scaled")]
HOST = "host time per call: 64^3 fp32"
HOST_ARRAYS = {"torch": "torch tensors", "cupy": "CuPy arrays"}
# the host rows' ratios to the package's own a @ b: (column, accelmath's column)
HOST_RATIOS = [("stateless / a @ b", "accelmath"),
               ("Matmul.execute / a @ b", "accelmath Matmul"),
               ("Matmul.execute(out=) / a @ b", "accelmath Matmul.execute(out=)")]
# the targets: (a ratio's column, the most it may be); the target's column is
# "<ratio's column> <= <most>", and says met or missed
HOST_TARGETS = [("stateless / a @ b", 1.0), ("Matmul.execute / a @ b", 0.8)]


class Wrong(Exception):
    """A result of the wrong shape or dtype: the case is marked WRONG."""


# --- the packages --------------------------------------------------------------------------

class Context:
    """torch (needed: the operands, the oracle), CuPy and nvmath-python where present."""

    def __init__(self):
        import torch

        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        self.missing = {}
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.cp = cupy
        except Exception as exc:
            self.cp, self.missing["cupy"] = None, f"not installed ({error_text(exc)})"
        self.nvmath = _nvmath(self.missing)

    def event(self, label):
        if label.startswith("cupy"):
            return self.cp.cuda.Event()
        return self.torch.cuda.Event(enable_timing=True)

    def sync(self):
        if DEVICE == "cuda":
            self.torch.cuda.synchronize()
        if self.cp is not None:
            self.cp.cuda.Device().synchronize()

    def free(self):
        self.sync()
        if DEVICE == "cuda":
            self.torch.cuda.empty_cache()
        if self.cp is not None:
            self.cp.get_default_memory_pool().free_all_blocks()

    def randn(self, shape, dtype, seed):
        """N(0, 1) data of ``dtype`` (complex: both parts), a torch tensor on the GPU."""
        torch = self.torch
        g = torch.Generator(device=DEVICE).manual_seed(seed)
        if dtype.startswith("complex"):
            real = "float32" if dtype == "complex64" else "float64"
            x = torch.complex(*(torch.randn(shape, generator=g, dtype=getattr(torch, real),
                                            device=DEVICE) for _ in range(2)))
            return x.to(getattr(torch, dtype))
        return torch.randn(shape, generator=g, dtype=torch.float32,
                           device=DEVICE).to(getattr(torch, dtype))

    def to_cupy(self, t):
        """A CuPy array over ``t``'s memory, or None (no CuPy, or a dtype it lacks)."""
        if self.cp is None or t.dtype == self.torch.bfloat16:
            return None
        return self.cp.from_dlpack(t)

    def wide(self, t):
        return t.to(self.torch.complex128 if t.is_complex() else self.torch.float64)

    def checker(self, expected, dtype, tolerance):
        """result -> relative Frobenius error against ``expected`` (float64), raising
        :class:`Wrong` for a result of the wrong shape or dtype."""
        torch = self.torch
        norm = float(torch.linalg.vector_norm(expected))

        def check(result):
            if isinstance(result, tuple):
                raise Wrong(f"a tuple of {len(result)} where one array was expected")
            if not isinstance(result, torch.Tensor):  # (a CuPy result: viewed as a tensor)
                result = torch.from_dlpack(result)
            if tuple(result.shape) != tuple(expected.shape):
                raise Wrong(f"shape {tuple(result.shape)}, expected {tuple(expected.shape)}")
            if str(result.dtype).replace("torch.", "") != dtype:
                raise Wrong(f"dtype {result.dtype}, expected {dtype}")
            error = float(torch.linalg.vector_norm(self.wide(result) - expected)) / norm
            return error, tolerance
        return check


def _nvmath(missing):
    """nvmath.linalg.advanced, or None (the reason in ``missing``)."""
    try:
        import numpy

        if not hasattr(numpy, "row_stack"):  # removed in NumPy 2.5, still used by nvmath 1.0
            numpy.row_stack = numpy.vstack
        import nvmath.linalg.advanced

        return nvmath.linalg.advanced
    except Exception as exc:
        missing["nvmath"] = f"not installed ({error_text(exc)})"
        return None


def _accelmath_plan(spec, *args, **kwargs):
    """``accelmath.linalg.Matmul(*args, **kwargs)``, its ``free`` added to the spec's cleanup;
    where it fails, an object whose use raises why (the peers are timed all the same)."""
    try:
        plan = ALG.Matmul(*args, **kwargs)
    except Exception as exc:
        return Missing(f"Matmul failed: {error_text(exc)}")
    spec["cleanup"].append(plan.free)
    return plan


def _stateful_pair(spec, *args, **kwargs):
    """The spec's "accelmath Matmul" and "accelmath autotuned" (last: it runs after the
    autotune, which follows the other functions' checks): two plans of one product, the
    second autotuned by the spec's "autotune"; "same algorithm" tells whether they run one."""
    first = _accelmath_plan(spec, *args, **kwargs)
    plan = _accelmath_plan(spec, *args, **kwargs)

    def autotune():
        plan.autotune(iterations=AUTOTUNE_ITERATIONS)
        return f"{plan.algorithm} of {plan.candidates}"  # (the cell)

    spec["autotune"] = autotune
    spec["same algorithm"] = lambda: plan.algorithm == first.algorithm
    return {"accelmath Matmul": lambda: first.execute(),
            "accelmath autotuned": lambda: plan.execute()}


def _nvmath_peer(ctx, spec, a, b, tf32=False, epilog=None, bias=None):
    """``execute`` of an nvmath-python ``Matmul`` planned once (the heuristic's first
    algorithm), its ``free`` added to the spec's cleanup; None without nvmath-python."""
    nv = ctx.nvmath
    if nv is None:
        return None
    try:
        options = ({"compute_type": nv.MatmulComputeType.COMPUTE_32F_FAST_TF32} if tf32
                   else None)
        mm = nv.Matmul(a, b, options=options)
        spec["cleanup"].append(mm.free)
        kwargs = {}
        if epilog is not None:
            kwargs = {"epilog": getattr(nv.MatmulEpilog, epilog),
                      "epilog_inputs": {"bias": bias}}
        mm.plan(**kwargs)
    except Exception as exc:
        return Missing(f"plan failed: {error_text(exc)}")
    return mm.execute


def _cupy_tf32(on):
    """Set CuPy's float32 compute type to TF32 (or back); False where CuPy cannot."""
    try:
        from cupy._core import _routines_linalg as rl

        rl.set_compute_type("float32", rl.COMPUTE_TYPE_TF32 if on else rl.COMPUTE_TYPE_DEFAULT)
        return True
    except Exception:
        return False


# --- the cases: each builder returns a spec (a dict) ---------------------------------------
# spec: "ours" {label: fn} (accelmath, timed and checked; "accelmath autotuned" after the
# spec's "autotune" runs), "peers" {label: fn or None}, "check", "desc", optional "unit",
# "cleanup", "autotune" (a function), "plain" (the label of the plain product, for epilogues).

def plain_case(name, a_shape, b_shape, dtype, tf32):
    def build(ctx):
        torch = ctx.torch
        a, b = ctx.randn(a_shape, dtype, 1), ctx.randn(b_shape, dtype, 2)
        xa, xb = ctx.to_cupy(a), ctx.to_cupy(b)
        spec = {"check": ctx.checker(torch.matmul(ctx.wide(a), ctx.wide(b)), dtype,
                                     TOLERANCE["tf32" if tf32 else dtype]),
                "cleanup": []}
        from accelmath.linalg._matmul.small import MAX_SIDE  # (its small-product kernel's)

        if max(a_shape + b_shape) <= MAX_SIDE:
            ALG.prepare(dtype, wait=True)  # (the kernel of its dtype, as a warm store has it)
            spec["head start"] = head_start(torch)
        spec["ours"] = {"accelmath": lambda: ALG.matmul(a, b, allow_tf32=tf32),
                        **_stateful_pair(spec, a, b, allow_tf32=tf32)}
        torch.backends.cuda.matmul.allow_tf32 = tf32
        spec["cleanup"].append(lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", False))
        cupy_tf32 = tf32 and xa is not None and _cupy_tf32(True)
        if cupy_tf32:
            spec["cleanup"].append(lambda: _cupy_tf32(False))
        spec["peers"] = {
            "torch": lambda: torch.matmul(a, b),
            "cupy": xa is not None and (cupy_tf32 or not tf32) and (lambda: xa @ xb),
            "nvmath Matmul": _nvmath_peer(ctx, spec, a, b, tf32=tf32)}
        spec["desc"] = "; ".join([
            "torch.matmul" + (" (allow_tf32)" if tf32 else ""),
            "CuPy has no bfloat16" if dtype == "bfloat16" else
            "CuPy's TF32 compute type could not be set" if tf32 and not cupy_tf32 else
            "cupy a @ b" + (" (COMPUTE_TYPE_TF32)" if tf32 else ""),
            "nvmath Matmul.plan() + execute()" + (" (COMPUTE_32F_FAST_TF32)" if tf32 else "")])
        return spec
    return name, build


def epilogue_case(name, kind):
    """fp16 N^3 with the bias along the result's last axis: ``kind`` "relu" or "gelu"
    (relu_bias, gelu_bias), or "scaled": relu(a @ b + bias) * 0.5."""
    def build(ctx):
        torch, gelu = ctx.torch, ctx.torch.nn.functional.gelu
        a, b = ctx.randn((N, N), "float16", 3), ctx.randn((N, N), "float16", 4)
        bias = ctx.randn((N,), "float16", 5)
        xa, xb, xbias = ctx.to_cupy(a), ctx.to_cupy(b), ctx.to_cupy(bias)
        exact = torch.matmul(ctx.wide(a), ctx.wide(b)) + ctx.wide(bias)
        spec = {"cleanup": [], "plain": "accelmath plain"}
        if kind == "scaled":
            # relu(a @ b + bias) * 0.5 == relu(0.5 a @ b + bias / 2): one fused product
            expected, half = torch.relu(exact) * 0.5, bias * 0.5
            kwargs = {"alpha": 0.5, "epilogue": "relu_bias", "bias": half}
            peers = {"torch": lambda: torch._addmm_activation(half, a, b, alpha=0.5),
                     "torch eager": lambda: torch.relu(a @ b + bias) * 0.5,
                     "cupy eager": xa is not None and (
                         lambda: ctx.cp.maximum(xa @ xb + xbias, 0) * 0.5)}
            spec["desc"] = ("accelmath: epilogue relu_bias, alpha=0.5, bias / 2; "
                            "torch._addmm_activation(bias / 2, a, b, alpha=0.5); eager: "
                            "torch.relu(a @ b + bias) * 0.5, cupy.maximum(a @ b + bias, 0) * "
                            "0.5")
        else:
            expected = torch.relu(exact) if kind == "relu" else gelu(exact, approximate="tanh")
            kwargs = {"epilogue": f"{kind}_bias", "bias": bias}
            peers = {"torch": lambda: torch._addmm_activation(bias, a, b,
                                                              use_gelu=kind == "gelu"),
                     "torch eager": (lambda: torch.relu(a @ b + bias)) if kind == "relu" else (
                         lambda: gelu(a @ b + bias, approximate="tanh")),
                     "nvmath Matmul": _nvmath_peer(ctx, spec, a, b, epilog=f"{kind.upper()}_BIAS",
                                                   bias=bias)}
            if kind == "relu":
                peers["cupy eager"] = xa is not None and (
                    lambda: ctx.cp.maximum(xa @ xb + xbias, 0))
            spec["desc"] = "; ".join([
                "torch._addmm_activation(bias, a, b"
                + (", use_gelu=True)" if kind == "gelu" else ")"),
                f"nvmath Matmul.plan(epilog={kind.upper()}_BIAS) + execute() (its bias runs "
                "along the rows: the same length here)",
                "eager: torch.relu(a @ b + bias), cupy.maximum(a @ b + bias, 0)" if kind == "relu"
                else "eager: torch gelu(a @ b + bias, approximate='tanh')"])
        spec["check"] = ctx.checker(expected, "float16", TOLERANCE["float16"])
        spec["checks"] = {"accelmath plain": ctx.checker(exact - ctx.wide(bias), "float16",
                                                         TOLERANCE["float16"])}
        spec["ours"] = {"accelmath": lambda: ALG.matmul(a, b, **kwargs),
                        "accelmath plain": lambda: ALG.matmul(a, b),
                        **_stateful_pair(spec, a, b, **kwargs)}
        spec["peers"] = peers
        return spec
    return name, build


def host_case(package):
    """The host time per call of a 64^3 float32 product on ``package``'s arrays ("torch" or
    "cupy"): accelmath's calls, the package's own ``a @ b`` and nvmath-python's, all on them."""
    def build(ctx):
        torch = ctx.torch
        a, b = ctx.randn((64, 64), "float32", 6), ctx.randn((64, 64), "float32", 7)
        spec = {"unit": "host us", "cleanup": [], "package": package,
                "check": ctx.checker(torch.matmul(ctx.wide(a), ctx.wide(b)), "float32",
                                     TOLERANCE["float32"])}
        if package == "cupy":
            if ctx.cp is None:
                raise RuntimeError(f"CuPy is {ctx.missing['cupy']}")
            # arrays of CuPy's own memory, copies of the torch operands
            a, b = ctx.to_cupy(a).copy(), ctx.to_cupy(b).copy()
            out = ctx.cp.empty((64, 64), dtype=ctx.cp.float32)
        else:
            out = torch.empty((64, 64), dtype=torch.float32, device=DEVICE)
        ALG.prepare("float32", wait=True)  # (its small-product kernel, as a warm store has it)
        plan = _accelmath_plan(spec, a, b)
        spec["ours"] = {"accelmath": lambda: ALG.matmul(a, b),
                        "accelmath Matmul": lambda: plan.execute(),
                        "accelmath Matmul.execute(out=)": lambda: plan.execute(out=out)}
        spec["peers"] = {package: lambda: a @ b, "nvmath Matmul": _nvmath_peer(ctx, spec, a, b)}
        spec["desc"] = (f"the best of 7 loops of 2000 calls, synchronized after each loop, all "
                        f"on {HOST_ARRAYS[package]}; {package} a @ b; nvmath Matmul.execute() "
                        "(planned once)")
        return spec
    return f"{HOST}, {HOST_ARRAYS[package]}", build


def all_cases():
    return ([plain_case(*case) for case in PLAIN]
            + [epilogue_case(*case) for case in EPILOGUES]
            + [host_case(package) for package in HOST_ARRAYS])


# --- running a case ------------------------------------------------------------------------

def measure_together(ctx, fns, head_start=None):
    """Device ms per call of each of ``fns`` ({label: fn}, each called once before), timed
    in turn round after round (``device_times_ms``, given ``head_start``)."""
    calls, rounds = {}, 1
    for label, fn in fns.items():
        calls[label], wanted = run_sizes(first_call_ms(fn, lambda: ctx.event(label), ctx.sync))
        rounds = max(rounds, wanted)
    return device_times_ms(fns, ctx.event, rounds, calls, head_start)


def warm_up(ctx, seconds=1.0):
    """fp16 products for about ``seconds``, so that the first case meets the clocks the
    others do."""
    a = ctx.randn((N, N), "float16", 0)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(20):
            a @ a
        ctx.sync()
    del a
    ctx.free()


def _faster_peer(row):
    peers = [row.get(p) for p in ("torch", "cupy") if isinstance(row.get(p), float)]
    return min(peers) if peers else None


def _check(ctx, name, spec, label, fn, wrong):
    """Run ``fn`` once and check its result; the error, or None where it raised."""
    try:
        result = fn()
        ctx.sync()
    except Exception as exc:
        wrong.append(f"{label}: {error_text(exc)}")
        return None
    try:
        error, tolerance = spec.get("checks", {}).get(label, spec["check"])(result)
    except Wrong as exc:
        wrong.append(f"{label}: {exc}")
        return None
    except Exception as exc:
        wrong.append(f"{label}: the check failed: {error_text(exc)}")
        return None
    if not error <= tolerance:
        wrong.append(f"{label}: relative error {error:.2e} > {tolerance:.1e}")
    return error


def _run_spec(ctx, name, spec, row, notes):
    """Check every function of the spec, then time those that work: accelmath's and the
    peers' in turn (the autotuned plan after its autotune, which follows the others' checks:
    the stateless product's plan is made before a choice is stored)."""
    row["unit"] = spec.get("unit", "device ms")
    errors, wrong, working = [], [], {}
    for label, fn in spec["ours"].items():
        if label == "accelmath autotuned":
            try:
                row["autotune choice"] = spec["autotune"]()
            except Exception as exc:
                wrong.append(f"autotune: {error_text(exc)}")
                continue
        error = _check(ctx, name, spec, label, fn, wrong)
        if error is not None:
            errors.append(error)
            working[label] = fn
    for label, fn in spec["peers"].items():
        if not fn:
            row[label] = None
            continue
        try:
            fn()
            working[label] = fn
        except Exception as exc:
            notes.append(f"{name}: {label}: {error_text(exc)}")
    if row["unit"] == "host us":
        row.update(host_times_us(working, calls=2000, repeats=7, sync=ctx.sync))
    else:
        try:
            row.update(measure_together(ctx, working, spec.get("head start")))
        except Exception as exc:
            notes.append(f"{name}: timing: {error_text(exc)}")
    row["error"] = max(errors) if errors else None
    row["check"] = "WRONG" if wrong else "ok" if errors else "-"
    notes.extend(f"{name}: WRONG: {w}" for w in wrong)
    _ratios(row, spec)
    row["peer calls"] = spec["desc"]


def _ratios(row, spec):
    """The ratios and the targets, from the row's times."""
    ours, faster = row.get("accelmath"), _faster_peer(row)
    targets = []
    if isinstance(ours, float) and faster:
        row["accelmath / faster peer"] = ours / faster
    tuned, first = row.get("accelmath autotuned"), row.get("accelmath Matmul")
    if isinstance(tuned, float) and isinstance(first, float):
        row["autotune gain"] = first / tuned
        row["accelmath autotuned / faster peer"] = tuned / faster if faster else None
        # (where autotune kept the first choice, both plans run one algorithm: their times
        # differ by the timing's noise alone)
        same = spec["same algorithm"]()
        met = same or tuned <= (1 + NOISE) * first
        targets.append(f"autotuned <= heuristic: {'met' if met else 'missed'}"
                       + (" (the same algorithm)" if same else ""))
    plain = row.get(spec.get("plain"))
    if isinstance(ours, float) and isinstance(plain, float):
        row["epilogue / plain"] = ours / plain
        targets.append(f"<= 1.05 plain: {'met' if ours <= 1.05 * plain else 'missed'}")
    elif row["unit"] == "host us":
        _host_ratios(row, row.get(spec["package"]))
    elif isinstance(ours, float) and faster:
        targets.append(f"<= 1.02 faster peer: {'met' if ours <= 1.02 * faster else 'missed'}")
    row["target"] = "; ".join(targets) or None


def _host_ratios(row, own):
    """A host row's ratios to ``own``, the time of its package's ``a @ b``, and the targets."""
    if not isinstance(own, float):
        return
    for column, label in HOST_RATIOS:
        if isinstance(row.get(label), float):
            row[column] = row[label] / own
    for column, most in HOST_TARGETS:
        if column in row:
            row[f"{column} <= {most:.1f}"] = "met" if row[column] <= most else "missed"


#: What ``accelmath bench`` compares (the result file's "summary"): the stateless product
#: against torch and CuPy, the stateful ones against nvmath-python's and against them. (A host
#: row holds one package's a @ b: its own.)
SUMMARY = [{"accelmath": "accelmath", "peers": ["torch", "cupy"]},
           {"accelmath": "accelmath autotuned", "peers": ["torch", "cupy"],
            "label": "autotuned Matmul"},
           {"accelmath": "accelmath Matmul", "peers": ["nvmath Matmul"],
            "label": "Matmul, heuristic's choice"}]


COLUMNS = ["case", "unit", "accelmath", "accelmath Matmul", "accelmath autotuned",
           "accelmath Matmul.execute(out=)", "accelmath plain", "torch", "cupy",
           "nvmath Matmul", "torch eager", "cupy eager", "accelmath / faster peer",
           "accelmath autotuned / faster peer", "epilogue / plain", "autotune gain",
           "autotune choice", *(column for column, _ in HOST_RATIOS),
           *(f"{column} <= {most:.1f}" for column, most in HOST_TARGETS), "check", "error",
           "target", "peer calls"]


def parse_args(argv=None):
    parser = case_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--keep-store", action="store_true",
                        help="use the usual store (ACCELMATH_CACHE_DIR), not a fresh one: "
                             "autotune choices of earlier runs then apply")
    return parser.parse_args(argv)


ALG = Missing("accelmath.linalg is not imported")


def main(argv=None):
    args = parse_args(argv)
    cases = all_cases()
    if args.list:
        for name, _ in cases:
            print(name, "" if selected(name, args) else "(skipped)")
        return 0
    if no_gpu("matmul"):
        return 0
    if args.keep_store:
        return measure_all(args, cases)
    with tempfile.TemporaryDirectory(prefix="accelmath-bench-matmul-") as store:
        os.environ["ACCELMATH_CACHE_DIR"] = store  # (read where a choice is looked up)
        return measure_all(args, cases)


def measure_all(args, cases):
    """Run the selected ``cases``; write and print the table."""
    global ALG
    try:
        ctx = Context()
    except Exception as exc:
        print(f"matmul: needs torch with CUDA (the operands and the oracle): {error_text(exc)}")
        return 0
    notes = [f"{peer}: {why}" for peer, why in ctx.missing.items()]
    try:
        import accelmath.linalg as ALG

        ALG.Matmul  # noqa: B018 (fails early where it is missing)
    except Exception as exc:
        notes.append(f"accelmath.linalg.Matmul: {error_text(exc)}")
        ALG = Missing(f"accelmath.linalg: {error_text(exc)}")
    env = environment()
    started = time.perf_counter()
    warm_up(ctx)
    rows = [run_case(ctx, name, build, _run_spec, notes, started) for name, build in cases
            if selected(name, args)]
    header = (
        "Device time per call, ms (CUDA events around calls back to back, after one untimed "
        "call; every function of a case timed in turn, round after round, and its median "
        "kept: runs of 10 calls under 0.3 ms, 5 under 3 ms, 2 under 30 ms, else 1; 20 rounds "
        "where the case's fastest call is under 0.3 ms, 10 under 3 ms, 5 under 30 ms, else 3), "
        "except the host-time rows (us per call: the best of 7 loops of 2000 calls; one row "
        "on torch tensors, one on CuPy arrays, every call of a row, nvmath-python's too, on "
        "that package's arrays; their ratios '... / a @ b' divide by that package's own "
        "a @ b, and their targets, which say met or missed: "
        + ", ".join(f"{column} <= {most:.1f}" for column, most in HOST_TARGETS) + "). "
        "'accelmath' is the stateless matmul; 'accelmath Matmul' a stateful Matmul.execute() "
        "on the heuristic's first choice, 'accelmath autotuned' another plan of it after "
        f"autotune(iterations={AUTOTUNE_ITERATIONS}) ('autotune gain': their ratio; the "
        "target 'autotuned <= heuristic' holds where autotune kept the first choice (both "
        "plans run the same algorithm), and otherwise allows "
        f"{NOISE:.0%} of timing noise; 'autotune "
        "choice': the candidate kept, of the heuristic's, 0 its first); "
        "'accelmath plain' the product without the epilogue ('epilogue / plain'). In the "
        "device rows accelmath and nvmath-python on torch tensors, CuPy on arrays viewing the "
        "same memory. The small products (64^3 fp32, 8 x 32^3 fp64) run on accelmath's "
        "small-product kernel, compiled first (linalg.prepare), and each timed run follows a "
        "sleep kernel that gives the host a head start (the device's time alone). The "
        "ratios divide by the faster of torch and CuPy (for the epilogues, torch's fused "
        "_addmm_activation: the eager columns are for reference). 'error': the largest "
        "relative Frobenius error of the accelmath results against float64 (complex128) on "
        f"the GPU; tolerances {TOLERANCE}. Data: N(0, 1). The store: "
        + ("the usual one." if args.keep_store else "a fresh temporary folder."))
    failures = "\n".join(f"- {n}" for n in notes)
    # a run of the host-time rows alone is a table of its own, beside the whole one
    name = "matmul" if not (args.only or args.skip) else (
        "matmul-host" if rows and all(r.get("unit") == "host us" for r in rows)
        else "matmul-selected")
    print(write(name, env, rows, COLUMNS,
                header + ("\n\nNotes and failures:\n" + failures if notes else ""),
                summary=SUMMARY))
    print(f"matmul: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""accelmath.linalg beside torch.linalg and CuPy (cupy.linalg, cupyx.scipy.linalg), in one process.

Device time per call, ms: CUDA events around calls back to back (``_common.device_time_ms``),
the median of several runs; how many calls and runs follows a first timed call (the slow
cases, eigh and svd at 4096, take 3 runs of 1 call). Every call is what a user's call does:
checks, allocations and read-backs included. accelmath and CuPy run on the same CuPy arrays,
torch on tensors holding the same data. Every accelmath result is checked in float64 on the
GPU (residual or reconstruction, orthogonality, triangles, ordering) and marked "ok" or
"WRONG"; a case that fails leaves "-" in its cells and its error in the notes.

Cases: cholesky, solve, qr, eigh, svd at n = 1024 and 4096 in float32 and float64 (at 4096
with the fraction of the GEMM ceiling, torch.matmul 4096^3 measured in the same run); the
image-subtraction system (2162^2 float64 SPD, one right-hand side) by Cholesky, LU, solve and
a factor-once ``Cholesky``; batched solve and cholesky of 10000 x 8 x 8 and 10000 x 32 x 32
float64 with each ``method=`` forced; batched eigh of 500 x 100 x 100; the host time per call
of a stateless 8 x 8 solve. A second table, ``solvers-crossover``, times each method of
batched solve and cholesky (batch 10000, n = 2 to 64) so that the crossovers can be read.

Run on a GPU machine: ``python benchmarks/solvers.py`` (``--list`` names the cases; ``--only``
and ``--skip`` select them by regular expression; ``--no-crossover``). Writes
``benchmarks/results/solvers-<device>.{json,md}`` and ``solvers-crossover-<device>.{json,md}``.
Without a GPU it says so and exits.
"""

import sys
import time

import _common
from _common import (Missing, case_parser, device_time_ms, environment, error_text,
                     first_call_ms, host_times_us, no_gpu, run_sizes, selected, write)
from _solver_data import (Context, Wrong, check_cholesky, check_eigh, check_qr, check_solve,
                          check_svd, spd, symmetric, tolerance)


def small_max():
    """The largest order method="small" takes (0 where accelmath does not import)."""
    try:
        from accelmath.linalg._kernels.small import MAX_N
    except Exception:
        return 0
    return MAX_N

DENSE = [(op, n, dtype) for n in (1024, 4096) for dtype in ("float32", "float64")
         for op in ("cholesky", "solve", "qr", "eigh", "svd")]
GEMM_N = 4096  # the GEMM ceiling's size, and the size whose rows report a fraction of it
SYSTEM_N = 2162
BATCH = 10000
BATCHED = [(op, BATCH, n) for n in (8, 32) for op in ("solve", "cholesky")] + [
    (op, 500, n) for n in (64, 100) for op in ("solve", "cholesky")]
EIGH_BATCHED = (500, 100)
CROSSOVER_N = (2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128)
# flops of one factorization of an n x n matrix (the count named in the notes)
FLOPS = {"cholesky": (lambda n: n ** 3 / 3, "n^3/3"),
         "solve": (lambda n: 2 * n ** 3 / 3 + 2 * n ** 2, "2n^3/3 + 2n^2 (one rhs)"),
         "qr": (lambda n: 8 * n ** 3 / 3, "8n^3/3 (geqrf 4n^3/3 + forming Q 4n^3/3)"),
         "eigh": (lambda n: 10 * n ** 3 / 3,
                  "10n^3/3 (tridiagonalization 4n^3/3 + back-transformation 2n^3)"),
         "svd": (lambda n: 20 * n ** 3 / 3,
                 "20n^3/3 (bidiagonalization 8n^3/3 + two back-transformations 2n^3)")}


# --- the cases: each builder returns a spec (a dict) ------------------------------------------
# spec: "ours" {label: fn} (accelmath, checked), "peers" {label: fn} ("torch..." timed with
# torch events, "cupy..." with CuPy's), "check" (result -> residual), "tol", "desc" (the peer
# calls), optional "flops" and "count" (at n = GEMM_N), "dtype", "target" ((row, ctx) -> text).

def dense_case(op, n, dtype):
    def build(ctx):
        cp, torch = ctx.cp, ctx.torch
        if op == "cholesky":
            a64 = spd(ctx, (n, n), 1)
        elif op == "eigh":
            a64 = symmetric(ctx, (n, n), 1)
        else:
            a64 = ctx.randn((n, n), 1)
        a = ctx.astype(a64, dtype)
        del a64
        x, t = ctx.to_cupy(a), ctx.to_torch(a)
        spec = {"dtype": dtype, "tol": tolerance(n, dtype)}
        if op == "cholesky":
            spec.update(ours={"accelmath": lambda: ALG.cholesky(a)},
                        check=check_cholesky(ctx, a),
                        peers={"torch": t is not None and (lambda: torch.linalg.cholesky(t)),
                               "cupy": x is not None and (lambda: cp.linalg.cholesky(x))},
                        desc="torch.linalg.cholesky; cupy.linalg.cholesky")
        elif op == "solve":
            b = ctx.astype(ctx.randn((n, 1), 2), dtype)
            bx, bt = ctx.to_cupy(b), ctx.to_torch(b)
            spec.update(ours={"accelmath": lambda: ALG.solve(a, b)}, check=check_solve(ctx, a, b),
                        peers={"torch": t is not None and (lambda: torch.linalg.solve(t, bt)),
                               "cupy": x is not None and (lambda: cp.linalg.solve(x, bx))},
                        desc="b (n, 1); torch.linalg.solve; cupy.linalg.solve")
        elif op == "qr":
            spec.update(ours={"accelmath": lambda: ALG.qr(a)}, check=check_qr(ctx, a),
                        peers={"torch": t is not None and (lambda: torch.linalg.qr(t)),
                               "cupy": x is not None and (lambda: cp.linalg.qr(x))},
                        desc="mode reduced (Q and R); torch.linalg.qr; cupy.linalg.qr")
        elif op == "eigh":
            spec.update(ours={"accelmath": lambda: ALG.eigh(a)}, check=check_eigh(ctx, a),
                        peers={"torch": t is not None and (lambda: torch.linalg.eigh(t)),
                               "cupy": x is not None and (lambda: cp.linalg.eigh(x))},
                        desc="values and vectors; torch.linalg.eigh; cupy.linalg.eigh")
        else:
            spec.update(ours={"accelmath": lambda: ALG.svd(a, full_matrices=False)},
                        check=check_svd(ctx, a),
                        peers={"torch": t is not None and (
                                   lambda: torch.linalg.svd(t, full_matrices=False)),
                               "cupy": x is not None and (
                                   lambda: cp.linalg.svd(x, full_matrices=False))},
                        desc="U, S, Vh; torch.linalg.svd; cupy.linalg.svd")
        if n == GEMM_N:
            flops, count = FLOPS[op]
            spec.update(flops=flops(n), count=count)
        return spec
    return f"{op} {n}^2 {dtype}", build


def _system(ctx):
    """The image-subtraction system: SYSTEM_N^2 float64 SPD, one right-hand side (a vector)."""
    a = spd(ctx, (SYSTEM_N, SYSTEM_N), 3)
    b = ctx.randn((SYSTEM_N,), 4)
    return a, b, ctx.to_cupy(a), ctx.to_cupy(b), ctx.to_torch(a), ctx.to_torch(b)


def _system_name(kind):
    return f"{SYSTEM_N}^2 f64 SPD: " + {
        "lu": "lu_factor + lu_solve", "solve": "solve", "cho_factor": "cho_factor + cho_solve",
        "cholesky": "cholesky + cho_solve", "resolve": "factor-once Cholesky.solve",
        "refactor": "Cholesky.refactor + solve"}[kind]


def system_case(kind):
    name = _system_name(kind)

    def build(ctx):
        cp, torch = ctx.cp, ctx.torch
        a, b, x, bx, t, bt = _system(ctx)
        peers, spec = {}, {"dtype": "float64", "tol": tolerance(SYSTEM_N, "float64"),
                           "check": check_solve(ctx, a, b)}
        if x is not None:
            from cupyx.scipy.linalg import lu_factor, lu_solve, solve_triangular

            def cupy_cholesky_solve(l):
                y = solve_triangular(l, bx, lower=True)
                return solve_triangular(l, y, lower=True, trans="T")
        if kind == "lu":
            spec["ours"] = {"accelmath": lambda: ALG.lu_solve(ALG.lu_factor(a), b),
                            "accelmath check=False": lambda: ALG.lu_solve(
                                ALG.lu_factor(a, check=False, check_finite=False), b,
                                check_finite=False)}
            peers["torch"] = t is not None and (lambda: torch.linalg.lu_solve(
                *torch.linalg.lu_factor(t), bt[:, None]))
            peers["cupy"] = x is not None and (lambda: lu_solve(lu_factor(x), bx))
            spec["desc"] = ("torch.linalg.lu_factor + lu_solve; "
                            "cupyx.scipy.linalg.lu_factor + lu_solve")
        elif kind == "solve":
            spec["ours"] = {"accelmath": lambda: ALG.solve(a, b),
                            "accelmath check=False": lambda: ALG.solve(a, b, check=False)}
            peers["torch"] = t is not None and (lambda: torch.linalg.solve(t, bt))
            peers["cupy"] = x is not None and (lambda: cp.linalg.solve(x, bx))
            spec["desc"] = "torch.linalg.solve; cupy.linalg.solve"
        else:
            peers["torch"] = t is not None and (lambda: torch.cholesky_solve(
                bt[:, None], torch.linalg.cholesky(t)))
            peers["cupy"] = x is not None and (lambda: cupy_cholesky_solve(cp.linalg.cholesky(x)))
            spec["desc"] = ("torch.linalg.cholesky + torch.cholesky_solve; cupy.linalg.cholesky "
                            "+ 2 cupyx.scipy.linalg.solve_triangular")
            if kind in ("cho_factor", "cholesky"):
                spec["target"] = system_target
        if kind == "cho_factor":  # (SciPy's defaults: the upper factor)
            spec["ours"] = {
                "accelmath": lambda: ALG.cho_solve(ALG.cho_factor(a), b),
                "accelmath check=False": lambda: ALG.cho_solve(
                    ALG.cho_factor(a, check=False, check_finite=False), b,
                    check_finite=False)}
        elif kind == "cholesky":
            spec["ours"] = {
                "accelmath": lambda: ALG.cho_solve((ALG.cholesky(a), True), b),
                "accelmath check=False": lambda: ALG.cho_solve(
                    (ALG.cholesky(a, check=False), True), b, check_finite=False)}
        elif kind in ("resolve", "refactor"):
            try:
                factor = ALG.Cholesky(a, lower=True)
                spec["cleanup"] = [factor.free]
            except Exception as exc:  # the row still times the peers
                factor = Missing(f"Cholesky(a, lower=True) failed: {error_text(exc)}")
            if kind == "resolve":
                spec["ours"] = {"accelmath": lambda: factor.solve(b)}
                # the peers' factor, made once too: only their solves are timed
                lt = torch.linalg.cholesky(t) if t is not None else None
                lx = cp.linalg.cholesky(x) if x is not None else None
                peers["torch"] = t is not None and (
                    lambda: torch.cholesky_solve(bt[:, None], lt))
                peers["cupy"] = x is not None and (lambda: cupy_cholesky_solve(lx))
                spec["desc"] = ("factors made once, solves timed: torch.cholesky_solve; "
                                "2 cupyx.scipy.linalg.solve_triangular")
            else:
                spec["ours"] = {"accelmath": lambda: (factor.refactor(a), factor.solve(b))[1]}
        spec["peers"] = peers
        return spec
    return name, build


def system_target(row, ctx):
    """At most torch's time, and at least 4x faster than the faster peer's LU path."""
    ours, torch_ms = row.get("accelmath"), row.get("torch")
    lu = [ctx.rows.get(_system_name(kind), {}).get(peer) for kind in ("lu", "solve")
          for peer in ("torch", "cupy")]
    lu = [v for v in lu if isinstance(v, float)]
    if ours is None or torch_ms is None or not lu:
        return None
    met = ours <= torch_ms and 4 * ours <= min(lu)
    return (f"<= torch and 4x faster than peer LU ({min(lu) / ours:.1f}x): "
            f"{'met' if met else 'missed'}")


def batched_case(op, batch, n, methods=("small", "batched", "cusolver"), no_check=True,
                 prefix=""):
    name = f"{prefix}batched {batch} x {n} x {n} f64 {op}"

    def build(ctx):
        cp, torch = ctx.cp, ctx.torch
        a = {"solve": ctx.randn, "cholesky": lambda shape, seed: spd(ctx, shape, seed),
             "eigh": lambda shape, seed: symmetric(ctx, shape, seed)}[op]((batch, n, n), 5)
        b = ctx.randn((batch, n, 1), 6) if op == "solve" else None
        x, t = ctx.to_cupy(a), ctx.to_torch(a)
        func = {"solve": lambda **kw: ALG.solve(a, b, **kw),
                "cholesky": lambda **kw: ALG.cholesky(a, **kw),
                "eigh": lambda **kw: ALG.eigh(a, **kw)}[op]
        ours = {"accelmath": func}
        if no_check:
            ours["accelmath check=False"] = lambda: func(check=False)
        for m in methods:
            if m != "small" or n <= small_max():
                ours[f"method={m}"] = (lambda m=m: func(method=m))
        spec = {"dtype": "float64", "tol": tolerance(n, "float64"), "ours": ours}
        if op == "solve":
            bx, bt = ctx.to_cupy(b), ctx.to_torch(b)
            spec["check"] = check_solve(ctx, a, b)
            spec["peers"] = {
                "torch": t is not None and (lambda: torch.linalg.solve(t, bt)),
                "torch no-check": t is not None and (
                    lambda: torch.linalg.solve_ex(t, bt, check_errors=False)[0]),
                "cupy": x is not None and (lambda: cp.linalg.solve(x, bx))}
            spec["desc"] = ("b (batch, n, 1); torch.linalg.solve (no-check: solve_ex); "
                            "cupy.linalg.solve")
        elif op == "cholesky":
            spec["check"] = check_cholesky(ctx, a)
            spec["peers"] = {
                "torch": t is not None and (lambda: torch.linalg.cholesky(t)),
                "torch no-check": t is not None and (
                    lambda: torch.linalg.cholesky_ex(t, check_errors=False)[0]),
                "cupy": x is not None and (lambda: cp.linalg.cholesky(x))}
            spec["desc"] = "torch.linalg.cholesky (no-check: cholesky_ex); cupy.linalg.cholesky"
        else:
            spec["check"] = check_eigh(ctx, a)
            spec["peers"] = {"torch": t is not None and (lambda: torch.linalg.eigh(t)),
                             "cupy": x is not None and (lambda: cp.linalg.eigh(x))}
            spec["desc"] = "torch.linalg.eigh; cupy.linalg.eigh (syevjBatched)"
            spec["target"] = lambda row, ctx: _ratio_target(row, "cupy", 1.0, "<= cupy")
        if n == 8 and op in ("solve", "cholesky"):
            spec["target"] = lambda row, ctx: _ratio_target(row, None, 0.5,
                                                            "2x faster than faster peer")
        return spec
    return name, build


def host_case():
    name = "host time per call: solve 8 x 8 f64, one rhs"

    def build(ctx):
        cp, torch = ctx.cp, ctx.torch
        a, b = ctx.randn((8, 8), 7) + 8 * ctx.eye(8), ctx.randn((8,), 8)
        x, bx, t, bt = ctx.to_cupy(a), ctx.to_cupy(b), ctx.to_torch(a), ctx.to_torch(b)
        return {"unit": "host us", "dtype": "float64", "tol": tolerance(8, "float64"),
                "check": check_solve(ctx, a, b),
                "ours": {"accelmath": lambda: ALG.solve(a, b),
                         "accelmath check=False": lambda: ALG.solve(a, b, check=False)},
                "peers": {"torch": t is not None and (lambda: torch.linalg.solve(t, bt)),
                          "torch no-check": t is not None and (
                              lambda: torch.linalg.solve_ex(t, bt, check_errors=False)[0]),
                          "cupy": x is not None and (lambda: cp.linalg.solve(x, bx))},
                "desc": "the best of 7 loops of 2000 calls, synchronized after each loop; "
                        "torch.linalg.solve (no-check: solve_ex); cupy.linalg.solve"}
    return name, build


def _ratio_target(row, peer, limit, text):
    ours = row.get("accelmath")
    theirs = row.get(peer) if peer else _faster_peer(row)
    if ours is None or theirs is None:
        return None
    return f"{text}: {'met' if ours <= limit * theirs else 'missed'}"


def _faster_peer(row):
    peers = [row.get(p) for p in ("torch", "cupy") if isinstance(row.get(p), float)]
    return min(peers) if peers else None


def default_target(row, ctx):
    return _ratio_target(row, None, 1.0, "<= faster peer")


# --- running a case ------------------------------------------------------------------------

def measure(fn, event, sync, warmed=False):
    """Device ms per call of ``fn``; the number of calls and runs from one timed call (after
    one untimed call unless ``warmed``): ``(ms, remark)``."""
    if not warmed:
        fn()
    first = first_call_ms(fn, event, sync)
    if first > 1000:
        return first, "timed once"
    calls, repeats = run_sizes(first)
    return device_time_ms(fn, event, repeats=repeats, warmup=calls // 2, calls=calls), None


def run_case(ctx, name, build, notes, started):
    """One case (``_common.run_case``), its row kept in ``ctx.rows`` for later targets."""
    row = ctx.rows[name] = _common.run_case(ctx, name, build, _run_spec, notes, started)
    return row


def _run_spec(ctx, name, spec, row, notes):
    row["unit"] = spec.get("unit", "device ms")
    host = row["unit"] == "host us"
    residuals, wrong, working = [], [], {}
    for label, fn in spec["ours"].items():
        try:
            result = fn()
            ctx.sync()
        except Exception as exc:
            notes.append(f"{name}: {label}: {error_text(exc)}")
            continue
        try:
            residual = spec["check"](result)
            residuals.append(residual)
            if not residual <= spec["tol"]:
                wrong.append(f"{label}: residual {residual:.2e} > {spec['tol']:.1e}")
        except Wrong as exc:
            wrong.append(f"{label}: {exc}")
        except Exception as exc:
            wrong.append(f"{label}: the check failed: {error_text(exc)}")
        del result
        working[label] = fn
    peers = {label: fn for label, fn in spec["peers"].items() if fn}
    for label in spec["peers"]:
        if not spec["peers"][label]:
            row[label] = None  # the package is missing
    if host:
        cases = {}
        for label, fn in peers.items():
            try:
                fn()
                cases[label] = fn
            except Exception as exc:
                notes.append(f"{name}: {label}: {error_text(exc)}")
        row.update(host_times_us({**working, **cases}, calls=2000, repeats=7, sync=ctx.sync))
    else:
        for label, fn in list(working.items()) + list(peers.items()):
            event = (ctx.torch_event if label.startswith("torch") else
                     ctx.cp_event if label.startswith("cupy") else ctx.base_event)
            try:
                row[label], remark = measure(fn, event, ctx.sync, warmed=label in working)
                if remark:
                    notes.append(f"{name}: {label} {remark} ({row[label]:.0f} ms)")
            except Exception as exc:
                notes.append(f"{name}: {label}: {error_text(exc)}")
    row["residual"] = max(residuals) if residuals else None
    row["check"] = "WRONG" if wrong else "ok" if residuals else "-"
    notes.extend(f"{name}: WRONG: {w}" for w in wrong)
    faster = _faster_peer(row)
    if isinstance(row.get("accelmath"), float) and faster:
        row["accelmath / faster peer"] = row["accelmath"] / faster
    flops, rate = spec.get("flops"), ctx.gemm.get(spec.get("dtype"))
    if flops:
        row["flop count"] = spec["count"]
        for label, ms in (("accelmath", row.get("accelmath")), ("faster peer", faster)):
            if isinstance(ms, float):
                row[f"{label} TFLOP/s"] = flops / ms / 1e9
                if rate:
                    row[f"{label} of GEMM ceiling"] = flops / ms * 1e3 / rate
    row["peer calls"] = spec.get("desc")
    target = spec.get("target", default_target)
    try:
        row["target"] = target(row, ctx) if target else None
    except Exception as exc:
        notes.append(f"{name}: target: {error_text(exc)}")


def gemm_ceiling(ctx, rows, started):
    """torch.matmul (and cupy.matmul) 4096^3 in float64 and float32, TF32 off."""
    n = GEMM_N
    for dtype in ("float64", "float32"):
        row = {"case": f"GEMM ceiling: matmul {n}^3 {dtype}", "unit": "device ms",
               "flop count": "2n^3"}
        a = ctx.astype(ctx.randn((n, n), 9), dtype)
        b = ctx.astype(ctx.randn((n, n), 10), dtype)
        ta, tb = ctx.to_torch(a), ctx.to_torch(b)
        xa, xb = ctx.to_cupy(a), ctx.to_cupy(b)
        if ta is not None:
            row["torch"], _ = measure(lambda: ctx.torch.matmul(ta, tb), ctx.torch_event, ctx.sync)
        if xa is not None:
            row["cupy"], _ = measure(lambda: xa @ xb, ctx.cp_event, ctx.sync)
        best = _faster_peer(row)
        if best:
            ctx.gemm[dtype] = 2 * n ** 3 / best * 1e3
            row["faster peer TFLOP/s"] = ctx.gemm[dtype] / 1e12
        row["peer calls"] = "torch.matmul (allow_tf32 off); cupy.matmul"
        rows.append(row)
        del a, b, ta, tb, xa, xb
        ctx.free()
        print(f"[{time.perf_counter() - started:6.1f} s] {row}", flush=True)


def crossover_cases():
    cases = []
    for op in ("solve", "cholesky"):
        for n in CROSSOVER_N:
            name, build = batched_case(op, BATCH, n, no_check=False, prefix="crossover: ")
            cases.append((name, op, n, build))
    return cases


def main_cases():
    cases = [dense_case(op, n, dtype) for op, n, dtype in DENSE]
    cases += [system_case(k) for k in ("lu", "solve", "cho_factor", "cholesky", "resolve",
                                       "refactor")]
    cases += [batched_case(op, batch, n) for op, batch, n in BATCHED]
    cases.append(batched_case("eigh", *EIGH_BATCHED, methods=("batched", "cusolver")))
    cases.append(host_case())
    return cases


COLUMNS = ["case", "unit", "accelmath", "torch", "cupy", "accelmath / faster peer", "check",
           "residual", "accelmath check=False", "torch no-check", "method=small",
           "method=batched", "method=cusolver", "accelmath TFLOP/s", "accelmath of GEMM ceiling",
           "faster peer TFLOP/s", "faster peer of GEMM ceiling", "flop count", "target",
           "peer calls"]
CROSSOVER_COLUMNS = ["op", "n", "method=small", "method=batched", "method=cusolver",
                     "accelmath", "torch", "cupy", "fastest method", "accelmath / fastest method",
                     "check", "residual"]


def parse_args(argv=None):
    parser = case_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--no-crossover", action="store_true",
                        help="skip the solvers-crossover table")
    return parser.parse_args(argv)


ALG = Missing("accelmath.linalg is not imported")


def main(argv=None):
    global ALG
    args = parse_args(argv)
    main_list = main_cases()
    crossover = [] if args.no_crossover else crossover_cases()
    if args.list:
        for name, _ in main_list:
            print(name, "" if selected(name, args) else "(skipped)")
        for name, *_ in crossover:
            print(name, "" if selected(name, args) else "(skipped)")
        return 0
    if no_gpu("solvers"):
        return 0
    ctx = Context()
    if ctx.xp is None:
        print("solvers: needs CuPy or torch with CUDA; neither is usable here.")
        return 0
    notes = []
    try:
        import accelmath.linalg as ALG
    except Exception as exc:
        notes.append(f"accelmath.linalg failed to import: {error_text(exc)}")
        ALG = Missing(f"accelmath.linalg failed to import: {error_text(exc)}")
    if ctx.cp is None:
        notes.append(f"CuPy missing ({ctx.cp_missing}): accelmath ran on torch tensors")
    if ctx.torch is None:
        notes.append("torch with CUDA missing: its columns are '-'")
    env = environment()
    started = time.perf_counter()
    rows = []
    try:
        gemm_ceiling(ctx, rows, started)
    except Exception as exc:
        notes.append(f"GEMM ceiling: {error_text(exc)}")
    for name, build in main_list:
        if selected(name, args):
            rows.append(run_case(ctx, name, build, notes, started))
    header = (
        "Device time per call, ms (CUDA events around calls back to back, the median of "
        "runs: 20 x 10 calls under 0.3 ms, 10 x 5 under 3 ms, 5 x 2 under 30 ms, else 3 x 1; "
        "over 1 s, one call), except the host-time row (us per call). accelmath and CuPy on "
        "the same CuPy arrays, torch on tensors of the same data. 'accelmath' is method="
        "'auto' with check=True and SciPy's check_finite=True (a factorization reads its "
        "finiteness flags back with its info codes; cho_solve and lu_solve read theirs back "
        "after the solve); 'accelmath check=False' reads nothing back (check=False, "
        "check_finite=False); 'torch no-check' is torch's _ex function without "
        "check_errors. The ratio divides accelmath by the faster of torch and CuPy. GEMM "
        f"ceiling: the faster of torch.matmul and cupy.matmul at {GEMM_N}^3 in this run "
        "(TF32 off); "
        "the fractions divide the flop rate, by the count named in 'flop count' (the "
        "tridiagonal and bidiagonal solvers of eigh and svd not counted), by it. 'check': the "
        "accelmath result (every variant) against float64 on the GPU: backward error "
        "||Ax-b||/(||A|| ||x||+||b||), reconstruction ||LL^T-A||, ||QR-A||, ||AV-VW||, "
        "||USV^H-A|| over ||A||, orthogonality ||Q^TQ-I||/sqrt(n), triangles, order; "
        f"tolerance 50 max(n, 8) eps. Data: SPD = MM^T/n + 0.1 I, general = N(0, 1).")
    failures = "\n".join(f"- {n}" for n in notes)
    print(write("solvers", env, rows, COLUMNS,
                header + ("\n\nNotes and failures:\n" + failures if notes else "")))
    notes.clear()
    xrows = []
    for name, op, n, build in crossover:
        if not selected(name, args):
            continue
        row = run_case(ctx, name, build, notes, started)
        row.update(op=op, n=n)
        methods = {m: row[m] for m in ("method=small", "method=batched", "method=cusolver")
                   if isinstance(row.get(m), float)}
        if methods:
            row["fastest method"] = min(methods, key=methods.get)
            if isinstance(row.get("accelmath"), float):
                row["accelmath / fastest method"] = row["accelmath"] / min(methods.values())
        xrows.append(row)
    if xrows:
        failures = "\n".join(f"- {n}" for n in notes)
        print(write("solvers-crossover", env, xrows, CROSSOVER_COLUMNS,
                    f"Batched float64 solve (b (batch, n, 1)) and cholesky, batch {BATCH}: device "
                    "ms per call of each accelmath method forced (small only for n <= "
                    f"{small_max()}), of method='auto' ('accelmath'), and of the peers; timed as "
                    "in the solvers table. 'check' covers every accelmath method."
                    + ("\n\nNotes and failures:\n" + failures if notes else "")))
    print(f"solvers: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

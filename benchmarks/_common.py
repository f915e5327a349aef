"""What every benchmark shares: the environment record, the choice of cases, timers, and the
result writers."""

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import statistics
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def case_parser(description):
    """An argument parser with the options that choose the cases: ``--only`` and ``--skip``
    (regexes on the case names) and ``--list``; a benchmark adds its own options."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", help="run only the cases whose name matches this regex")
    parser.add_argument("--skip", help="skip the cases whose name matches this regex")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    return parser


def error_text(exc):
    """``exc`` as one table cell: its type and message on one line, at most 300 characters."""
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ").replace("|", "/")
    return text[:300]


def selected(name, args):
    """Whether the case ``name`` runs under the parsed ``--only`` and ``--skip``."""
    return ((not args.only or re.search(args.only, name))
            and not (args.skip and re.search(args.skip, name)))


def environment():
    """Device name (the GPU's, else the CPU's), driver and library versions, the CPU, date:
    the header of every result file."""
    from accelmath._core.gpu import device

    gpus = device.devices()
    versions = {}
    for name in ("accelmath", "numpy", "scipy", "cupy-cuda13x", "cupy-cuda12x", "torch",
                 "nvmath-python", "cuda-bindings", "cuda-core", "jax"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    libs = {k: v.get("version") for k, v in device.library_info().items()}
    cpu = cpu_name()
    return {"device": gpus[0]["name"] if gpus else cpu, "driver": device.driver_version(),
            "python": platform.python_version(), "versions": versions, "libraries": libs,
            "cpu": cpu, "cpu_count": os.cpu_count(), "date": datetime.date.today().isoformat()}


def no_gpu(name):
    """True, after saying so, where there is no usable GPU: benchmark ``name`` then measures
    nothing."""
    from accelmath._core.gpu import device

    if device.gpu_available():
        return False
    print(f"{name}: needs a CUDA GPU ({device.gpu_unavailable_reason()}); nothing to measure.")
    return True


class Missing:
    """Stands for what could not be imported or made; using or calling it raises why."""

    def __init__(self, why):
        self.why = why

    def __getattr__(self, name):
        raise RuntimeError(self.why)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(self.why)


def live_bytes_hook(cupy):
    """A ``cupy.cuda.MemoryHook`` that tracks the bytes in use from the memory pool (every
    allocation and release, at the pool's rounded sizes) and their largest value."""

    class LiveBytes(cupy.cuda.MemoryHook):
        name = "LiveBytes"

        def __init__(self):
            self.used = self.peak = 0

        def malloc_postprocess(self, **kwargs):
            self.used += kwargs["mem_size"]
            self.peak = max(self.peak, self.used)

        def free_postprocess(self, **kwargs):
            self.used -= kwargs["mem_size"]

    return LiveBytes()


def byte_compile(*packages):
    """Byte-compile the installed packages named (those importable), as an installed package
    is, before fresh processes time a first call: a source tree on a machine that writes no
    bytecode (PYTHONDONTWRITEBYTECODE) would compile its modules again in each process."""
    import compileall
    import importlib.util

    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                compileall.compile_dir(folder, quiet=1)


def cpu_name():
    """The host CPU's model name (Linux: from /proc/cpuinfo), else the machine type."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def run_case(ctx, name, build, run_spec, notes, started):
    """One benchmark case: ``spec = build(ctx)``, then ``run_spec(ctx, name, spec, row,
    notes)`` fills the row; the spec's ``"cleanup"`` callables run after it whatever happens,
    then ``ctx.free()``. A failure lands in ``notes``; the row is printed and returned."""
    row = {"case": name, "unit": "device ms"}
    spec = None
    try:
        spec = build(ctx)
    except Exception as exc:
        notes.append(f"{name}: setup failed: {error_text(exc)}")
        row["check"] = "-"
    if spec is not None:
        try:
            run_spec(ctx, name, spec, row, notes)
        finally:
            for cleanup in spec.get("cleanup", ()):
                try:
                    cleanup()
                except Exception as exc:
                    notes.append(f"{name}: cleanup failed: {error_text(exc)}")
    del spec
    ctx.free()
    print(f"[{time.perf_counter() - started:6.1f} s] {row}", flush=True)
    return row


def host_times_us(cases, calls=2000, repeats=7, sync=None):
    """Host time of one call of each function of ``cases`` ({name: fn}), in us: the mean over
    a loop of ``calls`` calls, the best of ``repeats`` loops. The cases take turns loop by loop,
    so that a slow spell of the machine falls on all of them alike; the best loop is the one
    least disturbed by other processes. ``calls`` may be a dict of per-case counts."""
    counts = calls if isinstance(calls, dict) else dict.fromkeys(cases, calls)
    for fn in cases.values():
        for _ in range(50):
            fn()
    if sync:
        sync()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(repeats):
        for name, fn in cases.items():
            n = counts[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            end = time.perf_counter()
            if sync:
                sync()
            best[name] = min(best[name], (end - start) / n * 1e6)
    return best


# GPU clock cycles of a sleep enqueued before each timed run of a case whose calls take the
# host about as long as the device takes (about 2 ms): the device's time alone is timed
HEAD_START_CYCLES = 4_000_000


def head_start(torch):
    """A function that enqueues that sleep on torch's current stream."""
    return lambda: torch.cuda._sleep(HEAD_START_CYCLES)


def settle(fn):
    """Call ``fn`` once and wait for the compiles accelmath started in the background: on a
    new machine its FFT column kernel compiles while the first plans go without it, and the
    stateless cache drops those plans once it is compiled (on a thread of its own). What is
    timed after this is what a long-running process gets."""
    from accelmath._core.gpu.modules import wait_for_compiles
    from accelmath.fft._transform import wait_for_drops

    fn()
    wait_for_compiles()
    wait_for_drops()


def device_time_ms(fn, event_factory, repeats=30, warmup=5, calls=10):
    """Device time per call of ``fn``, in ms: ``calls`` calls back to back between two events
    on the current stream, the median of ``repeats`` such runs. Back to back, the device
    queue stays full after the first call, so the host time a call takes to enqueue its work
    does not show as idle device time (as it would around a single call)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = event_factory(), event_factory()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(_elapsed(start, end) / calls)
    return statistics.median(times)


def first_call_ms(fn, event_factory, sync):
    """Device ms of one call of ``fn`` (called before, or cheap to warm up in it), between
    two events after a sync."""
    sync()
    start, end = event_factory(), event_factory()
    start.record()
    fn()
    end.record()
    end.synchronize()
    return _elapsed(start, end)


def run_sizes(first):
    """``(calls, runs)``: how many calls back to back a timed run of a call that took
    ``first`` ms holds, and how many runs (or rounds) time it."""
    return (1, 3) if first > 30 else (2, 5) if first > 3 else (5, 10) if first > 0.3 else (10, 20)


def device_times_ms(cases, event_factory, rounds, calls, head_start=None):
    """Device time per call of each function of ``cases`` ({label: fn}), in ms, the cases
    timed in turn: in each of ``rounds`` rounds, each case runs ``calls[label]`` calls back
    to back between two events, and each case's median counts. A clock that drifts meanwhile
    (the GPU warming, its power limit) then moves every case alike. One untimed call is
    enqueued before each start event, so that the first timed call waits in a queue that is
    already busy, as later ones do: the host time of enqueueing it does not count.
    ``head_start``, where given, is called after that untimed call: it enqueues a delay on
    the timed stream (a sleep kernel), so that the host enqueues every timed call before the
    device reaches them, and calls whose host time nears their device time are timed by the
    device's work alone."""
    times = {label: [] for label in cases}
    for _ in range(rounds):
        for label, fn in cases.items():
            start, end = event_factory(label), event_factory(label)
            fn()
            if head_start is not None:
                head_start()
            start.record()
            for _ in range(calls[label]):
                fn()
            end.record()
            end.synchronize()
            times[label].append(_elapsed(start, end) / calls[label])
    return {label: statistics.median(ts) for label, ts in times.items()}


def _elapsed(start, end):
    if hasattr(start, "elapsed_time"):  # torch
        return start.elapsed_time(end)
    import cupy

    return cupy.cuda.get_elapsed_time(start, end)


def slug(name):
    return "".join(c if c.isalnum() else "-" for c in name).strip("-").lower()


def write(name, env, rows, columns, notes="", summary=None):
    """Write ``results/<name>-<device>.json`` and ``.md``; return the Markdown table.
    ``summary``, where given, tells ``accelmath bench`` which columns to compare (the JSON
    file's "summary": see ``accelmath/_benchmarks.py``)."""
    os.makedirs(RESULTS, exist_ok=True)
    base = os.path.join(RESULTS, f"{name}-{slug(env['device'])}")
    data = {"environment": env, "rows": rows}
    if summary:
        data["summary"] = summary
    with open(base + ".json", "w") as f:
        json.dump(data, f, indent=1)
    lines = [f"| {' | '.join(columns)} |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    v = env["versions"]
    header = (f"{env['device']}, driver {env['driver']}, {env['date']}; "
              + ", ".join(f"{k} {v[k]}" for k in sorted(v)))
    table = "\n".join(lines)
    with open(base + ".md", "w") as f:
        f.write(f"# {name}\n\n{header}\n\n{notes}\n\n{table}\n")
    return table


def _cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if value < 100 else f"{value:.0f}"
    return str(value)

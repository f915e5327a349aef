"""``accelmath bench``: run a clone's benchmarks, plot their results, print the summary table.

The benchmarks are the scripts of a clone's ``benchmarks/`` folder (next to the package source,
or given). Each runs in its own process and writes ``benchmarks/results/<name>-<device>.json``
(and ``.md``) through ``benchmarks/_common.write``; :mod:`accelmath._bench_results` reads
those files, draws a PNG plot beside each and takes the rows of the summary table.
"""

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

from accelmath._bench_results import (BENCHMARKS, owner, plot, pyplot_or_none, read_result,
                                      summary_rows, summary_table)

__all__ = ["bench", "discover", "find_benchmarks", "gpu_problem", "needs_gpu", "run"]


def find_benchmarks(folder=None):
    """The benchmarks folder: ``folder`` if given, else ``benchmarks/`` beside the package
    source (a clone); None where there is none (an installed copy).

    Examples
    --------
    >>> from accelmath._benchmarks import find_benchmarks
    >>> find_benchmarks("/nonexistent") is None
    True
    """
    if folder is not None:
        return Path(folder) if Path(folder).is_dir() else None
    path = Path(__file__).resolve().parents[1] / "benchmarks"
    return path if (path / "_common.py").is_file() else None


def discover(folder):
    """The benchmark scripts of ``folder`` by name (``fft`` for ``fft.py``), in the order of
    :data:`BENCHMARKS`, then the others by name; files starting with ``_`` are not scripts.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from accelmath._benchmarks import discover
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name in ("solvers.py", "cpu.py", "_common.py", "zeta.py"):
    ...     _ = (folder / name).write_text("")
    >>> list(discover(folder))
    ['cpu', 'solvers', 'zeta']
    """
    found = {p.stem: p for p in Path(folder).glob("*.py") if not p.name.startswith("_")}
    order = [name for name in BENCHMARKS if name in found]
    order += sorted(name for name in found if name not in BENCHMARKS)
    return {name: found[name] for name in order}


def gpu_problem():
    """Why this machine cannot run the GPU benchmarks, or None when it can.

    Examples
    --------
    >>> from accelmath._benchmarks import gpu_problem
    >>> gpu_problem() is None or isinstance(gpu_problem(), str)
    True
    """
    from accelmath._core.gpu import device

    if not device.gpu_available():
        return f"no usable GPU ({device.gpu_unavailable_reason()})"
    if device.library_info()["cufft"]["path"] is None:
        return "the CUDA libraries are not installed"
    return None


def needs_gpu(name, path):
    """Whether benchmark ``name`` needs a GPU: the table's word, else the script's own
    module-level ``NEEDS_GPU = False`` or ``True`` (read, not run), else True.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from accelmath._benchmarks import needs_gpu
    >>> script = Path(tempfile.mkdtemp()) / "toy.py"
    >>> _ = script.write_text("NEEDS_GPU = False")
    >>> needs_gpu("toy", script), needs_gpu("fft", script)
    (False, True)
    """
    if name in BENCHMARKS:
        return BENCHMARKS[name].needs_gpu
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return True
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and any(isinstance(t, ast.Name) and t.id == "NEEDS_GPU" for t in node.targets)):
            return bool(node.value.value)
    return True


def run(scripts, stream=None):
    """Run each script of ``scripts`` ({name: path}) in its own process, from its folder, with
    the package importable; its output goes to this process's. Return {name: exit status}.

    Examples
    --------
    >>> from accelmath._benchmarks import run
    >>> run({})
    {}
    """
    stream = sys.stdout if stream is None else stream
    package_root = str(Path(__file__).resolve().parents[1])
    statuses = {}
    for name, path in scripts.items():
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        stream.write(f"== {path.name}: running\n")
        stream.flush()
        start = time.perf_counter()
        status = subprocess.run([sys.executable, str(path)], cwd=path.parent, env=env,
                                stdin=subprocess.DEVNULL).returncode
        seconds = time.perf_counter() - start
        state = "done" if status == 0 else f"failed (exit status {status})"
        stream.write(f"== {path.name}: {state} in {seconds:.1f} s\n")
        stream.flush()
        statuses[name] = status
    return statuses


def bench(folder=None, only=(), skip=(), list_only=False, run_scripts=True, out=None):
    """What ``accelmath bench`` does; returns its exit status.

    Parameters
    ----------
    folder : str or os.PathLike, optional
        The benchmarks folder; ``benchmarks/`` beside the package source by default.
    only, skip : sequence of str
        Run only these benchmarks, or all but these (names as ``--list`` shows them).
    list_only : bool
        List the benchmarks and whether they run here, and stop.
    run_scripts : bool
        Run the benchmarks (else plot and summarize the result files already there).
    out : file, optional
        Where the report goes (``sys.stdout``).

    Returns
    -------
    int
        0 when every benchmark run succeeded, 1 when one failed, 2 without a benchmarks
        folder or with an unknown name.

    Examples
    --------
    >>> import io
    >>> from accelmath._benchmarks import bench
    >>> bench(folder="/nonexistent", out=io.StringIO())
    2
    """
    out = sys.stdout if out is None else out
    path = find_benchmarks(folder)
    if path is None:
        where = folder if folder is not None else "beside the package (an installed copy)"
        out.write(f"accelmath bench: no benchmarks folder {where}; the benchmarks come with a "
                  "clone of the repository (or give --benchmarks DIR)\n")
        return 2
    scripts = discover(path)
    unknown = [n for n in (*only, *skip) if n not in scripts]
    if unknown:
        out.write(f"accelmath bench: no benchmark named {', '.join(map(repr, unknown))} in "
                  f"{path}; there are {', '.join(scripts)}\n")
        return 2
    selected = {n: p for n, p in scripts.items() if (not only or n in only) and n not in skip}
    problem = gpu_problem() if any(needs_gpu(n, scripts[n]) for n in selected) else None
    runnable = {n: p for n, p in selected.items() if not (needs_gpu(n, scripts[n]) and problem)}
    if list_only:
        out.write(f"Benchmarks in {path}" + (f" (GPU: {problem})" if problem else "") + ":\n")
        for name in scripts:
            needs = "needs a GPU" if needs_gpu(name, scripts[name]) else "CPU or GPU"
            state = ("runs here" if name in runnable else
                     "not selected" if name not in selected else "skipped here: no GPU")
            out.write(f"  {name:<24} {needs:<12} {state}\n")
        return 0
    skipped = [f"{name}.py" for name in selected if name not in runnable]
    if skipped and run_scripts:
        out.write(f"skipped, needing a GPU: {', '.join(skipped)} ({problem})\n")
    start = time.time()
    statuses = run(runnable, out) if run_scripts else {}
    chosen = runnable if run_scripts else selected
    results = [r for r in map(read_result, sorted((path / "results").glob("*.json")))
               if r is not None and owner(r.name, scripts) in chosen
               and (not run_scripts or r.path.stat().st_mtime >= start - 1)]
    order = list(scripts)
    results.sort(key=lambda r: (order.index(owner(r.name, scripts)), r.name, r.device))
    pyplot = pyplot_or_none(out) if results else None
    for result in results:
        if pyplot is not None:
            png = plot(result, pyplot)
            if png is not None:
                out.write(f"plot: {png}\n")
    rows = [row for result in results for row in summary_rows(result)]
    if rows:
        out.write("\n" + summary_table(rows) + "\n\nFrom:\n")
        for result in results:
            env = result.environment
            versions = env.get("versions") or {}
            version = f", accelmath {versions['accelmath']}" if "accelmath" in versions else ""
            out.write(f"  {result.path.name}: {result.device}, {env.get('date', '?')}{version}\n")
    elif results:
        out.write("no case here sets accelmath beside a peer: see the plots and the .md files\n")
    else:
        out.write("no result files to summarize\n")
    return 1 if any(statuses.values()) else 0

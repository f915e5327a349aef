"""`accelmath info` reports the installation, and exits 0 with or without a GPU or CUDA wheels;
`accelmath cache` shows and clears the on-disk store; `accelmath demo` and `accelmath bench`
explain their options, and the bench runner runs, plots and summarizes a benchmarks folder."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelmath.__main__ import main

REPO = Path(__file__).resolve().parents[1]


def _python(*args, env=None, cwd=REPO):
    """Run ``python ...`` (from the repository root unless told), the package importable."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=environment, cwd=cwd, stdin=subprocess.DEVNULL, timeout=120)


def _run(*args, env=None, cwd=REPO):
    """Run ``python -m accelmath ...``."""
    return _python("-m", "accelmath", *args, env=env, cwd=cwd)


def test_info_in_process(capsys):
    from accelmath import __version__

    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"accelmath {__version__}\n")
    assert f"Python {sys.version_info.major}.{sys.version_info.minor}" in out
    assert "CUDA driver: " in out
    assert "CUDA libraries:" in out and "cufft" in out and "nvJitLink" in out
    assert "Array packages:" in out and "numpy" in out and "cuda-pathfinder" in out
    assert "Cache directory: " in out and "\nStore: " in out


def test_info_reports_no_gpu_plainly(capsys):
    from accelmath._core.gpu.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    main(["info"])
    assert "GPU: none found (" in capsys.readouterr().out


@pytest.mark.gpu
def test_info_lists_the_gpus(capsys):
    main(["info"])
    assert "GPU 0: " in capsys.readouterr().out


def test_info_does_not_import_array_packages():
    code = ("import sys; from accelmath.__main__ import main; main(['info']); "
            "print(sorted(m for m in ('cupy', 'torch', 'jax') if m in sys.modules))")
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_info_as_a_module():
    result = _run("info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("accelmath ")
    assert any(line.startswith("GPU") for line in lines)
    assert any(line.startswith("CUDA driver: ") for line in lines)
    assert any(line.startswith("Cache directory: ") for line in lines)
    assert any(line.startswith("Library calls: ") for line in lines)


def test_info_reports_ctypes_calls_when_the_shim_is_off():
    result = _run("info", env={"ACCELMATH_HOSTCALL": "0"})
    assert result.returncode == 0, result.stderr
    assert "Library calls: ctypes (ACCELMATH_HOSTCALL=0)" in result.stdout


def test_info_reports_the_cache_directory_from_the_environment(tmp_path):
    result = _run("info", env={"ACCELMATH_CACHE_DIR": str(tmp_path), "ACCELMATH_CACHE": "0"})
    assert result.returncode == 0, result.stderr
    assert f"Cache directory: {tmp_path}\nStore: off (ACCELMATH_CACHE=0)\n" in result.stdout


def test_info_reports_the_default_cache_directory(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("ACCELMATH_CACHE_DIR", raising=False)
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    main(["info"])
    out = capsys.readouterr().out
    if sys.platform.startswith("linux"):
        assert f"Cache directory: {tmp_path / 'accelmath'}\nStore: on, 0 entries, 0.0 MB\n" in out
    else:
        assert "Store: on, 0 entries, 0.0 MB" in out


@pytest.fixture
def store_dir(tmp_path, monkeypatch):
    """A store of this test's own, holding three entries (1.5 MB)."""
    from accelmath._core.disk import store

    directory = tmp_path / "store"
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(directory))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    store.save("nvrtc", "a", b"x" * 1_000_000)
    store.save("nvrtc", "b", b"y" * 500_000)
    store.save_json("timing", "c", {"choice": 1})
    return directory


def test_info_reports_what_the_store_holds(store_dir, capsys):
    main(["info"])
    out = capsys.readouterr().out
    assert f"Cache directory: {store_dir}\nStore: on, 3 entries, 1.5 MB\n" in out


@pytest.mark.parametrize("argv", [["cache"], ["cache", "info"]])
def test_cache_info(store_dir, capsys, argv):
    assert main(argv) == 0
    assert capsys.readouterr().out == f"Cache directory: {store_dir}\nStore: on, 3 entries, 1.5 MB\n"


def test_cache_clear(store_dir, capsys):
    from accelmath._core.disk import store, upkeep

    (store_dir / "not-ours.txt").write_text("kept")
    entries = sorted(store_dir.glob("*/*.entry"))
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert sorted(out.splitlines()[:3]) == [f"removed {path}" for path in entries]
    assert out.splitlines()[3] == f"Removed 3 entries (1.5 MB) from {store_dir}"
    assert upkeep.size() == (0, 0) and store.load("nvrtc", "a") is None
    assert (store_dir / "not-ours.txt").read_text() == "kept"
    main(["cache", "clear"])
    assert capsys.readouterr().out.startswith("Removed 0 entries (0.0 MB)")
    main(["cache"])
    assert "Store: on, 0 entries, 0.0 MB" in capsys.readouterr().out


def test_cache_clear_says_what_it_could_not_clear(store_dir, capsys, monkeypatch):
    """A namespace folder that cannot be listed (mode 000 for another user; simulated, as
    root lists any): its entries stay, and the command says so and exits 1."""
    import os as _os

    from accelmath._core.disk import upkeep

    real = _os.scandir

    def scandir(path="."):
        if _os.path.basename(_os.fspath(path)) == "nvrtc":
            raise PermissionError(13, "Permission denied", _os.fspath(path))
        return real(path)

    monkeypatch.setattr(upkeep.os, "scandir", scandir)
    assert main(["cache", "clear"]) == 1
    captured = capsys.readouterr()
    assert "Removed 1 entry" in captured.out
    assert f"{store_dir / 'nvrtc'} could not be cleared" in captured.err
    monkeypatch.setattr(upkeep.os, "scandir", real)
    assert upkeep.size().entries == 2  # (the two of the folder it could not list)


def test_cache_clear_as_a_module(store_dir):
    result = _run("cache", "clear", env={"ACCELMATH_CACHE_DIR": str(store_dir)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(f"Removed 3 entries (1.5 MB) from {store_dir}\n")


def test_cache_clear_with_the_store_off(store_dir, capsys, monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE", "off")
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == "Nothing to clear: the store is off (ACCELMATH_CACHE=off)\n"
    monkeypatch.delenv("ACCELMATH_CACHE")
    main(["cache"])
    assert "3 entries" in capsys.readouterr().out  # nothing was removed


def test_an_unusable_store_is_explained(tmp_path, capsys, monkeypatch, recwarn):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(blocker / "store"))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    main(["info"])
    problem = f"cannot create '{blocker / 'store'}': '{blocker}' is not a directory"
    assert f"Store: not usable: {problem}\n" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 1
    assert capsys.readouterr().err == f"accelmath cache clear: the store is not usable: {problem}\n"
    assert not [w for w in recwarn if "store" in str(w.message)]  # printed, not warned


def test_a_store_that_cannot_be_written_is_still_read_and_cleared(store_dir, capsys,
                                                                  monkeypatch):
    # (reported "not usable" and left uncleared before, though every load still read it;
    # os.access is what says so: this test may run as root, whom a mode never stops)
    from accelmath._core.disk import store

    real_access = os.access
    monkeypatch.setattr(store.os, "access", lambda path, mode: (
        False if mode & os.W_OK else real_access(path, mode)))
    assert main(["cache"]) == 0
    assert capsys.readouterr().out.endswith(
        f"Store: on, 3 entries, 1.5 MB; read only: cannot write in '{store_dir}': no "
        f"permission\n")
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.endswith(f"Removed 3 entries (1.5 MB) from {store_dir}\n")


def test_a_store_whose_save_failed_is_still_reported_read(store_dir, capsys, monkeypatch):
    # (a failed save's report once made every later question say "not usable")
    from accelmath._core.disk import store

    monkeypatch.setattr(store, "_warned", {})
    real_access = os.access
    monkeypatch.setattr(store.os, "access", lambda path, mode: (
        False if mode & os.W_OK else real_access(path, mode)))
    reason = f"cannot write in '{store_dir}': no permission"
    with pytest.warns(RuntimeWarning, match="store is not used"):
        store._report(store_dir, reason)
    assert main(["cache"]) == 0
    assert capsys.readouterr().out.endswith(f"Store: on, 3 entries, 1.5 MB; read only: {reason}\n")


def test_cache_creates_nothing(tmp_path, capsys, monkeypatch):
    directory = tmp_path / "new" / "store"
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(directory))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    assert main(["cache"]) == 0
    assert capsys.readouterr().out == f"Cache directory: {directory}\nStore: on, 0 entries, 0.0 MB\n"
    assert main(["cache", "clear"]) == 0
    assert not (tmp_path / "new").exists()


def test_cache_clear_refuses_a_directory_that_is_not_the_stores(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    (home / "timing").mkdir(parents=True, mode=0o700)
    (home / "timing" / ("0" * 64 + ".entry")).write_text("a user's file")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(home))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    assert main(["cache", "clear"]) == 1
    err = capsys.readouterr().err
    assert "does not carry accelmath's store marker" in err and "nothing was removed" in err
    assert (home / "timing" / ("0" * 64 + ".entry")).read_text() == "a user's file"


def test_cache_clear_of_an_empty_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    (tmp_path / "theirs.entry").write_text("a user's file")
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"Removed 0 entries (0.0 MB) from {tmp_path}\n"
    assert (tmp_path / "theirs.entry").exists() and not (tmp_path / ".accelmath-store").exists()


@pytest.mark.parametrize("argv", [["info"], ["cache"], ["cache", "clear"]])
def test_an_unreadable_parent_prints_no_traceback(tmp_path, argv, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "store").mkdir(mode=0o700)
    if os.geteuid() == 0:
        pytest.skip("permissions do not stop root")
    locked.chmod(0)
    try:
        result = _run(*argv, env={"ACCELMATH_CACHE_DIR": str(locked / "store")})
    finally:
        locked.chmod(0o700)
    assert "Traceback" not in result.stderr
    assert "Permission denied" in result.stdout + result.stderr


@pytest.mark.parametrize("argv", [["info"], ["cache"], ["cache", "clear"]])
def test_a_parent_that_cannot_be_searched_prints_no_traceback(tmp_path, argv, capsys,
                                                              monkeypatch, recwarn):
    from accelmath._core.disk import private_files

    directory = tmp_path / "locked" / "store"
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(directory))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    monkeypatch.setattr("accelmath._core.disk.store._warned", {})

    def denied(path, follow=True):  # what a parent without permission gives, even to root
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(private_files, "distrust", denied)
    status = main(argv)
    captured = capsys.readouterr()
    assert f"cannot read '{directory}': Permission denied" in captured.out + captured.err
    assert status == (1 if argv == ["cache", "clear"] else 0)


def test_a_relative_directory_is_reported_as_absolute(tmp_path):
    result = _run("cache", env={"ACCELMATH_CACHE_DIR": "relative-store"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (f"Cache directory: {tmp_path / 'relative-store'} (ACCELMATH_CACHE_DIR="
            f"'relative-store', relative: taken against the working directory at start)"
            in result.stdout)


def test_cache_with_an_unknown_action(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["cache", "empty"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'empty'" in capsys.readouterr().err


def _repeated(lines):
    """The non-blank lines that appear more than once."""
    seen = [line for line in lines if line.strip()]
    return sorted({line for line in seen if seen.count(line) > 1})


def _library_block(out):
    """The lines of the report's CUDA libraries section, up to the blank line that ends it."""
    lines = out.splitlines()
    start = lines.index("CUDA libraries:")
    return lines[start + 1:lines.index("", start)]


def _assert_install_advice(out):
    """The advice works from a clone (no index serves accelmath) and says when none is needed."""
    assert 'pip install ".[cu12]"' in out and 'pip install ".[cu13]"' in out
    assert "accelmath[cu" not in out
    assert "torch or CuPy already brought them" in out and "nothing extra is needed" in out


def test_info_with_the_libraries_missing(monkeypatch, capsys):
    from accelmath.bindings import _loader
    from accelmath.errors import LibraryNotFoundError

    def fail(name):
        raise LibraryNotFoundError(name, "hidden by the test")

    monkeypatch.setattr(_loader, "load_library", fail)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    # each library on its line; the reason the six share, once
    block = _library_block(out)
    names = ("cufft", "cublas", "cublasLt", "cusolver", "nvrtc", "nvJitLink")
    assert block[:6] == [f"  {name:<10} not found" for name in names]
    assert out.count("hidden by the test") == 1
    assert "  (none found: hidden by the test)" in block
    assert "What runs here:" in out and "host arrays (NumPy, CPU torch and JAX, lists): yes" in out
    _assert_install_advice(out)
    assert _repeated(out.splitlines()) == []


# What cuda-pathfinder 1.9 raises on a machine without the CUDA wheels: the files it looked for,
# said twice, and a newline; for cuBLAS and cuSOLVER, the library they need.
_PATHFINDER_MISSES = {
    "cufft": "libcufft.so.12 or libcufft.so.11",
    "cublas": "libcublasLt.so.13 or libcublasLt.so.12",
    "cublasLt": "libcublasLt.so.13 or libcublasLt.so.12",
    "cusolver": "libnvJitLink.so.13 or libnvJitLink.so.12",
    "nvrtc": "libnvrtc.so.13 or libnvrtc.so.12",
    "nvJitLink": "libnvJitLink.so.13 or libnvJitLink.so.12"}


def test_info_on_a_cpu_install_says_each_line_once(monkeypatch, capsys):
    from cuda import pathfinder

    from accelmath.bindings import _loader

    def not_found(name):
        files = _PATHFINDER_MISSES[name]
        raise pathfinder.DynamicLibNotFoundError(
            f'Failure finding "{files}": No such file: {files}, No such file: {files}\n')

    monkeypatch.setattr(pathfinder, "load_nvidia_dynamic_lib", not_found)
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(_loader, "_memo", None)  # where an earlier test found them
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert _repeated(out.splitlines()) == []
    block = _library_block(out)
    assert "No such file" not in "\n".join(block)
    assert block[:6] == [
        "  cufft      not found (looked for libcufft.so.12 or libcufft.so.11)",
        "  cublas     not found (needs libcublasLt.so.13 or libcublasLt.so.12, not found)",
        "  cublasLt   not found (looked for libcublasLt.so.13 or libcublasLt.so.12)",
        "  cusolver   not found (needs libnvJitLink.so.13 or libnvJitLink.so.12, not found)",
        "  nvrtc      not found (looked for libnvrtc.so.13 or libnvrtc.so.12)",
        "  nvJitLink  not found (looked for libnvJitLink.so.13 or libnvJitLink.so.12)"]
    _assert_install_advice("\n".join(block[6:]))


def test_info_says_where_each_library_was_found():
    from accelmath.__main__ import _library_lines

    libraries = {
        "cufft": {"path": "/site/nvidia/cufft/lib/libcufft.so.11", "version": 11401,
                  "error": None},
        "cublas": {"path": "/opt/cuda/lib64/libcublas.so.12", "version": None,
                   "error": "version unknown: OSError: no symbol"},
        "nvrtc": {"path": None, "version": None, "error": "not found: cuda-pathfinder is not "
                                                         "installed (no module), no module"},
    }
    lines = _library_lines(libraries)
    assert lines[:4] == [
        "CUDA libraries:",
        "  cufft      11.4.1   found at /site/nvidia/cufft/lib/libcufft.so.11",
        "  cublas     found at /opt/cuda/lib64/libcublas.so.12 (version unknown: OSError: no "
        "symbol)",
        "  nvrtc      not found (cuda-pathfinder is not installed (no module), no module)"]
    _assert_install_advice("\n".join(lines[4:]))
    found = {name: entry for name, entry in libraries.items() if entry["path"]}
    assert _library_lines(found) == lines[:3]  # nothing missing: no advice


def test_info_without_cuda_pathfinder():
    # As on a machine without the CUDA wheels: cuda.pathfinder cannot be imported, and the
    # store remembers no library.
    code = ("import os, sys; os.environ['ACCELMATH_CACHE'] = '0'; "
            "sys.modules['cuda.pathfinder'] = None; "
            "from accelmath.__main__ import main; sys.exit(main(['info']))")
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr
    block = _library_block(result.stdout)
    assert block[0] == "  cufft      not found" and block[5] == "  nvJitLink  not found"
    assert block[6].startswith("  (none found: cuda-pathfinder is not installed")
    assert result.stdout.count("cuda-pathfinder is not installed") == 1
    _assert_install_advice(result.stdout)
    assert _repeated(result.stdout.splitlines()) == []


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "usage: accelmath" in capsys.readouterr().err


@pytest.mark.parametrize("name,version,text", [
    ("cufft", 11401, "11.4.1"), ("cufft", 12000, "12.0.0"), ("cusolver", 11705, "11.7.5"),
    ("cublas", 120903, "12.9.3"), ("cublasLt", 130100, "13.1.0"), ("nvrtc", (12, 9), "12.9"),
    ("nvJitLink", (13, 0), "13.0")])
def test_library_versions_read_as_major_minor_patch(name, version, text):
    from accelmath.__main__ import _format_version

    assert _format_version(name, version) == text


# accelmath demo and accelmath bench: the options, and the runner on a benchmarks folder of
# the test's own (tiny scripts that write result files), so nothing real is measured.

def test_demo_help_explains_the_options():
    result = _run("demo", "--help")
    assert result.returncode == 0, result.stderr
    for option in ("--size", "--device", "--output", "--seed", "auto", "cuda", "4088", "1024",
                   "accelmath-demo.png"):
        assert option in result.stdout


def test_demo_refuses_a_bad_option_value():
    for args in (["--size", "0"], ["--size", "x"], ["--device", "tpu"]):
        result = _run("demo", *args)
        assert result.returncode == 2 and "usage: accelmath demo" in result.stderr


def test_demo_on_cuda_without_a_gpu_is_one_clear_line(tmp_path):
    from accelmath._core.gpu.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    result = _run("demo", "--device", "cuda", "--output", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.startswith("accelmath demo: --device cuda cannot run here: no usable GPU")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def _demo_run(capsys, *options):
    """``accelmath demo`` on the CPU, in this process: ``(status, report printed, progress)``."""
    status = main(["demo", "--device", "cpu", *options])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _is_png(path):
    import matplotlib.image

    return path.is_file() and matplotlib.image.imread(path, format="png").ndim == 3


@pytest.mark.parametrize("output,written", [
    ("x.png", "x.png"),  # a file name: that file, not a folder of that name
    ("figures/run 1.png", "figures/run 1.png"),  # its folder made
    ("existing", "existing/accelmath-demo.png"),  # an existing folder: the figure inside
])
def test_demo_output_is_the_figures_file(tmp_path, monkeypatch, capsys, output, written):
    from accelmath.subtraction._demo import FIGURE

    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing").mkdir()
    # (256 x 256 and this seed: fast, though too crowded a field for the checks to pass)
    _, out, _ = _demo_run(capsys, "--size", "256", "--seed", "3", "--output", output)
    assert f"figure: {tmp_path / written}\n" in out
    assert _is_png(tmp_path / written)
    assert not (tmp_path / FIGURE).exists() and not (tmp_path / "x.png").is_dir()


def test_demo_without_options_prints_its_seed_and_writes_into_the_working_directory(
        tmp_path, monkeypatch, capsys):
    import re

    monkeypatch.chdir(tmp_path)
    status, out, progress = _demo_run(capsys, "--size", "512")
    seed = re.search(r", seed (\d+) \(repeat with --seed \1\); ", out)
    assert seed, out
    assert progress.splitlines()[0].startswith(f"[1/6] making a 512 x 512 star-field pair, "
                                               f"seed {seed.group(1)}: ")
    assert _is_png(tmp_path / "accelmath-demo.png")
    assert os.listdir(tmp_path) == ["accelmath-demo.png"]
    assert status == 0 and out.endswith("checks: passed\n")


def test_bench_help_explains_the_options():
    result = _run("bench", "--help")
    assert result.returncode == 0, result.stderr
    for option in ("--benchmarks", "--only", "--skip", "--list", "--no-run", "matplotlib"):
        assert option in result.stdout


def test_bench_lists_the_clones_benchmarks():
    result = _run("bench", "--list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Benchmarks in {REPO / 'benchmarks'}")
    cpu = next(line for line in lines if line.split()[0] == "cpu")
    assert "CPU or GPU" in cpu and "runs here" in cpu
    fft = next(line for line in lines if line.split()[0] == "fft")
    assert "needs a GPU" in fft


# A benchmark script that writes one result file of random numbers, given in its source.
_TOY = """NEEDS_GPU = False
import json, os
rows = {rows!r}
os.makedirs("results", exist_ok=True)
env = {{"device": "Test Machine 9", "date": "2026-01-02", "versions": {{"accelmath": "0.0.1"}}}}
with open(os.path.join("results", "toy-test-machine-9.json"), "w") as f:
    json.dump({{"environment": env, "rows": rows}}, f)
print("toy ran")
"""


@pytest.fixture
def bench_dir(tmp_path):
    """A benchmarks folder: toy.py (CPU, writes a result), broken.py (CPU, exits 3) and
    gpuonly.py (declares nothing: needs a GPU); returns (folder, toy's rows)."""
    import random

    rows = [{"case": f"case {i}", "accelmath fast": random.uniform(1, 9),
             "torch": random.uniform(1, 9), "numpy": random.uniform(1, 9),
             "raw floor": 0.5, "accelmath fast / torch": 1.0} for i in range(3)]
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "toy.py").write_text(_TOY.format(rows=rows))
    (folder / "broken.py").write_text("NEEDS_GPU = False\nimport sys\nsys.exit(3)\n")
    (folder / "gpuonly.py").write_text("raise SystemExit('not here')\n")
    (folder / "_helper.py").write_text("")
    return folder, rows


def _cell(value):
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _png_size(path):
    """``(width, height)`` of a PNG file, as matplotlib reads it."""
    import matplotlib.image

    height, width = matplotlib.image.imread(path, format="png").shape[:2]
    return width, height


def test_bench_runs_plots_and_summarizes(bench_dir):
    folder, rows = bench_dir
    result = _run("bench", "--benchmarks", str(folder), "--only", "toy")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "== toy.py: running" in out and "toy ran" in out and "== toy.py: done in " in out
    assert "broken" not in out
    png = folder / "results" / "toy-test-machine-9.png"
    assert f"plot: {png}" in out
    width, height = _png_size(png)
    assert width > 100 and height > 100
    assert "| benchmark | case | unit | accelmath | best peer | accelmath / best peer |" in out
    for row in rows:
        peer = min(("torch", "numpy"), key=lambda name: row[name])
        ratio = row["accelmath fast"] / row[peer]
        line = (f"| toy (Test Machine 9) | {row['case']} | - | {_cell(row['accelmath fast'])} "
                f"(fast) | {_cell(row[peer])} ({peer}) | {_cell(ratio)} |")
        assert line in out
    assert "toy-test-machine-9.json: Test Machine 9, 2026-01-02, accelmath 0.0.1" in out


def test_bench_reports_a_failing_benchmark(bench_dir):
    folder, _ = bench_dir
    result = _run("bench", "--benchmarks", str(folder), "--skip", "toy,gpuonly")
    assert result.returncode == 1
    assert "== broken.py: failed (exit status 3)" in result.stdout
    assert "no result files to summarize" in result.stdout


def test_bench_lists_a_folder(bench_dir):
    from accelmath._core.gpu.device import gpu_available

    folder, _ = bench_dir
    result = _run("bench", "--list", "--benchmarks", str(folder), "--skip", "broken")
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert sorted(lines) == ["broken", "gpuonly", "toy"]
    assert "CPU or GPU" in lines["toy"] and "runs here" in lines["toy"]
    assert "not selected" in lines["broken"]
    assert "needs a GPU" in lines["gpuonly"]
    assert ("runs here" if gpu_available() else "skipped here: no GPU") in lines["gpuonly"]
    assert not (folder / "results").exists()  # listing runs nothing


def test_bench_skips_what_needs_a_gpu_without_one(bench_dir):
    from accelmath._core.gpu.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    folder, _ = bench_dir
    result = _run("bench", "--benchmarks", str(folder), "--only", "gpuonly")
    assert result.returncode == 0, result.stderr
    assert "skipped, needing a GPU: gpuonly.py (no usable GPU" in result.stdout
    assert "== gpuonly.py: running" not in result.stdout


def test_bench_with_an_unknown_name(bench_dir, capsys):
    folder, _ = bench_dir
    assert main(["bench", "--benchmarks", str(folder), "--only", "toy,nothing"]) == 2
    assert "no benchmark named 'nothing'" in capsys.readouterr().out


def test_bench_without_a_benchmarks_folder(tmp_path, monkeypatch, capsys):
    from accelmath import _benchmarks

    assert main(["bench", "--benchmarks", str(tmp_path / "none")]) == 2
    assert f"no benchmarks folder {tmp_path / 'none'}" in capsys.readouterr().out
    # an installed copy: no benchmarks/ beside the package
    monkeypatch.setattr(_benchmarks, "__file__", str(tmp_path / "site" / "accelmath" / "x.py"))
    assert main(["bench"]) == 2
    assert "an installed copy" in capsys.readouterr().out


def test_bench_without_matplotlib_still_summarizes(bench_dir, monkeypatch, capsys):
    folder, rows = bench_dir
    assert _run("bench", "--benchmarks", str(folder), "--only", "toy").returncode == 0
    (folder / "results" / "toy-test-machine-9.png").unlink()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["bench", "--benchmarks", str(folder), "--only", "toy", "--no-run"]) == 0
    out = capsys.readouterr().out
    assert 'matplotlib is not installed (pip install ".[bench]"): no plots' in out
    assert f"| toy (Test Machine 9) | {rows[0]['case']} |" in out
    assert not (folder / "results" / "toy-test-machine-9.png").exists()


def test_bench_copes_with_every_result_file_of_the_clone(tmp_path):
    import json
    import shutil

    from accelmath._bench_results import BENCHMARKS

    folder = tmp_path / "benchmarks"
    shutil.copytree(REPO / "benchmarks", folder,
                    ignore=shutil.ignore_patterns("*.png", "__pycache__"))
    files = sorted((folder / "results").glob("*.json"))
    result = _run("bench", "--benchmarks", str(folder), "--no-run")
    assert result.returncode == 0, result.stdout + result.stderr
    for path in files:  # each one drawn (none is without a number)
        assert path.with_suffix(".png").exists(), path.name
        assert f"  {path.name}: " in result.stdout
    # a row of the table, against the numbers in its file
    for path in files:
        data = json.loads(path.read_text())
        if not path.name.startswith("fft-large-"):
            continue
        comparison, = BENCHMARKS["fft"].results["fft-large"]
        row = data["rows"][0]
        peers = [p for p in comparison.peers if p in row]
        best = min(peers, key=lambda p: row[p])
        ratio = row["accelmath stateless"] / row[best]
        assert (f"| fft-large ({data['environment']['device']}) | {row['case']} | device ms | "
                f"{_cell(row['accelmath stateless'])} (stateless) | {_cell(row[best])} ({best}) | "
                f"{_cell(ratio)} |") in result.stdout


def _result(name, rows, summary=()):
    from accelmath._bench_results import Result

    return Result(name, "Test GPU", {"date": "2026-01-02"}, rows, list(summary),
                  Path(f"/nonexistent/{name}-test-gpu.json"))


def test_the_summary_of_rows_per_contender():
    # image-subtraction's shape: a row per (size, code), several metrics per row
    import random

    from accelmath._bench_results import summary_rows

    rows = []
    for size in (1024, 4088):
        for code in ("accelmath", "published"):
            rows.append({"size": size, "code": code, "warm ms": random.uniform(1, 300),
                         "first call s (empty store)": random.uniform(0.1, 20),
                         "pool peak GB": random.uniform(1, 30), "ratio": 1.3})
            if code == "published":
                rows[-1]["warm core ms"] = random.uniform(1, 300)
    del rows[2]["pool peak GB"]  # a number missing: its case is left out
    found = {(row.case, row.unit): row for row in summary_rows(_result("image-subtraction", rows))}
    assert len(found) == 5
    for size, ours, theirs in ((1024, rows[0], rows[1]), (4088, rows[2], rows[3])):
        row = found[(f"size {size}, warm", "ms")]
        best = min(theirs["warm ms"], theirs["warm core ms"])
        way = "warm ms" if best == theirs["warm ms"] else "warm core ms"
        assert (row.accelmath, row.peer, row.peer_name) == (ours["warm ms"], best,
                                                             f"published {way}")
        assert row.ratio == pytest.approx(ours["warm ms"] / best)
        row = found[(f"size {size}, first call, empty store", "s")]
        assert row.ratio == pytest.approx(ours["first call s (empty store)"]
                                          / theirs["first call s (empty store)"])
    assert found[("size 1024, GPU memory pool peak", "GB")].ratio == pytest.approx(
        rows[0]["pool peak GB"] / rows[1]["pool peak GB"])


def test_the_summary_by_shared_metric_and_by_declaration():
    from accelmath._bench_results import summary_rows

    rows = [{"case": "4088^2", "accelmath warm ms": 30.0, "sfft warm ms": 289.0,
             "torch warm ms": 120.0, "accelmath peak GB": 3.5, "sfft peak GB": 25.7,
             "speed-up": 9.6, "accelmath warm ms / sfft": 0.1}]
    found = summary_rows(_result("new-benchmark", rows))
    assert [(r.case, r.unit, r.accelmath, r.peer, r.peer_name) for r in found] == [
        ("4088^2, warm", "ms", 30.0, 120.0, "torch warm ms"),
        ("4088^2, peak", "GB", 3.5, 25.7, "sfft peak GB")]
    declared = [{"accelmath": "accelmath peak GB", "peers": ["sfft peak GB"], "unit": "GB",
                 "label": "memory"}]
    row, = summary_rows(_result("new-benchmark", rows, declared))
    assert (row.case, row.unit, row.ratio) == ("4088^2, memory", "GB", 3.5 / 25.7)


def test_result_files_belong_to_their_scripts(tmp_path):
    from accelmath._bench_results import owner, read_result
    from accelmath._benchmarks import discover

    for name in ("fft", "image_subtraction", "image_subtraction_many", "solvers", "toy_thing"):
        (tmp_path / f"{name}.py").write_text("")
    scripts = discover(tmp_path)
    owners = {name: owner(name, scripts) for name in (
        "fft-large", "image-subtraction", "image_subtraction_many", "solvers-crossover",
        "toy_thing", "toy-thing-extra", "unknown")}
    assert owners == {"fft-large": "fft", "image-subtraction": "image_subtraction",
                      "image_subtraction_many": "image_subtraction_many",
                      "solvers-crossover": "solvers", "toy_thing": "toy_thing",
                      "toy-thing-extra": "toy_thing", "unknown": None}
    path = tmp_path / "fft-large-nvidia-h100-80gb-hbm3.json"
    path.write_text('{"environment": {"device": "NVIDIA H100 80GB HBM3"}, "rows": []}')
    assert read_result(path).name == "fft-large"
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert read_result(tmp_path / "bad.json") is None


def test_the_parser_loads_no_subtraction():
    # (every command builds the whole parser: the subtract command's must stay cheap)
    import subprocess
    import sys

    code = ("import sys, accelmath.__main__ as m; m._parser(); "
            "print('accelmath.subtraction._subtractor' in sys.modules, "
            "'accelmath.linalg' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]


def test_command_line_mistakes_get_one_line_each(tmp_path, capsys):
    """A negative demo seed, a GPU list that is none, a scheduler address that is none: one
    line each, no traceback."""
    assert main(["demo", "--seed", "-5", "--size", "192", "--device", "cpu"]) == 1
    assert "seed=-5: a seed is a whole number" in capsys.readouterr().err
    assert main(["demo", "--size", "99999999999999999999999", "--device", "cpu"]) == 1
    assert "at most 16384 x 16384 pixels" in capsys.readouterr().err
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    assert main(["subtract", "--pairs", str(fifo), "--out-dir", str(tmp_path)]) != 0
    assert "is not a regular file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["subtract", "a.fits", "b.fits", "-o", "c.fits", "--gpus", "a"])
    assert info.value.code == 2 and "invalid GPU list" in capsys.readouterr().err
    pytest.importorskip("distributed")
    manifest = tmp_path / "pairs.csv"
    manifest.write_text("reference,science\na.fits,b.fits\n")
    assert main(["subtract", "--pairs", str(manifest), "--out-dir", str(tmp_path / "out"),
                 "--scheduler", "foo"]) == 1
    err = capsys.readouterr().err
    assert "scheduler='foo': no Dask scheduler reached there" in err
    assert "Traceback" not in err


def test_output_to_a_reader_that_leaves_is_no_traceback():
    """``accelmath bench --list | head -1``: the pipe's reader leaves before the output ends
    (here, before it begins: a pipe whose reading end is closed)."""
    code = ("import os, sys\n"
            "r, w = os.pipe()\n"
            "os.close(r)\n"
            "os.dup2(w, 1)\n"
            "from accelmath.__main__ import main\n"
            "sys.exit(main(['bench', '--list']))\n")
    done = _python("-c", code)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_undecodable_paths_are_printed(tmp_path):
    """A cache directory of bytes that are no UTF-8, printed where stdout is strict UTF-8."""
    folder = os.fsencode(tmp_path) + b"/st\xff"
    done = subprocess.run([sys.executable, "-m", "accelmath", "cache"], capture_output=True,
                          cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "PYTHONIOENCODING": "utf-8",
                               "ACCELMATH_CACHE_DIR": os.fsdecode(folder)})
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert b"st\\udcff" in done.stdout or b"st\\xff" in done.stdout


@pytest.mark.parametrize("text", ['{"rows": [1, 2]}', '{"environment": [1], "rows": []}',
                                  '{"rows": [{"case": "x"}], "summary": "abc"}',
                                  '{"rows": [{"case": "x"}], "summary": [{"peers": 1}]}'])
def test_result_files_of_another_form_are_read_as_none_or_without_their_summary(tmp_path,
                                                                                 text):
    """A results file that is valid JSON but not of the form a benchmark writes: not a
    result (its rows are not tables' rows), or one whose summary is inferred again."""
    from accelmath._bench_results import comparisons, read_result, summary_rows

    path = tmp_path / "x-device.json"
    path.write_text(text)
    result = read_result(path)
    if result is not None:
        assert result.summary == [] and isinstance(result.environment, dict)
        comparisons(result)
        summary_rows(result)
    else:
        assert "[1, 2]" in text

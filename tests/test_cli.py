"""`accelmath info` reports the installation, and exits 0 with or without a GPU or CUDA wheels;
`accelmath cache` shows and clears the on-disk store."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelmath.__main__ import main

REPO = Path(__file__).resolve().parents[1]


def _python(*args, env=None):
    """Run ``python ...`` from the repository root, where the package is importable."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=environment, cwd=REPO, stdin=subprocess.DEVNULL, timeout=120)


def _run(*args, env=None):
    """Run ``python -m accelmath ...``."""
    return _python("-m", "accelmath", *args, env=env)


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
    from accelmath._core.device import gpu_available

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
    from accelmath._core import store

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
    from accelmath._core import store

    (store_dir / "not-ours.txt").write_text("kept")
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Removed 3 entries (1.5 MB) from {store_dir}")
    assert store.size() == (0, 0) and store.load("nvrtc", "a") is None
    assert (store_dir / "not-ours.txt").read_text() == "kept"
    main(["cache", "clear"])
    assert capsys.readouterr().out.startswith("Removed 0 entries (0.0 MB)")
    main(["cache"])
    assert "Store: on, 0 entries, 0.0 MB" in capsys.readouterr().out


def test_cache_clear_as_a_module(store_dir):
    result = _run("cache", "clear", env={"ACCELMATH_CACHE_DIR": str(store_dir)})
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Removed 3 entries (1.5 MB) from {store_dir}\n"


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
    problem = f"not usable: cannot create '{blocker / 'store'}': Not a directory"
    assert f"Store: {problem}\n" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"Nothing to clear: the store is {problem}\n"
    assert not [w for w in recwarn if "store" in str(w.message)]  # printed, not warned


def test_cache_with_an_unknown_action(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["cache", "empty"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'empty'" in capsys.readouterr().err


def test_info_with_the_libraries_missing(monkeypatch, capsys):
    from accelmath.bindings import _loader
    from accelmath.errors import LibraryNotFoundError

    def fail(name):
        raise LibraryNotFoundError(name, "hidden by the test")

    monkeypatch.setattr(_loader, "load_library", fail)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    # the six libraries missing for one reason: that reason once
    assert out.count("hidden by the test") == 1
    assert "  cufft, cublas, cublasLt, cusolver, nvrtc, nvJitLink: not found: hidden by the test" in out
    assert "What runs here:" in out and "host arrays (NumPy, CPU torch and JAX, lists): yes" in out
    assert 'pip install ".[cu12]"' in out


def test_info_without_cuda_pathfinder():
    # As on a machine without the CUDA wheels: cuda.pathfinder cannot be imported, and the
    # store remembers no library.
    code = ("import os, sys; os.environ['ACCELMATH_CACHE'] = '0'; "
            "sys.modules['cuda.pathfinder'] = None; "
            "from accelmath.__main__ import main; sys.exit(main(['info']))")
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr
    assert "cufft, cublas, cublasLt, cusolver, nvrtc, nvJitLink: not found: cuda-pathfinder is " \
        "not installed" in result.stdout
    assert 'pip install ".[cu12]"' in result.stdout


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

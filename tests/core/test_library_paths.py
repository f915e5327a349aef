"""The memo of where each CUDA library was found: a new process skips cuda-pathfinder."""

import os

import pytest

from accelmath._core import library_paths, store
from accelmath.bindings import _loader


@pytest.fixture
def fresh(store_root, monkeypatch):
    """An empty store, no library loaded yet, the core's memo installed."""
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(_loader, "_memo", None)
    library_paths.install()


def _pathfinder_path(name):
    pathfinder = pytest.importorskip("cuda.pathfinder")
    try:
        return pathfinder.load_nvidia_dynamic_lib(name).abs_path
    except Exception as exc:  # not installed here
        pytest.skip(f"{name} not found: {exc}")


def _forbid_pathfinder(monkeypatch):
    from cuda import pathfinder

    def asked(name):
        raise AssertionError(f"cuda-pathfinder was asked for {name}")

    monkeypatch.setattr(pathfinder, "load_nvidia_dynamic_lib", asked)


def test_found_path_is_kept_and_used_next_time(fresh, monkeypatch):
    path = _pathfinder_path("cufft")
    assert _loader.load_library("cufft")[1] == path
    assert store.load_json(library_paths.NAMESPACE, library_paths.key("cufft")) == {"path": path}
    monkeypatch.setattr(_loader, "_loaded", {})
    _forbid_pathfinder(monkeypatch)
    assert _loader.load_library("cufft")[1] == path


def test_a_missing_file_is_looked_up_again(fresh, tmp_path):
    path = _pathfinder_path("cufft")
    store.save_json(library_paths.NAMESPACE, library_paths.key("cufft"),
                    {"path": str(tmp_path / "gone.so")})
    assert _loader.load_library("cufft")[1] == path
    assert store.load_json(library_paths.NAMESPACE, library_paths.key("cufft")) == {"path": path}


def test_a_file_that_does_not_load_is_looked_up_again(fresh, tmp_path):
    path = _pathfinder_path("cufft")
    bad = tmp_path / "libnot-a-library.so"
    bad.write_bytes(b"not an ELF file")
    store.save_json(library_paths.NAMESPACE, library_paths.key("cufft"), {"path": str(bad)})
    assert _loader.load_library("cufft")[1] == path


def test_the_key_follows_the_search_variables(monkeypatch):
    monkeypatch.delenv("CUDA_HOME", raising=False)
    before = library_paths.key("cufft")
    monkeypatch.setenv("CUDA_HOME", os.sep + "opt")
    assert library_paths.key("cufft") != before
    assert library_paths.key("cublas") != library_paths.key("cufft")


def test_off_with_the_store(fresh, monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    path = _pathfinder_path("cufft")
    assert _loader.load_library("cufft")[1] == path
    monkeypatch.delenv("ACCELMATH_CACHE")
    assert store.load_json(library_paths.NAMESPACE, library_paths.key("cufft")) is None

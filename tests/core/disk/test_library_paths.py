"""The memo of where each CUDA library was found: a new process skips cuda-pathfinder, and
never loads a file that was planted in its place."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accelmath._core.disk import library_paths

from accelmath._core.disk import store
from accelmath._core.disk import store_format
from accelmath.bindings import _loader

REPO = Path(__file__).resolve().parents[3]


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
    assert store.load_json(library_paths.NAMESPACE, library_paths.key("cufft"))["path"] == path
    monkeypatch.setattr(_loader, "_loaded", {})
    _forbid_pathfinder(monkeypatch)
    assert _loader.load_library("cufft")[1] == path


def test_a_remembered_link_loads_the_file_it_was_checked_as(fresh, tmp_path, monkeypatch):
    """A path remembered through a link is checked as its real file, and that file is what
    loads: the link, pointed elsewhere after the check, is not followed again."""
    path = os.path.realpath(_pathfinder_path("cufft"))
    link = tmp_path / os.path.basename(path)
    link.symlink_to(path)
    library_paths._keep("cufft", str(link))
    assert store.load_json(library_paths.NAMESPACE, library_paths.key("cufft"))["path"] == (
        str(link))
    _forbid_pathfinder(monkeypatch)
    assert _loader.load_library("cufft")[1] == path


def test_a_missing_file_is_looked_up_again(fresh, tmp_path):
    path = _pathfinder_path("cufft")
    store.save_json(library_paths.NAMESPACE, library_paths.key("cufft"),
                    {"path": str(tmp_path / "gone.so")})
    assert _loader.load_library("cufft")[1] == path
    assert store.load_json(library_paths.NAMESPACE, library_paths.key("cufft"))["path"] == path


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


# -- a planted library is never loaded --------------------------------------------------------

_CONSTRUCTOR = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(getenv("PLANTED_PROOF"), "w");
    if (f) { fputs("planted code ran", f); fclose(f); }
}
"""


@pytest.fixture
def planted_library(tmp_path):
    """A shared library named like cuFFT whose constructor writes $PLANTED_PROOF."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or os.name != "posix":
        pytest.skip("no C compiler to build a planted library")
    source = tmp_path / "planted.c"
    source.write_text(_CONSTRUCTOR)
    library = tmp_path / "planted" / "libcufft.so.11"
    library.parent.mkdir(mode=0o700)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


def _plant(root, name, path, identity=None):
    """Write a library-paths entry for ``name`` straight into the store's files."""
    directory = root / library_paths.NAMESPACE
    directory.mkdir(parents=True, exist_ok=True)
    value = {"path": str(path)} if identity is None else {"path": str(path), "file": identity}
    key = library_paths.key(name)
    entry = directory / (hashlib.sha256(key.encode()).hexdigest() + ".entry")
    entry.write_bytes(store_format.encode(library_paths.NAMESPACE, key,
                                          json.dumps(value).encode()))


@pytest.mark.parametrize("mode", [0o770, 0o777])
def test_a_store_that_others_can_write_plants_no_library(planted_library, tmp_path, mode):
    root = tmp_path / "shared-store"
    proof = tmp_path / "proof"
    environment = {**os.environ, "ACCELMATH_CACHE_DIR": str(root), "PLANTED_PROOF": str(proof),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                               os.environ.get("PYTHONPATH")]))}
    environment.pop("ACCELMATH_CACHE", None)
    # the key as the child process computes it (the same interpreter and environment)
    key_of = subprocess.run(
        [sys.executable, "-c", "from accelmath._core.disk import library_paths as l; "
                               "print(l.key('cufft'))"],
        env=environment, capture_output=True, text=True, check=True).stdout.strip()
    directory = root / library_paths.NAMESPACE
    directory.mkdir(parents=True)
    (directory / (hashlib.sha256(key_of.encode()).hexdigest() + ".entry")).write_bytes(
        store_format.encode(library_paths.NAMESPACE, key_of,
                            b'{"path": "%s"}' % str(planted_library).encode()))
    root.chmod(mode)
    directory.chmod(mode)
    result = subprocess.run([sys.executable, "-m", "accelmath", "info"], env=environment,
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not proof.exists(), "the planted library's code ran"
    assert f"'{root}' can be written by its group or by others" in result.stdout + result.stderr


def test_a_remembered_file_outside_the_lookups_places_is_not_loaded(fresh, planted_library,
                                                                   store_root, monkeypatch,
                                                                   tmp_path, caplog):
    proof = tmp_path / "proof"
    monkeypatch.setenv("PLANTED_PROOF", str(proof))
    identity = library_paths._identity(os.stat(planted_library))
    _plant(store_root, "cufft", planted_library, identity)
    assert library_paths._recall("cufft") is None
    assert "not in a place that a lookup searches" in caplog.text
    assert not proof.exists()


def test_a_remembered_file_is_checked_before_it_is_loaded(fresh, tmp_path, monkeypatch):
    real = _pathfinder_path("cufft")
    status = os.stat(os.path.realpath(real))
    identity = library_paths._identity(status)
    assert library_paths.distrust("cufft", real, identity) is None
    assert library_paths.distrust("cufft", real, [*identity[:3], identity[3] + 1]) == (
        "not the file that was found (replaced or changed since)")
    assert library_paths.distrust("cublas", real, identity) == "not a file of cublas"
    assert library_paths.distrust("cufft", "libcufft.so.11", identity) == "not an absolute path"
    writable = tmp_path / "lib"
    writable.mkdir()
    copy = writable / os.path.basename(real)
    copy.symlink_to(real)  # through a link: the file it names is what counts
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert library_paths.distrust("cufft", str(copy), identity) is None
    monkeypatch.setattr(library_paths.os, "stat", _with_mode(os.stat, 0o777))
    assert "can be written by its group or by others" in library_paths.distrust(
        "cufft", str(copy), identity)


def _with_mode(stat_function, mode):
    def patched(path, *args, **kwargs):
        found = stat_function(path, *args, **kwargs)
        fields = list(found)
        fields[0] = (found.st_mode & ~0o777) | mode
        return os.stat_result(fields)
    return patched


@pytest.mark.parametrize("path", ["/usr/lib/libcufft.so.12\x00x", "\x00", 12])
def test_a_remembered_path_that_is_no_path_is_looked_up_again(fresh, path):
    """An entry whose path holds a NUL byte (or is no string) is distrusted like any other,
    not an error that leaves every library unloadable until the store is cleared."""
    store.save_json(library_paths.NAMESPACE, library_paths.key("cufft"),
                    {"path": path, "file": [1, 2, 3]})
    assert library_paths._recall("cufft") is None
    assert library_paths.distrust("cufft", "/a\x00b/libcufft.so", None) == "not a path"

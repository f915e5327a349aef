"""What the tests share: tests marked ``gpu`` are skipped when no CUDA GPU is usable, and the
array packages of the GPU tests come as fixtures that skip where a package (or its GPU
support) is missing. The run ends with one line per reason tests were skipped, with their
count, rather than pytest's line per place a test was skipped (thousands on a CPU machine)."""

import collections
import importlib
import os
import shutil
import sys
import tempfile

import pytest


_STORES = []  # the stores made for a run, removed at its end


def pytest_configure(config):
    # JAX takes 75% of the GPU's memory when first imported unless told not to; a test module
    # imports it at collection, in every worker of a parallel run
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    # the tests' own on-disk store (choices and compiled code), not the user's
    if not os.environ.get("ACCELMATH_CACHE_DIR"):
        os.environ["ACCELMATH_CACHE_DIR"] = tempfile.mkdtemp(prefix="accelmath-tests-")
        _STORES.append(os.environ["ACCELMATH_CACHE_DIR"])


def pytest_unconfigure(config):
    modules = sys.modules.get("accelmath._core.gpu.modules")
    if modules is not None:
        modules.wait_for_compiles()  # (background compiles write to the store)
    for path in _STORES:
        shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_tests:
        return
    from accelmath._core.gpu.device import gpu_available

    if not gpu_available():
        for item in gpu_tests:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


def _skip_reason(report):
    """The reason a skipped test's report gives, without pytest's "Skipped: " prefix."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Count the skipped tests by reason: ``SKIPPED 5195 tests: needs a CUDA GPU``.

    Failures and errors keep pytest's own summary (``-rfE`` in pyproject.toml); where a run
    asks for pytest's per-place skip lines (``-rs``, ``-ra``), those are left alone.
    """
    if "s" in terminalreporter.reportchars:
        return
    reasons = collections.Counter(
        _skip_reason(report) for report in terminalreporter.stats.get("skipped", ()))
    if not reasons:
        return
    terminalreporter.write_sep("=", "skipped tests, by reason")
    for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
        terminalreporter.write_line(f"SKIPPED {count} test{'' if count == 1 else 's'}: {reason}")


def _binding(name):
    """The binding module ``accelmath.bindings.<name>``, its library loaded; skips the test
    where that library is not installed."""
    from accelmath.errors import LibraryNotFoundError

    binding = importlib.import_module(f"accelmath.bindings.{name}")
    try:
        binding.lib.cdll
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    return binding


@pytest.fixture
def loaded_lib():
    """A function of a module name of ``accelmath.bindings`` that returns its loaded ``lib``
    (skips the test where that library is not installed)."""
    return lambda name: _binding(name).lib


@pytest.fixture(scope="session")
def nvrtc():
    """accelmath's NVRTC binding, its library loaded (skips where NVRTC is not installed)."""
    return _binding("nvrtc")


@pytest.fixture(scope="session")
def nvjitlink():
    """accelmath's nvJitLink binding, its library loaded (skips where it is not installed)."""
    return _binding("nvjitlink")


@pytest.fixture
def cp():
    """The cupy module (skips without CuPy)."""
    return pytest.importorskip("cupy")


@pytest.fixture
def torch_cuda():
    """The torch module, with CUDA (skips without either)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


@pytest.fixture
def jax_gpu():
    """The jax module, with a GPU and 64-bit types (skips without either)."""
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX without a GPU")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.fixture
def numba_cuda():
    """The numba.cuda module, with a GPU (skips without either)."""
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("Numba without a CUDA GPU")
    return cuda

"""Each library loads from the installed wheels and reports a plausible version, without a GPU."""

import importlib

import pytest

from accelmath.errors import LibraryNotFoundError

# module: (lowest plausible version, highest plausible version); CUDA 12 and 13 both pass.
INTEGER_VERSIONS = {
    "cufft": (11000, 13000),  # major * 1000 + minor * 100 + patch: 11.x (CUDA 12), 12.x (13)
    "cublas": (120000, 140000),  # major * 10000 + minor * 100 + patch: 12.x, 13.x
    "cublaslt": (120000, 140000),
    "cusolver": (11000, 13000),  # major * 1000 + minor * 100 + patch: 11.x, 12.x
}


def _version(module_name):
    module = importlib.import_module(f"accelmath.bindings.{module_name}")
    try:
        return module.version()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("module_name", sorted(INTEGER_VERSIONS))
def test_integer_version(module_name):
    low, high = INTEGER_VERSIONS[module_name]
    value = _version(module_name)
    assert isinstance(value, int)
    assert low <= value < high, value


def test_cublas_and_cublaslt_versions_agree():
    # Both libraries ship in one wheel and report the same version encoding.
    assert _version("cublas") == _version("cublaslt")


def test_cublas_major_version_matches_soname():
    from accelmath.bindings import cublas

    major = _version("cublas") // 10000
    assert cublas.lib.path.rsplit(".so.", 1)[-1].startswith(str(major))


def test_nvrtc_version():
    value = _version("nvrtc")
    assert isinstance(value, tuple) and len(value) == 2
    major, minor = value
    assert major >= 12 and minor >= 0

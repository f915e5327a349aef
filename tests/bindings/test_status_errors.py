"""Status codes become CudaLibraryError with names; missing libraries say how to install them."""

import ctypes
import importlib

import pytest

from accelmath.bindings import MODULES, _loader
from accelmath.errors import CudaLibraryError, LibraryNotFoundError

# module: prefix of every status name
STATUS_PREFIX = {"cufft": "CUFFT_", "cublas": "CUBLAS_STATUS_", "cublaslt": "CUBLAS_STATUS_",
                 "cusolver": "CUSOLVER_STATUS_", "nvrtc": "NVRTC_", "driver": "CUDA_",
                 "nvjitlink": "NVJITLINK_"}
INVALID_PROPERTY_TYPE = 7  # libraryPropertyType has MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL


def _module(name):
    return importlib.import_module(f"accelmath.bindings.{name}")


def test_cufft_invalid_plan(loaded_lib):
    # cufftDestroy checks the handle before touching a device: the same answer with no GPU.
    lib = loaded_lib("cufft")
    with pytest.raises(CudaLibraryError) as info:
        lib.destroy(123456)
    error = info.value
    assert (error.library, error.function) == ("cufft", "cufftDestroy")
    assert (error.status, error.status_name) == (1, "CUFFT_INVALID_PLAN")
    assert str(error) == "cufftDestroy failed: CUFFT_INVALID_PLAN"
    assert isinstance(error, RuntimeError)


@pytest.mark.parametrize("module_name, library, function, status_name", [
    ("cublas", "cublas", "cublasGetProperty", "CUBLAS_STATUS_INVALID_VALUE"),
    ("cublaslt", "cublasLt", "cublasLtGetProperty", "CUBLAS_STATUS_INVALID_VALUE"),
    ("cusolver", "cusolver", "cusolverGetProperty", "CUSOLVER_STATUS_INVALID_VALUE"),
])
def test_invalid_property_type(module_name, library, function, status_name, loaded_lib):
    lib = loaded_lib(module_name)
    with pytest.raises(CudaLibraryError) as info:
        lib.get_property(INVALID_PROPERTY_TYPE, ctypes.c_int())
    error = info.value
    assert (error.library, error.function, error.status_name) == (library, function, status_name)
    assert str(error) == f"{function} failed: {status_name}"


@pytest.mark.parametrize("module_name", MODULES)
def test_status_names(module_name):
    names = _module(module_name).STATUS_NAMES
    prefix = STATUS_PREFIX[module_name]
    assert names[0] == prefix + "SUCCESS"
    assert all(name.startswith(prefix) for name in names.values())
    assert len(set(names.values())) == len(names)


@pytest.mark.parametrize("module_name", MODULES)
def test_unknown_status_has_a_name(module_name):
    lib = _module(module_name).lib
    name = lib.status_name(98765)
    assert isinstance(name, str) and lib.name in name and "98765" in name
    with pytest.raises(CudaLibraryError) as info:
        lib.raise_status("someFunction", 98765)
    assert info.value.status_name == name and info.value.status == 98765
    assert str(info.value) == f"someFunction failed: {name}"


def test_name_unknown_to_pathfinder():
    lib = _loader.Library("no_such_lib_xyz", (), {})
    with pytest.raises(LibraryNotFoundError) as info:
        lib.cdll
    assert info.value.library == "no_such_lib_xyz"
    assert 'pip install ".[cu12]"' in str(info.value)
    assert 'pip install ".[cu13]"' in str(info.value) and "accelmath[" not in str(info.value)


def test_library_not_installed(monkeypatch):
    # What pathfinder raises for a known library that is not installed.
    from cuda import pathfinder

    def not_found(name):
        raise pathfinder.DynamicLibNotFoundError(f"Failure finding {name}")

    monkeypatch.setattr(pathfinder, "load_nvidia_dynamic_lib", not_found)
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(_loader, "_memo", None)  # where an earlier test found it
    with pytest.raises(LibraryNotFoundError) as info:
        _loader.Library("cusolver", (), {}).cdll
    assert "Failure finding cusolver" in str(info.value)
    assert 'pip install ".[cu12]"' in str(info.value)


def test_driver_missing_points_to_the_display_driver(monkeypatch):
    def no_such_file(path, *args, **kwargs):
        raise OSError(f"{path}: cannot open shared object file")

    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(_loader.ctypes, "CDLL", no_such_file)
    with pytest.raises(LibraryNotFoundError) as info:
        _loader.Library("cuda", (), {}).cdll
    assert "libcuda.so.1" in str(info.value) and "display driver" in str(info.value)


def test_missing_symbol():
    lib = _loader.Library("cufft", (_loader.Function("nothing", ("cufftNoSuchFunction",), ()),),
                          {})
    try:
        lib.cdll
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    with pytest.raises(CudaLibraryError) as info:
        lib.nothing
    assert info.value.function == "cufftNoSuchFunction"
    assert "symbol not found" in info.value.status_name


def test_unknown_function_is_attribute_error():
    with pytest.raises(AttributeError, match="no function 'no_such_function'"):
        _module("cublas").lib.no_such_function

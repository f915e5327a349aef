"""The declaration tables: well formed, and every entry binds to a symbol of the library."""

import ctypes
import importlib

import pytest

from accelmath.bindings import MODULES


def _module(name):
    return importlib.import_module(f"accelmath.bindings.{name}")


def _entries(names):
    return [pytest.param(name, entry.name, id=f"{name}.{entry.name}")
            for name in names for entry in _module(name).FUNCTIONS]


@pytest.mark.parametrize("module_name", MODULES)
def test_table_is_well_formed(module_name):
    functions = _module(module_name).FUNCTIONS
    assert functions
    for entry in functions:
        assert entry.name.isidentifier() and entry.name == entry.name.lower(), entry
        assert isinstance(entry.c_names, tuple) and entry.c_names, entry
        assert all(isinstance(c_name, str) and c_name for c_name in entry.c_names), entry
        assert isinstance(entry.argtypes, tuple), entry
        assert all(isinstance(t, type) and issubclass(t, ctypes._SimpleCData | ctypes._Pointer
                                                      | ctypes.Structure)
                   for t in entry.argtypes), entry


@pytest.mark.parametrize("module_name", MODULES)
def test_table_has_no_duplicates(module_name):
    # Library keeps a dict by Python name: a repeated name would silently replace an entry.
    functions = _module(module_name).FUNCTIONS
    names = [entry.name for entry in functions]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    c_names = [c for entry in functions for c in entry.c_names]
    assert len(c_names) == len(set(c_names)), sorted({c for c in c_names if c_names.count(c) > 1})


@pytest.mark.parametrize("module_name", MODULES)
def test_public_names_resolve(module_name):
    module = _module(module_name)
    assert module.__doc__
    for name in module.__all__:
        assert hasattr(module, name), name


# The driver (libcuda.so.1) comes with the display driver: its entries skip where it is absent.
@pytest.mark.parametrize("module_name, function", _entries(MODULES))
def test_function_binds(module_name, function, loaded_lib):
    lib = loaded_lib(module_name)
    entry = lib.functions[function]
    assert lib.c_name(function) in entry.c_names
    func = lib.bind(function)
    assert callable(func)
    assert tuple(func.argtypes) == entry.argtypes
    if entry.restype is not None:
        assert func.restype is entry.restype
    else:
        assert func.restype is lib.status_type and func.errcheck is not None

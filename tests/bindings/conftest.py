"""What the binding tests share."""

import importlib

import pytest

from accelmath.errors import LibraryNotFoundError


@pytest.fixture
def loaded_lib():
    """A function of a module name of ``accelmath.bindings`` that returns its loaded ``lib``,
    skipping the test where that library is not installed."""

    def load(module_name):
        lib = importlib.import_module(f"accelmath.bindings.{module_name}").lib
        try:
            lib.cdll
        except LibraryNotFoundError as exc:
            pytest.skip(str(exc))
        return lib

    return load

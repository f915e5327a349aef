"""The examples in the docstrings of accelmath's modules run and give what they show."""

import doctest
import importlib
import pkgutil

import pytest

import accelmath

MODULES = sorted(info.name for info in pkgutil.walk_packages(accelmath.__path__, "accelmath.")
                 if info.name != "accelmath.__main__")


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"

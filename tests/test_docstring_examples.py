"""The examples in the docstrings of accelmath's modules run and give what they show (a
module whose examples import an optional array package skips where that is missing)."""

import doctest
import importlib
import importlib.util
import pkgutil
import re

import pytest

import accelmath

MODULES = sorted(info.name for info in pkgutil.walk_packages(accelmath.__path__, "accelmath.")
                 if info.name != "accelmath.__main__")
_OPTIONAL = re.compile(r"^\s*(?:import|from)\s+(torch|cupy|jax)\b", re.MULTILINE)


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    module = importlib.import_module(name)
    for test in doctest.DocTestFinder().find(module):
        for example in test.examples:
            for package in _OPTIONAL.findall(example.source):
                if importlib.util.find_spec(package) is None:
                    pytest.skip(f"its examples import {package}, which is not installed")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"

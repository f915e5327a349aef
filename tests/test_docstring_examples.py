"""The examples in the docstrings of accelmath's modules run and give what they show (a
module whose examples import an optional array package skips where that is missing, and one
whose examples need a CUDA library skips where that library cannot be loaded)."""

import doctest
import importlib
import importlib.util
import pkgutil
import re

import pytest

import accelmath
from accelmath.bindings import _loader
from accelmath.errors import LibraryNotFoundError

MODULES = sorted(info.name for info in pkgutil.walk_packages(accelmath.__path__, "accelmath.")
                 if info.name != "accelmath.__main__")
_OPTIONAL = re.compile(r"^\s*(?:import|from)\s+(torch|cupy|jax)\b", re.MULTILINE)


class _Runner(doctest.DocTestRunner):
    """A doctest runner that keeps, by docstring, the LibraryNotFoundError an example raised."""

    def __init__(self, **options):
        super().__init__(**options)
        self.missing = {}  # DocTest name -> the LibraryNotFoundError of its first example

    def report_unexpected_exception(self, out, test, example, exc_info):
        if issubclass(exc_info[0], LibraryNotFoundError):
            self.missing.setdefault(test.name, exc_info[1])
        super().report_unexpected_exception(out, test, example, exc_info)


def _not_loadable(error):
    """Whether the library ``error`` names cannot be loaded (so the error is no bug of the
    example's)."""
    try:
        _loader.load_library(error.library)
    except LibraryNotFoundError:
        return True
    return False


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module)
    for test in tests:
        for example in test.examples:
            for package in _OPTIONAL.findall(example.source):
                if importlib.util.find_spec(package) is None:
                    pytest.skip(f"its examples import {package}, which is not installed")
    runner = _Runner(verbose=False,
                     optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed = [test.name for test in tests
              if runner.run(test).failed and test.name not in runner.missing]
    assert not failed, (f"{runner.failures} of {runner.tries} examples failed, in "
                        f"{', '.join(failed)} (doctest's report: the captured stdout)")
    for error in runner.missing.values():
        if _not_loadable(error):
            pytest.skip(f"its examples need a CUDA library: {error}")
    assert not runner.missing, f"examples raised {list(runner.missing.values())}"


def _bindings_with_examples():
    """The binding modules with a :class:`~accelmath.bindings._loader.Library` ``lib`` and
    docstring examples."""
    names = []
    for name in MODULES:
        if name.startswith("accelmath.bindings."):
            module = importlib.import_module(name)
            if isinstance(getattr(module, "lib", None), _loader.Library) and any(
                    test.examples for test in doctest.DocTestFinder().find(module)):
                names.append(name)
    return names


@pytest.mark.parametrize("name", _bindings_with_examples())
def test_examples_skip_where_their_library_cannot_be_loaded(name, monkeypatch):
    # a library that cuda-pathfinder does not find, as where it is not installed: the
    # loader's memory of loaded libraries emptied, and the module's lib a new one (whose
    # functions are not bound yet)
    def not_found(library):
        raise LibraryNotFoundError(library, "simulated: not installed")

    module = importlib.import_module(name)
    lib = module.lib
    monkeypatch.setattr(_loader, "_find", not_found)
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(module, "lib", _loader.Library(
        lib.name, lib.functions.values(), lib.status_names, lib.status_type, lib.success))
    with pytest.raises(pytest.skip.Exception,
                       match=f"need a CUDA library: could not load the CUDA library "
                             f"'{lib.name}': simulated: not installed"):
        test_examples(name)

"""Imports run one way: fft, linalg -> fusion -> _core -> bindings (errors from anywhere).

Each rule is checked on every ``import`` statement of every file, including those inside
functions, read from the source with :mod:`ast`.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "accelmath"

# layer -> (accelmath modules it may import: None means any except the forbidden, forbidden)
RULES = {
    "bindings": (("accelmath.bindings", "accelmath.errors"), ()),
    "_core": (None, ("accelmath.fft", "accelmath.linalg", "accelmath.fusion")),
    "fusion": (None, ("accelmath.fft", "accelmath.linalg")),
    "fft": (None, ("accelmath.linalg",)),
    "linalg": (None, ("accelmath.fft",)),
}


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source, module_name, is_package=False):
    """Every module that ``source`` imports, as absolute dotted names (relative ones resolved).

    ``from a import b`` yields ``a.b`` as well as ``a``, since ``b`` may be a submodule.
    """
    package = module_name if is_package else module_name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module
            found.append(origin)
            found += [f"{origin}.{alias.name}" for alias in node.names if alias.name != "*"]
    return found


def _within(name, prefixes):
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _violations(layer):
    allowed, forbidden = RULES[layer]
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        module_name = _module_name(path)
        for name in imported_modules(path.read_text(), module_name, path.name == "__init__.py"):
            if not _within(name, ("accelmath",)):
                continue
            # `from accelmath import errors` names the package itself; judge the submodule.
            if name == "accelmath":
                continue
            if (allowed is not None and not _within(name, allowed)) or _within(name, forbidden):
                bad.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return bad


@pytest.mark.parametrize("layer", sorted(RULES))
def test_imports_run_one_way(layer):
    assert not _violations(layer)


def test_bindings_may_not_import_the_bare_package():
    for path in sorted((PACKAGE / "bindings").rglob("*.py")):
        tree = ast.parse(path.read_text())
        bare = [node for node in ast.walk(tree)
                if isinstance(node, ast.Import) and any(a.name == "accelmath" for a in node.names)]
        assert not bare, f"{path} imports the whole accelmath package"


def test_the_reader_sees_relative_and_nested_imports():
    source = ("from . import _loader\n"
              "from ..errors import NoDeviceError\n"
              "def f():\n"
              "    import accelmath.fft.plan\n"
              "    from accelmath import linalg\n")
    found = imported_modules(source, "accelmath.bindings.cufft")
    assert "accelmath.bindings._loader" in found
    assert "accelmath.errors.NoDeviceError" in found
    assert "accelmath.fft.plan" in found
    assert "accelmath.linalg" in found
    assert imported_modules("from . import x\n", "accelmath.fft", is_package=True) == \
        ["accelmath.fft", "accelmath.fft.x"]


def test_the_rules_catch_a_violation(tmp_path, monkeypatch):
    layer = tmp_path / "accelmath" / "bindings"
    layer.mkdir(parents=True)
    (layer / "bad.py").write_text("def f():\n    from accelmath._core import device\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "accelmath")
    assert _violations("bindings") == ["accelmath/bindings/bad.py imports accelmath._core",
                                       "accelmath/bindings/bad.py imports accelmath._core.device"]


def test_the_real_code_is_read():
    # Guards against a silently vacuous check: the bindings do import their loader.
    cufft = PACKAGE / "bindings" / "cufft.py"
    assert "accelmath.bindings._loader" in imported_modules(cufft.read_text(), "accelmath.bindings.cufft")


_DOMAIN_WORDS = re.compile(r"fft|cublas|cusolver|matmul|linalg|solver", re.IGNORECASE)


def test_the_core_names_no_domain():
    """``_core`` is what every domain shares: no file of it names one or its library."""
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in sorted((PACKAGE / "_core").rglob("*"))
             if path.suffix in (".py", ".c")
             for n, line in enumerate(path.read_text().splitlines(), 1) if _DOMAIN_WORDS.search(line)]
    assert not found, found

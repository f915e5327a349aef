"""Imports run one way: fft, linalg -> fusion -> _core -> bindings (errors from anywhere), and
the image-subtraction showcase sits on the public API only.

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


def _module_name(path, top=None):
    parts = list(path.relative_to((top or PACKAGE).parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source, module_name, is_package=False):
    """Every module that ``source`` imports, as absolute dotted names (relative ones resolved).

    ``from a import b`` yields ``a.b`` as well as ``a``, since ``b`` may be a submodule.
    """
    package = _package_of(module_name, is_package)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = _origin(node, package)
            found.append(origin)
            found += [f"{origin}.{alias.name}" for alias in node.names if alias.name != "*"]
    return found


def _package_of(module_name, is_package):
    return module_name if is_package else module_name.rpartition(".")[0]


def _origin(node, package):
    """The absolute module an ``ImportFrom`` node reads from (relative ones resolved)."""
    if not node.level:
        return node.module
    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


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
    (layer / "bad.py").write_text("def f():\n    from accelmath._core import layout\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "accelmath")
    assert _violations("bindings") == ["accelmath/bindings/bad.py imports accelmath._core",
                                       "accelmath/bindings/bad.py imports accelmath._core.layout"]


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


# The showcase sits on the public API of every domain (DESIGN.md, "Layers"). Outside its own
# package it names only public modules (accelmath and the modules in the ``__all__`` of a
# public one) and their public names (their ``__all__``): nothing of ``_core``, ``bindings``,
# ``_version``, or a domain's private modules such as ``accelmath.fft._plan``.
SHOWCASE = "accelmath.subtraction"
# (file relative to the repository, dotted name) -> why it must stay. Prefer none.
SHOWCASE_EXCEPTIONS = {}


def _module_file(dotted):
    """The source file of accelmath module ``dotted``, or None if it names no module."""
    relative = Path(*dotted.split("."))
    for path in (PACKAGE.parent / relative / "__init__.py",
                 PACKAGE.parent / relative.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _public_names(path):
    """A module's public names: its literal ``__all__``, else its names without a leading ``_``."""
    return _public_names_of(ast.parse(path.read_text()))


def _public_names_of(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets):
            return frozenset(ast.literal_eval(node.value))
    names = set()
    for node in tree.body:  # (top level only: what the module defines or imports)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
    return frozenset(name for name in names if not name.startswith("_"))


def first_private(dotted):
    """The shortest prefix of accelmath name ``dotted`` that is not public, or None.

    Each step from a public module must be one of that module's public names; past a name that
    is no module (a function, a class), attributes are not judged.

    Examples: ``accelmath._core.arguments`` -> ``accelmath._core``; ``accelmath.fft.FFT.execute``
    -> None.
    """
    parts = dotted.split(".")
    if parts[0] != "accelmath":
        return None
    for k in range(1, len(parts)):
        module = _module_file(".".join(parts[:k]))
        if module is None:
            return None
        if parts[k] not in _public_names(module):
            return ".".join(parts[:k + 1])
    return None


def showcase_references(source, module_name, is_package=False):
    """Every accelmath name that ``source`` reaches, as an absolute dotted name: what its imports
    name (function-level ones included), the attributes it reads from a name bound to an
    accelmath module or object (``accelmath.gpu_available``, ``fft.rfft``), and the constant
    names given to ``importlib.import_module`` or ``__import__``."""
    package = _package_of(module_name, is_package)
    tree = ast.parse(source)
    bound = {}  # a local name -> the accelmath name it is bound to (file-wide, scopes ignored)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(alias.name)
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            origin = _origin(node, package)
            found.append(origin)
            for alias in node.names:
                if alias.name != "*":
                    found.append(f"{origin}.{alias.name}")
                    bound[alias.asname or alias.name] = f"{origin}.{alias.name}"
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id == "__import__"))):
            found.append(node.args[0].value)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = []
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id in bound:
                found.append(".".join([bound[node.id], *reversed(chain)]))
    return [name for name in found if name == "accelmath" or name.startswith("accelmath.")]


def _showcase_violations(top=None):
    """What the showcase's files under ``top`` (an accelmath folder) reach that is private."""
    top = top or PACKAGE
    bad = set()
    for path in sorted((top / SHOWCASE.partition(".")[2]).rglob("*.py")):
        module_name = _module_name(path, top)
        where = str(path.relative_to(top.parent))
        for name in showcase_references(path.read_text(), module_name, path.name == "__init__.py"):
            if _within(name, (SHOWCASE,)):
                continue  # its own modules
            private = first_private(name)
            if private is not None and (where, private) not in SHOWCASE_EXCEPTIONS:
                bad.add(f"{where} reaches the private {private}")
    return sorted(bad)


def test_the_showcase_sits_on_the_public_api():
    assert not _showcase_violations()


def test_the_showcase_rule_sees_every_private_reach(tmp_path):
    showcase = tmp_path / "accelmath" / "subtraction"
    showcase.mkdir(parents=True)
    (showcase / "bad.py").write_text(
        "import importlib\n"
        "import accelmath\n"
        "from accelmath import fft, linalg\n"
        "from accelmath.errors import InvalidArgumentError\n"
        "from accelmath.fusion import RawKernel\n"
        "from . import _model\n"
        "from ._model import configure\n"
        "def f():\n"
        "    from accelmath._core.arguments import count\n"
        "    from accelmath.fft._plan import Plan\n"
        "    import accelmath.bindings.cufft\n"
        "    importlib.import_module('accelmath.linalg._cholesky')\n"
        "    accelmath.gpu_available(), accelmath._version\n"
        "    fft.rfft2, fft._transform.run, linalg.matmul, RawKernel.launch\n")
    # the fake folder holds only the showcase: what is public is read from the real package
    found = _showcase_violations(tmp_path / "accelmath")
    assert found == [f"accelmath/subtraction/bad.py reaches the private accelmath.{name}"
                     for name in ("_core", "_version", "bindings", "fft._plan",
                                  "fft._transform", "linalg._cholesky")]


def test_the_real_showcase_is_read():
    # Guards against a silently vacuous check: the showcase does reach the public API.
    gpu = PACKAGE / "subtraction" / "_gpu.py"
    kernels = PACKAGE / "subtraction" / "_kernels.py"
    assert "accelmath.gpu_available" in showcase_references(gpu.read_text(), _module_name(gpu))
    assert "accelmath.fusion.RawKernel" in showcase_references(kernels.read_text(),
                                                               _module_name(kernels))


def test_public_names_are_read_from_the_modules():
    assert first_private("accelmath.fft.rfft2") is None
    assert first_private("accelmath.fft.FFT.execute") is None
    assert first_private("accelmath.errors.InvalidArgumentError") is None
    assert first_private("accelmath.gpu_available") is None
    assert first_private("accelmath.fft.scipy_backend") is None
    assert first_private("accelmath._core.arguments") == "accelmath._core"
    assert first_private("accelmath.bindings") == "accelmath.bindings"
    assert first_private("accelmath.linalg._matmul.Matmul") == "accelmath.linalg._matmul"
    assert first_private("numpy._core") is None
    # a public module without __all__: its top-level names without a leading "_"
    without_all = ast.parse("import os\nX = 1\ndef f():\n    y = 2\n")
    assert _public_names_of(without_all) == {"os", "X", "f"}


def test_the_showcase_exceptions_are_still_needed():
    # An exception that no file needs any more is removed, not kept "just in case".
    for (where, name), why in SHOWCASE_EXCEPTIONS.items():
        path = PACKAGE.parent / where
        module_name = _module_name(path)
        reached = {first_private(found) for found in
                   showcase_references(path.read_text(), module_name, path.name == "__init__.py")}
        assert name in reached, f"{where}: the exception for {name} ({why}) is no longer needed"

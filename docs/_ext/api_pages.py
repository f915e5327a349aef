"""The API reference's module pages, written from the code at the start of a build.

The public modules are ``accelmath`` and every module named in a public module's ``__all__``
(``accelmath.fft``, ..., ``accelmath.fft.scipy_backend``). Each gets ``api/<module>.rst``: its
docstring, then its ``__all__`` in autosummary tables by kind (modules, classes, exceptions,
functions, data), from which autosummary writes a page per name. Reading ``__all__`` here keeps
the reference complete without a second list to maintain.
"""

import functools
import importlib
import inspect
from pathlib import Path

from sphinx.util import logging

from write_if_changed import write_if_changed

ROOT_MODULE = "accelmath"
_KINDS = ("Modules", "Classes", "Exceptions", "Functions", "Data")

logger = logging.getLogger(__name__)


def public_modules(root=ROOT_MODULE):
    """``root`` and the modules named in the ``__all__`` of public modules, in order found."""
    found, pending = [], [root]
    while pending:
        name = pending.pop(0)
        if name in found:
            continue
        found.append(name)
        module = importlib.import_module(name)
        for attribute in module.__all__:
            value = getattr(module, attribute)
            if inspect.ismodule(value):
                pending.append(value.__name__)
    return found


def kind_of(value):
    """The table of a module page that lists ``value``."""
    if inspect.ismodule(value):
        return "Modules"
    if inspect.isclass(value):
        return "Exceptions" if issubclass(value, BaseException) else "Classes"
    if callable(value):
        return "Functions"
    return "Data"


def module_page(name):
    """The reST source of ``api/<name>.rst``."""
    module = importlib.import_module(name)
    groups = {kind: [] for kind in _KINDS}
    for attribute in module.__all__:
        groups[kind_of(getattr(module, attribute))].append(attribute)
    lines = [name, "=" * len(name), "", f".. automodule:: {name}", "",
             f".. currentmodule:: {name}", ""]
    for kind, names in groups.items():
        if not names:
            continue
        lines += [kind, "-" * len(kind), "", ".. autosummary::"]
        # a module in __all__ has its own page here: the table links to it
        if kind != "Modules":
            lines += ["   :toctree: generated", "   :nosignatures:"]
        lines += [""] + [f"   {n}" for n in names] + [""]
    return "\n".join(lines)


def stub_names(modules):
    """autosummary's file names for the stubs of classes whose names differ from another
    public name of their module only in case (``FFT`` and ``fft``), which would be one file on
    a case-insensitive file system."""
    renamed = {}
    for name in modules:
        module = importlib.import_module(name)
        lowered = [attribute.lower() for attribute in module.__all__]
        for attribute in module.__all__:
            if lowered.count(attribute.lower()) > 1 and inspect.isclass(getattr(module, attribute)):
                renamed[f"{name}.{attribute}"] = f"{name}.{attribute}-class"
    return renamed


@functools.cache
def public_classes():
    """Each class of a public ``__all__``, to its public name (``accelmath.Resource``)."""
    found = {}
    for name in public_modules():
        module = importlib.import_module(name)
        for attribute in module.__all__:
            value = getattr(module, attribute)
            if inspect.isclass(value):
                found.setdefault(value, f"{name}.{attribute}")
    return found


def public_bases(app, name, obj, options, bases):
    """A class's bases as the reference can name them: a base from a private module gives way
    to its nearest public ancestor (``FFT``'s base is ``accelmath.Resource``, not the plan
    machinery's ``accelmath._core.plan.Plan``)."""
    named = public_classes()
    shown = []
    for base in bases:
        for ancestor in getattr(base, "__mro__", (base,)):
            own = ancestor.__module__.partition(".")[0] == ROOT_MODULE
            if ancestor in named or not own:
                entry = f":py:class:`{named[ancestor]}`" if ancestor in named else ancestor
                if entry not in shown:
                    shown.append(entry)
                break
    bases[:] = shown


def write_pages(app, config):
    api = Path(app.srcdir) / "api"
    modules = public_modules()
    renamed = stub_names(modules)
    for name in modules:
        write_if_changed(api / f"{name}.rst", module_page(name))
    # pages of names no longer public go (Sphinx would warn of them as in no toctree)
    stubs = {renamed.get(full, full) + ".rst" for name in modules
             for full in (f"{name}.{a}" for a in importlib.import_module(name).__all__)}
    for folder, expected in ((api, {f"{name}.rst" for name in modules}),
                             (api / "generated", stubs)):
        for stale in folder.glob("*.rst"):
            if stale.name not in expected:
                stale.unlink()
    config.autosummary_filename_map = {**renamed, **config.autosummary_filename_map}
    logger.info("api pages: %d modules", len(modules))


def setup(app):
    # config-inited: before Sphinx lists the sources, so the pages are read and autosummary
    # sees their tables
    app.connect("config-inited", write_pages)
    app.connect("autodoc-process-bases", public_bases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

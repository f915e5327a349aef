"""Sphinx configuration of accelmath's documentation site.

Build it from the repository's root (the ``docs`` extra installs what it needs)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Two sets of pages are written at the start of each build, from the code and the records rather
than by hand (both directories are ignored by git): ``api/``, a page per public module listing
its ``__all__`` (``_ext/api_pages.py``), and ``records/``, a page per benchmark record of
``benchmarks/results/`` with its table and a plot (``_ext/benchmark_pages.py``). The build
needs no network.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

try:
    import accelmath
except ImportError:  # not installed: document the clone's sources
    sys.path.insert(0, str(DOCS.parent))
    import accelmath

project = "accelmath"
author = "the accelmath maintainers"
copyright = "2026, the accelmath maintainers"
release = version = accelmath.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "api_pages",
    "benchmark_pages",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# guide.md is the repository's pointer to the guide pages (the README links to it); the site
# has guide/index.md in its place.
exclude_patterns = ["_build", "guide.md", "Thumbs.db", ".DS_Store"]

# The API reference: autosummary writes a page per public name (api/generated/); the
# docstrings are NumPy style. numpydoc's own member tables would ask autosummary for stubs of
# every method; the class template documents the members instead.
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the docstrings' Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = f"accelmath {release}"
html_theme_options = {
    "navbar_align": "left",
    "header_links_before_dropdown": 8,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# pages without sub-pages need no section navigation
html_sidebars = {page: [] for page in
                 ("index", "installation", "benchmarks", "design", "changelog", "contributing")}
html_show_sourcelink = False
html_last_updated_fmt = None

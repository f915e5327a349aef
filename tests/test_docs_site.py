"""The documentation site builds and renders: Sphinx builds ``docs/`` with warnings as errors
(or ``.ci/run`` built it and says where, in ``ACCELMATH_DOCS_HTML``), and a headless Chromium
opens the home page, an API page and a benchmark record page. Each must have its headings,
the images it shows must be PNG files that exist, and its links inside the site must lead to
files (and anchors) that exist. Skips where Sphinx, the docs extra or Chromium is missing."""

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
_PNG = b"\x89PNG\r\n\x1a\n"


class _Page(HTMLParser):
    """What the checks read in a page: headings, image sources, link targets and ids."""

    def __init__(self, text):
        super().__init__()
        self.headings, self.images, self.links, self.ids = [], [], [], set()
        self._heading = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag in ("h1", "h2"):
            self._heading = [tag, ""]
        elif tag == "img":
            self.images.append(attrs.get("src", ""))
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif tag == "link" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif tag == "script" and attrs.get("src"):
            self.links.append(attrs["src"])

    def handle_data(self, data):
        if self._heading is not None:
            self._heading[1] += data

    def handle_endtag(self, tag):
        if self._heading is not None and tag == self._heading[0]:
            self.headings.append((tag, " ".join(self._heading[1].replace("#", "").split())))
            self._heading = None


def _chromium():
    """The Chromium executable, checked to run headless here; skips where there is none."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            break
    else:
        pytest.skip("no chromium or chromium-browser on PATH")
    probe = subprocess.run([path, *_FLAGS, "--dump-dom", "data:text/html,<p id=probe>ok</p>"],
                           capture_output=True, text=True, timeout=120)
    if 'id="probe"' not in probe.stdout:
        pytest.skip(f"{path} does not run headless here: {probe.stderr.strip()[-500:]}")
    return path


_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--no-first-run", "--hide-scrollbars")


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """A function of a built page's path that returns the DOM Chromium made of it."""
    executable = _chromium()
    profile = tmp_path_factory.mktemp("chromium-profile")

    def dump_dom(page):
        done = subprocess.run([executable, *_FLAGS, f"--user-data-dir={profile}",
                               "--dump-dom", page.as_uri()],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
        return _Page(done.stdout)

    dump_dom.executable, dump_dom.profile = executable, profile
    return dump_dom


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's directory: the one .ci/run built, or a build of docs/ into a
    temporary directory, once a session."""
    given = os.environ.get("ACCELMATH_DOCS_HTML")
    if given:
        assert (Path(given) / "index.html").is_file(), f"ACCELMATH_DOCS_HTML={given} has no site"
        return Path(given)
    for package in ("sphinx", "pydata_sphinx_theme", "myst_parser", "numpydoc", "matplotlib"):
        pytest.importorskip(package, reason=f"{package} is missing: pip install '.[docs]'")
    out = tmp_path_factory.mktemp("docs")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", "-d", str(out / "doctrees"), str(ROOT / "docs"),
                           str(out / "html")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    return out / "html"


def _a_record():
    """The name and JSON of one benchmark record, and its title (the .md's first line)."""
    path = sorted(RESULTS.glob("*.json"))[0]
    title = path.with_suffix(".md").read_text().splitlines()[0].removeprefix("# ")
    return path.stem, json.loads(path.read_text()), title


def _check_images_and_links(site, page_path, page):
    assert page.images or page.links
    for source in page.images:
        target = _local_target(page_path, source)
        assert target is not None, f"{page_path.name} shows an image from outside: {source}"
        assert target.is_file(), f"{page_path.name}: image {source} is missing"
        data = target.read_bytes()
        if target.suffix == ".png":
            assert data.startswith(_PNG) and len(data) > 100, f"{source} is not a PNG"
        else:
            assert data, f"{source} is empty"
    for link in page.links:
        if link.startswith("#"):
            assert unquote(link[1:]) in page.ids or link == "#", \
                f"{page_path.name}: no anchor {link}"
            continue
        target = _local_target(page_path, link)
        if target is None:
            continue
        assert target.exists(), f"{page_path.relative_to(site)}: {link} leads nowhere"
        fragment = urlsplit(link).fragment
        if fragment and target.suffix == ".html":
            text = target.read_text(errors="replace")
            assert f'id="{unquote(fragment)}"' in text, f"{link}: no such anchor"


def _local_target(page_path, link):
    """The file a link of the page leads to, or None where it leads off the site."""
    parts = urlsplit(link)
    if parts.scheme not in ("", "file") or parts.netloc:
        return None
    path = unquote(parts.path)
    if not path:
        return page_path
    target = (page_path.parent / path).resolve()
    return target / "index.html" if target.is_dir() else target


def test_the_home_page_renders(site, browser):
    path = site / "index.html"
    page = browser(path)
    assert ("h1", "accelmath") in page.headings, page.headings
    text = path.read_text()
    for linked in ("installation.html", "guide/index.html", "api.html", "benchmarks.html",
                   "records/index.html", "changelog.html", "contributing.html"):
        assert f'href="{linked}' in text, f"the home page does not link {linked}"
    _check_images_and_links(site, path, page)


def test_the_home_page_draws_something(site, browser, tmp_path):
    shot = tmp_path / "home.png"
    subprocess.run([browser.executable, *_FLAGS, f"--user-data-dir={browser.profile}",
                    f"--screenshot={shot}", "--window-size=1280,1000",
                    (site / "index.html").as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes().startswith(_PNG)
    image = pytest.importorskip("matplotlib.image").imread(shot)
    assert image.std() > 0.01, "the home page's screenshot is blank"


def test_an_api_page_renders(site, browser):
    path = site / "api" / "accelmath.fft.html"
    page = browser(path)
    assert ("h1", "accelmath.fft") in page.headings, page.headings
    assert {"Classes", "Functions"} <= {text for tag, text in page.headings if tag == "h2"}
    import accelmath.fft

    generated = {link.split("#")[0] for link in page.links if link.startswith("generated/")}
    missing = [name for name in accelmath.fft.__all__ if name != "scipy_backend"
               and not any(link.startswith(f"generated/accelmath.fft.{name}.")
                           or link.startswith(f"generated/accelmath.fft.{name}-")
                           for link in generated)]
    assert not missing, f"accelmath.fft's page does not list {missing}"
    _check_images_and_links(site, path, page)


def test_a_benchmark_page_renders(site, browser):
    name, record, title = _a_record()
    path = site / "records" / f"{name}.html"
    page = browser(path)
    heading = [text for tag, text in page.headings if tag == "h1"]
    assert heading and heading[0].startswith(title), page.headings
    assert ("h2", "Table") in page.headings and ("h2", "Environment") in page.headings
    plots = [source for source in page.images if source.endswith(f"{name}.png")]
    assert plots, f"no plot on {name}'s page: {page.images}"
    table = path.read_text()
    assert table.count("<tr") >= len(record["rows"]) + 1
    _check_images_and_links(site, path, page)

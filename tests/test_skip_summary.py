"""The test run's summary: one line per reason tests were skipped, with their count, while
failures and errors are reported as pytest reports them. Run on a folder of the test's own, with
this suite's conftest.py and pyproject.toml's pytest options."""

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

_TESTS = textwrap.dedent('''\
    import pytest

    @pytest.mark.parametrize("n", range(4))
    def test_needs_a_gpu(n):
        pytest.skip("needs a CUDA GPU")

    def test_needs_root():
        pytest.skip("permissions do not stop root")

    @pytest.fixture
    def missing():
        pytest.skip("needs a CUDA GPU")

    def test_fixture_skips(missing):
        pass

    def test_fails():
        assert 1 == 2

    @pytest.fixture
    def broken():
        raise OSError("no such device")

    def test_errors(broken):
        pass

    def test_passes():
        pass
    ''')


def _addopts():
    """pyproject.toml's pytest ``addopts``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomli = pytest.importorskip("tomli")
        tomllib = tomli
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["pytest"]["ini_options"]["addopts"].split()


@pytest.fixture
def suite(tmp_path):
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_mixed.py").write_text(_TESTS)
    return tmp_path


def _pytest(folder, *options):
    # (an empty ini file: this folder is the root, so only its conftest.py is read)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           *options, str(folder)], capture_output=True, text=True,
                          cwd=folder, stdin=subprocess.DEVNULL, timeout=120)


def test_skips_are_counted_by_reason(suite):
    result = _pytest(suite, *_addopts())
    out = result.stdout
    assert result.returncode == 1, out
    assert "SKIPPED 5 tests: needs a CUDA GPU\n" in out  # 4 in the test, 1 in a fixture
    assert "SKIPPED 1 test: permissions do not stop root\n" in out
    assert out.index("needs a CUDA GPU") < out.index("permissions do not stop root")
    assert not re.search(r"^SKIPPED \[\d+\]", out, re.MULTILINE)  # (pytest's line per place)
    # failures and errors: as pytest reports them
    assert "FAILED test_mixed.py::test_fails - assert 1 == 2" in out
    assert "ERROR test_mixed.py::test_errors - OSError: no such device" in out
    assert "1 failed, 1 passed, 6 skipped, 1 error" in out


def test_asking_for_pytests_skip_lines_gets_them_alone(suite):
    out = _pytest(suite, "-rs").stdout
    assert re.search(r"^SKIPPED \[4\] test_mixed\.py:\d+: needs a CUDA GPU$", out, re.MULTILINE)
    assert "SKIPPED 5 tests:" not in out


def test_no_skips_no_section(suite):
    (suite / "test_mixed.py").write_text("def test_passes():\n    pass\n")
    out = _pytest(suite, *_addopts()).stdout
    assert "by reason" not in out and "1 passed" in out

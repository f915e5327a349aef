"""Running one of NumPy's own test modules on accelmath: in a pytest process of its own, with
a plugin (written next to it) that swaps NumPy's functions for accelmath's and counts the calls
that reach accelmath (its ``calls()``), and the reporter :data:`REPORTER`, which writes the
outcomes and those counts as JSON. The test modules ``test_numpy_suite.py`` (FFT, linalg) and
``test_matmul_numpy_suite.py`` give the plugin and the tests to select."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

REPORTER = '''
"""Write this pytest process's outcomes (outcome -> test ids) and the suite plugin's counts of
calls (its ``calls()``, under "calls") as JSON."""

import json
import os
import sys


def pytest_terminal_summary(terminalreporter):
    stats = {key: [report.nodeid for report in reports if hasattr(report, "nodeid")]
             for key, reports in terminalreporter.stats.items() if key}
    stats["calls"] = sys.modules[os.environ["ACCELMATH_NUMPY_SUITE_PLUGIN"]].calls()
    with open(os.environ["ACCELMATH_NUMPY_SUITE_REPORT"], "w") as f:
        json.dump(stats, f)
'''


def run(tmp_path, suite, targets, plugin, plugin_source, mode, what, env=None):
    """Run ``targets`` (node ids under NumPy's test file ``suite``) with plugin module
    ``plugin`` (its source ``plugin_source``) in ``mode``; return the outcomes the plugin
    reported (outcome -> test ids, and its own counts). Skips where ``suite`` is not
    installed; fails, naming them, where any of NumPy's tests failed. ``what`` names the suite
    in messages; ``env`` adds environment variables."""
    if not suite.is_file():
        pytest.skip(f"NumPy's {what} tests are not installed ({suite} is missing)")
    (tmp_path / f"{plugin}.py").write_text(plugin_source)
    (tmp_path / "accelmath_numpy_suite_report.py").write_text(REPORTER)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    report = tmp_path / "report.json"
    environment = dict(os.environ, ACCELMATH_NUMPY_SUITE=mode,
                       ACCELMATH_NUMPY_SUITE_REPORT=str(report),
                       ACCELMATH_NUMPY_SUITE_PLUGIN=plugin,
                       PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO),
                                                   os.environ.get("PYTHONPATH", "")]),
                       **(env or {}))
    command = [sys.executable, "-m", "pytest", *targets, "-p", plugin, "-p",
               "accelmath_numpy_suite_report", "-p", "no:cacheprovider",
               "-q", "--noconftest", "-c", str(tmp_path / "pytest.ini"), "--rootdir",
               str(tmp_path), "-W", "ignore::pytest.PytestUnknownMarkWarning"]
    result = subprocess.run(command, capture_output=True, text=True, env=environment,
                            cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=900)
    assert report.is_file(), f"the suite did not run:\n{result.stdout[-4000:]}{result.stderr}"
    outcomes = json.loads(report.read_text())
    failed = outcomes.get("failed", []) + outcomes.get("error", [])
    counts = {key: len(value) if isinstance(value, list) else value
              for key, value in outcomes.items()}
    print(f"NumPy's {what} tests on accelmath ({mode}): {counts}")
    assert not failed and result.returncode == 0, (
        f"{len(failed)} of NumPy's {what} tests failed on accelmath ({mode}): {failed}\n"
        f"{result.stdout[-6000:]}")
    return outcomes

"""The examples run where the tests run (on NumPy without a GPU, on CuPy and torch arrays
with one) and check their own results: each asserts its results against a reference."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(name):
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_image_subtraction_example_runs():
    assert "each equal to its one-call result" in _run("image_subtraction.py")


@pytest.mark.parametrize("name, says", [
    ("matmul_epilogue.py", "matches relu(x @ w + b)"),
    ("solvers.py", "largest residual"),
    ("plan_reuse.py", "relative error"),
    ("fused_filter.py", "convolved matches NumPy/SciPy"),
    ("fits_survey.py", "every pair subtracted and written once"),
])
def test_example_runs_and_checks_its_results(name, says):
    assert says in _run(name)

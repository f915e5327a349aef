"""The image-subtraction example runs where the tests run (on NumPy without a GPU) and checks
its own results."""

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_image_subtraction_example_runs():
    done = subprocess.run([sys.executable, str(EXAMPLES / "image_subtraction.py")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "each equal to its one-call result" in done.stdout

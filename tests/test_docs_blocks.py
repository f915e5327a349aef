"""The Python blocks of the README, the guide's pages and the installation page paste into a
session and run: those that need no GPU here, the others (CuPy, CUDA torch, JAX on a GPU) on a
GPU."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/guide.md", "docs/installation.md",
             *sorted(str(page.relative_to(ROOT)) for page in (ROOT / "docs/guide").glob("*.md")))
_GPU = re.compile(r"\bcupy\b|\bnumba\b|device=\"cuda\"|\.cuda\(\)|like=cp\b")


def _blocks():
    found = []
    for name in DOCUMENTS:
        for number, block in enumerate(re.findall(r"```python\n(.*?)```",
                                                  (ROOT / name).read_text(), re.S)):
            needs_gpu = bool(_GPU.search(block))
            marks = [pytest.mark.gpu] if needs_gpu else []
            found.append(pytest.param(block, id=f"{name}#{number}", marks=marks))
    return found


@pytest.mark.parametrize("block", _blocks())
def test_the_block_runs(block, tmp_path):
    ran = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]

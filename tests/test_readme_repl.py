"""The README's tour pastes into a Python prompt as it is: each CPU block is fed line by line
to an interactive console (as a person pasting it would), with no syntax error, no exception
and no flood of printed arrays."""

import code
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_GPU = re.compile(r"\bcupy\b|\.cuda\(\)")


class _Console(code.InteractiveConsole):
    def __init__(self):
        super().__init__()
        self.errors = []

    def showsyntaxerror(self, filename=None, **kwargs):
        self.errors.append("SyntaxError")
        super().showsyntaxerror(filename)

    def showtraceback(self):
        self.errors.append("exception")
        super().showtraceback()


def _cpu_blocks():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return [pytest.param(b, id=f"README#{i}") for i, b in enumerate(blocks)
            if not _GPU.search(b)]


@pytest.mark.parametrize("block", _cpu_blocks())
def test_the_block_pastes_into_a_prompt(block):
    console = _Console()
    printed, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        for line in block.splitlines():
            console.push(line)
        console.push("")  # (the prompt's end of the last block)
    assert console.errors == [], errors.getvalue()[-3000:]
    assert len(printed.getvalue().splitlines()) < 40, printed.getvalue()[:2000]

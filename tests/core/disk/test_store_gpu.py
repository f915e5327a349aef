"""On the GPU: compiled code and cuBLASLt's algorithms planted in a store that others can write
are not loaded. Each step runs in a process of its own, so that nothing is remembered in
memory between them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelmath._core.disk import store_format

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[3]

_KERNEL = r"""
import cupy as cp
from accelmath.fusion import RawKernel
kernel = RawKernel('extern "C" __global__ void mark(int *x) { *x = %d; }', "mark")
x = cp.zeros(1, cp.int32)
kernel(1, 1, (x,))
print(int(x[0]))
"""

_MATMUL = r"""
import cupy as cp, numpy as np
from accelmath import linalg
from accelmath.linalg._matmul import cublaslt as _matmul_cublaslt

asked = []
ask = _matmul_cublaslt.LtPlan._ask_heuristic
_matmul_cublaslt.LtPlan._ask_heuristic = lambda *a: asked.append(1) or ask(*a)
rng = np.random.default_rng()
a, b = rng.standard_normal((37, 19)), rng.standard_normal((19, 23))
result = cp.asnumpy(linalg.matmul(cp.asarray(a), cp.asarray(b)))
assert np.allclose(result, a @ b, rtol=1e-12, atol=1e-12)
print(len(asked))
"""


def _child(code, root):
    pytest.importorskip("cupy")
    environment = {**os.environ, "ACCELMATH_CACHE_DIR": str(root),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                               os.environ.get("PYTHONPATH")]))}
    environment.pop("ACCELMATH_CACHE", None)
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                            text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[-1]), result.stderr


def _only_entry(directory):
    [path] = directory.glob("*.entry")
    blob = path.read_bytes()
    magic_end = blob.index(b"\n") + 1
    header = json.loads(blob[magic_end:blob.index(b"\n", magic_end)])
    return path, header["key"], store_format.decode(blob, header["namespace"], header["key"])


def _plant(root, namespace, planted):
    """Put ``planted`` in place of the payload of the one entry of ``namespace``."""
    path, key, _ = _only_entry(root / namespace)
    path.write_bytes(store_format.encode(namespace, key, planted))


@pytest.mark.parametrize("mode", [0o770, 0o777])
def test_a_planted_cubin_is_not_loaded(tmp_path, mode):
    genuine, planted = tmp_path / "genuine", tmp_path / "planted"
    assert _child(_KERNEL % 666, planted)[0] == 666
    assert _child(_KERNEL % 1, genuine)[0] == 1
    cubins = [ns for ns in ("nvrtc", "nvjitlink") if list((genuine / ns).glob("*.entry"))]
    assert cubins, "the kernel was not kept in the store"
    namespace = cubins[0]
    _plant(genuine, namespace, _only_entry(planted / namespace)[2])
    assert _child(_KERNEL % 1, genuine)[0] == 666  # a private store is trusted: the plant runs
    genuine.chmod(mode)
    value, err = _child(_KERNEL % 1, genuine)
    assert value == 1, "code planted in a store others can write was loaded"
    assert "can be written by its group or by others" in err
    genuine.chmod(0o700)
    (genuine / namespace).chmod(mode)  # a namespace that others can write: the same
    assert _child(_KERNEL % 1, genuine)[0] == 1


def test_a_planted_algorithm_is_not_loaded(tmp_path):
    root = tmp_path / "store"
    assert _child(_MATMUL, root)[0] == 1  # asked cuBLASLt's heuristic, kept its answer
    assert _child(_MATMUL, root)[0] == 0  # read it from the (private) store
    root.chmod(0o770)
    asked, err = _child(_MATMUL, root)
    assert asked == 1, "an algorithm from a store others can write was used"
    assert "can be written by its group or by others" in err

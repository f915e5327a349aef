"""The public FFT functions' front end to end on the CPU: a stand-in device plan in the memo
(a NumPy array's call leading to it, as a CuPy array's leads to an FFT plan), so that the
real functions, the memo, the C front and its table run as they do on a GPU."""

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import accelmath.fft
from accelmath._core import hostcall
from accelmath._core.call_key import layout_reader
from accelmath._core.dispatch import MISS
from accelmath.fft import _transform
from accelmath.fft._records import Transform, record

pytestmark = pytest.mark.skipif(not hostcall.status().startswith("C call shim"),
                                reason="the fronts are made by the call shim")


class _StandIn:
    """A device plan as the memo sees one: its direction's run and its front's launcher,
    each counting its calls."""

    nbytes = 0

    def __init__(self):
        self.runs, self.fronts = [], []
        self.direction_runs = (self._run, self._run)

    def _run(self, x):
        self.runs.append(x)
        return np.full(x.shape, 7.0 + len(self.runs), complex)

    def front_run(self, inverse):
        def run(x):
            self.fronts.append(x)
            return np.full(x.shape, -1.0, complex) if x.flags.c_contiguous else MISS
        return run


@pytest.fixture
def stand_in():
    """The plan that ``accelmath.fft.fft(x)`` of a complex 8-point NumPy array finds."""
    dispatcher = _transform.dispatcher
    accelmath.fft.clear_cache()
    x = np.ones(8, complex)
    call = record(Transform, ("c2c", None, (-1,), None, False, False, "auto", None))
    key = (call, False, np.ndarray, layout_reader(x)(x))
    plan = _StandIn()
    dispatcher.plan(0, "stand-in", lambda: plan, call=key)
    added = np.ndarray not in dispatcher.front_types
    yield plan
    accelmath.fft.clear_cache()
    if added:
        dispatcher.front_types.discard(np.ndarray)


def test_a_repeated_call_runs_from_the_front(stand_in):
    x = np.ones(8, complex)
    first = accelmath.fft.fft(x)  # the memo; the array type joins the front's
    second = accelmath.fft.fft(x)  # keyed: the memo, and its launcher kept
    assert len(stand_in.runs) == 2 and not stand_in.fronts
    assert first[0] == 8 and second[0] == 9
    third = accelmath.fft.fft(x)  # the front
    assert len(stand_in.runs) == 2 and len(stand_in.fronts) == 1 and third[0] == -1
    assert len(_transform.dispatcher._front) == 1
    # another form of the call is another key; a strided view misses and goes to the memo
    accelmath.fft.fft(x, axis=0)
    assert len(stand_in.fronts) == 1
    strided = np.ones(16, complex)[::2]
    assert accelmath.fft.fft(strided).shape == (8,)


def test_a_key_taken_by_another_call_keeps_nothing(stand_in, monkeypatch):
    """A call made between the front's learning and the function's own key (as a __del__
    the collector runs) takes the key: its result is not the function's, so nothing is
    kept for the key, and the next call of that key learns again."""
    x, y = np.ones(8, complex), np.ones(8, complex)
    accelmath.fft.fft(x)  # (the type joins the front's)
    transform = _transform.transform
    stolen = itertools.count()

    def thief_first(call, a, out, stream):
        if next(stolen) == 0:
            transform(call, y, None, None)  # (takes the key, and offers its result)
        return transform(call, a, out, stream)

    monkeypatch.setattr("accelmath.fft._functions.transform", thief_first)
    accelmath.fft.fft(x)
    assert not _transform.dispatcher._front
    monkeypatch.undo()
    accelmath.fft.fft(x)
    assert len(_transform.dispatcher._front) == 1


def test_every_public_function_is_its_front_and_stays_a_function_to_its_readers():
    import inspect
    import pickle

    from accelmath import linalg

    names = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
             "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
    functions = [(getattr(accelmath.fft, n), n, "accelmath.fft") for n in names]
    functions.append((linalg.matmul, "matmul", "accelmath.linalg"))
    for f, name, module in functions:
        assert type(f).__name__ == "Front" and f.__name__ == name and f.__module__ == module
        assert inspect.isroutine(f) and f.__doc__ == f.__wrapped__.__doc__
        assert inspect.signature(f) == inspect.signature(f.__wrapped__)
        assert pickle.loads(pickle.dumps(f)) is f


def test_without_the_call_shim_the_functions_are_plain_functions():
    code = ("import types, numpy as np, accelmath.fft as f; from accelmath import linalg; "
            "assert isinstance(f.fft, types.FunctionType), f.fft; "
            "assert isinstance(linalg.matmul, types.FunctionType); "
            "assert np.allclose(f.fft(np.arange(4.0)), np.fft.fft(np.arange(4.0)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "ACCELMATH_HOSTCALL": "0"})
    assert done.returncode == 0, done.stderr

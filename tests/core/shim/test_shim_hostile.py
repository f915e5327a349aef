"""The call shim under hostile Python code, each case in a process of its own (a crash is a
return code there, not the end of the test run): Python that runs while a front reads a key
(a property, a collection's callback) never meets a tuple with empty items, and a cycle of
calls through no Python frame (a front's table entry that is the front itself, a reader or a
launcher that calls itself through a C callable) raises RecursionError where it would
overflow the C stack."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("accelmath._core._hostcall")

_PRELUDE = """
import functools, gc, itertools, threading
import numpy as np
from accelmath._core import _hostcall as H
MISS = object()
"""


def _run(body):
    """Run body after the prelude in a new interpreter (-X dev): its standard output."""
    done = subprocess.run([sys.executable, "-X", "dev", "-c", _PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.split()


def test_a_property_read_for_a_key_meets_no_half_made_tuple():
    seen = _run("""
        class Arr:
            @property
            def shape(self):
                for t in gc.get_referrers(front):  # (a key being made holds the front)
                    if type(t) is tuple and t and t[0] is front:
                        hash(t)
                        print("half-made")
                return (1,)
            dtype = "f8"
        front = H.Front(lambda x: "function", lambda key, *a: "learnt", {}, {Arr}, 1, (),
                        None, "m")
        print(front(Arr()))
        """)
    assert seen == ["learnt"]


def test_an_operand_read_for_a_key_meets_no_half_made_tuple():
    seen = _run("""
        class Arr:
            @property
            def shape(self):
                for t in gc.get_objects():
                    if type(t) is tuple and len(t) == 2 and type(t[0]) is tuple \\
                            and len(t[0]) == 3 and t[0][0] is Arr:
                        print(t[1])
                return (1,)
            dtype = "f8"
        def fused(y, k):
            return y
        front = H.Front(lambda x, **kw: "function", lambda key, *a, **k: "learnt", {},
                        {np.ndarray, Arr}, 1, (), MISS, "m", ("epilogue",),
                        {fused.__code__: ()}, ("epilogue_args",))
        print(front(np.ones(2), epilogue=fused, epilogue_args=(Arr(), Arr())))
        """)
    assert seen == ["learnt"]


def test_a_collection_while_a_function_is_keyed_meets_no_half_made_tuple():
    seen = _run("""
        def fused(y, k):
            return y * A + B
        def callback(phase, info):
            if phase == "start":
                for t in gc.get_objects():
                    if type(t) is tuple and len(t) == 3 and t[0] is fused.__code__:
                        hash(t)
        A, B = tuple(range(30)), tuple(range(30))  # (tuples made anew at each read)
        front = H.Front(lambda x, **kw: "function", lambda key, *a, **k: "learnt", {},
                        {np.ndarray}, 1, (), MISS, "m", ("epilogue",),
                        {fused.__code__: ("A", "B")}, ())
        gc.callbacks.append(callback)
        gc.set_threshold(1)  # (a collection at each allocation)
        results = {front(np.ones(2), epilogue=fused) for _ in range(50)}
        gc.set_threshold(700)
        print(*results)
        """)
    assert seen == ["learnt"]


@pytest.mark.parametrize("cycle", [
    # a front's table entry that runs the front itself
    """
    table = {}
    def learn(key, *a, **k):
        table[key] = (front, [None, 0], itertools.count())
        return "learnt"
    front = H.Front(lambda x: "function", learn, table, {np.ndarray}, 1, (), None, "m")
    print(front(np.ones(2)))
    call = lambda: front(np.ones(2))
    """,
    # a reader whose check calls the reader (through a C callable)
    """
    p = functools.partial(len)
    reader = H.Reader(((p, 1),), len)
    p.__setstate__((reader, (), {}, None))
    call = lambda: reader([0])
    """,
    # a launcher whose Python execute is the launcher
    """
    p = functools.partial(len)
    launch = H.Launch(p, {}, (), {}, None, len, threading.local(), 0)
    p.__setstate__((launch, (), {}, None))
    call = launch
    """], ids=["front", "reader", "launch"])
def test_a_cycle_of_shim_calls_raises_recursion_error(cycle):
    seen = _run(textwrap.dedent(cycle) + textwrap.dedent("""
        try:
            call()
        except RecursionError as e:
            print("RecursionError")
        """))
    assert seen[-1] == "RecursionError"

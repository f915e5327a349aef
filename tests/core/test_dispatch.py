"""The stateless dispatch: per-device plan caches, the call memo, the limits, and moves of
host data; and that the core's dispatch names no domain."""

from pathlib import Path

import numpy as np
import pytest

import accelmath._core.dispatch as dispatch
from accelmath._core.dispatch import CachedPlan, Dispatcher, to_device, to_host
from accelmath._core.operand import wrap_operand
from accelmath.errors import InvalidArgumentError, NoDeviceError


class Plan:
    def __init__(self, nbytes=1):
        self.nbytes = nbytes


def test_plans_are_cached_per_device():
    d = Dispatcher()
    a = d.plan(0, "key", Plan)
    assert d.plan(0, "key", Plan) is a
    assert d.plan(1, "key", Plan) is not a
    assert d.cache(0) is d.cache(0) and d.cache(0) is not d.cache(1)
    info = d.cache_info()
    assert (info["hits"], info["misses"], info["size"], info["bytes"]) == (1, 2, 2, 2)
    assert d.cache_info(device=1)["size"] == 1


def test_the_memo_leads_to_a_plan_while_it_is_cached():
    d = Dispatcher(max_size=1)
    a = d.plan(0, "a", Plan, call=("call", "a"))
    assert d.recall(("call", "a")) is a
    assert d.recall(("call", "b")) is None
    d.plan(0, "b", Plan)  # evicts "a": the memo does not keep it alive
    assert d.recall(("call", "a")) is None


def test_the_memo_holds_other_values():
    d = Dispatcher()
    d.remember(("host", 1), "prepared")
    assert d.recall(("host", 1)) == "prepared"
    entry = CachedPlan(d.cache(0), "key")
    assert entry.cache is d.cache(0) and entry.key == "key"


def test_the_memo_is_bounded():
    d = Dispatcher(max_calls=4)
    for i in range(4):
        d.remember(i, str(i))
    assert d.recall(3) == "3"
    d.remember(4, "4")  # full: it starts over
    assert d.recall(0) is None and d.recall(4) == "4"


def test_clear_cache():
    d = Dispatcher()
    d.plan(0, "a", Plan, call="a")
    d.remember("host", "value")
    d.clear_cache()
    assert d.recall("a") is None and d.recall("host") is None
    assert d.cache_info()["size"] == 0 and d.cache_info()["misses"] == 0


def test_limits():
    d = Dispatcher(max_size=8, max_bytes=100)
    d.plan(0, "a", lambda: Plan(60))
    d.set_cache_limits(max_size=4, max_bytes=50)
    info = d.cache_info()
    assert (info["max_size"], info["max_bytes"]) == (4, 50)
    assert info["size"] == 1  # a single plan over the byte bound still serves
    d.plan(0, "b", lambda: Plan(60))
    assert d.cache_info()["size"] == 1
    assert d.cache(1).max_size == 4  # a device seen later takes the limits in force


@pytest.mark.parametrize("kwargs, message", [
    ({"max_size": -1}, "max_size must be at least 0, got -1"),
    ({"max_bytes": 1.5}, "max_bytes must be an integer, got 1.5"),
    ({"max_size": 2, "max_bytes": "a"}, "max_bytes must be an integer, got 'a'"),
])
def test_bad_limits_change_nothing(kwargs, message):
    d = Dispatcher()
    before = d.cache_info()
    with pytest.raises(InvalidArgumentError, match=message):
        d.set_cache_limits(**kwargs)
    assert d.cache_info() == before
    with pytest.raises(InvalidArgumentError, match=message):
        Dispatcher(**kwargs)


def test_to_device_without_a_gpu():
    from accelmath._core.gpu.device import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(NoDeviceError, match='execution="cuda" needs a CUDA GPU'):
        to_device(np.zeros(4))


def test_to_host_gives_the_callers_package():
    torch = pytest.importorskip("torch")
    like = wrap_operand(torch.zeros(3))
    result = to_host(np.arange(3.0), like)  # (a host "result": the move is the same)
    assert isinstance(result, torch.Tensor) and result.tolist() == [0.0, 1.0, 2.0]
    assert isinstance(to_host(np.arange(3.0), wrap_operand(np.zeros(3))), np.ndarray)


@pytest.mark.gpu
def test_moves_to_the_device_and_back():
    x = np.arange(6.0).reshape(2, 3)
    moved = to_device(x)
    op = wrap_operand(moved)
    assert op.on_device and op.shape == (2, 3)
    back = to_host(moved, wrap_operand(x))
    assert isinstance(back, np.ndarray) and np.array_equal(back, x)


def test_dispatch_names_no_domain():
    """The core's dispatch is every domain's: no FFT (or any library's semantics) in it."""
    source = Path(dispatch.__file__).read_text().lower()
    for word in ("fft", "cufft", "matmul", "cublas", "cusolver"):
        assert word not in source, word


def test_drop_if_sends_the_memo_to_plan_again():
    d = Dispatcher()
    a = d.plan(0, "a", Plan, call=("call", "a"))
    b = d.plan(1, "b", lambda: Plan(nbytes=2), call=("call", "b"))
    d.drop_if(lambda plan: plan is b)
    assert d.recall(("call", "a")) is a and d.recall(("call", "b")) is None
    assert d.plan(1, "b", Plan, call=("call", "b")) is not b


def _front_run(plan, accepts):
    """A front launcher of ``plan``: the plan on an accepted operand, else a MISS."""
    return lambda x: (plan, x) if accepts(x) else dispatch.MISS


def test_the_front_runs_the_plan_it_was_given_and_counts_a_hit():
    d = Dispatcher()
    assert d.front("form", 1) is dispatch.MISS  # nothing kept yet
    a = d.plan(0, "a", Plan, call=("call", "a"))
    d.remember_front("form", ("call", "a"), a, _front_run(a, lambda x: x > 0), int)
    hits = d.cache_info()["hits"]
    assert d.front("form", 3) == (a, 3)
    assert d.cache_info()["hits"] == hits + 1
    assert d.front("form", -3) is dispatch.MISS  # its checks fail: no hit
    assert d.cache_info()["hits"] == hits + 1
    assert d.front("other form", 3) is dispatch.MISS
    assert d.front_types == {int}


def test_the_front_keeps_no_plan_its_cache_dropped():
    """Evicted, dropped or cleared: the front forgets every plan (and so never keeps one
    alive, nor runs one that its cache let go)."""
    for drop in (lambda d: d.plan(0, "b", Plan),  # evicts "a" (max_size 1)
                 lambda d: d.drop_if(lambda plan: True),
                 lambda d: d.clear_cache(),
                 lambda d: d.set_cache_limits(max_size=0)):
        d = Dispatcher(max_size=1)
        a = d.plan(0, "a", Plan, call=("call", "a"))
        d.remember_front("form", ("call", "a"), a, _front_run(a, lambda x: True), int)
        assert d.front("form", 1) == (a, 1)
        drop(d)
        assert d.front("form", 1) is dispatch.MISS


def test_the_front_takes_only_a_call_that_leads_to_a_cached_plan():
    d = Dispatcher(max_size=1)
    d.remember("host call", "a host value")
    d.remember_front("form", "host call", None, lambda x: x, int)
    d.remember_front("form", "unknown call", None, lambda x: x, int)
    assert d.front("form", 1) is dispatch.MISS
    a = d.plan(0, "a", Plan, call=("call", "a"))
    d.plan(0, "b", Plan)  # evicts "a"; the memo still names it
    d.remember_front("form", ("call", "a"), a, _front_run(a, lambda x: True), int)
    assert d.front("form", 1) is dispatch.MISS


def test_missed_answers_miss_to_any_call():
    assert dispatch.missed() is dispatch.MISS
    assert dispatch.missed(1, out=2) is dispatch.MISS


def test_the_front_keeps_no_plan_made_anew_since_its_call_recalled_one():
    """A call recalled plan a; meanwhile a was dropped and the same call planned b under the
    same key: the launcher of a is not kept beside b's entry."""
    d = Dispatcher()
    a = d.plan(0, "key", Plan, call=("call",))
    d.drop_if(lambda plan: plan is a)
    b = d.plan(0, "key", Plan, call=("call",))
    d.remember_front("form", ("call",), a, _front_run(a, lambda x: True), int)
    assert d.front("form", 1) is dispatch.MISS
    d.remember_front("form", ("call",), b, _front_run(b, lambda x: True), int)
    assert d.front("form", 1) == (b, 1)


def test_an_unhashable_front_key_is_a_miss():
    d = Dispatcher()
    assert d.front(("form", ["unhashable"]), 1) is dispatch.MISS

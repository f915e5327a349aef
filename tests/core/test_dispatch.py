"""The stateless dispatch: per-device plan caches, the call memo, the limits, and moves of
host data; and that the core's dispatch names no domain."""

from pathlib import Path

import numpy as np
import pytest

import accelmath._core.dispatch as dispatch
from accelmath._core import hostcall
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


needs_front = pytest.mark.skipif(not hostcall.status().startswith("C call shim"),
                                 reason="the fronts are made by the call shim")


def _front_run(plan, accepts):
    """A front launcher of ``plan``: the plan on an accepted operand, else a MISS."""
    return lambda x: (plan, x) if accepts(x) else dispatch.MISS


class _Public:
    """A public function of dispatcher ``d`` with its front: ``f(x, n=None)`` returns
    ``("slow", x)`` and offers the front launcher ``_front_run(plan, accepts)`` for call key
    ``call`` (set :attr:`offer` to ``(call, plan, accepts)``; None offers nothing); its
    :attr:`keys` are the front keys it was told."""

    def __init__(self, d):
        self.d, self.offer, self.keys = d, None, []
        self.f = d.fronted(self._function, __name__, 1, ("n",))

    def _function(self, x, n=None):
        key = self.d.taken()
        self.keys.append(key)
        result = ("slow", x)
        if self.offer is not None:
            call, plan, accepts = self.offer
            self.d.remember_front(key, result, call, plan, _front_run(plan, accepts),
                                  np.ndarray)
        return result


@needs_front
def test_the_front_runs_the_plan_it_was_given_and_counts_a_hit():
    d = Dispatcher()
    public = _Public(d)
    a = d.plan(0, "a", Plan, call=("call", "a"))
    public.offer = (("call", "a"), a, lambda x: x.sum() > 0)
    x = np.ones(2)
    assert public.f(x)[0] == "slow" and public.keys == [None]  # no type keyed yet
    assert d.front_types == {np.ndarray}
    assert public.f(x)[0] == "slow" and public.keys[-1] is not None  # keyed: kept
    hits = d.cache_info()["hits"]
    result = public.f(x)
    assert result[0] is a and result[1] is x and len(public.keys) == 2
    assert d.cache_info()["hits"] == hits + 1
    assert public.f(-x)[0] == "slow"  # its checks fail: the function, told the key
    assert d.cache_info()["hits"] == hits + 1 and public.keys[-1] == public.keys[1]
    public.offer = None
    assert public.f(np.ones(3))[0] == "slow"  # another shape: another key
    assert public.keys[-1] != public.keys[1]


@needs_front
def test_the_front_keys_plain_arguments_as_given():
    d = Dispatcher()
    public = _Public(d)
    a = d.plan(0, "a", Plan, call=("call", "a"))
    public.offer = (("call", "a"), a, lambda x: True)
    x = np.ones(2)
    public.f(x)  # (the type joins the front's)
    for call in (lambda: public.f(x, 2), lambda: public.f(x, n=2), lambda: public.f(x)):
        public.keys.clear()
        assert call()[0] == "slow" and public.keys[0] is not None
        assert call()[0] is a and len(public.keys) == 1
    keys_before = len(public.keys)
    # a bool, a float, a list, an array or an unknown keyword: no key, the function itself
    for call in (lambda: public.f(x, True), lambda: public.f(x, 2.0), lambda: public.f(x, [2]),
                 lambda: public.f(x, x), lambda: public.f(x, m=2), lambda: public.f(x, 2, 3),
                 lambda: public.f([1.0])):
        public.keys.clear()
        try:
            call()
        except TypeError:  # (the function's own: too many arguments)
            continue
        assert public.keys == [None]
    assert keys_before == 1


@needs_front
def test_a_key_told_goes_to_one_call_alone():
    """The key reaches the call the front made, once: a call made within it (a public
    function calling another) and the calls after it have none."""
    d = Dispatcher()
    seen = []

    def inner(x):
        seen.append(("inner", d.taken()))

    def outer(x):
        seen.append(("outer", d.taken()))
        inner(x)
        return x

    f = d.fronted(outer, __name__)
    d.front_types.add(np.ndarray)
    f(np.ones(2))
    assert seen[0][0] == "outer" and seen[0][1] is not None and seen[1] == ("inner", None)
    assert d.taken() is None


@needs_front
def test_a_key_another_call_took_keeps_nothing():
    """A call made on the thread before the function takes its key (a __del__ the collector
    runs, a signal handler) takes the key and offers its own launcher: the front keeps it
    for no key, since the result the function returns is not that call's."""
    d = Dispatcher()
    a = d.plan(0, "a", Plan, call=("call", "a"))
    b = d.plan(0, "b", Plan, call=("call", "b"))
    d.front_types.add(np.ndarray)

    def thief(y):  # (a call on another array, of another plan)
        key = d.taken()
        result = ("thief", y)
        d.remember_front(key, result, ("call", "b"), b, _front_run(b, lambda x: True),
                         np.ndarray)
        return result

    def outer(x):
        thief(np.ones(5))  # (before its own taken())
        key = d.taken()
        assert key is None  # (taken already)
        return ("outer", x)

    f = d.fronted(outer, __name__)
    x = np.ones(2)
    for _ in range(3):
        assert f(x)[0] == "outer"
    assert not d._front
    del a


@needs_front
def test_the_front_keeps_no_plan_its_cache_dropped():
    """Evicted, dropped or cleared: the front forgets every plan (and so never keeps one
    alive, nor runs one that its cache let go)."""
    for drop in (lambda d: d.plan(0, "b", Plan),  # evicts "a" (max_size 1)
                 lambda d: d.drop_if(lambda plan: True),
                 lambda d: d.clear_cache(),
                 lambda d: d.set_cache_limits(max_size=0)):
        d = Dispatcher(max_size=1)
        public = _Public(d)
        a = d.plan(0, "a", Plan, call=("call", "a"))
        public.offer = (("call", "a"), a, lambda x: True)
        x = np.ones(2)
        public.f(x), public.f(x)
        assert public.f(x)[0] is a
        drop(d)
        public.offer = None
        assert public.f(x)[0] == "slow"


@needs_front
def test_the_front_takes_only_a_call_that_leads_to_a_cached_plan():
    d = Dispatcher(max_size=1)
    public = _Public(d)
    x = np.ones(2)
    d.remember("host call", "a host value")
    for offer in (("host call", None, lambda x: True), ("unknown call", None, lambda x: True)):
        public.offer = offer
        public.f(x), public.f(x)
        assert public.f(x)[0] == "slow"
    a = d.plan(0, "a", Plan, call=("call", "a"))
    d.plan(0, "b", Plan)  # evicts "a"; the memo still names it
    public.offer = (("call", "a"), a, lambda x: True)
    public.f(x)
    assert public.f(x)[0] == "slow"


def test_missed_answers_miss_to_any_call():
    assert dispatch.missed() is dispatch.MISS
    assert dispatch.missed(1, out=2) is dispatch.MISS


@needs_front
def test_the_front_keeps_no_plan_made_anew_since_its_call_recalled_one():
    """A call recalled plan a; meanwhile a was dropped and the same call planned b under the
    same key: the launcher of a is not kept beside b's entry."""
    d = Dispatcher()
    public = _Public(d)
    x = np.ones(2)
    a = d.plan(0, "key", Plan, call=("call",))
    d.drop_if(lambda plan: plan is a)
    b = d.plan(0, "key", Plan, call=("call",))
    public.offer = (("call",), a, lambda x: True)
    public.f(x), public.f(x)
    assert public.f(x)[0] == "slow"
    public.offer = (("call",), b, lambda x: True)
    public.f(x)
    assert public.f(x)[0] is b


@needs_front
def test_a_fronted_function_is_the_function_to_its_readers():
    """help(), inspect, the documentation and pickle see the function behind the front."""
    import inspect
    import pickle

    import accelmath.fft

    f = accelmath.fft.fft
    assert f.__wrapped__.__name__ == f.__name__ == "fft" and f.__module__ == "accelmath.fft"
    assert f.__doc__ == f.__wrapped__.__doc__ and "Parameters" in f.__doc__
    assert str(inspect.signature(f)).startswith("(a, n=None, axis=-1, norm=None, *")
    assert inspect.isroutine(f) and pickle.loads(pickle.dumps(f)) is f

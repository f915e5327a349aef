"""The plan cache: LRU order, the count and byte bounds, and exact statistics under threads."""

import threading

from accelmath._core.cache import PlanCache


class Plan:
    def __init__(self, nbytes=1):
        self.nbytes = nbytes


def test_least_recently_used_goes_first():
    cache = PlanCache(max_size=2)
    a = cache.get_or_create("a", Plan)
    cache.get_or_create("b", Plan)
    assert cache.get("a") is a  # now "b" is the least recently used
    cache.get_or_create("c", Plan)
    assert cache.get("b") is None
    assert cache.get("a") is a and cache.get("c") is not None
    info = cache.info()
    assert (info.hits, info.misses, info.size) == (3, 3, 2)


def test_bounded_by_bytes_but_keeps_one_plan():
    cache = PlanCache(max_size=10, max_bytes=100)
    cache.get_or_create("a", lambda: Plan(60))
    cache.get_or_create("b", lambda: Plan(60))
    assert cache.get("a") is None and cache.info().nbytes == 60
    big = cache.get_or_create("big", lambda: Plan(500))  # alone over the bound: still served
    assert cache.get("big") is big and cache.info().size == 1
    cache.set_limits(max_size=0)
    assert cache.info().size == 0


def test_bytes_held_by_plans_run_on_several_streams_count():
    """A plan run by several threads or streams holds a workspace for each: those bytes
    count against the bound at the next insert."""
    cache = PlanCache(max_size=10, max_bytes=100)
    a = cache.get_or_create("a", lambda: Plan(30))
    a.held_bytes = 90  # three streams' workspaces
    assert cache.info().nbytes == 90
    cache.get_or_create("b", lambda: Plan(30))
    assert cache.get("a") is None and cache.info().nbytes == 30


def test_a_plan_that_grows_is_rechecked_at_once():
    """A plan that takes another workspace says so (on_grow), and the bound holds again at
    once, not at the next insert."""

    class GrowingPlan(Plan):
        on_grow = None

    cache = PlanCache(max_size=10, max_bytes=100)
    a = cache.get_or_create("a", lambda: GrowingPlan(30))
    b = cache.get_or_create("b", lambda: GrowingPlan(30))
    assert callable(a.on_grow) and callable(b.on_grow)
    b.held_bytes = 60
    b.on_grow()
    assert cache.info().size == 2  # 90 bytes: within the bound
    b.held_bytes = 90
    b.on_grow()
    assert cache.get("a") is None and cache.get("b") is b
    assert cache.info().nbytes == 90


def test_clear_resets_the_statistics():
    cache = PlanCache()
    cache.get_or_create("a", Plan)
    for _ in range(5):
        cache.get("a")
    assert cache.info().hits == 5
    cache.clear()
    info = cache.info()
    assert (info.hits, info.misses, info.size) == (0, 0, 0)
    cache.get_or_create("a", Plan)
    cache.get("a")
    cache.info()
    assert (cache.info().hits, cache.info().misses) == (1, 1)


def test_hits_are_exact_under_threads():
    cache = PlanCache()
    keys = [f"k{i}" for i in range(4)]
    for key in keys:
        cache.get_or_create(key, Plan)
    barrier = threading.Barrier(8)

    def work(t):
        barrier.wait()
        for i in range(5000):
            assert cache.get(keys[(t + i) % 4]) is not None
            if i % 500 == 0:
                cache.info()  # reads take ticks of the clock too

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    info = cache.info()
    assert (info.hits, info.misses, info.size) == (8 * 5000, 4, 4)


def test_drop_if_drops_the_values_it_names():
    cache = PlanCache()
    a = cache.get_or_create("a", Plan)
    b = cache.get_or_create("b", lambda: Plan(nbytes=2))
    cache.drop_if(lambda plan: plan.nbytes == 2)
    assert cache.get("a") is a and cache.get("b") is None and b.nbytes == 2
    assert cache.info().misses == 2

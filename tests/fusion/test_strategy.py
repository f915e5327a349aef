"""Strategy by measurement: the first call times every candidate and keeps the fastest, later
calls in the process reuse the choice without timing, and a new process (here: the memory
dropped) reads it from the store."""

import pytest

from accelmath.fusion import _strategy


@pytest.fixture
def timed(monkeypatch, tmp_path):
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_strategy, "ensure_context", lambda device: None)
    calls = []

    def device_time(enqueue, stream):
        calls.append(enqueue())
        return {"slow": 2.0, "fast": 1.0, "broken": float("inf")}[calls[-1]]

    monkeypatch.setattr(_strategy.timing, "device_time", device_time)
    _strategy.forget()
    yield calls
    _strategy.forget()


def test_the_fastest_is_chosen_once_and_remembered(timed):
    candidates = {"a": lambda: "slow", "b": lambda: "fast", "c": lambda: "broken"}
    assert _strategy.fastest(("k", 1), lambda: "problem k 1", candidates, 0, 0) == 1
    timed_calls = len(timed)
    assert timed_calls >= 3 and set(timed) == {"slow", "fast", "broken"}
    assert _strategy.fastest(("k", 1), lambda: "problem k 1", candidates, 0, 0) == 1
    assert len(timed) == timed_calls  # (remembered in the process)
    _strategy.forget()
    assert _strategy.fastest(("k", 1), lambda: "problem k 1", candidates, 0, 0) == 1
    assert len(timed) == timed_calls  # (read from the store)


def test_a_candidate_that_raises_loses(timed):
    def fails():
        raise RuntimeError("cannot run")

    assert _strategy.fastest(("k", 2), lambda: "problem k 2",
                             {"raises": fails, "runs": lambda: "slow"}, 0, 0) == 1


def test_a_candidate_may_ask_for_its_own_fastest_way(timed):
    """A candidate that is itself a fused call with ways of its own (spectral_filter's
    separate passes: a transform with a fused epilogue) asks while the outer choice is being
    timed, on the same thread: it is answered, not left waiting."""
    import threading

    inner = {"slow": lambda: "slow", "fast": lambda: "fast"}

    def nested():
        return ["slow", "fast"][_strategy.fastest(("inner",), lambda: "inner", inner, 0, 0)]

    chosen = []
    worker = threading.Thread(target=lambda: chosen.append(_strategy.fastest(
        ("outer",), lambda: "outer", {"nested": nested, "slow": lambda: "slow"}, 0, 0)),
        daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the nested choice waited for the outer one's lock"
    assert chosen == [0]  # (nested returns "fast": the inner choice)

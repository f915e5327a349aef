"""Choosing the fastest candidate (accelmath._core.gpu.timing): timed once, then from the store."""

import pytest

from accelmath._core.disk import store

from accelmath._core.gpu import timing


@pytest.fixture
def fresh_store(store_root, monkeypatch):
    monkeypatch.setattr(timing, "fingerprint", lambda device_id, libraries=(): "gpu-x")
    return store_root


def test_the_fastest_is_timed_once_then_read_from_the_store(fresh_store):
    measured = []
    times = {0: 3.0, 1: 1.0, 2: 2.0}

    def measure(i):
        measured.append(i)
        return times[i]

    choice = timing.choose("problem", ["a", "b", "c"], measure, 0)
    assert (choice.index, choice.stored, measured) == (1, False, [0, 1, 2])
    assert choice.times == {"a": 3.0, "b": 1.0, "c": 2.0}
    measured.clear()
    again = timing.choose("problem", ["a", "b", "c"], measure, 0)
    assert (again.index, again.stored, measured) == (1, True, [])


def test_another_problem_is_timed_anew(fresh_store):
    timing.choose("problem", ["a", "b"], lambda i: [2.0, 1.0][i], 0)
    measured = []
    choice = timing.choose("other problem", ["a", "b"], lambda i: measured.append(i) or i, 0)
    assert choice.index == 0 and measured == [0, 1]


def test_a_grown_set_times_the_new_candidates_against_the_earlier_choice_alone(fresh_store):
    timing.choose("problem", ["a", "b", "c"], lambda i: [2.0, 1.0, 3.0][i], 0)  # (b)
    measured = []
    choice = timing.choose("problem", ["a", "b", "c", "d"],
                           lambda i: measured.append(i) or 5.0 - i, 0)
    assert choice.index == 3 and measured == [1, 3] and set(choice.times) == {"b", "d"}
    # d beat b, which beat a and c: a set with e times d and e alone
    measured.clear()
    choice = timing.choose("problem", ["e", "a", "b", "c", "d"],
                           lambda i: measured.append(i) or [0.5, 0.1, 0.1, 0.1, 1.0][i], 0)
    assert choice.index == 0 and measured == [0, 4]


def test_an_earlier_choice_that_cannot_run_now_has_what_it_beat_timed_again(fresh_store):
    inf = float("inf")
    timing.choose("problem", ["a", "b"], lambda i: [1.0, 0.5][i], 0)  # (b)
    measured = []
    choice = timing.choose("problem", ["a", "b", "c"],
                           lambda i: measured.append(i) or [1.0, inf, 3.0][i], 0)
    assert choice.index == 0 and sorted(set(measured)) == [0, 1, 2]
    measured.clear()
    choice = timing.choose("other", ["a", "b"], lambda i: [1.0, 0.5][i], 0)  # (b)
    choice = timing.choose("other", ["a", "b", "c"],
                           lambda i: measured.append(i) or [2.0, inf, inf][i], 0)
    assert choice.index == 0 and 0 in measured


def test_a_candidate_that_could_not_run_is_not_counted_as_beaten(fresh_store):
    timing.choose("problem", ["a", "b"], lambda i: [1.0, float("inf")][i], 0)  # (a)
    measured = []
    choice = timing.choose("problem", ["a", "b", "c"],
                           lambda i: measured.append(i) or [1.0, 0.2, 3.0][i], 0)
    assert choice.index == 1 and sorted(measured) == [0, 1, 2]


def test_a_set_whose_others_were_all_beaten_times_nothing(fresh_store):
    timing.choose("problem", ["a", "b", "c"], lambda i: [2.0, 1.0, 3.0][i], 0)  # (b)
    choice = timing.choose("problem", ["c", "b"], lambda i: pytest.fail("timed"), 0)
    assert choice == timing.Choice(1, {}, False)


def test_without_the_earlier_choice_every_candidate_is_timed(fresh_store):
    timing.choose("problem", ["a", "b"], lambda i: [2.0, 1.0][i], 0)  # (b)
    measured = []
    choice = timing.choose("problem", ["a", "c"], lambda i: measured.append(i) or 2.0 - i, 0)
    assert choice.index == 1 and measured == [0, 1]


@pytest.mark.parametrize("entry", [[1, 2], {"choice": "b"}, {"choice": "b", "beaten": "abc"},
                                   {"choice": "b", "beaten": [None, 3, {"x": 1}]},
                                   {"choice": ["b"], "beaten": ["a"]}])
def test_a_malformed_record_of_the_earlier_choice_times_everyone(fresh_store, entry):
    store.save_json("timing", timing._key("problem", (), 0, ()), entry)
    measured = []
    choice = timing.choose("problem", ["a", "b", "c"], lambda i: measured.append(i) or 3.0 - i,
                           0)
    assert choice.index == 2 and measured == [0, 1, 2]


def test_another_machine_is_timed_anew(fresh_store, monkeypatch):
    timing.choose("problem", ["a", "b"], lambda i: [2.0, 1.0][i], 0)
    monkeypatch.setattr(timing, "fingerprint", lambda device_id, libraries=(): "gpu-y")
    measured = []
    timing.choose("problem", ["a", "b"], lambda i: measured.append(i) or 1.0, 0)
    assert measured == [0, 1]


def test_one_candidate_needs_no_timing(fresh_store):
    choice = timing.choose("problem", ["only"], lambda i: pytest.fail("timed"), 0)
    assert choice == timing.Choice(0, {}, False)


def test_without_a_store_every_process_times(monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    monkeypatch.setattr(timing, "fingerprint", lambda device_id, libraries=(): "gpu-x")
    measured = []
    for _ in range(2):
        timing.choose("problem", ["a", "b"], lambda i: measured.append(i) or 1.0 + i, 0)
    assert measured == [0, 1, 0, 1]


@pytest.mark.gpu
def test_device_time_of_real_work():
    from accelmath._core.gpu.device import ensure_context
    from accelmath._core.gpu.memory import allocate_workspace
    from accelmath.bindings import driver

    ensure_context(0)
    buffer = allocate_workspace(1 << 28, 0, 0, "cupy")
    try:
        small = timing.device_time(lambda: driver.lib.memset_d8(buffer.ptr, 0, 1 << 10))
        large = timing.device_time(lambda: driver.lib.memset_d8(buffer.ptr, 0, 1 << 28))
    finally:
        buffer.free()
    assert 0 < small < large


def test_a_candidate_that_cannot_run_loses_and_the_choice_is_kept(fresh_store):
    choice = timing.choose("problem", ["fails", "runs"], lambda i: [float("inf"), 2.0][i], 0)
    assert choice.index == 1
    again = timing.choose("problem", ["fails", "runs"], lambda i: pytest.fail("timed"), 0)
    assert again.index == 1 and again.stored


def test_rounds_time_the_candidates_in_turn_and_their_medians_count(fresh_store):
    # "a" is the fastest of the first round, but "b" has the lowest median over three
    measured = []
    drift = iter([1.0, 1.5, 9.0, 2.0, 1.8, 9.0, 3.0, 2.1, 9.0])

    def measure(i):
        measured.append(i)
        return next(drift)

    choice = timing.choose("drifting", ["a", "b", "c"], measure, 0, rounds=3)
    assert measured == [0, 1, 2] * 3
    assert choice.index == 1 and choice.times == {"a": 2.0, "b": 1.8, "c": 9.0}


def test_a_candidate_that_cannot_run_is_timed_once(fresh_store):
    measured = []

    def measure(i):
        measured.append(i)
        return [float("inf"), 2.0][i]

    choice = timing.choose("failing", ["fails", "runs"], measure, 0, rounds=3)
    assert choice.index == 1 and measured == [0, 1, 1, 1]


def test_a_kept_candidate_loses_only_head_to_head(fresh_store):
    # "b" has the lowest median of the rounds, but timed against "a" alone it is not 1%
    # faster: "a" stays; the extra rounds alternate who goes first
    measured = []
    times = {0: iter([2.0] * 4), 1: iter([1.95, 1.97, 2.0, 2.0]), 2: iter([5.0, 5.0])}

    def measure(i):
        measured.append(i)
        return next(times[i])

    choice = timing.choose("kept", ["a", "b", "c"], measure, 0, rounds=2, keep=0, margin=0.01)
    assert measured == [0, 1, 2, 0, 1, 2, 1, 0, 0, 1]
    assert choice.index == 0 and choice.times == {"a": 2.0, "b": 1.96, "c": 5.0}


def test_a_kept_candidate_loses_to_one_that_stays_faster(fresh_store):
    times = {0: iter([2.0] * 4), 1: iter([1.8] * 4)}
    choice = timing.choose("beaten", ["a", "b"], lambda i: next(times[i]), 0, rounds=2, keep=0,
                           margin=0.01)
    assert choice.index == 1
    again = timing.choose("beaten", ["a", "b"], lambda i: pytest.fail("timed"), 0, rounds=2,
                          keep=0)
    assert again.index == 1 and again.stored

"""Choose among candidate ways to run a call by timing them on the device, once.

A plan with several ways to compute its result (library plans of other shapes, accelmath's own
kernels) asks :func:`choose` for the fastest. The choice is looked up in the on-disk store
first, keyed by the problem and by the machine (GPU, driver and library versions), so a later
process makes it without timing anything, and without even preparing the candidates that lost.
Where it is not known, each candidate is prepared and timed with CUDA events
(:func:`device_time`), the fastest kept and written to the store. Where the caller asks for
rounds (candidates cheap to time again), they are timed in rounds, each once a round in
turn, and each candidate's median counts: a clock that drifts while the candidates are timed
(the GPU warming, its power limit) then moves every candidate alike, instead of favouring
those timed first; a candidate to keep (a library's own first choice) loses only to one that
stays faster head to head. The store also keeps, per problem, the candidates its choice
has beaten: a set of candidates that has grown since (a kernel compiled meanwhile) times only
the new ones against that choice. Choices and timings are logged on the ``accelmath`` logger.
"""

import ctypes
import logging
import math
import statistics
from dataclasses import dataclass

from accelmath._core.disk import store
from accelmath._core.disk.fingerprint import fingerprint
from accelmath.bindings import driver

__all__ = ["Choice", "choose", "known", "device_time"]

_log = logging.getLogger("accelmath")
_NAMESPACE = "timing"
# the most labels a problem's record of the candidates its choice beat keeps
_MOST_BEATEN = 64


@dataclass(frozen=True)
class Choice:
    """What :func:`choose` decided.

    Attributes
    ----------
    index : int
        The chosen candidate's index.
    times : dict
        ``{label: milliseconds}`` of the candidates timed now; empty where the choice came
        from the store, there was one candidate, or the store's record of the problem says
        its earlier choice, among the candidates, beat every other one.
    stored : bool
        Whether the choice came from the store.
    """

    index: int
    times: dict
    stored: bool


def device_time(enqueue, stream=0, repeats=4):
    """The device time of ``enqueue()``'s work on ``stream``, in ms: the best of ``repeats``
    runs after one that warms up, each timed behind an untimed run.

    Parameters
    ----------
    enqueue : callable
        Enqueues the work on ``stream`` (and nothing that waits for the host).
    stream : int
        The stream handle (the current context's device).
    repeats : int
        Timed runs.

    Returns
    -------
    float
    """
    events = []
    try:
        for _ in range(2):
            event = ctypes.c_void_p()
            driver.lib.event_create(ctypes.byref(event), 0)
            events.append(event)
        best = float("inf")
        elapsed = ctypes.c_float()
        for repeat in range(repeats + 1):
            # one untimed run first: the timed one then waits in a busy queue, and the host
            # time of enqueueing it (a Python call of several launches) is not counted
            enqueue()
            driver.lib.event_record(events[0], stream)
            enqueue()
            driver.lib.event_record(events[1], stream)
            driver.lib.event_synchronize(events[1])
            driver.lib.event_elapsed_time(ctypes.byref(elapsed), events[0], events[1])
            if repeat:  # the first run warms up
                best = min(best, elapsed.value)
        return best
    finally:
        for event in events:
            driver.lib.event_destroy(event)


def choose(problem, labels, measure, device_id, libraries=(), rounds=1, keep=None, margin=0.0):
    """The fastest of several candidates, from the store or timed now.

    Parameters
    ----------
    problem : str
        What is being computed, everything that decides which candidate wins (shapes,
        strides, dtypes, options), as a stable string.
    labels : sequence of str
        One stable label per candidate (the same candidates in a later process have the same
        labels).
    measure : callable
        ``measure(index)`` prepares candidate ``index`` (where ``rounds`` is more than 1, only
        the first time it is called for it) and returns its device time in ms (infinity
        for a candidate that cannot run). It is called for every candidate in turn,
        ``rounds`` times, when the choice is not known, for none when it is; a candidate
        that could not run is not called again. Where the store holds the problem's choice
        among other candidates, the candidates that choice beat are not timed again (see
        ``_contest``).
    device_id : int
        The device the candidates run on.
    libraries : sequence of str
        The libraries whose versions the choice depends on (``device.library_info`` names).
    rounds : int, optional
        How many times each candidate is timed, in turn with the others; its median counts.
    keep : int, optional
        A candidate to keep unless another is clearly faster (a library's own first choice):
        where another has the lowest median, the two are timed in turn for ``rounds`` more
        rounds, who goes first alternating, and the other is chosen only where the median of
        its time over ``keep``'s, round by round, is below ``1 - margin`` (``measure`` is
        then called again for both, even where ``rounds`` is 1).
    margin : float, optional
        See ``keep``.

    Returns
    -------
    Choice
    """
    labels = list(labels)
    if len(labels) == 1:
        return Choice(0, {}, False)
    stored = known(problem, labels, device_id, libraries)
    if stored is not None:
        return stored
    contest, beaten, earlier = _contest(problem, labels, device_id, libraries)
    runs = {}
    if len(contest) > 1:
        _time_in_rounds(runs, contest, measure, rounds)
        if len(contest) < len(labels) and not math.isfinite(statistics.median(runs[earlier])):
            # the earlier choice cannot run now: what it beat is timed again
            rest = [i for i in range(len(labels)) if i not in runs]
            _time_in_rounds(runs, rest, measure, rounds)
            contest, beaten = list(range(len(labels))), ()
    times = {labels[i]: statistics.median(kept) for i, kept in runs.items()}
    index = min(contest, key=lambda i: times.get(labels[i], 0.0))
    if keep in runs and index != keep and math.isfinite(times[labels[keep]]):
        index = _head_to_head(runs, measure, keep, index, rounds, margin)
    _log.info("timing: %s: chose %s of %s%s", problem, labels[index],
              ", ".join(f"{label} {ms:.4f} ms" for label, ms in times.items()) or "-",
              f" ({len(labels) - len(contest)} beaten before, not timed)" if beaten else "")
    # (a candidate that could not run has no time: None, as JSON holds no infinity)
    kept = {label: ms if math.isfinite(ms) else None for label, ms in times.items()}
    store.save_json(_NAMESPACE, _key(problem, labels, device_id, libraries),
                    {"choice": labels[index], "ms": kept})
    # (what could not run now is not beaten: it is timed again with the next set)
    beaten = [label for label in (*labels, *beaten)
              if label != labels[index] and math.isfinite(times.get(label, 0.0))]
    store.save_json(_NAMESPACE, _key(problem, (), device_id, libraries),
                    {"choice": labels[index], "beaten": sorted(set(beaten))[:_MOST_BEATEN]})
    return Choice(index, times, False)


def _contest(problem, labels, device_id, libraries):
    """``(indices, beaten, earlier)``: the indices of ``labels`` to time, the labels the
    problem's earlier choice beat, and that choice's index (None where there is none).
    Where the store holds a choice for the same problem among other candidates (a set that
    has grown since: a kernel compiled meanwhile, a library's new candidate; or one that has
    lost some) and that choice is among ``labels``, only it and the candidates it has not
    beaten are timed, not those it beat already: a plan made again once its kernel has
    compiled times that kernel against the earlier winner alone, and a set whose others
    were all beaten times nothing. Everyone is timed otherwise."""
    entry = store.load_json(_NAMESPACE, _key(problem, (), device_id, libraries))
    everyone = list(range(len(labels)))
    if not (isinstance(entry, dict) and isinstance(entry.get("beaten"), list)
            and entry.get("choice") in labels):
        return everyone, (), None
    beaten = tuple(label for label in entry["beaten"] if isinstance(label, str))
    out = set(beaten) - {entry["choice"]}
    return ([i for i in everyone if labels[i] not in out], beaten,
            labels.index(entry["choice"]))


def _time_in_rounds(runs, indices, measure, rounds):
    """Time the candidates of ``indices`` in turn, ``rounds`` times, into ``runs`` (index ->
    list of ms); one that could not run is not timed again."""
    for i in indices:
        runs.setdefault(i, [])
    for _ in range(rounds):
        for i in indices:
            kept = runs[i]
            if not kept or math.isfinite(kept[0]):
                kept.append(measure(i))


def _head_to_head(runs, measure, keep, other, rounds, margin):
    """``other`` where it stays faster than ``keep`` by more than ``margin`` over the rounds
    of ``runs`` and ``rounds`` more of the two alone; else ``keep``."""
    ratios = [b / a for a, b in zip(runs[keep], runs[other])]
    for r in range(rounds):
        first, second = (keep, other) if r % 2 else (other, keep)
        ms = {first: measure(first)}
        ms[second] = measure(second)
        ratios.append(ms[other] / ms[keep])
    ratio = statistics.median(ratios)
    _log.info("timing: head to head, candidate %d over %d: %.4f", other, keep, ratio)
    return other if ratio < 1 - margin else keep


def known(problem, labels, device_id, libraries=()):
    """The choice :func:`choose` made and stored for the same problem and candidates (in
    this process or an earlier one), or None where there is none: nothing is timed.

    Parameters are those of :func:`choose`.

    Returns
    -------
    Choice or None
    """
    labels = list(labels)
    entry = store.load_json(_NAMESPACE, _key(problem, labels, device_id, libraries))
    if isinstance(entry, dict) and entry.get("choice") in labels:
        index = labels.index(entry["choice"])
        _log.debug("timing: %s: %s (stored)", problem, labels[index])
        return Choice(index, {}, True)
    return None


def _key(problem, labels, device_id, libraries):
    return f"{problem}|{'|'.join(labels)}|{fingerprint(device_id, tuple(libraries))}"

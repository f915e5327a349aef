"""Which way a fused call runs, decided by timing once per (problem, expression, device).

A fused call with several ways to run (a product's head on cuBLASLt's native epilogue against
the plain product and one fused pass; later a transform's callback or fused column pass
against a separate pass) asks :func:`fastest`. The first call of a problem times every way
on the device (:func:`accelmath._core.gpu.timing.choose`: CUDA events, the choice written to
the store with the GPU, driver and library versions); a later process reads the choice from
the store, and later calls in this process from a dict, without timing or reading anything.
"""

import threading

from accelmath._core.gpu import timing
from accelmath._core.gpu.device import ensure_context

__all__ = ["fastest", "forget"]

# Reentrant: a candidate timed under it may itself be a fused call that asks for its own
# fastest way (spectral_filter's separate passes: a transform with a fused epilogue).
_lock = threading.RLock()
_chosen = {}  # key -> index


def fastest(key, describe, candidates, device_id, stream, libraries=()):
    """The index of the fastest of ``candidates`` for the problem ``key``.

    Parameters
    ----------
    key : hashable
        Everything that decides which candidate wins, cheap to build on a per-call path (the
        expression's key, the operands' layouts, the device).
    describe : callable
        ``describe()``: the same as a stable string, for the store (called on a first call).
    candidates : dict
        ``{label: enqueue}``: each candidate's work, enqueued on ``stream`` when called.
    device_id : int
    stream : int
        The stream handle the candidates are timed on.
    libraries : sequence of str
        The libraries whose versions the choice depends on.

    Returns
    -------
    int
        The index of the chosen candidate, in ``candidates``' order.
    """
    found = _chosen.get(key)
    if found is not None:
        return found
    with _lock:
        found = _chosen.get(key)
        if found is None:
            labels = list(candidates)
            runs = list(candidates.values())
            ensure_context(device_id)

            def measure(index):
                try:
                    return timing.device_time(runs[index], stream)
                except Exception:  # (a candidate that cannot run loses)
                    return float("inf")

            found = timing.choose(describe(), labels, measure, device_id, libraries,
                                  rounds=3).index
            _chosen[key] = found
    return found


def forget():
    """Drop the choices this process holds (the store keeps its own)."""
    with _lock:
        _chosen.clear()

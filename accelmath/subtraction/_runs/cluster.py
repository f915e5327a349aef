"""Many image pairs on a Dask cluster: one worker per GPU, one warm subtractor per worker.

A survey subtracts thousands of pairs of one image size. :func:`subtract_many` hands them to
``dask.distributed`` (a client given, or a local cluster made and closed), and each worker keeps
a :class:`~accelmath.subtraction.Subtractor` per (shape, configuration) across its pairs, so
plans, compiled kernels and buffers are paid for once per worker. :func:`local_cluster` makes
the cluster: one worker process per GPU, each seeing only its own GPU, or CPU workers on a
machine without one. ``dask`` and ``distributed`` are imported only when these run.

Dask starts a local cluster's workers with multiprocessing's "spawn" method, which runs the
main script again in each new process: a script that makes a local cluster must do so under
an ``if __name__ == "__main__":`` guard, or each worker would try to start a cluster of its
own. Where that happens, :func:`subtract_many` and :func:`local_cluster` raise a
:class:`~accelmath.errors.StateError` that says so and shows the fix, rather than Dask's
tracebacks.
"""

import collections
import contextlib
import dataclasses
import inspect
import os
import sys
import threading
import uuid
import weakref

import numpy as np

from accelmath.errors import InvalidArgumentError, NoDeviceError, UnsupportedOperandError
from accelmath.subtraction._gpu import gpu_available, gpu_count, gpu_package
from accelmath.subtraction._runs.main_guard import (check_not_bootstrapping, start_failure,
                                                    unguarded_main_script)
from accelmath.subtraction._ops import kind_of, kind_of_array

__all__ = ["local_cluster", "subtract_many", "worker_environments"]

# How many subtractors (shapes and configurations) one worker keeps warm; the least recently
# used one beyond this is freed.
WARM_SUBTRACTORS = 4
_INSTALL_HINT = 'subtract_many needs dask.distributed: pip install "dask[distributed]"'
# Configuration that each worker decides for itself rather than the caller.
_WORKER_CHOSEN = ("shape", "like")
_HOST = "127.0.0.1"  # a local cluster listens on this machine only
_QUIET = 40  # logging.ERROR: a local cluster's start and stop messages are not the caller's
# Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536: glibc hands every freed block
# over 64 KiB back to the system, and a GPU worker's host work around each pair (reading or
# making its images) faults those pages in anew, about 10 ms per synthetic 4088^2 pair on an
# H100. Local GPU workers keep glibc's default.
_GPU_WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


def subtract_many(pairs, *, client=None, gpus=None, workers=None, reduce=None,
                  **configuration):
    """Subtract many image pairs on a Dask cluster, each worker keeping its subtractor warm.

    Each pair is subtracted on a worker by a :class:`~accelmath.subtraction.Subtractor` that
    the worker keeps across pairs of the same shape and configuration (plans, compiled code
    and buffers made once per worker). On a GPU worker, NumPy images go to its GPU (CuPy where
    installed, else torch) and the results come back as NumPy.

    Parameters
    ----------
    pairs : sequence
        Items of one of two kinds, mixed freely:

        - a tuple ``(reference, science)`` or ``(reference, science, mask)`` of arrays (or a
          :class:`~accelmath.subtraction.SyntheticPair`), sent to the workers (scattered, not
          through the task graph);
        - a callable of no argument that returns such a pair on the worker. This is how a
          pipeline should pass large images: each worker reads or makes its own pair (for
          example ``functools.partial(load_pair, path)``, or
          ``functools.partial(synthetic_pair, 4088, seed=seed, like=cupy)``), and no image
          crosses the network. Arrays already on the worker's GPU (CuPy, torch) are used where
          they are.
    client : distributed.Client, optional
        The cluster to use. Without one, a local cluster is made with :func:`local_cluster`
        (``gpus`` and ``workers`` pass to it) and closed before returning.
    gpus : int or sequence of int, optional
        For the local cluster only: how many GPUs (the first ``gpus``) or which ordinals get a
        worker each; ``0`` makes CPU workers. Default: every visible GPU, CPU workers if none.
    workers : int, optional
        For the local cluster only, without GPUs: the number of CPU worker processes (one
        thread each). Default: the number of CPU cores, at most one per pair.
    reduce : callable, optional
        A picklable function of one :class:`~accelmath.subtraction.SubtractionResult`, run on
        the worker, whose return value comes back instead of the result: a checksum, a list
        of detections, a path written. It receives the result as the subtractor returned it
        (on a GPU worker, the difference image is a CuPy or torch array on the GPU), so it
        may reduce on the GPU before anything is copied to the host.
    **configuration
        The subtraction's configuration, as :class:`~accelmath.subtraction.Subtractor` takes
        it (``half_width``, ``kernel_order``, ``background_order``, ``constant_ratio``,
        ``solver``, ...), the same for every pair. ``like`` is chosen by each worker.

    Returns
    -------
    list
        One entry per pair, in the order of ``pairs``: a ``SubtractionResult`` whose arrays are
        NumPy arrays, or what ``reduce`` returned.

    Raises
    ------
    ImportError
        ``distributed`` is not installed.
    StateError
        The local cluster's workers could not start because the script that calls this has
        no ``if __name__ == "__main__":`` guard (see Notes).
    Exception
        The first error a worker met, as the original exception (an
        :class:`~accelmath.errors.InvalidArgumentError` for a bad pair, for example).

    Notes
    -----
    Without a ``client``, a script must call this under an ``if __name__ == "__main__":``
    guard: the local cluster's worker processes are started by running the script again
    (multiprocessing's "spawn" method), and unguarded, each would start a cluster too::

        if __name__ == "__main__":
            results = subtract_many(pairs, half_width=9)

    Tasks that run at once on one worker (a worker of several threads) take turns on its
    subtractor; for more pairs at once, use more worker processes. A cluster made by another
    tool (``dask_cuda.LocalCUDACluster``, a job queue) works the same way, provided that each
    of its workers sees one GPU: every worker uses the first GPU it sees.

    Examples
    --------
    >>> from accelmath.subtraction import subtract_many, synthetic_pair
    >>> made = [synthetic_pair(64, seed=seed, stars=40, kernel_half_width=3) for seed in (1, 2)]
    >>> ratios = subtract_many([(p.reference, p.science) for p in made], gpus=0, workers=1,
    ...                        half_width=3, reduce=lambda result: result.ratio)
    >>> [round(ratio, 1) for ratio in ratios]
    [1.3, 1.3]
    """
    pairs = list(pairs)
    for index, item in enumerate(pairs):
        if not callable(item):
            _unpack(item, f"pairs[{index}]")
    _check_configuration(configuration)
    if client is not None and (gpus is not None or workers is not None):
        raise InvalidArgumentError(
            f"gpus={gpus!r} and workers={workers!r} describe a local cluster, but a client was "
            "given: its cluster already has its workers; pass one or the other")
    if not pairs:
        return []
    if client is not None:
        return _run(client, pairs, reduce, configuration)
    distributed = _import_distributed()
    # (by default one CPU worker per core, but not more than there are pairs)
    with _local_cluster(gpus, workers, cores=min(_cores(), len(pairs))) as cluster:
        with distributed.Client(cluster) as own:
            return _run(own, pairs, reduce, configuration)


def local_cluster(*, gpus=None, workers=None):
    """A local Dask cluster of one worker process per GPU, or of CPU worker processes.

    Each GPU worker sees only its own GPU (``CUDA_VISIBLE_DEVICES``, as
    :func:`worker_environments` sets it). ``dask_cuda.LocalCUDACluster`` makes the GPU workers
    where ``dask-cuda`` is installed; otherwise a ``distributed.SpecCluster`` of ``Nanny``
    workers of one thread each. CPU workers see no GPU, so a CPU cluster on a GPU machine
    computes on the CPU. Workers get Dask's environment, one thread for BLAS and OpenMP, except
    that GPU workers keep glibc's default trimming of freed memory (Dask's makes the host work
    around each pair slower).

    Parameters
    ----------
    gpus : int or sequence of int, optional
        How many GPUs (the first ``gpus``) or which ordinals (among those visible to this
        process) get a worker each; ``0`` or an empty sequence makes CPU workers. Default:
        every visible GPU, CPU workers if there is none.
    workers : int, optional
        Without GPUs: the number of CPU worker processes. Default: the number of CPU cores.
        With GPUs there is one worker per GPU, and giving ``workers`` is an error.

    Returns
    -------
    distributed.deploy.Cluster
        Started; use it as a context manager, or ``close()`` it. Give it to
        ``distributed.Client`` to compute on it.

    Raises
    ------
    StateError
        The workers could not start because the script that calls this has no
        ``if __name__ == "__main__":`` guard: each worker process runs the script again as it
        starts (multiprocessing's "spawn" method). Call it under the guard::

            if __name__ == "__main__":
                cluster = local_cluster()

    Examples
    --------
    >>> from distributed import Client
    >>> from accelmath.subtraction import local_cluster
    >>> with local_cluster(gpus=0, workers=2) as cluster, Client(cluster) as client:
    ...     sorted(client.nthreads().values())
    [1, 1]
    """
    return _local_cluster(gpus, workers, cores=_cores(), caller="local_cluster")


def _local_cluster(gpus, workers, cores, caller="subtract_many"):
    distributed = _import_distributed()
    environments = worker_environments(
        gpus, workers, device_count=gpu_count(),
        visible=os.environ.get("CUDA_VISIBLE_DEVICES"), cores=cores)
    check_not_bootstrapping(caller)
    try:
        return _start_cluster(distributed, environments)
    except Exception as exc:
        error = start_failure(exc, caller, unguarded_main_script())
        if error is None:  # (a cause other than the guard: Dask's own error)
            raise exc
        raise error from None  # (Dask's tracebacks say nothing of the cause)


def _start_cluster(distributed, environments):
    gpu_ids = [env["CUDA_VISIBLE_DEVICES"] for env in environments
               if env["CUDA_VISIBLE_DEVICES"]]
    if not gpu_ids:
        return _spec_cluster(distributed, environments)
    import dask

    with dask.config.set(_GPU_WORKER_CONFIG):  # (read as each worker's Nanny is made)
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            return _spec_cluster(distributed, environments)
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=gpu_ids, threads_per_worker=1, host=_HOST,
                                dashboard_address=":0", silence_logs=_QUIET)


def _spec_cluster(distributed, environments):
    """A ``SpecCluster`` of one-thread ``Nanny`` workers, one per environment."""
    share = 1 / len(environments)  # of the host memory, before a worker spills or pauses
    spec = {_worker_name(env, index): {
                "cls": distributed.Nanny,
                "options": {"nthreads": 1, "env": env, "memory_limit": share, "host": _HOST,
                            "silence_logs": _QUIET}}
            for index, env in enumerate(environments)}
    # (":0": the scheduler's HTTP endpoints on a free port, not on the shared default 8787)
    scheduler = {"cls": distributed.Scheduler,
                 "options": {"host": _HOST, "dashboard": False, "dashboard_address": ":0"}}
    return distributed.SpecCluster(workers=spec, scheduler=scheduler, silence_logs=_QUIET)


def _worker_name(env, index):
    """A local worker's name: ``gpu-<id>`` for the GPU it sees, ``cpu-<index>`` otherwise."""
    gpu = env["CUDA_VISIBLE_DEVICES"]
    return f"gpu-{gpu}" if gpu else f"cpu-{index}"


def worker_environments(gpus, workers, *, device_count, visible=None, cores=1):
    """The environment of each worker of a local cluster: which GPU it sees, if any.

    A pure function (no device access), the one place where workers are pinned to GPUs.

    Parameters
    ----------
    gpus : None, int or sequence of int
        ``None``: every visible GPU, or CPU workers when ``device_count`` is 0; an int: the
        first ``gpus`` GPUs (``0``: CPU workers); a sequence: those ordinals.
    workers : int or None
        The number of CPU workers (default ``cores``); not allowed with GPUs.
    device_count : int
        The number of GPUs this process sees.
    visible : str, optional
        This process's ``CUDA_VISIBLE_DEVICES``, whose entries the ordinals index (so that a
        worker of a process restricted to GPUs ``"2,3"`` gets ``"2"`` or ``"3"``); ``None`` when
        it is not set.
    cores : int
        The number of CPU cores, the default number of CPU workers.

    Returns
    -------
    list of dict
        One ``{"CUDA_VISIBLE_DEVICES": id}`` per worker: the GPU's id, or ``""`` (no GPU) for a
        CPU worker.

    Examples
    --------
    >>> from accelmath.subtraction._runs.cluster import worker_environments
    >>> worker_environments(None, None, device_count=2)
    [{'CUDA_VISIBLE_DEVICES': '0'}, {'CUDA_VISIBLE_DEVICES': '1'}]
    >>> worker_environments([1], None, device_count=4, visible="4,5,6,7")
    [{'CUDA_VISIBLE_DEVICES': '5'}]
    >>> worker_environments(0, 3, device_count=8)
    [{'CUDA_VISIBLE_DEVICES': ''}, {'CUDA_VISIBLE_DEVICES': ''}, {'CUDA_VISIBLE_DEVICES': ''}]
    """
    ordinals = _gpu_ordinals(gpus, device_count)
    if ordinals:
        if workers is not None:
            raise InvalidArgumentError(
                f"workers={workers!r} sets the number of CPU workers, but gpus={gpus!r} makes "
                "one worker per GPU: choose the GPUs with gpus=, or pass gpus=0 for CPU workers")
        ids = _visible_ids(visible, device_count)
        return [{"CUDA_VISIBLE_DEVICES": ids[ordinal]} for ordinal in ordinals]
    if workers is None:
        workers = max(1, cores)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgumentError(f"workers={workers!r}: expected a positive int")
    return [{"CUDA_VISIBLE_DEVICES": ""} for _ in range(workers)]


def _gpu_ordinals(gpus, device_count):
    """The GPU ordinals that ``gpus`` names (an empty list for CPU workers)."""
    if gpus is None:
        return list(range(device_count))
    if isinstance(gpus, bool):
        raise InvalidArgumentError(f"gpus={gpus!r}: expected a count or a sequence of ordinals")
    if isinstance(gpus, int):
        if gpus < 0 or gpus > device_count:
            raise InvalidArgumentError(
                f"gpus={gpus!r}: expected a count from 0 to {device_count}, the number of GPUs "
                "this process sees")
        return list(range(gpus))
    try:
        ordinals = [int(ordinal) for ordinal in gpus]
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"gpus={gpus!r}: expected a count or a sequence of ordinals") from None
    bad = [o for o in ordinals if not 0 <= o < device_count]
    if bad or len(set(ordinals)) != len(ordinals):
        raise InvalidArgumentError(
            f"gpus={gpus!r}: expected distinct ordinals from 0 to {device_count - 1} "
            f"({device_count} GPUs visible)")
    return ordinals


def _visible_ids(visible, device_count):
    """The ids (ordinals or UUIDs) of the GPUs this process sees, by ordinal."""
    if visible is None:
        return [str(index) for index in range(device_count)]
    ids = [entry.strip() for entry in visible.split(",") if entry.strip()]
    if len(ids) < device_count:
        raise InvalidArgumentError(
            f"CUDA_VISIBLE_DEVICES={visible!r} names {len(ids)} GPUs, but {device_count} are "
            "visible")
    return ids[:device_count]


# --- the client's side -----------------------------------------------------------------------

def _run(client, pairs, reduce, configuration):
    """Submit one task per pair (scattering the arrays), gather the results in order."""
    arrays = [index for index, item in enumerate(pairs) if not callable(item)]
    inputs = list(pairs)
    if arrays:
        scattered = client.scatter([_unpack(pairs[index], "") for index in arrays], hash=False)
        for index, future in zip(arrays, scattered):
            inputs[index] = future
    batch = uuid.uuid4().hex
    futures = [client.submit(_subtract_on_worker, item, reduce, configuration, index,
                             key=f"accelmath-subtract-{batch}-{index}", pure=False)
               for index, item in enumerate(inputs)]
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)  # the pairs not yet subtracted
        raise


def _check_configuration(configuration, caller="subtract_many", shadowed=("workers",)):
    """Every key of ``configuration`` is a parameter of ``Subtractor`` that ``caller`` lets
    its caller set: not those each worker chooses, nor ``shadowed`` (subtract_many's own
    ``workers`` keyword shadows Subtractor's, its FFT threads)."""
    from accelmath.subtraction import Subtractor

    allowed = [name for name in inspect.signature(Subtractor).parameters
               if name not in _WORKER_CHOSEN + tuple(shadowed)]
    for name in configuration:
        if name in _WORKER_CHOSEN:
            raise InvalidArgumentError(
                f"{name}= is chosen by each worker (its image shape, its GPU's array package); "
                f"leave it out of {caller}'s configuration")
        if name not in allowed:
            raise InvalidArgumentError(
                f"unknown configuration {name}={configuration[name]!r}: expected one of "
                + ", ".join(allowed))


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return distributed


def _cores():
    return os.cpu_count() or 1


def _unpack(item, where):
    """``(reference, science, mask)`` from a pair (``mask`` None when absent)."""
    if hasattr(item, "reference") and hasattr(item, "science"):  # a SyntheticPair
        return item.reference, item.science, getattr(item, "mask", None)
    if isinstance(item, (str, bytes)) or not isinstance(item, (tuple, list)):
        raise UnsupportedOperandError(
            f"{where} is a {type(item).__name__}: expected (reference, science), "
            "(reference, science, mask), a SyntheticPair, or a callable that returns one")
    if len(item) not in (2, 3):
        raise InvalidArgumentError(
            f"{where} holds {len(item)} items: expected (reference, science) or "
            "(reference, science, mask)")
    reference, science, *mask = item
    return reference, science, (mask[0] if mask else None)


# --- the worker's side -----------------------------------------------------------------------

def _subtract_on_worker(item, reduce, configuration, index):
    """One pair on this worker: load it, move it to the GPU, subtract with the warm subtractor,
    reduce or bring the result to the host."""
    if callable(item):
        item = item()
        where = f"the pair returned by pairs[{index}]()"
    else:
        where = f"pairs[{index}]"
    reference, science, mask = _unpack(item, where)
    kind = _gpu_kind()
    if kind is not None:  # (NumPy images to the GPU; arrays already there stay)
        reference, science, mask = (kind.asarray(x) if isinstance(x, np.ndarray) else x
                                    for x in (reference, science, mask))
    warm = _warm_subtractors()
    with warm.hold(reference, configuration) as subtractor:
        result = subtractor.subtract(reference, science, mask=mask)
    return reduce(result) if reduce is not None else _to_host(result)


class _WarmSubtractors:
    """One worker's subtractors by (shape, array kind, configuration), the least recently
    used first; tasks of one worker take turns on each."""

    def __init__(self):
        self._entries = collections.OrderedDict()  # key -> _Entry
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self, like, configuration):
        """The subtractor for images like ``like``, made on first use, held by this task."""
        key = (tuple(like.shape), kind_of_array(like, "reference"),
               tuple(sorted(configuration.items())))
        while True:
            entry = self._entry(key, like, configuration)
            with entry.lock:
                if not entry.evicted:  # (else evicted while this task waited: take anew)
                    yield entry.subtractor
                    return

    def _entry(self, key, like, configuration):
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                from accelmath.subtraction import Subtractor

                entry = _Entry(Subtractor(tuple(like.shape), like=like, **configuration))
            self._entries[key] = entry
            evicted = []
            while len(self._entries) > WARM_SUBTRACTORS:
                evicted.append(self._entries.popitem(last=False)[1])
        for old in evicted:  # (outside the cache's lock: a task may still be using it)
            with old.lock:
                old.evicted = True
                old.subtractor.free()
        return entry


class _Entry:
    __slots__ = ("subtractor", "lock", "evicted")

    def __init__(self, subtractor):
        self.subtractor, self.lock, self.evicted = subtractor, threading.Lock(), False


_per_worker = weakref.WeakKeyDictionary()  # distributed.Worker -> _WarmSubtractors
_outside_workers = _WarmSubtractors()      # a task run outside a worker (tests, local runs)
_per_worker_lock = threading.Lock()


def _warm_subtractors():
    """This worker's subtractors: kept on the worker, so that they go when it closes (where
    ``distributed`` was never imported, no worker runs this: the process's own)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return _outside_workers
    try:
        worker = distributed.get_worker()
    except ValueError:
        return _outside_workers
    with _per_worker_lock:
        warm = _per_worker.get(worker)
        if warm is None:
            warm = _per_worker[worker] = _WarmSubtractors()
    return warm


_kind = []


def _gpu_kind():
    """The :class:`~accelmath.subtraction._ops.ArrayKind` of this worker's GPU (CuPy, else
    torch), or None on a CPU worker."""
    if not _kind:
        kind = None
        if gpu_available():
            package = gpu_package()
            if package is None:
                raise NoDeviceError(
                    "this worker sees a GPU but has neither CuPy nor torch with CUDA to "
                    "hold images there: pip install cupy-cuda12x (or cupy-cuda13x)")
            kind = kind_of(package)
        _kind.append(kind)
    return _kind[0]


def _to_host(result):
    """``result`` with its difference image as a NumPy array (its other arrays are NumPy)."""
    # (a NumPy difference is returned as it is: a result's arrays never alias a subtractor's
    # buffers)
    difference = result.difference
    return dataclasses.replace(result, difference=kind_of_array(difference).to_numpy(difference))

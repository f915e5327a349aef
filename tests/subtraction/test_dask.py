"""Many pairs on Dask: every pair's result equals the single-pair subtraction's, with arrays and
with callables, a client given or a local cluster made; ``reduce``; workers' errors; the
workers' warm subtractors; the pinning of workers to GPUs (a pure function)."""

import dataclasses
import functools
import os
import sys

import numpy as np
import pytest
from closeness import assert_close_elementwise

from accelmath.errors import InvalidArgumentError, UnsupportedOperandError
from accelmath.subtraction import subtract, synthetic_pair
from accelmath.subtraction._runs import cluster as _dask
from accelmath.subtraction._runs.cluster import worker_environments

pytest.importorskip("distributed")

# a small half-width for speed; PHROSTY's orders
CONFIGURATION = {"half_width": 3, "kernel_order": 2, "background_order": 0,
                 "constant_ratio": True}
SIZES = (64, 96, 64, 80)
RTOL = 1e-12  # of the largest value: the same arithmetic, in another process


def _pair(size, seed, like=None):
    """A synthetic pair whose mask keeps a random 90% of the pixels (any mask will do here,
    and one of this density is never empty)."""
    pair = synthetic_pair(size, seed=seed, stars=size, kernel_half_width=3, like=like)
    mask = np.random.default_rng(seed).random((size, size)) < 0.9
    return dataclasses.replace(pair, mask=mask if like is None else like.asarray(mask))


def _made(sizes=SIZES):
    """Fresh pairs: ``(callable making the pair, the pair)`` per size."""
    seeds = np.random.default_rng().integers(0, 2**31, size=len(sizes))
    made = []
    for size, seed in zip(sizes, seeds):
        make = functools.partial(_pair, size, int(seed))
        made.append((make, make()))
    return made


def _expected(client, pairs):
    """The one-call ``subtract`` of each pair, computed on a worker of the cluster: there
    BLAS runs with the same number of threads as on the workers of ``subtract_many``, so
    that the two agree to rounding rather than to the reordering of sums."""
    futures = [client.submit(subtract, pair[0], pair[1], mask=(pair[2:] or [None])[0],
                             **CONFIGURATION, pure=False) for pair in pairs]
    return client.gather(futures)


def assert_same(ours, expected, rtol=RTOL):
    assert isinstance(ours.difference, np.ndarray)
    assert ours.difference.shape == expected.difference.shape
    assert_close_elementwise(ours.difference, expected.difference, rtol, rtol=rtol, if_zero=1.0)
    assert_close_elementwise(ours.coefficients, expected.coefficients, rtol, rtol=rtol, if_zero=1.0)
    assert_close_elementwise(ours.background, expected.background, rtol, rtol=rtol, if_zero=1.0)
    assert abs(ours.ratio - expected.ratio) <= rtol * abs(expected.ratio)


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    with _dask.local_cluster(gpus=0, workers=2) as cluster, Client(cluster) as client:
        yield client


def test_arrays_with_a_client(client):
    made = _made()
    pairs = [(p.reference, p.science, p.mask) for _, p in made]
    pairs[1] = pairs[1][:2]  # without a mask
    results = _dask.subtract_many(pairs, client=client, **CONFIGURATION)
    assert len(results) == len(pairs)
    for ours, expected in zip(results, _expected(client, pairs)):
        assert_same(ours, expected)


def test_callables_on_a_local_cluster(client):
    made = _made()
    results = _dask.subtract_many([make for make, _ in made], gpus=0, workers=2,
                                  **CONFIGURATION)
    expected = _expected(client, [(p.reference, p.science, p.mask) for _, p in made])
    for ours, one in zip(results, expected):
        assert_same(ours, one)


def test_reduce_runs_on_the_worker(client):
    made = _made(SIZES[:2])
    mixed = [made[0][0], made[1][1]]  # a callable and a SyntheticPair
    results = _dask.subtract_many(
        mixed, client=client, **CONFIGURATION,
        reduce=lambda r: (r.ratio, float(np.sum(r.difference ** 2)), r.difference.shape))
    expected = _expected(client, [(p.reference, p.science, p.mask) for _, p in made])
    for (_, pair), (ratio, squares, shape), expected in zip(made, results, expected):
        assert abs(ratio - expected.ratio) <= RTOL * abs(expected.ratio)
        assert abs(squares - np.sum(expected.difference ** 2)) <= RTOL * squares
        assert shape == pair.reference.shape


def test_torch_images_come_back_as_numpy(client):
    torch = pytest.importorskip("torch")
    (_, pair), = _made(SIZES[:1])
    pairs = [tuple(torch.from_numpy(x) for x in (pair.reference, pair.science, pair.mask))]
    (ours,) = _dask.subtract_many(pairs, client=client, **CONFIGURATION)
    (expected,) = _expected(client, pairs)
    assert isinstance(expected.difference, torch.Tensor)
    assert_same(ours, expected)


def _missing_pair():
    raise FileNotFoundError("no such image: science-17.fits")


def test_a_workers_error_is_the_original(client):
    made = _made(SIZES[:2])
    with pytest.raises(FileNotFoundError, match="science-17.fits"):
        _dask.subtract_many([made[0][0], _missing_pair], client=client, **CONFIGURATION)
    bad_shapes = (made[0][1].reference, made[1][1].science)  # 64^2 and 96^2
    with pytest.raises(InvalidArgumentError):
        _dask.subtract_many([bad_shapes], client=client, **CONFIGURATION)
    with pytest.raises(InvalidArgumentError, match=r"pairs\[0\]\(\) holds 1 items"):
        _dask.subtract_many([lambda: (made[0][1].reference,)], client=client)


def _warm_numpy_subtractors(dask_worker):
    """On a worker: shape -> id of the subtractor it keeps for NumPy images."""
    warm = _dask._per_worker.get(dask_worker)
    entries = {} if warm is None else warm._entries
    return {key[0]: id(entry.subtractor) for key, entry in entries.items()
            if key[1].package == "numpy"}


def test_each_worker_keeps_its_subtractors_from_call_to_call(client):
    made = _made()
    kept = []
    for _ in range(2):
        _dask.subtract_many([make for make, _ in made], client=client, **CONFIGURATION)
        kept.append(client.run(_warm_numpy_subtractors))
    assert kept[0] == kept[1]  # the same objects: none made anew
    shapes = [shape for per_worker in kept[1].values() for shape in per_worker]
    assert set(shapes) >= {(n, n) for n in SIZES}


def test_the_least_recently_used_subtractor_is_freed(monkeypatch):
    freed = []

    class Recorder:
        def __init__(self, shape, *, like, **configuration):
            self.shape = shape

        def free(self):
            freed.append(self.shape)

    monkeypatch.setattr("accelmath.subtraction.Subtractor", Recorder)
    monkeypatch.setattr(_dask, "WARM_SUBTRACTORS", 2)
    warm = _dask._WarmSubtractors()
    held = []
    for n in (4, 5, 4, 6):
        with warm.hold(np.zeros((n, n)), {}) as subtractor:
            held.append(subtractor)
    assert held[0] is held[2] and freed == [(5, 5)]
    assert [key[0] for key in warm._entries] == [(4, 4), (6, 6)]
    # a task that waited for a subtractor evicted meanwhile takes the cache's anew
    stale = _dask._Entry(Recorder((4, 4), like=None))
    stale.evicted = True
    answers, entry = [stale], warm._entry
    monkeypatch.setattr(warm, "_entry", lambda *args: answers.pop() if answers else entry(*args))
    with warm.hold(np.zeros((4, 4)), {}) as subtractor:
        assert subtractor is held[0]


def test_bad_arguments_are_refused_before_any_work():
    pair = (np.zeros((8, 8)), np.zeros((8, 8)))
    with pytest.raises(UnsupportedOperandError, match=r"pairs\[1\] is a ndarray"):
        _dask.subtract_many([pair, np.zeros((8, 8))], gpus=0)
    with pytest.raises(InvalidArgumentError, match=r"pairs\[0\] holds 4 items"):
        _dask.subtract_many([pair * 2], gpus=0)
    with pytest.raises(InvalidArgumentError, match="unknown configuration halfwidth=3"):
        _dask.subtract_many([pair], gpus=0, halfwidth=3)
    with pytest.raises(InvalidArgumentError, match="like= is chosen by each worker"):
        _dask.subtract_many([pair], gpus=0, like=np)
    with pytest.raises(InvalidArgumentError, match="a client was given"):
        _dask.subtract_many([pair], client=object(), workers=2)
    assert _dask.subtract_many([], gpus=0) == []


def test_without_distributed_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r'pip install "dask\[distributed\]"'):
        _dask.subtract_many([(np.zeros((8, 8)), np.zeros((8, 8)))], gpus=0)


@pytest.mark.parametrize("gpus, workers, count, visible, expected", [
    (None, None, 0, None, [""] * 3),                 # no GPU: one CPU worker per core
    (None, 2, 0, None, ["", ""]),
    (0, None, 4, None, [""] * 3),                    # CPU workers on a GPU machine
    (None, None, 4, None, ["0", "1", "2", "3"]),     # every GPU
    (2, None, 4, None, ["0", "1"]),                  # the first two
    ([3, 1], None, 4, None, ["3", "1"]),             # those ordinals
    (None, None, 2, "5,7", ["5", "7"]),              # ordinals index CUDA_VISIBLE_DEVICES
    ([1], None, 2, "GPU-aa, GPU-bb", ["GPU-bb"]),
    ((), 1, 2, None, [""]),
])
def test_worker_environments(gpus, workers, count, visible, expected):
    environments = worker_environments(gpus, workers, device_count=count, visible=visible,
                                       cores=3)
    assert environments == [{"CUDA_VISIBLE_DEVICES": gpu} for gpu in expected]


@pytest.mark.parametrize("gpus, workers, count, visible, message", [
    (3, None, 2, None, r"gpus=3: expected a count from 0 to 2"),
    (1, None, 0, None, r"gpus=1: expected a count from 0 to 0"),
    ([0, 0], None, 2, None, r"expected distinct ordinals from 0 to 1"),
    ([2], None, 2, None, r"expected distinct ordinals from 0 to 1"),
    (["a"], None, 2, None, r"expected a count or a sequence of ordinals"),
    (True, None, 2, None, r"expected a count or a sequence of ordinals"),
    (-1, None, 2, None, r"gpus=-1"),
    (2, 4, 2, None, r"workers=4 sets the number of CPU workers"),
    (0, 0, 2, None, r"workers=0: expected a positive int"),
    (None, None, 3, "1,2", r"CUDA_VISIBLE_DEVICES='1,2' names 2 GPUs, but 3 are visible"),
])
def test_worker_environments_refuse(gpus, workers, count, visible, message):
    with pytest.raises(InvalidArgumentError, match=message):
        worker_environments(gpus, workers, device_count=count, visible=visible, cores=3)


def _where(result):
    """On the worker: the difference image's package and the GPUs the worker sees."""
    return type(result.difference).__module__.partition(".")[0], os.environ.get(
        "CUDA_VISIBLE_DEVICES")


@pytest.mark.gpu
def test_one_gpu_worker(cp):
    made = _made(SIZES[:3])
    seed = int(np.random.default_rng().integers(0, 2**31))
    on_gpu = functools.partial(_pair, 96, seed, like=cp)  # made on the worker's GPU
    pairs = [(made[0][1].reference, made[0][1].science, made[0][1].mask),  # NumPy: moved
             on_gpu, made[2][0]]
    results = _dask.subtract_many(pairs, gpus=1, **CONFIGURATION)
    where = _dask.subtract_many(pairs, gpus=1, reduce=_where, **CONFIGURATION)
    first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    assert where == [("cupy", first)] * 3
    for ours, pair in zip(results, [made[0][1], on_gpu(), made[2][1]]):
        expected = subtract(cp.asarray(pair.reference), cp.asarray(pair.science),
                            mask=cp.asarray(pair.mask), **CONFIGURATION)
        # (in this process, not the worker's: an algorithm chosen by timing may differ)
        assert_same(ours, _dask._to_host(expected), rtol=1e-10)


def _environment():
    """On the worker: the allocator and thread settings it was started with."""
    return {name: os.environ.get(name)
            for name in ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")}


def test_gpu_workers_keep_the_default_malloc_trimming(monkeypatch):
    from distributed import Client

    # (a worker pinned to a GPU needs none to start: its environment is what is checked)
    monkeypatch.setattr(_dask, "gpu_count", lambda: 1)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # (as a fresh process has it)
    with _dask.local_cluster(gpus=1) as cluster, Client(cluster) as client:
        gpu_worker = list(client.run(_environment).values())
    with _dask.local_cluster(gpus=0, workers=1) as cluster, Client(cluster) as client:
        cpu_worker = list(client.run(_environment).values())
    assert gpu_worker == [{"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1",
                           "CUDA_VISIBLE_DEVICES": "0"}]
    assert cpu_worker == [{"MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1",
                           "CUDA_VISIBLE_DEVICES": ""}]

"""Many threads and streams sharing cached plans (GPU only).

8 threads run stateless ``fft2``, ``rfft2`` and ``irfft2`` calls, each on its own input and on
one of 4 streams, all through the same cached plans (same shapes and layouts). Every result
must equal the serial result computed beforehand, and no plan may be built while the threads
run.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from closeness import assert_close

import accelmath.fft

pytestmark = pytest.mark.gpu

THREADS, STREAMS, ROUNDS = 8, 4, 6
SHAPE = (6, 48, 40)  # a batch of 6 images of 48 x 40
FUNCTIONS = ("fft2", "rfft2", "irfft2")


def host_inputs(seed):
    """One input per (thread, round, function): complex, real, and a Hermitian half-spectrum."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for t in range(THREADS):
        for r in range(ROUNDS):
            real = rng.standard_normal(SHAPE)
            inputs[t, r, "fft2"] = real + 1j * rng.standard_normal(SHAPE)
            inputs[t, r, "rfft2"] = real
            inputs[t, r, "irfft2"] = np.fft.rfft2(rng.standard_normal(SHAPE))
    return inputs


def run_threads(work):
    """Run ``work(t)`` in THREADS threads started together; re-raise the first error."""
    barrier = threading.Barrier(THREADS)

    def start(t):
        barrier.wait()
        return work(t)

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(start, t) for t in range(THREADS)]
        return [f.result() for f in futures]


def check_results(results, serial, inputs):
    for key, value in results.items():
        assert_close(value, serial[key], 1e-12,
                     f"thread {key[0]} round {key[1]} {key[2]}", same_type=True)
    # and the serial results are right (cuFFT against NumPy)
    key = (0, 0, "irfft2")
    assert_close(serial[key], np.fft.irfft2(inputs[key]), 1e-10, "serial irfft2", same_type=True)
    key = (THREADS - 1, ROUNDS - 1, "fft2")
    assert_close(serial[key], np.fft.fft2(inputs[key]), 1e-10, "serial fft2", same_type=True)


def test_cupy_streams_share_cached_plans(cp):
    cupy = cp
    inputs = host_inputs(0)
    # serial results, on the current stream; this also builds (and caches) the plans
    serial = {key: cupy.asnumpy(getattr(accelmath.fft, key[2])(cupy.asarray(x)))
              for key, x in inputs.items()}
    cupy.cuda.get_current_stream().synchronize()
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(STREAMS)]
    misses = accelmath.fft.cache_info()["misses"]

    def work(t):
        keep = []  # inputs and outputs stay alive until the streams are synchronized
        for r in range(ROUNDS):
            stream = streams[(t + r) % STREAMS]
            with stream:  # CuPy allocates (and copies) on this stream
                for name in FUNCTIONS:
                    x = cupy.asarray(inputs[t, r, name])
                    y = getattr(accelmath.fft, name)(x, stream=stream)
                    keep.append(((t, r, name), x, y))
        return keep

    done = [item for items in run_threads(work) for item in items]
    for stream in streams:
        stream.synchronize()
    assert accelmath.fft.cache_info()["misses"] == misses, "a plan was built while threaded"
    results = {}
    for key, _, y in done:
        assert isinstance(y, cupy.ndarray)
        results[key] = cupy.asnumpy(y)  # on the null stream, after the streams finished
    check_results(results, serial, inputs)


def test_torch_streams_share_cached_plans(torch_cuda):
    torch = torch_cuda
    inputs = host_inputs(1)
    serial = {key: getattr(accelmath.fft, key[2])(torch.from_numpy(x).cuda()).cpu().numpy()
              for key, x in inputs.items()}
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    misses = accelmath.fft.cache_info()["misses"]

    def work(t):
        keep = []
        for r in range(ROUNDS):
            stream = streams[(t + r) % STREAMS]
            with torch.cuda.stream(stream):  # torch allocates (and copies) on this stream
                for name in FUNCTIONS:
                    x = torch.from_numpy(inputs[t, r, name]).cuda()
                    y = getattr(accelmath.fft, name)(x, stream=stream)
                    keep.append(((t, r, name), x, y))
        return keep

    done = [item for items in run_threads(work) for item in items]
    torch.cuda.synchronize()
    assert accelmath.fft.cache_info()["misses"] == misses, "a plan was built while threaded"
    results = {}
    for key, _, y in done:
        assert isinstance(y, torch.Tensor) and y.is_cuda
        results[key] = y.cpu().numpy()
    check_results(results, serial, inputs)

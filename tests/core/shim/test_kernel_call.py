"""The call shim's kernel launch (``_core/_shim/kernel_call.c``), through stand-ins of cuLaunchKernel
and the context functions made by ctypes: the grid, block, shared memory, stream and the 11
parameter words reach the launch; the kernel's context is pushed and popped where another is
current; a failing status comes back, of the first call that failed."""

import ctypes

import pytest

from accelmath._core import hostcall

_hostcall = pytest.importorskip("accelmath._core._hostcall")

_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
_GET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
_PUSH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _Driver:
    """Stand-ins of the driver's four functions, recording what they are given."""

    def __init__(self, current, launch_status=0, push_status=0, pop_status=0):
        self.events = []

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra):
            words = [ctypes.c_uint64.from_address(parameters[i]).value for i in range(11)]
            self.events.append(("launch", function, (gx, gy, gz), (bx, by, bz), shared,
                                stream, words, extra))
            return launch_status

        def get(pointer):
            pointer[0] = current
            return 0

        def push(context):
            self.events.append(("push", context))
            return push_status

        def pop(pointer):
            pointer[0] = 1
            self.events.append(("pop",))
            return pop_status

        self.functions = (_LAUNCH(launch), _GET(get), _PUSH(push), _GET(pop))

    def call(self, context):
        addresses = [ctypes.cast(f, ctypes.c_void_p).value for f in self.functions]
        return hostcall.kernel_call(*addresses, context)


def _launch(driver, context, grid=(3, 2, 5), block=(16, 8, 2), shared=96, words=range(11)):
    call, table = driver.call(context)
    head = hostcall.kernel_head(grid, block, shared)
    return call(ctypes.addressof(table), 0x1234, *head, 0x99, *words)


def test_the_launch_takes_the_head_and_the_words():
    driver = _Driver(current=7)
    words = [1, 2 ** 64 - 1, 2 ** 63, 0, 5, 6, 7, 8, 9, 10, 2 ** 40]
    assert _launch(driver, 7, grid=(2 ** 32 - 1, 65535, 65535), block=(1024, 1024, 64),
                   shared=227 * 1024, words=[w if w < 2 ** 63 else w - 2 ** 64
                                             for w in words]) == 0
    (event,) = driver.events  # (the context current: nothing pushed)
    assert event == ("launch", 0x1234, (2 ** 32 - 1, 65535, 65535), (1024, 1024, 64),
                     227 * 1024, 0x99, words, None)


def test_another_current_context_is_pushed_for_the_launch_and_popped():
    driver = _Driver(current=8)
    assert _launch(driver, 7) == 0
    assert [e[0] for e in driver.events] == ["push", "launch", "pop"]
    assert driver.events[0] == ("push", 7)


@pytest.mark.parametrize("statuses, expected, events", [
    ({"launch_status": 700}, 700, ["push", "launch", "pop"]),
    ({"push_status": 201}, 201, ["push"]),
    ({"pop_status": 202}, 202, ["push", "launch", "pop"]),
    ({"launch_status": 700, "pop_status": 202}, 700, ["push", "launch", "pop"]),
])
def test_the_first_failing_status_comes_back(statuses, expected, events):
    driver = _Driver(current=8, **statuses)
    assert _launch(driver, 7) == expected
    assert [e[0] for e in driver.events] == events


def test_threads_launch_with_their_own_words():
    import threading

    driver = _Driver(current=7)
    call, table = driver.call(7)
    head = hostcall.kernel_head((1, 1, 1), (32, 1, 1))

    def work(k):
        for _ in range(200):
            assert call(ctypes.addressof(table), 1, *head, k, *[k] * 11) == 0

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(driver.events) == 800
    assert all(e[6] == [e[5]] * 11 for e in driver.events)  # (each launch's words its own)


def test_kernel_head_packs_what_the_launch_unpacks():
    grid, block = hostcall.kernel_head((5, 6, 7), (8, 9, 10), 4096)
    assert (grid & 0xffffffff, grid >> 32 & 0xffff, grid >> 48) == (5, 6, 7)
    assert (block & 0x7ff, block >> 11 & 0x7ff, block >> 22 & 0x7ff, block >> 32) == (
        8, 9, 10, 4096)

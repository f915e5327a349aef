"""A stream beside a call's: work that only reads the call's operands (a check whose result
the host waits for) runs there, concurrently with the call's own work on its stream.

:func:`fork` orders the calling thread's side stream on a device after the work enqueued on
the call's stream so far; :meth:`Side.join` makes the call's stream wait for the work enqueued
beside it since, so that whatever follows the call on its stream (a free of an array the side
work reads or writes, in the pools' stream order) follows both. Each thread has its own side
stream per device, made on its first fork there and destroyed with the thread.
"""

import ctypes
import threading

from accelmath._core.gpu.device import ensure_context
from accelmath.bindings import driver

__all__ = ["Side", "fork"]

_NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING: no implicit order with the legacy default stream
_EVENT_DISABLE_TIMING = 2
_local = threading.local()  # .sides: {device_id: Side} of the calling thread


class Side:
    """The calling thread's stream beside the calls' on one device, and the two events that
    order it: ``stream`` (a handle), ``forked`` (recorded on a call's stream, waited for
    here) and ``joined`` (recorded here, waited for on the call's stream). An event's wait
    takes the event as last recorded, so both are recorded again by every call."""

    __slots__ = ("stream", "forked", "joined", "_driver")

    def __init__(self, device_id):
        ensure_context(device_id)
        lib = self._driver = driver.lib
        handles = []
        try:
            for make, flags in ((lib.stream_create, _NON_BLOCKING),
                                (lib.event_create, _EVENT_DISABLE_TIMING),
                                (lib.event_create, _EVENT_DISABLE_TIMING)):
                handle = ctypes.c_void_p()
                make(ctypes.byref(handle), flags)
                handles.append(handle.value)
        except Exception:  # (what was made goes back before the error is raised)
            for destroy, handle in zip((lib.stream_destroy, lib.event_destroy), handles):
                destroy(handle)
            raise
        self.stream, self.forked, self.joined = handles

    def join(self, stream):
        """Enqueue on ``stream`` a wait for the work enqueued beside it so far."""
        self._driver.event_record(self.joined, self.stream)
        self._driver.stream_wait_event(stream, self.joined, 0)

    def __del__(self):
        try:
            self._driver.event_destroy(self.forked)
            self._driver.event_destroy(self.joined)
            self._driver.stream_destroy(self.stream)
        except Exception:  # (at exit the driver may be gone; the process frees them anyway)
            pass


def fork(stream, device_id):
    """The calling thread's :class:`Side` on ``device_id``, its stream ordered after the work
    enqueued on ``stream`` so far: work enqueued there next reads what that work wrote."""
    sides = getattr(_local, "sides", None)
    if sides is None:
        sides = _local.sides = {}
    side = sides.get(device_id)
    if side is None:
        side = sides[device_id] = Side(device_id)
    side._driver.event_record(side.forked, stream)
    side._driver.stream_wait_event(side.stream, side.forked, 0)
    return side

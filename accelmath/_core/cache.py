"""A thread-safe LRU cache of plans, bounded by entry count and by bytes.

Entries are keyed by everything that defines a plan (never by data pointers). Each entry
reports its size in bytes through the ``nbytes`` attribute of the cached value. An evicted
plan is only dropped, never closed: a thread may still be executing it, and its handle and
workspaces go when the last reference does (the plan's finalizer).
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["PlanCache", "CacheInfo"]


@dataclass(frozen=True)
class CacheInfo:
    """Statistics of a :class:`PlanCache`."""

    hits: int
    misses: int
    size: int
    nbytes: int
    max_size: int
    max_bytes: int


class PlanCache:
    """An LRU cache of plan objects.

    Parameters
    ----------
    max_size : int
        The most entries kept (0 disables caching).
    max_bytes : int
        The most workspace bytes kept by cached plans together.

    Examples
    --------
    >>> from accelmath._core.cache import PlanCache
    >>> class P:
    ...     nbytes = 10
    >>> cache = PlanCache(max_size=2, max_bytes=100)
    >>> p = cache.get_or_create("key", P)
    >>> cache.get_or_create("key", P) is p
    True
    >>> cache.info().hits, cache.info().misses
    (1, 1)
    """

    def __init__(self, max_size=64, max_bytes=4 << 30):
        self._entries = OrderedDict()
        self._lock = threading.Lock()
        self.max_size = max_size
        self.max_bytes = max_bytes
        self._hits = 0
        self._misses = 0

    def get(self, key):
        """The cached value for ``key`` (a hit), or None (not counted as a miss)."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
                self._hits += 1
            return value

    def get_or_create(self, key, create):
        """The cached value for ``key``, or ``create()`` cached under it."""
        value = self.get(key)
        if value is not None:
            return value
        with self._lock:
            self._misses += 1
        value = create()
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:
                return existing  # another thread built the same plan meanwhile
            if self.max_size > 0:
                self._entries[key] = value
                self._evict()
        return value

    def _evict(self):
        total = sum(v.nbytes for v in self._entries.values())
        while self._entries and (len(self._entries) > self.max_size or total > self.max_bytes):
            if len(self._entries) == 1 and len(self._entries) <= self.max_size:
                break  # a single plan larger than max_bytes still serves its caller
            _, old = self._entries.popitem(last=False)
            total -= old.nbytes

    def set_limits(self, max_size=None, max_bytes=None):
        """Change the limits (evicting at once what no longer fits)."""
        with self._lock:
            if max_size is not None:
                self.max_size = int(max_size)
            if max_bytes is not None:
                self.max_bytes = int(max_bytes)
            self._evict()

    def info(self):
        """A :class:`CacheInfo` with hits, misses, size, bytes and the limits."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries),
                             sum(v.nbytes for v in self._entries.values()),
                             self.max_size, self.max_bytes)

    def clear(self):
        """Drop every entry and reset the statistics."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = 0

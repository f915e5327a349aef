"""A thread-safe LRU cache of plans, bounded by entry count and by bytes.

Entries are keyed by everything that defines a plan (never by data pointers). Each entry
reports its size in bytes through the ``nbytes`` attribute of the cached value, or through
``held_bytes`` where that is larger (the memory it holds now, for every thread and stream that
ran it): the limit is checked on each insert, each change of the limits, and each time a cached
value that has an ``on_grow`` attribute calls it (the cache sets it to a callable of no
arguments, for the value to call when its ``held_bytes`` grew). An evicted
plan is only dropped, never closed: a thread may still be executing it, and its handle and
workspaces go when the last reference does (the plan's finalizer).

A hit takes no lock: it stamps the entry with the next tick of a clock (``itertools.count``,
atomic), and eviction drops the entries of the oldest stamps. Ticks are also taken by inserts
and by :meth:`PlanCache.info`, under the lock, which counts them, so that the hits are the
ticks less those.

A cache calls its ``on_drop`` (where set) after it dropped entries (evicted, dropped or
cleared), with the lock held: a front memo that holds entries of its own
(:meth:`~accelmath._core.dispatch.Dispatcher.fronted`) forgets them there.
"""

import itertools
import threading
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


def _nbytes(value):
    return max(value.nbytes, getattr(value, "held_bytes", 0))


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

    def __init__(self, max_size=64, max_bytes=4 << 30, on_drop=None):
        self._entries = {}  # key -> [value, stamp of its last use]
        self._on_drop = on_drop
        # guards inserts, evictions and the counts below (reentrant: a value's on_grow may
        # run on a thread that holds it)
        self._lock = threading.RLock()
        self.max_size = max_size
        self.max_bytes = max_bytes
        self._clock = itertools.count()
        self._ticks = 0  # clock ticks not taken by hits
        self._hit_base = 0  # minus the hits before the last clear
        self._misses = 0

    def get(self, key):
        """The cached value for ``key`` (a hit), or None (not counted as a miss)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        entry[1] = next(self._clock)
        return entry[0]

    def keep_entry(self, key, keep):
        """Call ``keep(entry, clock)`` with the lock held, where ``key`` is cached: its
        ``[value, stamp]`` list and the clock whose ``next(clock)``, written to ``entry[1]``,
        is a hit. For a front memo that finds the value its own way, and that ``on_drop``
        empties (under the same lock: it never keeps an entry already dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                keep(entry, self._clock)

    def _dropped(self):
        if self._on_drop is not None:
            self._on_drop()

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
                return existing[0]  # another thread built the same plan meanwhile
            if self.max_size > 0:
                self._entries[key] = [value, self._tick()]
                if hasattr(value, "on_grow"):
                    value.on_grow = self._recheck
                self._evict()
        return value

    def _recheck(self):
        """Evict what no longer fits, after a cached value's bytes grew."""
        with self._lock:
            self._evict()

    def _tick(self):
        """A stamp not counted as a hit (with the lock held)."""
        self._ticks += 1
        return next(self._clock)

    def _evict(self):
        entries = self._entries
        count = len(entries)
        total = sum(_nbytes(v) for v, _ in entries.values())
        while entries and (len(entries) > self.max_size or total > self.max_bytes):
            if len(entries) == 1 and len(entries) <= self.max_size:
                break  # a single plan larger than max_bytes still serves its caller
            oldest = min(entries, key=lambda k: entries[k][1])
            total -= _nbytes(entries.pop(oldest)[0])
        if len(entries) < count:
            self._dropped()

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
            hits = self._hit_base + self._tick() - self._ticks + 1
            return CacheInfo(hits, self._misses, len(self._entries),
                             sum(_nbytes(v) for v, _ in self._entries.values()),
                             self.max_size, self.max_bytes)

    def drop_if(self, predicate):
        """Drop the entries whose value ``predicate`` holds for (only dropped, as evicted
        ones are); the statistics stay."""
        with self._lock:
            dropped = [k for k, (v, _) in self._entries.items() if predicate(v)]
            for key in dropped:
                del self._entries[key]
            if dropped:
                self._dropped()

    def clear(self):
        """Drop every entry and reset the statistics."""
        with self._lock:
            self._entries.clear()
            self._dropped()
            self._hit_base = -(self._tick() - self._ticks + 1)
            self._misses = 0

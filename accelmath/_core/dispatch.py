"""Stateless calls: per-device plan caches, the call memo, and moves between host and device.

A domain makes one :class:`Dispatcher` for its stateless functions. A call

1. validates the arguments its memo key does not hold (cheap checks, every call);
2. builds its *call key* from the arguments as given (plain values only: an int, a string,
   None, tuples of those; a ``True`` or a ``2.0`` would equal ``1`` or ``2`` in a dict, so
   calls holding such values are not remembered) and the operand's layout in its package's
   own terms, and asks :meth:`Dispatcher.recall` for what an identical earlier call made:
   a plan still in its cache, or a value the domain remembered (a prepared host transform);
3. otherwise normalizes everything, gets or makes its plan (:meth:`Dispatcher.plan`, through
   the device's :class:`~accelmath._core.cache.PlanCache`), and remembers the call.

So a repeated call skips normalization altogether, and a call whose arguments were never
validated never hits. A domain puts a *front* before its public functions
(:meth:`Dispatcher.fronted`): their commonest calls (arrays and plain values, no option)
keyed in C by the arguments as given and the arrays' type, shape and dtype (not their
strides), each leading to the launcher of the last plan a call of that key ran, which checks
the operands itself (the call shim's readers) and answers :data:`MISS` where they do not fit;
a miss goes on to the function, told its key (:meth:`Dispatcher.taken`): the memo offers its
plan's launcher with the call's result (:meth:`Dispatcher.remember_front`), and the front
keeps it once the function returns that very result.

Host data runs on the device (``execution="cuda"``) through :func:`to_device`, and comes
back through :func:`to_host`.
"""

import threading
from typing import Hashable, NamedTuple

from accelmath._core import hostcall
from accelmath._core.arguments import count
from accelmath._core.cache import PlanCache

__all__ = ["Dispatcher", "CachedPlan", "MISS", "missed", "to_device", "to_host"]

#: What a front's launcher returns where its checks do not hold (see :meth:`Dispatcher.fronted`).
MISS = object()


def missed(*args, **kwargs):
    """The ``slow`` of a front's launcher (:func:`accelmath._core.hostcall.launcher`): every
    call it does not make in C is a :data:`MISS`."""
    return MISS


class _Pending(threading.local):
    """The front key of the call this thread is making, until the memo takes it, and the
    launcher the memo offers for it."""

    key = None
    offer = None  # (key, result, call key, plan, run)


class CachedPlan(NamedTuple):
    """What the memo holds for a call that runs a cached plan: where to find the plan (the
    plan itself stays the cache's, evicted when the cache says)."""

    cache: PlanCache
    key: Hashable


class Dispatcher:
    """Per-device plan caches and the call memo of a domain's stateless functions.

    Parameters
    ----------
    max_size : int
        The most plans each device's cache keeps.
    max_bytes : int
        The most workspace bytes the plans of each device's cache hold together.
    max_calls : int
        The most calls the memo remembers (it starts over when full).

    Examples
    --------
    >>> from accelmath._core.dispatch import Dispatcher
    >>> class Plan:
    ...     nbytes = 0
    >>> dispatcher = Dispatcher()
    >>> plan = dispatcher.plan(0, "key", Plan, call=("call", 1))
    >>> dispatcher.recall(("call", 1)) is plan
    True
    >>> dispatcher.cache_info()["size"]
    1
    """

    def __init__(self, max_size=64, max_bytes=4 << 30, max_calls=1024):
        self._limits = {"max_size": count(max_size, "max_size"),
                        "max_bytes": count(max_bytes, "max_bytes")}
        self._caches = {}  # device id -> PlanCache
        self._lock = threading.Lock()
        self._calls = {}  # call key -> CachedPlan, or a value the domain remembered
        self._max_calls = max_calls
        # front key -> (run, the plan's cache entry, the cache's clock); emptied whenever a
        # cache drops a plan, so that it never keeps one alive or runs one the cache let go
        self._front = {}
        #: The array types a front was offered for: the fronts key calls on those alone (a
        #: set read without a lock; types are only added)
        self.front_types = set()
        #: ``{code: global names}``: the code of the fused functions the fronts may key (see
        #: :func:`accelmath._core.hostcall.front`; at most ``max_calls``)
        self.codes = {}
        self._pending = _Pending()

    def cache(self, device_id):
        """The plan cache of ``device_id`` (made on first use)."""
        cache = self._caches.get(device_id)
        if cache is None:
            with self._lock:
                cache = self._caches.setdefault(device_id, PlanCache(
                    **self._limits, on_drop=self._front.clear))
        return cache

    def plan(self, device_id, key, create, call=None):
        """The plan cached under ``key`` on ``device_id``, or ``create()`` cached there;
        ``call`` (a call key), where given, is remembered to lead to it."""
        cache = self.cache(device_id)
        plan = cache.get_or_create(key, create)
        if call is not None:
            self.remember(call, CachedPlan(cache, key))
        return plan

    def drop_if(self, predicate):
        """Drop the cached plans, on every device, that ``predicate`` holds for: the calls
        remembered to lead to them plan again."""
        for cache in list(self._caches.values()):
            cache.drop_if(predicate)

    def recall(self, call):
        """What call key ``call`` led to before: its plan, if still cached, or the value
        remembered for it; None otherwise."""
        entry = self._calls.get(call)
        if entry.__class__ is CachedPlan:
            return entry.cache.get(entry.key)
        return entry

    def fronted(self, function, home, arrays=1, names=(), functions=(), operands=()):
        """Public function ``function`` with the front before it (see the module docstring
        and :func:`accelmath._core.hostcall.front`): its calls of ``arrays`` leading arrays
        and further plain arguments among ``names`` (and fused functions among the keywords
        ``functions``, of code in :attr:`codes`, with operand tuples among ``operands``) are
        keyed, and a key that is not in the front yet reaches the function through
        :meth:`taken`; ``home`` is the module the function is public in. ``function`` itself
        where the call shim is not used."""
        pending = self._pending

        def learn(key, *args, **kwargs):
            pending.key, pending.offer = key, None
            try:
                result = function(*args, **kwargs)
            finally:
                pending.key = None
            offer, pending.offer = pending.offer, None
            # kept only where the call told the key made the very result returned: a call
            # made meanwhile on this thread (a __del__ the collector ran, a signal handler)
            # that took the key before it offers another result
            if offer is not None and offer[0] is key and offer[1] is result:
                self._keep(key, *offer[2:])
            return result

        return hostcall.front(function, learn, self._front, self.front_types, arrays, names,
                              MISS, home, functions, self.codes, operands)

    def taken(self):
        """The front key of the call this thread is making (None: none), taken: a call
        made within it (one function calling another) has none. The function calls this
        first, and passes the key to :meth:`remember_front`."""
        pending = self._pending
        key = pending.key
        if key is not None:
            pending.key = None
        return key

    def remember_front(self, key, result, call, plan, run, array_type):
        """Offer launcher ``run`` of ``plan`` to the front for key ``key`` (what
        :meth:`taken` gave; None: none), ``result`` the call's: it is kept once the public
        function returns that very result, while ``plan`` stays the one its cache holds for
        call key ``call``; ``run`` runs it and answers :data:`MISS` where its checks of the
        operands fail. ``array_type`` joins :attr:`front_types` (so that the fronts key calls
        on arrays of that type), with a key or without."""
        if array_type not in self.front_types:
            self.front_types.add(array_type)
        if key is not None:
            self._pending.offer = (key, result, call, plan, run)

    def in_front(self, key):
        """Whether the fronts hold a launcher for front key ``key``."""
        return key in self._front

    def key_code(self, code, names):
        """Let the fronts key fused functions of ``code``, which reads the globals ``names``
        (see :attr:`codes`)."""
        codes = self.codes
        if code not in codes:
            if len(codes) >= self._max_calls:
                codes.clear()
            codes[code] = names

    def _keep(self, key, call, plan, run):
        entry = self._calls.get(call)
        if entry.__class__ is not CachedPlan:
            return
        kept = self._front.get(key)
        if kept is not None and kept[0] is run:
            return  # (kept already: no lock taken)

        def keep(found, clock):
            if found[0] is plan:  # (not a plan made anew since this call recalled it)
                self._keep_front(key, (run, found, clock))

        entry.cache.keep_entry(entry.key, keep)

    def _keep_front(self, key, value):
        front = self._front
        if len(front) >= self._max_calls:
            front.clear()
        front[key] = value

    def remember(self, call, value):
        """Remember that call key ``call`` leads to ``value`` (a :class:`CachedPlan`, or any
        value but None)."""
        calls = self._calls
        if len(calls) >= self._max_calls:
            calls.clear()
        calls[call] = value

    def cache_info(self, device=None):
        """Statistics of the plan caches (see the domain's ``cache_info``): ``hits``,
        ``misses``, ``size``, ``bytes``, ``max_size`` and ``max_bytes``, summed over the
        devices or of ``device`` alone (an ordinal: InvalidArgumentError for anything else)."""
        if device is not None:
            device = count(device, "device")
        infos = [c.info() for d, c in list(self._caches.items())
                 if device is None or d == device]
        total = {k: sum(getattr(i, k) for i in infos) for k in ("hits", "misses", "size")}
        total["bytes"] = sum(i.nbytes for i in infos)
        total.update(self._limits)
        return total

    def clear_cache(self):
        """Forget every call and drop every cached plan (plans in use finish first); reset
        the statistics."""
        self._calls.clear()
        for cache in list(self._caches.values()):  # (each empties the front: on_drop)
            cache.clear()

    def set_cache_limits(self, max_size=None, max_bytes=None):
        """Set each device's cache limits: plans and workspace bytes (None: unchanged).
        Both are checked before either changes."""
        if max_size is not None:
            max_size = count(max_size, "max_size")
        if max_bytes is not None:
            max_bytes = count(max_bytes, "max_bytes")
        for name, value in (("max_size", max_size), ("max_bytes", max_bytes)):
            if value is not None:
                self._limits[name] = value
        for cache in list(self._caches.values()):
            cache.set_limits(max_size, max_bytes)


def to_device(x):
    """A copy of host array ``x`` on the current GPU, as an array of the device adapter's
    package (:func:`~accelmath._core.operand.device_adapter`: CuPy, else torch, else Numba).

    Raises
    ------
    NoDeviceError
        Without a usable GPU (naming why).
    """
    from accelmath._core.gpu.device import gpu_available, gpu_unavailable_reason
    from accelmath._core.operand import device_adapter, wrap_operand
    from accelmath.errors import NoDeviceError

    if not gpu_available():
        raise NoDeviceError(f'execution="cuda" needs a CUDA GPU: {gpu_unavailable_reason()}')
    op = wrap_operand(x)
    a = op.adapter.to_numpy(op.obj)
    if not a.dtype.isnative:  # (device arrays hold the machine's byte order only)
        a = a.astype(a.dtype.newbyteorder("="))
    return device_adapter().to_device(a)


def to_host(result, like):
    """Device array ``result`` brought back to the host, as an array of the package of
    operand ``like`` (the caller's)."""
    from accelmath._core.operand import adapter_for

    host = adapter_for(result).to_numpy(result)
    return like.adapter.from_numpy(host, like.obj)

"""What a plan holds on the device: per-thread library handles, per-stream workspaces, bytes.

A library handle is bound to one stream at a time (and, for most libraries, to one work area),
so a plan run from several threads at once gives each thread its own set of handles, made on
the thread's first run; and, on each of the last few streams a thread used, its own workspace,
so that no two calls in flight share scratch memory. A thread's handles go to the next thread
once it ends. :class:`Resources` keeps that bookkeeping for any library: the library's part is
three functions (make a set of handles, destroy one, bind a set to a stream and a workspace),
and the workspace size.

The hot path is :meth:`Resources.state_on` (or its inline form, for callers that count
nanoseconds): one attribute read of a thread-local and one comparison when the thread ran the
plan on this stream last time.
"""

import threading
import weakref

from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.memory import allocate_workspace

__all__ = ["HandleDestroyer", "Resources", "ThreadState", "STREAMS_KEPT"]

# Per thread, the workspaces kept on the streams used last (a thread that moves to another
# stream gives back the workspace of the one it used longest ago)
STREAMS_KEPT = 4


class ThreadState:
    """One thread's handles and workspaces.

    Attributes
    ----------
    handles : tuple
        The thread's library handles (one set: one handle per library call of the plan).
    stream : int or None
        The stream the handles are bound to now (None before the first run).
    workspace : int
        The address of the workspace on :attr:`stream` (0 where the plan needs none).
    workspaces : dict
        ``{stream: Workspace}`` on the last streams used, the latest last. Enqueued by one
        thread only, a workspace is never used by two calls at once.
    """

    __slots__ = ("handles", "stream", "workspace", "workspaces", "__weakref__")

    def __init__(self, handles, held):
        self.handles = handles
        self.stream = None
        self.workspace = 0
        self.workspaces = {}
        # (the holder, not the Resources: a thread's end must not keep the plan alive)
        weakref.finalize(self, held.release, handles, self.workspaces).atexit = False


class _Held:
    """Every handle and workspace of one :class:`Resources`, freed by its finalizer: a small
    holder with no reference back to the plan, so that the plan's end frees them."""

    def __init__(self, destroy_handle):
        self.destroy_handle = destroy_handle
        self.handles = []
        self.spare = []  # handle sets no thread holds
        self.workspaces = set()

    def release(self, handles, workspaces):
        """A thread ended: its handles become spare, its workspaces go back to their pools."""
        self.spare.append(handles)
        for workspace in workspaces.values():
            self.workspaces.discard(workspace)
            workspace.free()

    def destroy(self):
        for handle in self.handles:
            try:
                self.destroy_handle(handle)
            except Exception:  # interpreter shutdown or a lost context: nothing to do
                pass
        for workspace in self.workspaces:
            workspace.free()
        self.handles, self.spare, self.workspaces = [], [], set()


class HandleDestroyer:
    """Destroys handles of several kinds (a library handle, its descriptors, parameter
    objects...), each with its own function: a handle's kind is registered when it is made,
    and an unregistered handle goes to ``default``. Given to :class:`Resources` as its
    ``destroy_handle``.

    Parameters
    ----------
    default : callable
        Destroys a handle of no registered kind.
    **by_kind : callable
        The function that destroys the handles of each kind.

    Examples
    --------
    >>> from accelmath._core.gpu.resources import HandleDestroyer
    >>> gone = []
    >>> destroy = HandleDestroyer(lambda h: gone.append(("handle", h)),
    ...                           desc=lambda h: gone.append(("desc", h)))
    >>> destroy.register(7, "desc")
    7
    >>> destroy(7), destroy(8)
    (None, None)
    >>> gone
    [('desc', 7), ('handle', 8)]
    """

    def __init__(self, default, **by_kind):
        self.default = default
        self.by_kind = by_kind
        self.kinds = {}

    def register(self, handle, kind):
        """Remember that ``handle`` is of ``kind``; returns ``handle``."""
        self.kinds[handle] = kind
        return handle

    def __call__(self, handle):
        self.by_kind.get(self.kinds.pop(handle, None), self.default)(handle)


class Resources:
    """Per-thread handles and per-stream workspaces of one plan.

    Parameters
    ----------
    owner : object
        The plan (or executor) these belong to: they are freed when it goes away, or by
        :meth:`free`.
    destroy_handle : callable
        Destroys one handle.
    device_id : int
    package : str
        The array package whose memory pool workspaces come from.

    Once the plan knows how it runs, :meth:`configure` gives the rest: how to make a set of
    handles for a new thread, how to bind one to a stream and workspace, and the workspace
    size.

    Attributes
    ----------
    local : threading.local
        ``local.state`` is the calling thread's :class:`ThreadState`, where it has one.
    on_grow : callable or None
        Called with no arguments after a thread or stream takes a new workspace (a plan cache
        re-checks its byte bound).
    """

    def __init__(self, owner, destroy_handle, device_id, package):
        self._make_handles = self._bind = None
        self.nbytes = 0
        self.device_id = device_id
        self.package = package
        self.local = threading.local()
        self.on_grow = None
        self._lock = threading.Lock()  # guards the making of handles and workspaces
        self._held = _Held(destroy_handle)
        self._finalizer = weakref.finalize(owner, self._held.destroy)

    def configure(self, make_handles, bind, nbytes):
        """Say how the plan runs.

        Parameters
        ----------
        make_handles : callable
            ``make_handles()`` makes one set of handles for a new thread (a tuple; None
            entries for calls that need no handle); they are registered here.
        bind : callable
            ``bind(handles, stream, workspace)`` points a set of handles at a stream and at
            the workspace address there.
        nbytes : int
            Workspace bytes per thread and stream.
        """
        self._make_handles, self._bind, self.nbytes = make_handles, bind, nbytes

    def track(self, handle):
        """Register a handle made for this plan (destroyed with it); returns ``handle``."""
        self._held.handles.append(handle)
        return handle

    def discard(self, handles):
        """Destroy a set of handles now (a candidate that lost)."""
        for handle in handles:
            if handle is not None:
                self._held.handles.remove(handle)
                self._held.destroy_handle(handle)

    def adopt(self, handles):
        """Keep a set of handles made at plan time for the first thread that runs the plan."""
        self._held.spare.append(handles)

    def state_on(self, stream):
        """The calling thread's :class:`ThreadState`, its handles bound to ``stream``."""
        try:
            state = self.local.state
        except AttributeError:
            state = self._new_state()
        if state.stream != stream:
            self.bind(state, stream)
        return state

    def _new_state(self):
        """The calling thread's state, made on its first run."""
        ensure_context(self.device_id)  # a new thread may have no context current yet
        with self._lock:
            held = self._held
            if held.spare:
                handles = held.spare.pop()
            else:
                handles = self._make_handles()
                held.handles.extend(h for h in handles if h is not None)
            state = self.local.state = ThreadState(handles, held)
        return state

    def bind(self, state, stream):
        """Bind the thread's handles to ``stream`` and to its workspace there (made when the
        thread had none on that stream)."""
        workspace = state.workspaces.pop(stream, None)
        grew = workspace is None and self.nbytes > 0
        if workspace is None:
            workspace = allocate_workspace(self.nbytes, self.device_id, stream, self.package)
            self._held.workspaces.add(workspace)
            if len(state.workspaces) >= STREAMS_KEPT:
                grew = False
                # the workspace of the stream used longest ago goes back to its pool, in that
                # stream's order: calls still queued there keep their memory
                oldest = state.workspaces.pop(next(iter(state.workspaces)))
                self._held.workspaces.discard(oldest)
                oldest.free()
        state.workspaces[stream] = workspace  # last: the most recently used
        self._bind(state.handles, stream, workspace.ptr)
        state.stream, state.workspace = stream, workspace.ptr
        if grew and self.on_grow is not None:
            self.on_grow()

    def held_bytes(self):
        """Workspace bytes held now, over every thread and stream that ran the plan."""
        return sum(workspace.nbytes for workspace in list(self._held.workspaces))

    def free(self):
        """Destroy every handle and give back every workspace (idempotent)."""
        self._finalizer()

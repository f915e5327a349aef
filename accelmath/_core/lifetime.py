"""The lifetime of everything that holds device resources: plans, factor objects, the
subtractor, kernels. One idiom for all (:class:`Resource`): :meth:`~Resource.free` releases
what the object holds and is idempotent, ``with`` frees at the end of the block, and any use
after ``free()`` raises :class:`~accelmath.errors.StateError` with one message.
"""

from accelmath.errors import StateError

__all__ = ["Resource"]


class Resource:
    """The base of accelmath's objects that hold device resources (handles, workspaces,
    buffers, loaded code).

    A subclass implements :meth:`_release` (free what it holds) and calls
    :meth:`_check_live` where it is used; its name in messages is :attr:`what`. An object
    holds nothing until its making completes: it calls ``Resource.__init__`` (or sets
    ``_freed = False``) once it holds something to free.

    Examples
    --------
    >>> from accelmath import Resource
    >>> class Buffer(Resource):
    ...     what = "buffer"
    ...     def __init__(self):
    ...         super().__init__()
    ...     def _release(self):
    ...         print("released")
    >>> with Buffer() as b:
    ...     pass
    released
    >>> b.free()  # (idempotent)
    >>> b._check_live()
    Traceback (most recent call last):
    ...
    accelmath.errors.StateError: this buffer was freed; create a new one
    """

    #: The object's name in messages ("plan", "kernel"...).
    what = "object"
    _freed = True  # (nothing to free before the object is made)

    def __init__(self):
        self._freed = False

    @property
    def freed(self):
        """Whether :meth:`free` was called (or the object was never completely made)."""
        return self._freed

    def _check_live(self):
        """Raise StateError after :meth:`free`."""
        if self._freed:
            raise StateError(f"this {self.what} was freed; create a new one")

    def _release(self):
        """Free what the object holds (called once, by :meth:`free`)."""

    def free(self):
        """Release the object's device resources now rather than when it is collected;
        later use raises StateError (idempotent)."""
        if self._freed:
            return
        self._freed = True
        self._release()

    def __enter__(self):
        """The object itself, for ``with``: freed when the block ends."""
        return self

    def __exit__(self, *exc):
        """Free the object (see :meth:`free`); exceptions go on."""
        self.free()

    def _not_copied(self, *args):
        raise TypeError(f"this {self.what} holds device resources of this process and cannot be "
                        "copied or pickled: make a new one with the same arguments")

    # (a copy would share what the original frees: a later use of it would fail obscurely)
    __copy__ = __deepcopy__ = __reduce_ex__ = _not_copied

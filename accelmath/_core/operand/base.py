"""The Adapter base class: how accelmath reads, allocates and streams one package's arrays,
and the byte-to-element stride conversion the adapters share."""

from accelmath._core.operand.packages import device_adapter
from accelmath._core.operand.record import ITEMSIZE, unsupported_dtype
from accelmath.errors import UnsupportedOperandError

__all__ = ["Adapter", "Layouts", "allocating", "element_strides"]


class Layouts:
    """NumPy-style dtypes to ``(name, itemsize, {byte strides: element strides})``.

    Converting byte strides costs more than the rest of a wrap; arrays in a loop repeat the
    same few layouts, so conversions are remembered (a bounded number of them). Adapters read
    ``dtypes`` inline and call :meth:`convert` only for a dtype or strides not seen yet.
    """

    _MAX = 1024

    def __init__(self):
        self.dtypes = {}

    def lookup(self, dtype, byte_strides):
        """``(dtype name, element strides)`` of an array (what :meth:`convert` gives, read from
        what it remembered)."""
        info = self.dtypes.get(dtype)
        strides = None if info is None else info[2].get(byte_strides)
        if strides is None:
            return self.convert(dtype, byte_strides)
        return info[0], strides

    def convert(self, dtype, byte_strides):
        """``(dtype name, element strides)``, remembered for the next arrays of this layout.

        Raises UnsupportedDTypeError for a dtype accelmath cannot describe, and
        UnsupportedOperandError for strides that are not whole elements.
        """
        info = self.dtypes.get(dtype)
        if info is None:
            if dtype.name not in ITEMSIZE:
                raise unsupported_dtype(repr(dtype.name))
            info = self.dtypes[dtype] = (dtype.name, dtype.itemsize, {})
        itemsize, known = info[1], info[2]
        if len(known) >= self._MAX:
            known.clear()
        strides = known[byte_strides] = element_strides(byte_strides, itemsize)
        return info[0], strides


def element_strides(byte_strides, itemsize):
    """Strides in bytes as strides in elements of ``itemsize`` bytes.

    Raises
    ------
    UnsupportedOperandError
        For strides that are not whole elements.

    Examples
    --------
    >>> from accelmath._core.operand.base import element_strides
    >>> element_strides((32, 8), 8)
    (4, 1)
    """
    if any(s % itemsize for s in byte_strides):
        raise UnsupportedOperandError(
            f"strides {tuple(byte_strides)} (bytes) are not multiples of the {itemsize}-byte "
            f"element; accelmath reads arrays of whole-element strides")
    return tuple(s // itemsize for s in byte_strides)


class Adapter:
    """How accelmath reads, allocates and streams the arrays of one package.

    Subclasses implement :meth:`wrap`, :meth:`empty`, :meth:`current_stream` and
    :meth:`to_numpy`/:meth:`from_numpy` for host data.
    """

    package = "generic"
    #: Whether the package has a complex32 dtype (half-precision complex results).
    complex32 = False
    #: Whether results are written into buffers of another package and handed over by
    #: :meth:`finish` once the work that writes them is enqueued (JAX: its arrays are
    #: immutable, so they cannot be ``out=`` either).
    immutable = False

    def wrap(self, x):
        """Return the :class:`~accelmath._core.operand.Operand` describing ``x``."""
        raise NotImplementedError

    def read_only(self, x):
        """Whether ``x`` says that its memory must not be written (where its package has
        no flag of its own that the writes check)."""
        return False

    def layout_key(self, x):
        """A cheap key of ``x``'s shape, strides, dtype and device in the package's own terms
        (equal keys mean equal layouts), or None where the package has no such fast path
        (or ``x`` must always be wrapped)."""
        return None

    def data_ptr(self, x):
        """The address of ``x``'s first element (for arrays whose :meth:`layout_key` matched)."""
        return self.wrap(x).ptr

    def reader(self, key, keyed=False):
        """A function that returns the address of an array's first element when its
        :meth:`layout_key` is ``key``, else None: the check and the read in one call, for
        loops. ``keyed``: a reader for arrays whose shape and dtype were found equal to the
        key's already (by a front key that holds them), which may leave those out."""
        layout_key, data_ptr = self.layout_key, self.data_ptr
        return lambda x: data_ptr(x) if layout_key(x) == key else None

    def stream_getter(self, device_id):
        """A function of no arguments returning :meth:`current_stream` of ``device_id``."""
        return lambda: self.current_stream(device_id)

    def allocation(self, shape, strides, dtype, device_id):
        """``(make, pointer)``, prepared once for allocations in a loop: ``make()`` allocates
        an array of the given layout (element strides, dense), ``pointer(array)`` returns its
        address. Both are plain calls, for the call shim (:func:`hostcall.launcher`)."""
        return (lambda: self.empty_strided(shape, strides, dtype, device_id)[0],
                self.data_ptr)

    def allocator(self, shape, strides, dtype, device_id):
        """A function of no arguments that allocates ``(array, ptr)`` of the given layout
        (element strides, dense), prepared once for allocations in a loop."""
        return allocating(*self.allocation(shape, strides, dtype, device_id))

    def empty(self, shape, dtype, device_id):
        """Allocate an uninitialized array of this package (``device_id`` None: host)."""
        raise NotImplementedError

    def empty_strided(self, shape, strides, dtype, device_id):
        """Allocate a dense array with the given element strides; return ``(array, ptr)``."""
        order = sorted(range(len(shape)), key=lambda a: -strides[a])
        dense = self.empty(tuple(shape[a] for a in order), dtype, device_id)
        inverse = sorted(range(len(shape)), key=order.__getitem__)
        array = dense if order == sorted(order) else self.permute(dense, inverse)
        return array, self.wrap(array).ptr

    def from_dlpack(self, x):
        """Import device array ``x`` into this package, zero copy (through DLPack, else
        ``__cuda_array_interface__``)."""
        raise UnsupportedOperandError(f"{self.package} cannot import DLPack capsules")

    def permute(self, x, axes):
        """``x`` with its axes permuted (a view)."""
        return x.transpose(axes)

    def astype(self, x, dtype):
        """``x`` converted to ``dtype`` (a new array of this package)."""
        return x.astype(dtype)

    def finish(self, result, stream, device_id):
        """Turn a result buffer, written by work enqueued on ``stream`` (a handle), into what
        the caller gets back (the buffer itself but for :attr:`immutable` packages)."""
        return result

    def current_stream(self, device_id):
        """The handle of this package's current stream on ``device_id`` (0 if it has none)."""
        return 0

    def stream_scope(self, handle, device_id):
        """A context manager in which the package that allocates this package's device
        results takes stream ``handle`` as its current stream on ``device_id`` (None: the
        current device): what it allocates and runs there follows that stream's order."""
        return device_adapter().stream_scope(handle, device_id)

    def zeros(self, shape, dtype, device_id):
        """Allocate a zero-filled array of this package."""
        x = self.empty(shape, dtype, device_id)
        x[...] = 0
        return x

    def computable(self, x):
        """``x`` as an array of a package with array operations (NumPy, CuPy, torch, JAX:
        ``x`` itself), for the few steps computed with the caller's package."""
        return x

    def handed_back(self, y):
        """An array computed on :meth:`computable` views, as this package's (``y`` itself)."""
        return y

    def to_numpy(self, x):
        """A NumPy view (or copy) of host array ``x``."""
        import numpy

        return numpy.asarray(x)

    def from_numpy(self, a, like):
        """Convert NumPy array ``a`` to this package, placed like array ``like`` (None: where
        the package puts new arrays: CuPy's and Numba's current device, torch's CPU, JAX's
        default device)."""
        return a


def allocating(make, pointer):
    """A function of no arguments that allocates ``(array, ptr)``: ``make()`` and its
    ``pointer`` (an :meth:`Adapter.allocation`)."""

    def allocate():
        x = make()
        return x, pointer(x)

    return allocate

"""cuSOLVER and cuBLAS on accelmath's core: a :class:`Solver` holds per-thread handles and, on
each stream, one workspace laid out in named parts (scratch matrices, pivots, info codes and
the library's own work area), and reads the info codes back where the caller checks them.

A solver is planned for one problem (an operation, its sizes and dtype, the batch count) and
cached by the stateless functions (:mod:`accelmath.linalg._device.calls`) and kept by the
factor-once objects. Everything it enqueues runs on the caller's stream; nothing synchronizes
but :meth:`Solver.read_info`, which ``check=False`` skips.
"""

import ctypes
import math

import numpy

from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.memory import read_back
from accelmath._core.gpu.resources import HandleDestroyer, Resources
from accelmath._core.plan import Plan
from accelmath.bindings import cublas, cusolver
from accelmath.errors import LinAlgError
from accelmath.linalg._checks import not_finite_error
from accelmath.linalg._kernels.arithmetic import NONFINITE

__all__ = ["Solver", "DATA_TYPE", "UPPER", "LOWER", "align", "typed", "read_info",
           "check_info", "check_codes", "own_index"]

#: cudaDataType of each dtype.
DATA_TYPE = cusolver.DATA_TYPE
LOWER, UPPER = cublas.FILL_MODE["LOWER"], cublas.FILL_MODE["UPPER"]

_LETTER = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}

_ALIGN = 256


def align(nbytes):
    """``nbytes`` rounded up to the workspace parts' alignment."""
    return -(-nbytes // _ALIGN) * _ALIGN


def typed(library, dtype, real_name, complex_name=None):
    """The typed function of a binding for ``dtype``: ``typed(cusolver.lib, "complex64",
    "orgqr", "ungqr")`` is ``cusolver.lib.cungqr`` (LAPACK's names: the precision letter, and
    another stem for complex matrices where LAPACK has one)."""
    stem = complex_name if complex_name and dtype.startswith("complex") else real_name
    return getattr(library, _LETTER[dtype] + stem)


def _make_handles(blas):
    """A thread's handles: a cuSOLVER handle, its parameters object, a cuBLAS handle (or
    None where the solver makes no cuBLAS call)."""
    handle, params = ctypes.c_void_p(), ctypes.c_void_p()
    cusolver.lib.create(ctypes.byref(handle))
    cusolver.lib.create_params(ctypes.byref(params))
    made = [handle.value, params.value, None]
    if blas:
        blas_handle = ctypes.c_void_p()
        cublas.lib.create(ctypes.byref(blas_handle))
        made[2] = blas_handle.value
    return tuple(made)


def _bind(handles, stream, workspace):
    cusolver.lib.set_stream(handles[0], stream)
    if handles[2] is not None:
        cublas.lib.set_stream(handles[2], stream)


def _destroyer():
    """Destroys a solver's handles of any of its three kinds (the functions looked up only
    when a handle of that kind goes)."""
    return HandleDestroyer(lambda handle: cusolver.lib.destroy(handle),
                           params=lambda handle: cusolver.lib.destroy_params(handle),
                           blas=lambda handle: cublas.lib.destroy(handle))


def _registered(destroy, handles):
    """``handles`` (a cuSOLVER handle, its parameters, a cuBLAS handle or None), each
    registered with its kind."""
    for handle, kind in zip(handles, ("solver", "params", "blas")):
        if handle is not None:
            destroy.register(handle, kind)
    return handles


class Solver(Plan):
    """Handles and workspaces for one planned problem on one device.

    Parameters
    ----------
    device_id : int
    package : str
        The caller's array package (workspaces come from its pool).
    parts : dict
        ``{name: nbytes}``: the workspace parts the problem needs besides the library's
        work area (scratch matrices, pivots, ``"info"``...).
    query : callable or None
        ``query(handles)`` returns ``(device_bytes, host_bytes)``, the library's work area
        for the problem (cuSOLVER's ``*_bufferSize``), asked once with a thread's handles.
    blas : bool
        Whether the problem makes cuBLAS calls (a cuBLAS handle per thread).

    Attributes
    ----------
    offsets : dict
        ``{name: byte offset}`` of each part in the workspace; ``"work"`` is the library's
        work area, of ``work_bytes``.
    host_work : numpy.ndarray or None
        The library's host work area, where it asks for one.
    """

    what = "solver"

    def __init__(self, device_id, package, parts, query=None, blas=False):
        ensure_context(device_id)
        self.device_id = device_id
        self._freed = False
        destroy = _destroyer()
        self.resources = Resources(self, destroy, device_id, package)

        def make_handles():
            return _registered(destroy, _make_handles(blas))

        handles = make_handles()
        for handle in handles:
            if handle is not None:
                self.resources.track(handle)
        device_bytes, host_bytes = query(handles) if query is not None else (0, 0)
        self.resources.adopt(handles)
        self.offsets, total = {}, 0
        for name, nbytes in (*parts.items(), ("work", device_bytes)):
            self.offsets[name] = total
            total += align(nbytes)
        self.work_bytes = device_bytes
        self.host_work = numpy.empty(host_bytes, numpy.uint8) if host_bytes else None
        self.host_bytes = host_bytes
        self.nbytes = total
        self.resources.configure(make_handles, _bind, total)

    def state(self, stream):
        """``(handles, workspace address)`` of the calling thread on ``stream``."""
        self._check_live()
        state = self.resources.state_on(stream)
        return state.handles, state.workspace

    def work(self, workspace):
        """``(device work address, bytes, host work address, bytes)`` for cuSOLVER's calls."""
        host = 0 if self.host_work is None else self.host_work.ctypes.data
        return workspace + self.offsets["work"], self.work_bytes, host, self.host_bytes

    def _release(self):
        self.resources.free()


def read_info(info_ptr, count, stream):
    """The ``count`` int32 info codes at ``info_ptr``, read back once the work enqueued
    on ``stream`` so far is done (the one synchronization of a checked call)."""
    return read_back(info_ptr, count, numpy.int32, stream)


def check_info(info_ptr, batch_shape, stream, message, checked=None):
    """Read the info codes of a batch (one per matrix, C order over ``batch_shape``) and
    raise as :func:`check_codes` says."""
    check_codes(read_info(info_ptr, math.prod(batch_shape), stream), batch_shape, message,
                checked)


def check_codes(info, batch_shape, message, checked=None):
    """Raise LinAlgError naming the first matrix whose info code (``info``, host int32 in C
    order over ``batch_shape``) is positive (``message`` describes the failure). Negative
    codes are cuSOLVER's invalid arguments, but for accelmath's own kernels (``checked``
    given: ``(name, batch shape)`` of their operands, in order): those say that a system's
    operand holds a NaN or an infinity (:data:`~accelmath.linalg._kernels.arithmetic.NONFINITE`),
    which is raised first, for the first such operand, naming its first such matrix at its
    own batch index (a broadcast operand's)."""
    if not info.any():
        return
    if checked is not None:
        for (name, shape), code in zip(checked, NONFINITE):
            hits = numpy.flatnonzero(info == code)
            if hits.size:
                raise not_finite_error(name, own_index(_index(int(hits[0]), batch_shape),
                                                       shape))
    first = int(numpy.flatnonzero(info)[0])
    if info[first] < 0:
        raise RuntimeError(f"cuSOLVER reported an invalid argument {-info[first]}")
    raise LinAlgError(message, _index(first, batch_shape))


def _index(flat, batch_shape):
    """The batch index of the ``flat``-th matrix of a C-ordered batch."""
    return tuple(int(i) for i in numpy.unravel_index(flat, batch_shape))


def own_index(index, shape):
    """Batch index ``index`` of a broadcast batch, as an index of an operand of batch shape
    ``shape`` broadcast into it.

    Examples
    --------
    >>> from accelmath.linalg._device.cusolver import own_index
    >>> own_index((2, 1, 3), (1, 4)), own_index((3,), ())
    ((0, 3), ())
    """
    index = tuple(index)[len(index) - len(shape):] if shape else ()
    return tuple(int(i) if extent > 1 else 0 for i, extent in zip(index, shape))

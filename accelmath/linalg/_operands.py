"""How the solvers take their operands and give results back: read an argument (errors name
it), promote, route host operands to the CPU and device ones to ``_device`` (host data too
with ``execution="cuda"``), and return results in the caller's package.

Host calls on NumPy arrays are remembered (:func:`~accelmath.linalg._memo.host_call`,
:func:`run_host`): a call
like one that ran on the host before (the same function and options, arrays of the same
types, shapes, strides and dtypes) skips reading, checking and promoting its arguments,
whose every rule depends on nothing else, and runs its function of
:mod:`~accelmath.linalg._cpu` at once; what depends on the values (the NaN and Inf checks,
a failed factorization, lu_solve's pivots) is in that function, and runs each call.
"""

import functools

import numpy

from accelmath._core.dispatch import to_device, to_host
from accelmath._core.gpu.stream import check_stream
from accelmath._core.operand import (Operand, adapter_for, adapter_named, array_namespace,
                                     check_same_device, device_name, wrap_operand)
from accelmath.errors import (InvalidArgumentError, NoDeviceError, UnsupportedDTypeError,
                              UnsupportedOperandError)
from accelmath.linalg import _checks as checks
from accelmath.linalg._memo import HostCall, dispatcher, given_dtypes

__all__ = ["read", "read_stack", "runs_on_host", "host_array", "to_caller", "on_device",
           "column", "device_call", "hermitian_svd", "run_host"]

def run_host(key, function, operands, dtypes, **options):
    """``function`` (of :mod:`accelmath.linalg._cpu`) with ``options`` on host operands
    ``operands`` as NumPy arrays of ``dtypes``: its result in the package of the last
    operand. Remembered under ``key`` (:func:`host_call`'s of these operands, in this order,
    or None) once it returned: an identical call converts its arrays as these were converted
    from the caller's (when read, as long double is, or here; NumPy's results need no
    conversion back) and runs ``function``, its checks of the values included."""
    arrays = [host_array(op, dtype) for op, dtype in zip(operands, dtypes)]
    result = function(*arrays, **options)
    if key is not None:
        run = functools.partial(function, **options)
        if any(array is not op.obj or array.dtype != given
               for array, op, given in zip(arrays, operands, given_dtypes(key))):
            run = functools.partial(_converted, run, tuple(array.dtype for array in arrays))
        dispatcher.remember(key, HostCall(run))
    return to_caller(result, operands[-1])


def _converted(run, dtypes, *arrays):
    """``run`` on NumPy ``arrays`` converted to ``dtypes`` (where of another)."""
    return run(*(x.astype(dtype, copy=False) for x, dtype in zip(arrays, dtypes)))


def read(x, name, scipy=False):
    """The :class:`~accelmath._core.operand.Operand` of argument ``x``; errors name it.

    NumPy arrays (subclasses too, which NumPy's functions give back as they come) are read
    by the NumPy adapter; inexact types numpy.linalg refuses (float16, long double) raise
    NumPy's ``TypeError``. For the SciPy-style functions (``scipy``), long double data is read
    in double precision, as SciPy computes it.
    """
    try:
        if isinstance(x, numpy.ndarray):
            return adapter_named("numpy").wrap(x)
        return wrap_operand(x)
    except UnsupportedDTypeError as exc:
        dtype = getattr(x, "dtype", None)
        if isinstance(dtype, numpy.dtype):  # (another dtype attribute may not even hash)
            if scipy and dtype in _LONG_DOUBLES:
                return read(numpy.asarray(x).astype(_LONG_DOUBLES[dtype]), name)
            if dtype.kind in "fc":
                raise checks.unsupported_dtype_error(name, dtype.name) from None
        raise UnsupportedDTypeError(f"{name}: {exc}") from None
    except (UnsupportedOperandError, NoDeviceError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


_LONG_DOUBLES = {numpy.dtype(numpy.longdouble): numpy.float64,
                 numpy.dtype(numpy.clongdouble): numpy.complex128}


def read_stack(x, name, square=True, scipy=False):
    """Argument ``x``, a stack of matrices (square ones unless not ``square``), read as
    :func:`read` reads it and checked (NumPy's errors): ``(operand, dtype of the results)``
    (SciPy's, :func:`~accelmath.linalg._checks.scipy_result_dtype`, where ``scipy``)."""
    op = read(x, name, scipy)
    dtype = (checks.scipy_result_dtype if scipy else checks.result_dtype)((name, op.dtype))
    (checks.check_stacked_square if square else checks.check_stacked_2d)(op.shape, name)
    return op, dtype


def runs_on_host(operands, execution, stream):
    """Whether a call runs on the CPU: every operand in host memory and ``execution`` not
    "cuda" (its ``stream``, where given, checked all the same)."""
    host = execution != "cuda" and not any(op.on_device for op in operands)
    if host:
        check_stream(stream)
    return host


def host_array(op, dtype):
    """Host operand ``op`` as a NumPy array of ``dtype`` (no copy when it is of it)."""
    return op.adapter.to_numpy(op.obj).astype(dtype, copy=False)


def to_caller(result, like):
    """Host result ``result`` (an array or a NumPy scalar, or a tuple of those) in the
    package of operand ``like``: as NumPy gives it for NumPy arrays and array-likes."""
    if like.adapter.package == "numpy" or result is None:
        return result
    if isinstance(result, tuple):
        return tuple(to_caller(r, like) for r in result)
    return like.adapter.from_numpy(numpy.asarray(result), like.obj)


def on_device(op, dtype):
    """Device operand ``op`` converted to ``dtype`` (a new array) where it is of another."""
    if op.dtype == dtype:
        return op
    return wrap_operand(op.adapter.astype(op.obj, dtype))


def column(op):
    """Operand ``op`` of shape (..., n) seen as (..., n, 1): how a vector right-hand side
    reaches the device path."""
    return Operand(op.obj, op.ptr, tuple(op.shape) + (1,), tuple(op.strides) + (1,), op.dtype,
                   op.device_id, op.adapter, op.keepalive, op.ready)


def device_call(name, operands, dtypes, names, execution, **options):
    """Run ``accelmath.linalg._device.calls.<name>`` on ``operands`` (host ones copied to the GPU
    and the results back with ``execution="cuda"``), converted to ``dtypes``; a vector
    right-hand side (``options["vector"]``, the last operand) is given as a column. Returns
    what the device function returns, in the caller's package."""
    like = operands[0]
    moved = execution == "cuda" and not any(op.on_device for op in operands)
    if moved:
        operands = [wrap_operand(to_device(op.obj)) for op in operands]
    elif execution == "cpu":
        where = next(op for op in operands if op.on_device)
        raise InvalidArgumentError(
            f'execution="cpu" needs host operands; {names[operands.index(where)]} is on '
            f"{device_name(where.device_id)}")
    check_same_device(*operands, names=names)
    operands = [on_device(op, dtype) for op, dtype in zip(operands, dtypes)]
    if options.get("vector"):
        operands[-1] = column(operands[-1])
    result = _device_function(name)(*operands, **options)
    if not moved:
        return result
    if isinstance(result, tuple):
        return tuple(r if isinstance(r, (int, float)) else to_host(r, like) for r in result)
    return to_host(result, like)


@functools.cache
def _device_function(name):
    """``accelmath.linalg._device.calls.<name>``, imported on first use (the device path loads CUDA
    libraries)."""
    from accelmath.linalg._device import calls as _device

    return getattr(_device, name)


def hermitian_svd(w, v, compute_uv):
    """NumPy's ``svd(a, hermitian=True)`` from ``eigh(a)``'s ``w`` (and ``v``): singular
    values in descending order, their signs moved into ``Vh``; arrays of CuPy, PyTorch, JAX
    or Numba (through a CuPy or torch view; NumPy's own function computes the host case).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.linalg._operands import hermitian_svd
    >>> hermitian_svd(np.array([-3.0, 1.0, 2.0]), None, False)
    array([3., 2., 1.])
    """
    adapter = adapter_for(w)
    view = adapter.computable(w)
    if view is not w:  # (Numba's: computed on CuPy or torch views)
        found = hermitian_svd(view, None if v is None else adapter.computable(v), compute_uv)
        return (adapter.handed_back(found) if not compute_uv
                else tuple(adapter.handed_back(t) for t in found))
    if type(w).__module__.partition(".")[0] == "torch":
        import torch

        order = torch.argsort(w.abs(), dim=-1, descending=True, stable=True)
        s = torch.take_along_dim(w.abs(), order, dim=-1)
        if not compute_uv:
            return s
        sign = torch.take_along_dim(torch.copysign(torch.ones_like(w), w), order, dim=-1)
        u = torch.take_along_dim(v, order[..., None, :], dim=-1)
        return u, s, (u * sign[..., None, :]).transpose(-1, -2).conj().resolve_conj()
    xp = numpy if isinstance(w, numpy.ndarray) else array_namespace(w)
    s = xp.abs(w)
    order = xp.argsort(s, axis=-1)[..., ::-1]
    s = xp.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return s
    sign = xp.take_along_axis(xp.copysign(1.0, w), order, axis=-1)
    u = xp.take_along_axis(v, order[..., None, :], axis=-1)
    return u, s, xp.swapaxes(u * sign[..., None, :], -1, -2).conj()

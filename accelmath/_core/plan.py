"""The base of accelmath's plans: made once for a layout, executed many times.

A plan is made from an operand (a template array it is bound to) or from a layout (shape,
dtype, strides, package, device) with no operand. It accepts later operands of the same type
and layout, allocates results in the caller's package, checks ``out=`` once per type and
layout, and has one lifetime: :meth:`Plan.free` (idempotent), a context manager, and
finalizers that free its handles and workspaces when it goes away; use after ``free()`` raises
:class:`~accelmath.errors.StateError`.

Execution is one path, :meth:`Plan.run`: read the operands (a prepared reader of the plan's
layout, else the checks), resolve the stream, call the library. A domain describes each way
its plan runs as a :class:`Call`; where that is a single C call, the call shim
(:mod:`accelmath._core.hostcall`) makes the execute in C, along the same path: of operands
given or bound to the plan (up to four), into ``out=`` or a result it allocates.
"""

import functools
import math
from typing import Any, Callable, NamedTuple, Optional

import numpy

from accelmath._core import hostcall
from accelmath._core.arguments import index
from accelmath._core.call import stream_of
from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.stream import check_stream
from accelmath._core.layout import check_dense, contiguous_strides
from accelmath._core.lifetime import Resource
from accelmath._core.operand import (ITEMSIZE, Operand, adapter_for, adapter_named, check_mutable,
                                     check_same_device, device_adapter, device_name, wrap_operand)
from accelmath._core.operand.record import unsupported_dtype
from accelmath.errors import (GradientError, InvalidArgumentError, OutOfMemoryError,
                              UnsupportedDTypeError, UnsupportedOperandError)

__all__ = ["Call", "Plan", "check_apart", "check_out", "host_target", "mismatch",
           "template_operand"]

PACKAGES = ("numpy", "cupy", "torch")


class Call(NamedTuple):
    """One way a plan runs (a plan may have several, one per direction, say).

    Attributes
    ----------
    run : callable
        ``run(in_ptr, out_ptr, stream)``: enqueue the work on device operands.
    direct : hostcall.BoundCall or None
        ``run`` as a single C call (function, error, argument slots: see
        :func:`hostcall.launcher`), for the call shim; None where it is more than that.
    option : object
        What the domain's host execution needs to tell its calls apart.
    """

    run: Optional[Callable]
    direct: Optional[tuple]
    option: Any


def template_operand(shape, dtype, strides, package, device):
    """An array of the layout the arguments describe, for a plan made without an operand.

    Parameters
    ----------
    shape : sequence of int
    dtype : str or dtype
        A NumPy dtype or name, a torch dtype, or ``"complex32"``.
    strides : sequence of int or None
        Element strides, dense in some axis order (default: C order).
    package : {"numpy", "cupy", "torch"} or None
        Default: NumPy for host operands, else CuPy where installed, else torch.
    device : int or None
        The GPU (None: host memory; 0 where the package is CuPy).

    Returns
    -------
    array
    """
    if shape is None or dtype is None:
        raise InvalidArgumentError("a plan needs an operand, or its shape and dtype")
    shape = tuple(index(n, "shape") for n in shape)
    if any(n < 0 for n in shape):
        raise InvalidArgumentError(f"shape {shape} has a negative extent")
    try:
        dtype = numpy.dtype(dtype).name
    except TypeError:  # torch's dtypes, "complex32"
        dtype = str(dtype).replace("torch.", "")
    if dtype not in ITEMSIZE:
        raise unsupported_dtype(repr(dtype))
    strides = contiguous_strides(shape) if strides is None else check_dense(
        shape, [index(n, "strides") for n in strides])
    if package is None:
        package = "numpy" if device is None else device_adapter().package
    if package not in PACKAGES:
        raise InvalidArgumentError(
            f'package must be "numpy", "cupy" or "torch", got {package!r}; or pass an operand')
    if package == "cupy" and device is None:
        device = 0
    if device is not None:
        if package == "numpy":
            raise InvalidArgumentError("NumPy arrays live in host memory: leave device out")
        ensure_context(index(device, "device"))  # (NoDeviceError without a GPU)
    try:
        return adapter_named(package).empty_strided(shape, strides, dtype, device)[0]
    except OutOfMemoryError:
        raise
    except (ValueError, MemoryError) as exc:  # (a shape of more bytes than memory holds)
        nbytes = ITEMSIZE[dtype] * math.prod(shape)
        raise OutOfMemoryError(f"a plan's template of shape {tuple(shape)} and {dtype} takes "
                               f"{nbytes} bytes, which cannot be allocated ({exc})") from None


def check_out(out, like, shape, dtype, strides=None, name="out"):
    """The operand of ``out``, checked to take a result of ``shape`` and ``dtype`` (and
    ``strides``, where given) on the device of operand ``like``. The checks come in NumPy's
    order (what ``out`` is, its shape, then its dtype) and their messages carry NumPy's words.

    Raises
    ------
    UnsupportedOperandError
        Where ``out`` is not an array ("must be of ArrayType").
    InvalidArgumentError
        Where ``out`` cannot be written in place (JAX, read-only), has the wrong shape or
        strides, or is a lazily conjugated view.
    UnsupportedDTypeError
        For the wrong dtype ("Cannot cast").
    DeviceMismatchError
        For another device.
    """
    try:
        check_mutable(out, name)
        out_op = wrap_operand(out)
    except GradientError:
        raise
    except UnsupportedOperandError as exc:
        raise UnsupportedOperandError(f"{name} must be of ArrayType: {exc}") from None
    except UnsupportedDTypeError as exc:  # (long double, object...: no result is written there)
        raise UnsupportedDTypeError(f"Cannot cast the {dtype} result into {name}: {exc}") from None
    check_same_device(like, out_op, names=("the operand", name))
    if tuple(out_op.shape) != tuple(shape) or (
            strides is not None and tuple(out_op.strides) != tuple(strides)):
        expected = f"shape {tuple(shape)}" + ("" if strides is None else
                                              f" and strides {tuple(strides)}")
        raise InvalidArgumentError(
            f"{name} has wrong shape {tuple(out_op.shape)} (strides {tuple(out_op.strides)}); "
            f"expected {expected}")
    if out_op.dtype != dtype:
        raise UnsupportedDTypeError(
            f"Cannot cast the {dtype} result into {name}: {name} has dtype {out_op.dtype}, "
            f"expected {dtype}")
    if out_op.obj is not out:
        raise InvalidArgumentError(
            f"{name} is a lazily conjugated or negated view; pass a tensor that owns its values")
    if out_op.package == "numpy" and not out.flags.writeable:
        raise InvalidArgumentError(f"{name} is read-only")
    check_apart(out_op, name)
    return out_op


def check_apart(out_op, name="out"):
    """Raise InvalidArgumentError where elements of operand ``out_op`` share memory (a stride
    0 along an axis of more than one element: a broadcast or expanded view), so that results
    written there would collide."""
    if 0 not in out_op.strides:  # (the common case, at once)
        return
    for axis, (n, stride) in enumerate(zip(out_op.shape, out_op.strides)):
        if stride == 0 and n > 1:
            raise InvalidArgumentError(
                f"{name} has stride 0 along axis {axis} (of length {n}): its elements share "
                "memory, and a result written there would keep one value of many; pass an "
                "array of its own memory")


def host_target(out, out_op, name="out"):
    """The NumPy array a host result is written into for ``out`` (checked by
    :func:`check_out` as ``out_op``): its package's NumPy view, read once here and checked to
    be the very memory ``out_op`` describes (an object's ``__array__`` may give other memory
    than its interface describes, an ndarray subclass may misstate its shape) and writable.

    Raises
    ------
    InvalidArgumentError
        Where the view differs from what ``out`` said of itself, or is read-only.
    """
    if out.__class__ is numpy.ndarray:
        return out  # (check_out read its own attributes)
    view = out_op.adapter.to_numpy(out)
    if not isinstance(view, numpy.ndarray):
        raise InvalidArgumentError(f"{name} gives no NumPy view of its memory to write into")
    view = numpy.ndarray.view(view, numpy.ndarray)  # (NumPy's own account, not a subclass's)
    strides = tuple(s // view.itemsize for s in view.strides) if view.itemsize else ()
    if (view.shape, view.dtype.name, strides) != (tuple(out_op.shape), out_op.dtype,
                                                  tuple(out_op.strides)):
        raise InvalidArgumentError(
            f"{name} is not written: the memory its NumPy view gives (shape {view.shape}, "
            f"dtype {view.dtype.name}, strides {strides}) is not what it describes (shape "
            f"{tuple(out_op.shape)}, dtype {out_op.dtype}, strides {tuple(out_op.strides)})")
    if not view.flags.writeable:
        raise InvalidArgumentError(f"{name} is read-only (its NumPy view cannot be written)")
    return view


def mismatch(name, what, expected, given):
    """The error for operand ``name`` that does not match the plan it is given to: the one
    message of every plan, naming the operand and each property that differs.

    Parameters
    ----------
    name : str
        The operand ("x", "a", "out"...).
    what : str
        The plan's name in messages (its :attr:`Plan.what`).
    expected, given : dict
        The plan's layout and the operand's, property by property in one order ("type",
        "shape", "strides", "dtype", "device"...); ``given`` holds only "type" for what is
        not an array of the plan's kind.

    Returns
    -------
    InvalidArgumentError

    Examples
    --------
    >>> from accelmath._core.plan import mismatch
    >>> print(mismatch("x", "plan", {"shape": (8,), "dtype": "complex64"},
    ...                {"shape": (4,), "dtype": "complex64"}))
    x does not match the plan: shape (4,), expected (8,) (the plan's layout: shape (8,), dtype complex64)
    """
    differs = [f"{key} {given[key]}, expected {value}" for key, value in expected.items()
               if key in given and given[key] != value]
    layout = ", ".join(f"{key} {value}" for key, value in expected.items())
    return InvalidArgumentError(
        f"{name} does not match the {what}: {'; '.join(differs)} (the plan's layout: "
        f"{layout})")


class Plan(Resource):
    """The base of accelmath's plans (see the module docstring).

    A domain's plan calls :meth:`_bind` once its checks passed and its library plans exist,
    then executes through :meth:`run`. It implements :meth:`_run_host` (host operands) and
    :meth:`_release` (free its executor).
    """

    #: The plan's name in messages.
    what = "plan"
    _launched = ()  # (made by _bind: a plan of no launchers has none to clear)

    def _bind(self, op, given, out_shape, out_strides, out_dtype, on_device, layout_only):
        """Bind the plan to the layout of operand ``op`` (made from array ``given``) and to
        its results' layout."""
        self.device_id = op.device_id
        self.out_shape, self.out_strides, self.out_dtype = tuple(out_shape), out_strides, out_dtype
        self._adapter = op.adapter
        # (an Operand record given stands for an array of its package's type)
        self._type = type(op.obj) if type(given) is Operand else type(given)
        self._key = (tuple(op.shape), op.strides, op.dtype, op.device_id)
        self._on_device = on_device
        self._read = None  # reads the pointer of operands of the plan's layout
        self._front_read = None  # the same, for a front's (adapter.reader's keyed)
        self._read_out = {}  # out type -> reader of outputs of a layout already checked
        self._launched = []  # the calls of the plan's launchers in C (see _launcher)
        self._freed = False
        if on_device:
            # (make, pointer) of a result: called by the call shim, or by _allocate
            self._allocation = op.adapter.allocation(out_shape, out_strides, out_dtype,
                                                     op.device_id)
            self._current_stream = op.adapter.stream_getter(op.device_id)
            # a reader of the layout's arrays, where the operand describes the array given
            key = op.adapter.layout_key(given) if op.obj is given else None
            if key is not None:
                self._read = op.adapter.reader(key)
                self._front_read = op.adapter.reader(key, keyed=True)
        # host operands: NumPy arrays of the layout are taken as they are
        self._host_key = None
        if not on_device and op.package == "numpy" and op.obj is given:
            self._host_key = (given.shape, given.strides, given.dtype)
        # the NumPy dtype itself, compared by identity (a dtype's name is computed in Python,
        # microseconds a call, and `dtype == None` is true for float64): NumPy's dtypes of
        # native byte order are singletons; any other out, or a result dtype NumPy has no name
        # for (bfloat16), takes the checked path
        self._host_out_dtype = None if on_device else _numpy_dtype(out_dtype)
        self._operand = op
        if layout_only:  # the template's memory goes back; its layout stays
            self._unbind()

    def _unbind(self):
        """Forget the array the plan was made from, keeping its layout and readers: a plan
        kept in a cache must not keep its first caller's array alive."""
        op = self._operand
        self._operand = Operand(None, 0, op.shape, op.strides, op.dtype, op.device_id,
                                op.adapter)

    def _launcher(self, direct, local, mask, inputs=None, slow=None, **fixed):
        """The plan's execute with keyword arguments ``fixed`` (a direction, say), made in C
        for operands of the plan's layout, with or without ``out=`` (the call shim:
        :func:`hostcall.launcher`), where it is one C call, ``direct`` (a
        :class:`hostcall.BoundCall`; None where there is none); else the Python execute.
        ``inputs``: the launcher's (default: the one operand of the plan's layout, given at
        each call; ``slow``: the Python execute, where not the plan's with ``fixed``).
        :meth:`free` turns every launcher to the Python execute."""
        # every other call goes on to the Python execute, bound to the plan: the plan holds
        # its launchers and they the plan, a cycle the collector frees (and free() at once)
        if slow is None:
            slow = functools.partial(type(self).execute, self, **fixed)
            slow.__doc__ = type(self).execute.__doc__
        if inputs is None:
            inputs = ((self._type, self._read, None),)
        if direct is None or any(read is None for _, read, _ in inputs):
            return slow
        calls = {None: direct}
        self._launched.append(calls)
        allocate = None if self._adapter.immutable else self._allocation
        return hostcall.launcher(slow, calls, inputs, self._read_out, allocate,
                                 self._current_stream, local, mask)

    def _install_shim(self, direct, local, mask, inputs=None):
        """Make :meth:`execute` (its default form) in C where it can be (see
        :meth:`_launcher`); ``self._shim_calls`` holds its call, which a plan may change."""
        launcher = self._launcher(direct, local, mask, inputs)
        if isinstance(launcher, functools.partial):
            return
        self._shim_calls = self._launched[-1]
        self.execute = launcher

    def run(self, x, out, stream, call):
        """Execute ``call`` on operand ``x`` (an array, an :class:`Operand` of the plan's
        layout, or None for the bound operand) into ``out`` (None: a new result) on
        ``stream`` (None: the operand package's current stream): the one execute path."""
        if not self._on_device:
            check_stream(stream)
            return self._run_host(x, out, call)
        read = self._read
        in_ptr = read(x) if read is not None and type(x) is self._type else None
        if in_ptr is None:
            op = self._checked(x)
            op.wait_ready(stream)
            in_ptr = op.ptr
        stream, explicit = stream_of(stream, self._current_stream)
        if out is None:
            out, out_ptr = self._allocate_on(stream) if explicit else self._allocate()
            call.run(in_ptr, out_ptr, stream)
            if self._adapter.immutable:  # (JAX) handed over once the work is queued
                return self._adapter.finish(out, stream, self.device_id)
            return out
        reader = self._read_out.get(type(out))
        out_ptr = None if reader is None else reader(out)
        if out_ptr is None:
            out_ptr = self._first_out(out, stream)
        call.run(in_ptr, out_ptr, stream)
        return out

    def _checked(self, x):
        """The operand of ``x`` after checking it fits the plan (raises, naming what not)."""
        self._check_live()
        if x is None:
            if self._operand.obj is None:
                raise InvalidArgumentError(
                    f"this {self.what} was made for a layout, with no operand bound to it; "
                    "pass x")
            return self._operand
        if type(x) is Operand:
            op = x
        elif type(x) is self._type or (self._type is numpy.ndarray and _host_array_like(x)):
            try:
                op = wrap_operand(x)  # (a NumPy plan reads array-likes as NumPy does)
            except (UnsupportedDTypeError, UnsupportedOperandError) as exc:
                raise type(exc)(f"operand: {exc}") from None
        else:
            op = None
        if op is None or (tuple(op.shape), op.strides, op.dtype, op.device_id) != self._key:
            shape, strides, dtype, device = self._key
            expected = {"type": self._type.__qualname__, "shape": shape, "strides": strides,
                        "dtype": dtype, "device": device_name(device)}
            given = {"type": type(x).__qualname__}
            if op is not None:
                given.update(shape=tuple(op.shape), strides=op.strides, dtype=op.dtype,
                             device=device_name(op.device_id))
            raise mismatch("x", self.what, expected, given)
        return op

    def _first_out(self, out, stream):
        """Check an ``out`` of a type or layout not seen yet; remember it once it passes."""
        out_op = check_out(out, self._operand, self.out_shape, self.out_dtype,
                           self.out_strides)
        out_op.wait_ready(stream)
        key = out_op.adapter.layout_key(out)
        if key is not None:
            self._read_out[type(out)] = out_op.adapter.reader(key)
        return out_op.ptr

    def _allocate(self):
        """A new result and its pointer, on the package's current stream."""
        make, pointer = self._allocation
        out = make()
        return out, pointer(out)

    def _allocate_on(self, stream):
        """A new result and its pointer, allocated in the order of explicit ``stream`` (a
        handle: see :func:`~accelmath._core.call.stream_of`), so that the package's pool does
        not hand its memory out again while the work on that stream may still be writing
        it."""
        with self._adapter.stream_scope(stream, self.device_id):
            return self._allocate()

    def _host_input(self, x):
        """``(a, op)``: the NumPy array of host operand ``x``, and its checked operand (None
        where ``x`` is a NumPy array of the plan's layout, taken as it is)."""
        key = self._host_key
        if key is not None and type(x) is numpy.ndarray and (x.shape, x.strides,
                                                              x.dtype) == key:
            return x, None
        op = self._checked(x)
        return op.adapter.to_numpy(op.obj), op

    def _host_output(self, out, op):
        """The NumPy array to write host results of operand ``op`` (None: a NumPy array of
        the plan's layout) into: ``out`` itself, checked."""
        if (type(out) is numpy.ndarray and out.dtype is self._host_out_dtype
                and out.shape == self.out_shape and out.flags.writeable):
            return out
        like = self._operand if op is None else op
        return host_target(out, check_out(out, like, self.out_shape, self.out_dtype))

    def _run_host(self, x, out, call):
        """Execute on host operand ``x`` (see :meth:`_host_input`): the domain's CPU
        backend."""
        raise NotImplementedError

    def _release(self):
        """Free the domain's executor."""

    def free(self):
        """Release the plan's handles and workspaces; later use raises StateError
        (idempotent)."""
        if self._freed:
            return
        for calls in self._launched:  # (first: no C call reaches a released handle)
            calls.clear()
        self.__dict__.pop("execute", None)
        super().free()
        self._operand = self._read = self._front_read = self._host_key = None


def _host_array_like(x):
    """Whether ``x`` is read as a NumPy array (an array-like), not refused or another
    package's."""
    try:
        return adapter_for(x).package == "numpy"
    except TypeError:  # (not an array at all: the plan's own message says so)
        return False


def _numpy_dtype(name):
    """The NumPy dtype named ``name``, or None where NumPy has none of that name."""
    try:
        return numpy.dtype(str(name))
    except TypeError:
        return None

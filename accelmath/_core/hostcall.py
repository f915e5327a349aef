"""Fast calls of C functions from Python, for the hot paths.

A ctypes call costs about 0.5 us of host time (libffi, argument conversion), about an eighth of
a short library call from Python. The call shim, ``accelmath._core._hostcall``, a small CPython
extension built from the C sources of ``_core/_shim/`` (``hostcall.c``, the module) when
accelmath is installed, calls status-returning C functions of up to 16 integer and pointer
arguments for a tenth of that; :func:`front` puts a table of such calls before a public
function. It is an optional extension: where it was not built (no C compiler at install time)
or ``ACCELMATH_HOSTCALL=0``, :func:`fast` returns the ctypes function itself, :func:`launcher`
the Python execute and :func:`front` the function: the results are the same, only slower.
:func:`status` says which is used, and why.
"""

import ctypes
import importlib
import os
import struct
import types
from typing import Any, Callable, NamedTuple

from accelmath._core.switches import switched_off

__all__ = ["BoundCall", "KERNEL_WORDS", "MAX_CHAIN", "chain", "fast", "front", "kernel_call",
           "kernel_head", "keyword_part", "launcher", "read_values", "reader", "status"]

_SWITCH = "ACCELMATH_HOSTCALL"
_MAX_ARGS = 16  # the most word arguments of any library call accelmath makes
#: The most values a chain (:func:`chain`) takes after its array
MAX_CHAIN = _MAX_ARGS
#: The most parameters (8-byte words) of a kernel that :func:`kernel_call` launches
KERNEL_WORDS = 11
_INTERFACE = 7  # the call shim's (INTERFACE in _shim/shim.h): an older build is not used
# argument types passed whole in one machine word
_WORD_TYPES = {ctypes.c_int, ctypes.c_uint, ctypes.c_long, ctypes.c_ulong, ctypes.c_longlong,
               ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_ssize_t, ctypes.c_void_p}
_NOT_BUILT = ("ctypes (the call shim was not built when accelmath was installed, likely no C "
              "compiler then; reinstall with a compiler for ~0.5 us less per call)")
_imported = {}  # "module": the extension or None; "status": how it was imported, or why not
# properties of C types, read through the descriptor
_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


class BoundCall(NamedTuple):
    """A plan's library call, as :func:`launcher` makes it in C: ``calls[None]``.

    Parameters
    ----------
    func : callable
        The C function, as :func:`fast` returns it (C calls are made where it is a
        ``Function`` of the call shim; anything else sends calls to the Python execute).
    fail : callable
        ``fail(status)`` raises the error of a nonzero status.
    slots : tuple
        One entry per argument of ``func``: an int, passed as it is, or one of ``"handle"``,
        ``"handle1"``, ``"in"`` (or ``"in0"``), ``"in1"`` to ``"in3"``, ``"out"``,
        ``"stream"``, ``"workspace"`` (see :func:`launcher`).

    Examples
    --------
    >>> from accelmath._core.hostcall import BoundCall
    >>> BoundCall(func=print, fail=print, slots=("handle", "in", "out", -1)).slots[3]
    -1
    """

    func: Callable[..., int]
    fail: Callable[[int], Any]
    slots: tuple


def fast(func):
    """A faster callable for the ctypes function ``func``, or ``func`` itself.

    Parameters
    ----------
    func : ctypes function pointer
        With ``argtypes`` set (at most 16, each an integer type or ``c_void_p``: pass a
        pointer to a struct as its address), ``restype`` ``c_int`` and no ``errcheck``, like
        the status-returning functions of the CUDA math libraries.

    Returns
    -------
    callable
        A ``Function`` of the call shim, called with the GIL released: it takes the same
        arguments as ints (or None for a null pointer) and returns the same int; integers are
        passed modulo 2**64, with no range check. ``func`` itself for any other signature,
        or where the call shim is not used (see :func:`status`).

    Examples
    --------
    >>> import ctypes
    >>> from accelmath._core import hostcall
    >>> libc = ctypes.CDLL(None)
    >>> labs = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(("abs", libc))
    >>> labs.argtypes = [ctypes.c_int]
    >>> hostcall.fast(labs)(-7)
    7
    """
    argtypes = getattr(func, "argtypes", None)
    if (argtypes is None or len(argtypes) > _MAX_ARGS or func.restype is not ctypes.c_int
            or getattr(func, "errcheck", None) is not None
            or not all(t in _WORD_TYPES for t in argtypes)):
        return func
    module = _extension()
    if module is None:
        return func
    return module.Function(ctypes.cast(func, ctypes.c_void_p).value, len(argtypes))


def launcher(slow, calls, inputs, out_readers, allocate, current_stream, local, mask):
    """A plan's execute made in C for its common calls, else ``slow`` itself.

    The returned callable does what ``slow`` does. For a call ``f(x0, x1, ..., out=out)``
    (at most one positional argument per entry of ``inputs``, and no keyword but ``out``) it
    makes the call in C, without the interpreter, when all of these hold:

    - ``calls.get(None)`` is a tuple ``(func, fail, slots)`` (a :class:`BoundCall`) with
      ``func`` a ``Function`` of the call shim (no entry, as after the plan was freed and
      ``calls`` cleared: ``slow``);
    - each operand ``xi`` (the positional argument, or the input's ``bound`` where it is left
      out or None; a ``bound`` of None: ``slow``) has type ``xtype`` and ``read(xi)`` returns
      its pointer, an int (None: ``slow``);
    - ``out`` is given and ``out_readers.get(type(out))`` is a reader that returns its
      pointer (None: ``slow``); or ``out`` is left out (or None) and ``allocate`` is a
      pair ``(make, pointer)``: ``make()`` returns ``out`` and ``pointer(out)`` its pointer;
    - no pointer has a bit of ``mask`` set;
    - ``local.state`` exists (AttributeError: ``slow``) and
      ``local.state.stream == current_stream()``.

    Then it calls ``func`` with one argument per entry of ``slots``: an int is passed as it
    is; ``"handle"`` and ``"handle1"`` pass ``local.state.handles[0]`` and ``[1]``; ``"in"``
    (or ``"in0"``), ``"in1"``, ``"in2"`` and ``"in3"`` the operands' pointers; ``"out"``,
    ``"stream"`` and ``"workspace"`` ``out``'s pointer, the current stream and
    ``local.state.workspace`` (an int address). A nonzero status goes to ``fail(status)``,
    which raises. It returns ``out``. Every other call form, and every call where a check does
    not hold, goes to ``slow`` unchanged. Exceptions of the readers, ``allocate``,
    ``current_stream`` and ``fail`` propagate; ``slots`` of another length than ``func``'s
    arguments, or an entry of another kind, raise TypeError.

    Parameters
    ----------
    slow : callable
        The execute in Python.
    calls : dict
        ``calls[None]``: the plan's library call, a :class:`BoundCall`. Read at each call, so
        that changing or clearing it takes effect at once.
    inputs : tuple
        Up to 4 ``(xtype, read, bound)``, one per operand: the type it must have, ``read(x)``
        (the pointer of ``x`` where it fits the plan, else None), and the operand to use where
        the call leaves it out (None: such calls go to ``slow``).
    out_readers : dict
        ``{type: reader}``: readers of ``out`` as ``read`` is of an operand, by ``out``'s type.
    allocate : tuple or None
        ``(make, pointer)`` (:meth:`Adapter.allocation`): ``make()`` a new result,
        ``pointer(result)`` its address, for calls without ``out`` (None: such calls go to
        ``slow``).
    current_stream : callable
        The handle of the current stream, an int.
    local : threading.local
        Its ``state``, where this thread has one, has ``stream`` (the stream its ``handles``
        are set to), ``handles`` and ``workspace``.
    mask : int
        Pointers with any of these bits set go to ``slow`` (an alignment the call needs).

    Returns
    -------
    callable
        Its ``__wrapped__`` and ``__doc__`` are ``slow``'s; ``slow`` itself where the call
        shim is not used (see :func:`status`).

    Examples
    --------
    >>> import threading
    >>> from accelmath._core import hostcall
    >>> def execute(x, *, out=None):
    ...     return out
    >>> f = hostcall.launcher(execute, {}, ((int, id, None),), {}, None, lambda: 0,
    ...                       threading.local(), 0)
    >>> f is execute or f.__wrapped__ is execute
    True
    """
    module = _extension()
    if module is None:
        return slow
    return module.Launch(slow, calls, tuple(inputs), out_readers, allocate, current_stream,
                         local, mask)


def front(function, learn, table, types, arrays, names, miss, home, functions=(), codes=None,
          operands=()):
    """``function`` with its commonest calls made from ``table`` in C, else ``function``.

    The returned callable does what ``function`` does. A call ``f(x0, ..., v...)`` whose first
    ``arrays`` arguments are positional arrays of a type in ``types``, and whose further
    arguments (positional, or keywords named in ``names``; positionally at most
    ``len(names)``) are each an exact int, an exact str, None or a tuple of exact ints (a
    bool or a float would equal an int in a dict), has a *key*: ``(f, type(x0), x0.shape,
    x0.dtype, ..., v..., the keywords' names or None)``. Where ``table[key]`` is ``(run,
    entry, clock)``, it returns ``run(x0, ...)`` (setting ``entry[1] = next(clock)``: the
    plan cache's recency stamp) unless that is ``miss``; a key not in the table, or a run
    that answers ``miss``, goes to ``learn(key, *args, **kwargs)``, which calls ``function``
    and may put the key in the table; any other call goes to ``function``. Exceptions of
    ``run``, ``learn`` and ``function`` propagate.

    Two kinds of keywords hold other values (a fused function and its operands):

    - one named in ``functions``: a Python function without defaults whose code is in
      ``codes`` (``codes[code]``: the global names it reads, a tuple); its part of the key is
      its code and each value it reads (its closure's cells, then those globals, ``miss``
      for one that is absent): numbers (a float by its bits), strings and tuples of those
      by value, anything else by identity;
    - one named in ``operands``: None, or a tuple of arrays of a type in ``types`` and exact
      ints, floats and complex numbers (fewer than 16), keyed only beside a function; its
      part of the key is the tuple of each array's ``(type, shape, dtype)`` and each
      number's type, and the tuple itself is passed on to ``run`` after the arrays
      (``run(x0, ..., t...)``, in the keywords' order).

    Parameters
    ----------
    function : callable
        The public function, in Python.
    learn : callable
        ``learn(key, *args, **kwargs)``: ``function(*args, **kwargs)``, told the key.
    table : dict
        ``{key: (run, entry, clock)}``, read at each call (changes take effect at once).
    types : set
        The array types that have keys (read at each call).
    arrays : int
        How many leading positional arguments are arrays (1 to 15).
    names : tuple of str
        The further parameters a key may hold, in their positional order.
    miss : object
        What a ``run`` returns for a call it does not make.
    home : str
        The module the function is public in: its ``__module__``, where pickling finds it
        by name.
    functions, operands : tuple of str, optional
        The keywords that hold a function and operand tuples (see above).
    codes : dict, optional
        ``{code: global names}``: the functions' code that may be keyed (read at each call).

    Returns
    -------
    callable
        Its ``__wrapped__``, ``__doc__``, ``__name__`` and ``__qualname__`` are
        ``function``'s; ``function`` itself where the call shim is not used (see
        :func:`status`).

    Examples
    --------
    >>> import itertools, numpy as np
    >>> from accelmath._core import hostcall
    >>> def scaled(x, n=2):
    ...     return x * n
    >>> table = {}
    >>> def learn(key, *args, **kwargs):  # (a domain keeps runs of plans; here, a lambda)
    ...     table[key] = (lambda x: "from the table", [None, 0], itertools.count())
    ...     return scaled(*args, **kwargs)
    >>> f = hostcall.front(scaled, learn, table, {np.ndarray}, 1, ("n",), None, "__main__")
    >>> f(np.ones(2), n=3)  # (learnt)
    array([3., 3.])
    >>> second = f(np.ones(2), n=3)  # (from the table, where the call shim is used)
    >>> f is scaled or second == "from the table"
    True
    """
    module = _extension()
    if module is None:
        return function
    return module.Front(function, learn, table, types, arrays, tuple(names), miss, home,
                        tuple(functions), {} if codes is None else codes, tuple(operands))


def keyword_part(key, name):
    """The part of front key ``key`` (see :func:`front`) that keyword ``name`` holds.

    Examples
    --------
    >>> from accelmath._core.hostcall import keyword_part
    >>> keyword_part(("front", int, (2,), "f8", 3, "ortho", ("norm",)), "norm")
    'ortho'
    """
    names = key[-1]
    return key[len(key) - 1 - len(names) + names.index(name)]


def read_values(part):
    """The values a fused function's part of a front key holds (see :func:`front`), read back
    in its order: a number, a string or a tuple of those as the value it was, anything else
    (held by identity) as itself; the front's ``miss`` for a global that was absent.

    Examples
    --------
    >>> from accelmath._core.hostcall import read_values
    >>> read_values((None, (int, 3), (float, 4611686018427387904, 0), (tuple, (str, "a"))))
    [3, 2.0, ('a',)]
    """
    return [_read_value(item) for item in part[1:]]


def _read_value(item):
    kind = item[0]
    if len(item) == 3 and item[1].__class__ is int and kind not in (float, complex):
        return item[2]  # (type, id, value): by identity
    if kind is tuple:
        return tuple(_read_value(i) for i in item[1:])
    if kind is float or kind is complex:  # (type, bits of the real part, of the imaginary)
        parts = struct.unpack("<2d", struct.pack("<2Q", item[1], item[2]))
        return parts[0] if kind is float else complex(*parts)
    return item[1]


def chain(first, pointer, elements, words, nwords, launch, head, parameters, stream, fail,
          context_get, context, miss, keep):
    """A launcher's call followed by one kernel over its result, in C: a front's ``run`` for
    a transform and its fused epilogue; None where the call shim is not used.

    ``chain(x, values=())`` reads ``values`` first: ``elements[k]`` describes ``values[k]``,
    ``("a", read, align, word)`` for an array (``read(v)`` its address where it has the layout
    the kernel was made for, else None; a multiple of ``align``; written to word ``word``) or
    ``(code, address)`` for a number, written at ``address`` (16 bytes there) as ``code``
    says (``"q"`` an exact int as a long long, ``"d"`` an exact float as a double, ``"D"`` an
    exact complex as two doubles). Then ``y = first(x)``, its address ``pointer(y)`` written to
    words 0 and ``nwords - 1`` (the kernel's first input and its result), and the kernel
    launched: ``cuLaunchKernel(*head, stream(), parameters, NULL)``, no other thread writing
    the words between. It returns ``y``; ``miss`` where ``first`` answers ``miss``, a value
    does not fit (another count, type or layout, or an int beyond 64 bits) or the current
    context (``context_get``: the address of ``cuCtxGetCurrent``) is not ``context``, before
    anything ran; a failed launch goes to ``fail(status)``, which raises.

    Parameters
    ----------
    first, pointer, stream, fail : callable
    elements : tuple
        At most :data:`MAX_CHAIN`.
    words, launch, parameters, context_get, context : int
        Addresses: of the word array, of ``cuLaunchKernel``, of the kernel's parameter array,
        of ``cuCtxGetCurrent``, and the ``CUcontext`` the kernel was loaded in.
    nwords : int
    head : tuple of 8 ints
        The function, the grid's and the block's dimensions, the dynamic shared memory.
    miss : object
    keep : object
        Held by the chain: what the addresses point into.

    Returns
    -------
    callable or None

    Examples
    --------
    >>> from accelmath._core import hostcall
    >>> hostcall.chain is not None
    True
    """
    module = _extension()
    if module is None:
        return None
    return module.Chain(first, pointer, tuple(elements), words, nwords, launch, tuple(head),
                        parameters, stream, fail, context_get, context, miss, keep)


def kernel_call(launch, get, push, pop, context):
    """A kernel launch as a C function of word arguments, for a :class:`BoundCall`:
    ``(call, driver)``, ``call`` a ``Function`` of the call shim, ``call(driver_address,
    function, grid, block, stream, p0, ..., p10)``, that launches CUfunction ``function`` with
    ``grid`` and ``block`` as :func:`kernel_head` packs them, on ``stream``, its parameters
    the 11 words ``p0`` to ``p10`` (a kernel whose parameters are 8-byte values: pointers,
    64-bit integers, doubles; it reads those it declares), and returns the driver's status.
    ``driver``, which the caller keeps as long as it calls ``call`` with its address
    (``ctypes.addressof(driver)``), holds the driver's functions and ``context``, which is
    pushed for the launch where the calling thread's current context is another (and popped
    after). Threads launch at once without sharing the words. None where the call shim is
    not used (see :func:`status`).

    Parameters
    ----------
    launch, get, push, pop : int
        The addresses of the driver's ``cuLaunchKernel``, ``cuCtxGetCurrent``,
        ``cuCtxPushCurrent`` and ``cuCtxPopCurrent``.
    context : int
        The ``CUcontext`` the kernels launched were loaded in.

    Examples
    --------
    >>> from accelmath._core import hostcall
    >>> made = hostcall.kernel_call(1, 2, 3, 4, 5)  # (nothing is called here)
    >>> made is None or made[0].nargs == 16  # (None where the call shim is not used)
    True
    """
    module = _extension()
    if module is None:
        return None
    driver = (ctypes.c_void_p * 5)(launch, get, push, pop, context)
    return module.Function(module.KERNEL_CALL, 5 + KERNEL_WORDS), driver


def kernel_head(grid, block, shared_bytes=0):
    """The ``grid`` and ``block`` words of :func:`kernel_call`: ``(x, y, z)`` each, as the
    launch takes them (checked by :class:`~accelmath._core.gpu.launch.LaunchConfig`), with
    ``shared_bytes`` of dynamic shared memory.

    Examples
    --------
    >>> from accelmath._core.hostcall import kernel_head
    >>> [hex(w) for w in kernel_head((4, 4, 2), (16, 16, 1))]
    ['0x2000400000004', '0x408010']
    """
    (gx, gy, gz), (bx, by, bz) = grid, block
    return gx | gy << 32 | gz << 48, bx | by << 11 | bz << 22 | shared_bytes << 32


def reader(checks, pointer, held=None):
    """A reader of the pointer of arrays of one layout: a function of one array ``x`` that
    returns ``pointer(x)`` where ``get(x) == expected`` for each ``(get, expected)`` of
    ``checks`` (in order, stopping at the first that fails), else None.

    Made in C by the call shim (a ``Reader``, about 0.12 us less per call than the same
    checks in Python), else in Python, with the same results.

    Parameters
    ----------
    checks : sequence of (get, expected)
        ``get``: a property of the array's type (a getset or member descriptor, as
        ``torch.Tensor.dtype`` is), read from ``x``, or any callable, called with ``x``
        (such as a method of the type: ``torch.Tensor.is_contiguous``).
    pointer : callable or descriptor
        ``pointer(x)``: the address of ``x``'s first element (read as ``get`` is).
    held : (hold, checks), optional
        An object the address is read from, read once: ``h = hold(x)`` (as ``get`` is),
        checked as ``checks`` check ``x``, and the address ``pointer(h)``; for a package whose
        array holds its memory, its device and its address in another object (CuPy's
        ``x.data``).

    Returns
    -------
    callable

    Examples
    --------
    >>> from accelmath._core import hostcall
    >>> read = hostcall.reader([(len, 3), (min, 0)], pointer=max)
    >>> read([0, 1, 7]), read([1, 2, 7]), read([0, 7])
    (7, None, None)
    >>> read = hostcall.reader([(len, 2)], held=(max, [(abs, 4)]), pointer=int.bit_length)
    >>> read([1, 4]), read([1, 5]), read([4])
    (3, None, None)
    """
    checks = tuple((get, expected) for get, expected in checks)
    if held is not None:
        if not (isinstance(held, (tuple, list)) and len(held) == 2):
            raise TypeError(f"reader: held {held!r}, should be None or (hold, checks)")
        held = (held[0], tuple((get, expected) for get, expected in held[1]))
    module = _extension()
    if module is not None:
        return module.Reader(checks, pointer, held)
    if not all(_gettable(get) for get in (pointer, *(() if held is None else held[:1]))):
        raise TypeError(f"reader: pointer {pointer!r} or held {held!r}: neither callable nor a "
                        "descriptor")
    get_pointer = _getter(pointer)
    getters = tuple((_getter(get), expected) for get, expected in checks)
    hold = None if held is None else _getter(held[0])
    held_getters = () if held is None else tuple((_getter(get), expected)
                                                 for get, expected in held[1])

    def fits(x, getters):
        for get, expected in getters:
            value = get(x)
            if value is not expected and not value == expected:
                return False
        return True

    def read(x):
        if not fits(x, getters):
            return None
        if held is not None:
            x = hold(x)
            if not fits(x, held_getters):
                return None
        return get_pointer(x)

    return read


def _gettable(get):
    """Whether ``get`` is a descriptor :func:`_getter` reads, or a callable."""
    return isinstance(get, _DESCRIPTORS) or callable(get)


def _getter(get):
    """``get`` as a function of one object: a descriptor's ``__get__``, else ``get``."""
    return get.__get__ if isinstance(get, _DESCRIPTORS) else get


def capsule_stream(capsule, device_id):
    """A function of no arguments that returns the current stream of device ``device_id``
    (an int) through the C function ``intptr_t f(int device_id)`` that ``capsule`` holds,
    named by that signature as Cython names the C functions a module exports (CuPy's
    ``cupy_backends.cuda.stream.__pyx_capi__["get_stream_ptr"]``); None where the call shim
    is not used or ``capsule`` is not such a capsule.

    Examples
    --------
    >>> from accelmath._core import hostcall
    >>> hostcall.capsule_stream(object(), 0) is None
    True
    """
    module = _extension()
    if module is None:
        return None
    try:
        return module.CapsuleStream(capsule, device_id)
    except (TypeError, ValueError, OverflowError):
        return None


def status():
    """How accelmath calls C functions, and why, as one sentence.

    Returns
    -------
    str
        ``"C call shim (built at install: <path>)"``, or ``"ctypes (<why>)"``.

    Examples
    --------
    >>> from accelmath._core import hostcall
    >>> hostcall.status().startswith(("C call shim", "ctypes"))
    True
    """
    if switched_off(_SWITCH):
        return f"ctypes ({_SWITCH}={os.environ[_SWITCH].strip()})"
    _extension()
    return _imported["status"]


def _extension():
    """The call shim's module, or None where it is switched off or was not built."""
    if switched_off(_SWITCH):  # read each time: a change takes effect at the next plan
        return None
    if "module" not in _imported:
        _imported["module"], _imported["status"] = _import()
    return _imported["module"]


def _import():
    try:
        module = importlib.import_module("accelmath._core._hostcall")
    except ModuleNotFoundError as exc:
        if exc.name != "accelmath._core._hostcall":
            raise
        return None, _NOT_BUILT
    except ImportError as exc:  # built, but for another Python, or damaged since
        return None, (f"ctypes (the call shim cannot be loaded: {exc}; reinstall accelmath "
                      f"to rebuild it)")
    if getattr(module, "INTERFACE", None) != _INTERFACE:
        return None, (f"ctypes (the call shim at {module.__file__} was built from older code; "
                      f"reinstall accelmath to rebuild it)")
    return module, f"C call shim (built at install: {module.__file__})"

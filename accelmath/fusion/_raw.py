"""Kernels written in CUDA C++: :class:`RawKernel` compiles a source once per device (NVRTC,
the result kept in the on-disk store) and launches one of its kernels on arrays of any
package, on the caller's stream.

The fusion layer's traced kernels will be launched the same way; a raw kernel is the part a
user writes by hand.
"""

import ctypes
import operator

import numpy

from accelmath._core.gpu import launch, modules
from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.stream import resolve_stream
from accelmath._core.lifetime import Resource
from accelmath._core.operand import check_same_device, wrap_operand
from accelmath.errors import InvalidArgumentError, UnsupportedOperandError

__all__ = ["RawKernel"]

# one file name for every kernel: the kernels of one source share its compile and its module
_FILE = "accelmath_raw_kernel.cu"

# NumPy scalar types -> the C type a kernel parameter of theirs has
_SCALARS = {
    numpy.bool_: ctypes.c_bool, numpy.int8: ctypes.c_int8, numpy.uint8: ctypes.c_uint8,
    numpy.int16: ctypes.c_int16, numpy.uint16: ctypes.c_uint16, numpy.int32: ctypes.c_int32,
    numpy.uint32: ctypes.c_uint32, numpy.int64: ctypes.c_int64, numpy.uint64: ctypes.c_uint64,
    numpy.float32: ctypes.c_float, numpy.float64: ctypes.c_double,
}


class RawKernel(Resource):
    """A kernel of a CUDA C++ source, compiled for each device it runs on and launched on
    arrays of any package (CuPy, PyTorch, JAX, anything with ``__cuda_array_interface__``
    or ``__dlpack__``).

    The source is compiled with NVRTC for the device's architecture the first time the
    kernel runs there (or when :meth:`compile` asks), and the result is kept in accelmath's
    on-disk store, so a later process loads it without compiling.

    Parameters
    ----------
    source : str
        CUDA C++ source; the kernel is declared ``extern "C" __global__``.
    name : str
        The kernel's name in the source.
    options : sequence of str, optional
        Further NVRTC options (``("-DN=4",)``...).

    Examples
    --------
    >>> from accelmath.fusion import RawKernel
    >>> scale = RawKernel('''extern "C" __global__ void scale(double *x, double a, long long n)
    ... { long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    ...   if (i < n) x[i] *= a; }''', "scale")
    >>> scale.name
    'scale'

    With a CuPy array ``x`` of float64 on a GPU, ``scale((x.size + 255) // 256, 256,
    (x, 2.0, x.size))`` doubles it on CuPy's current stream. :meth:`free` (or the end of a
    ``with`` block) lets go of the loaded code; a later launch raises StateError.
    """

    what = "RawKernel"

    def __init__(self, source, name, *, options=()):
        modules.check_source(source)
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgumentError(f"name={name!r} is not a kernel name (a C identifier)")
        if isinstance(options, (str, bytes)) or not all(isinstance(o, str) for o in options):
            raise InvalidArgumentError(
                f"options={options!r} is not a sequence of option strings, such as ('-DN=4',)")
        self.source, self.name, self.options = source, name, tuple(options)
        self._functions = {}  # device ordinal -> CUfunction
        super().__init__()

    def _release(self):
        self._functions = {}

    def __repr__(self):
        return f"RawKernel({self.name!r}, {len(self.source)} characters of source)"

    def compile(self, device=0, *, wait=True, deferred=False):
        """Compile the source for ``device`` (an ordinal), or take it from the store, and
        load it there.

        With ``wait=False`` only the compile runs, on a thread of its own (NVRTC releases
        the interpreter lock), and the call returns at once; the first launch then waits for
        it only if it has not finished. ``deferred`` (with ``wait=False``): that compile
        starts once no other compile of the process is running, so that it does not slow
        the ones a first call waits for.

        Returns
        -------
        threading.Thread or None
            With ``wait=False``, the compile's thread (the same one for every call that
            asks for this code; None where the code is loaded already); None with
            ``wait=True``.

        Raises
        ------
        CompileError
            If NVRTC cannot compile the source (with ``wait=True``; else at the launch).
        StateError
            After :meth:`free`.
        """
        self._check_live()
        device = operator.index(device)
        if wait:
            self._function(device)
        elif device not in self._functions:
            return modules.compile_soon(self.source,
                                        modules.device_options(device, self.options), _FILE,
                                        deferred=deferred)
        return None

    def ready(self, device=0):
        """Whether a launch on ``device`` would start without waiting for NVRTC: the code is
        loaded there, compiled in this process, or kept in the store. A caller with another
        way to do the work takes it meanwhile (after ``compile(device, wait=False)``).

        Raises
        ------
        NoDeviceError
            If ``device`` is not a usable GPU (its architecture decides the code).
        StateError
            After :meth:`free`.
        """
        self._check_live()
        device = operator.index(device)
        return device in self._functions or modules.is_compiled(
            self.source, modules.device_options(device, self.options), _FILE)

    def _function(self, device):
        function = self._functions.get(device)
        if function is None:
            module = modules.loaded(device, self.source, _FILE, self.options)
            function = self._functions[device] = module.function(self.name)
        return function

    def __call__(self, grid, block, args, *, shared_bytes=0, stream=None):
        """Launch the kernel: ``grid`` blocks of ``block`` threads, with ``args``.

        Parameters
        ----------
        grid, block : int or tuple of int
            Blocks in (x, y, z) and threads per block (at most 1024 in all).
        args : sequence
            The kernel's parameters in order: a device array passes the address of its
            first element (the kernel reads its layout from the other parameters); None
            passes a null pointer; a Python ``int`` passes a ``long long``, a ``float`` a
            ``double``, a ``bool`` a ``bool``; a NumPy scalar passes its own C type; a
            ``ctypes`` value (a ``c_int``, a ``Structure``...) passes as it is.
        shared_bytes : int, optional
            Dynamic shared memory per block.
        stream : int or stream object, optional
            Default: the current stream of the first array's package on its device.

        Raises
        ------
        UnsupportedOperandError
            For an argument that is none of the above (a host array among them: kernels
            read device memory).
        DeviceMismatchError
            For arrays on different devices.
        InvalidArgumentError
            For no array among ``args`` (nothing says the device), or a bad grid or block.
        """
        self._check_live()
        values, operands = [], []
        for position, arg in enumerate(args):
            values.append(_parameter(arg, position, operands))
        if not operands:
            raise InvalidArgumentError(
                f"{self.name}: no device array among the arguments, so no device to run on")
        check_same_device(*operands)
        first = operands[0]
        device = first.device_id
        handle = resolve_stream(stream, first)
        for op in operands:
            op.wait_ready(handle)
        if grid.__class__ is list:  # (the cache of configurations takes hashable keys)
            grid = tuple(grid)
        if block.__class__ is list:
            block = tuple(block)
        config = launch.config(grid, block, shared_bytes)
        ensure_context(device)
        launch.launch(self._function(device), config, values, handle)


def _parameter(arg, position, operands):
    """The ctypes value of kernel argument ``arg``; a device array's operand is appended to
    ``operands``."""
    if arg is None:
        return ctypes.c_void_p(None)
    if isinstance(arg, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union)):
        return arg
    kind = type(arg)
    if kind is bool:
        return ctypes.c_bool(arg)
    if kind is int:
        if not -2**63 <= arg < 2**63:
            raise InvalidArgumentError(
                f"argument {position} is {arg}, outside a long long: pass a ctypes value")
        return ctypes.c_longlong(arg)
    if kind is float:
        return ctypes.c_double(arg)
    c_type = _SCALARS.get(kind)
    if c_type is not None:
        return c_type(arg.item())
    if isinstance(arg, (complex, numpy.generic, str, bytes, list, tuple)):
        raise UnsupportedOperandError(
            f"argument {position} is a {kind.__name__}: a kernel takes device arrays, None, "
            "ints, floats, bools, real NumPy scalars and ctypes values")
    op = wrap_operand(arg)
    if not op.on_device:
        raise UnsupportedOperandError(
            f"argument {position} is a host array ({op.package}): a kernel reads device "
            "memory; move it to the GPU first")
    operands.append(op)
    return ctypes.c_void_p(op.ptr)

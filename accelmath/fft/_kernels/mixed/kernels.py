"""Running the mixed-radix kernels (:mod:`.source`) on a device: a 2-D filter in three passes
(:class:`Filter`), and the real 2-D transform of an FFT plan's step in two
(:func:`step_launcher`: the rows' r2c transforms and then the columns' forward transforms in
place, or the columns' inverse transforms in place and then the rows' c2r transforms), which
the plans of awkward lengths time against cuFFT's."""

import ctypes
import functools
import threading

from accelmath._core.gpu.launch import LaunchConfig, allow_dynamic_shared, launch
from accelmath._core.gpu.modules import compile_soon, device_options, is_compiled, loaded
from accelmath.bindings import driver
from accelmath.fft._kernels.mixed.source import (
    THREADS, awkward, filter_source, fits, row_length, shared_bytes)

__all__ = ["Filter", "step_code", "step_fits", "step_launcher"]

_NAME = "accelmath_mixed.cu"
_lock = threading.Lock()
_filled = set()  # the modules whose twiddle tables are filled
# The most blocks a launch takes in y, and in x (a launch of more planes is split)
_MAX_GRID_Y, _MAX_GRID_X = 65535, 2 ** 31 - 1
_COMPLEX_SIZE = {"float32": 8, "float64": 16}


def _module(device_id, source, n0, n1):
    """The module of ``source`` loaded on a device, its twiddle tables (of ``n0`` and the
    rows' length for ``n1``) filled once, before any stream reads them."""
    module = loaded(device_id, source, _NAME)
    with _lock:
        if module not in _filled:
            count = max(n0, n1)
            launch(module.function("init_tables"), LaunchConfig((count + 255) // 256, 256), (),
                   None)
            driver.lib.stream_synchronize(None)
            _filled.add(module)
    return module


def _function(module, name, shared):
    function = module.function(name)
    allow_dynamic_shared(function, shared)
    return function


class Filter:
    """The three kernels of one 2-D filter problem on a device (:func:`filter_source`),
    compiled on a thread of their own where the store lacks them: :attr:`ready` says when
    :meth:`run` may be called without waiting for NVRTC.

    Parameters
    ----------
    n0, n1 : int
        The real array's shape.
    dtype : str
        ``"float32"`` or ``"float64"``.
    element : str
        The element function's source (axis 0, of the spectrum's complex dtype).
    device_id : int
    """

    def __init__(self, n0, n1, dtype, element, device_id, threads=None):
        self.n0, self.n1, self.dtype, self.device_id = n0, n1, dtype, device_id
        self.threads = threads or THREADS[dtype]
        self.source = filter_source(n0, n1, dtype, element, self.threads)
        options = device_options(device_id)
        self._thread = (None if is_compiled(self.source, options, _NAME)
                        else compile_soon(self.source, options, _NAME))
        self._kernels = None  # (rows_forward, columns, rows_inverse, configs), once loaded
        self._real = ctypes.c_float if dtype == "float32" else ctypes.c_double

    @property
    def ready(self):
        """Whether the kernels are compiled (and :meth:`run` takes no NVRTC time)."""
        if self._thread:  # (None: compiled; False: the compile failed)
            if self._thread.is_alive():
                return False
            self._thread = None
            if not is_compiled(self.source, device_options(self.device_id), _NAME):
                self._thread = False  # (the compile failed: logged; this way is not offered)
        return self._thread is None

    def _load(self):
        if self._kernels is None:  # (two threads may both load: the same result)
            module = _module(self.device_id, self.source, self.n0, self.n1)
            itemsize = _COMPLEX_SIZE[self.dtype]
            rows_shared = shared_bytes(row_length(self.n1), itemsize)
            columns_shared = shared_bytes(self.n0, itemsize)
            functions = (_function(module, "rows_forward", rows_shared),
                         _function(module, "columns", columns_shared),
                         _function(module, "rows_inverse", rows_shared))
            (rows, _), (cols, _) = self.threads
            row_config = LaunchConfig(self.n0, rows, rows_shared)
            configs = (row_config, LaunchConfig(self.n1 // 2 + 1, cols, columns_shared),
                       row_config)
            self._kernels = (*functions, configs)
        return self._kernels

    def run(self, x, spectrum, out, scale, element, stream):
        """Enqueue the filter on ``stream``: the real C-ordered ``x`` (a device address) to
        ``out`` (likewise, of ``x``'s shape), through ``spectrum`` (``n0 x (n1 // 2 + 1)``
        complex values, C order), ``element`` the element function's ``Element`` struct and
        ``scale`` the factor after it."""
        forward, columns, inverse, configs = self._kernels or self._load()
        spectrum = ctypes.c_void_p(spectrum)
        launch(forward, configs[0], (ctypes.c_void_p(x), spectrum), stream)
        launch(columns, configs[1], (spectrum, self._real(scale), element), stream)
        launch(inverse, configs[2], (spectrum, ctypes.c_void_p(out)), stream)


# --- the real 2-D transform of a plan's step ------------------------------------------------

@functools.lru_cache(maxsize=16)
def _step_source(n0, n1, dtype):
    """The source of the real 2-D transforms' kernels (about 0.4 ms to write, and asked for by
    each candidate of a plan, its launcher and its staleness)."""
    return filter_source(n0, n1, dtype)


def step_code(n0, n1, dtype, device_id):
    """``(source, options, name)`` of the kernels of the real 2-D transforms of ``n0 x n1``
    arrays of ``dtype`` on a device, as ``modules.compile_soon`` and ``modules.is_compiled``
    take them."""
    return _step_source(n0, n1, dtype), device_options(device_id), _NAME


def step_fits(step, dtype, shared):
    """Whether :func:`step_launcher` runs a plan step (an ``accelmath.fft._layout.Step``) of
    real ``dtype``: one r2c or c2r transform over two axes, a length of which is
    :func:`awkward` (cuFFT is fast on the others), each plane and its half spectrum dense and
    C-ordered, the planes of a batch one after another; ``shared`` the bytes of shared memory
    a block may have."""
    if step.kind not in ("r2c", "c2r") or len(step.n) != 2 or dtype not in THREADS:
        return False
    n0, n1 = step.n
    real, half = (n0, n1), (n0, n1 // 2 + 1)
    source, result = (real, half) if step.kind == "r2c" else (half, real)
    return (step.istride == 1 and step.ostride == 1 and tuple(step.inembed) == source
            and tuple(step.onembed) == result
            and (step.batch == 1 or (step.idist == source[0] * source[1]
                                     and step.odist == result[0] * result[1]))
            and (awkward(n0) or awkward(n1))
            and fits(n0, n1, _COMPLEX_SIZE[dtype], shared))


def step_launcher(step, dtype, device_id):
    """A function ``run(src, dst, inverse, stream)`` that enqueues the transforms of a step
    that :func:`step_fits` from the device address ``src`` to ``dst`` on ``stream`` (the
    step's kind gives the direction; ``inverse`` is not read), unscaled as cuFFT's: an r2c
    step the rows' r2c transforms into ``dst`` and then the columns' forward transforms in
    place there, a c2r step the columns' inverse transforms in place in ``src`` (which it
    overwrites, as cuFFT's c2r transforms do) and then the rows' c2r transforms into ``dst``.
    The kernels are compiled (or found in the store) and loaded here."""
    n0, n1 = step.n
    m = n1 // 2 + 1
    module = _module(device_id, _step_source(n0, n1, dtype), n0, n1)
    complex_size = _COMPLEX_SIZE[dtype]
    rows_shared, columns_shared = (shared_bytes(row_length(n1), complex_size),
                                   shared_bytes(n0, complex_size))
    forward = step.kind == "r2c"
    rows = _function(module, "rows_forward" if forward else "rows_inverse", rows_shared)
    columns = _function(module, "columns_forward" if forward else "columns_inverse",
                        columns_shared)
    (row_threads, _), (column_threads, _) = THREADS[dtype]
    in_size, out_size = ((complex_size // 2, complex_size) if forward
                         else (complex_size, complex_size // 2))
    # each launch a run of whole planes: (input byte offset, output byte offset, configs)
    per = min(step.batch, _MAX_GRID_Y, _MAX_GRID_X // n0)
    launches = [(first * step.idist * in_size, first * step.odist * out_size,
                 LaunchConfig(count * n0, row_threads, rows_shared),
                 LaunchConfig((m, count), column_threads, columns_shared))
                for first, count in ((k, min(per, step.batch - k))
                                     for k in range(0, step.batch, per))]

    def run_forward(src, dst, inverse, stream):
        for a, b, row_config, column_config in launches:
            spectrum = ctypes.c_void_p(dst + b)
            launch(rows, row_config, (ctypes.c_void_p(src + a), spectrum), stream)
            launch(columns, column_config, (spectrum,), stream)

    def run_inverse(src, dst, inverse, stream):
        for a, b, row_config, column_config in launches:
            spectrum = ctypes.c_void_p(src + a)
            launch(columns, column_config, (spectrum,), stream)
            launch(rows, row_config, (spectrum, ctypes.c_void_p(dst + b)), stream)

    return run_forward if forward else run_inverse

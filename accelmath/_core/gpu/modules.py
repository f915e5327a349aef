"""accelmath's own kernels: CUDA C++ compiled with NVRTC, LTO-IR linked with nvJitLink, and the
code loaded on a device with the driver (launching is :mod:`accelmath._core.gpu.launch`'s).

Compiling and linking need no GPU; their results are kept in the on-disk store
(:mod:`accelmath._core.disk.store`) under a key made of everything that determines the bytes: a hash
of the source or of the linked images, the options, the architecture and the compiler's or
linker's version. So a new process finds its kernels compiled.

Loaded code lives as long as the process: a module is loaded once per device and image
(:func:`load`), or once per device, source and options (:func:`loaded`), and never unloaded,
because the kernels taken from it are held by plans that may outlive any owner of the module.

Examples
--------
>>> from accelmath._core.gpu.modules import CompileOptions, compile_cuda
>>> cubin = compile_cuda('extern "C" __global__ void k(float *x) { x[0] = 1; }',
...                      CompileOptions(arch=(9, 0)))
>>> cubin[:4] == b"\\x7fELF"
True
"""

import ctypes
import hashlib
import json
import logging
import operator
import os
import threading
from dataclasses import dataclass

from accelmath._core.arguments import check_flag
from accelmath._core.disk import store
from accelmath.bindings import _loader, driver, nvjitlink, nvrtc
from accelmath.errors import CompileError, CudaLibraryError, InvalidArgumentError

__all__ = ["STANDARDS", "CompileOptions", "Module", "SourceModules", "compile_cuda",
           "check_source", "wait_for_compiles", "compile_soon", "device_options", "is_compiled",
           "link", "load", "loaded"]

STANDARDS = ("c++11", "c++14", "c++17", "c++20")

_log = logging.getLogger("accelmath.modules")
_lock = threading.Lock()  # around the dicts below and a module's load
_soon_lock = threading.Lock()
_images = {}    # (device_id, image digest) -> Module
_sources = {}   # (device_id, name, extra, source) -> Module
_source_locks = {}  # the same keys -> the Lock loaded() holds through that source's compile
_soon = {}      # compile key -> the thread of compile_soon
_done = {}      # compile key -> the image compile_soon made
# NVRTC's compiles of a process in flight that a deferred one waits for (see compile_soon)
_busy = [0]
_idle = threading.Condition()


def _check_arch(arch, name="arch"):
    """``arch`` as a ``(major, minor)`` tuple of ints, or InvalidArgumentError."""
    try:
        major, minor = (operator.index(part) for part in arch)
    except (TypeError, ValueError):
        major = minor = -1
    if not (major > 0 and 0 <= minor <= 9):
        raise InvalidArgumentError(
            f"{name}={arch!r} is not a compute capability: expected (major, minor), two ints "
            f"such as (9, 0)")
    return major, minor


def check_source(source):
    """Raise unless ``source`` is CUDA C++ source text (a str)."""
    if not isinstance(source, str):
        raise InvalidArgumentError(f"source must be a str of CUDA C++, got {type(source).__name__}")


def _check_strings(values, name):
    """``values`` as a tuple of str, or InvalidArgumentError (one string is refused: it
    would be read as a sequence of one-character options)."""
    if isinstance(values, (str, bytes)) or not all(isinstance(v, str) for v in values):
        raise InvalidArgumentError(
            f"{name}={values!r} is not a sequence of option strings, such as ('-DN=4',)")
    return tuple(values)


@dataclass(frozen=True)
class CompileOptions:
    """How NVRTC compiles a source.

    Parameters
    ----------
    arch : tuple of int
        The target's compute capability ``(major, minor)``, for example ``(9, 0)``.
    std : str
        The C++ standard, one of :data:`STANDARDS`.
    lto : bool
        Produce LTO-IR, relocatable, for :func:`link` (or a library's LTO callback), instead of
        a cubin.
    extra : tuple of str
        Further NVRTC options, such as ``("-DN=4096",)``.

    Examples
    --------
    >>> from accelmath._core.gpu.modules import CompileOptions
    >>> CompileOptions(arch=(9, 0), extra=["-DN=8"]).arguments
    ('--gpu-architecture=sm_90', '--std=c++17', '-DN=8')
    """

    arch: tuple
    std: str = "c++17"
    lto: bool = False
    extra: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "arch", _check_arch(self.arch))
        if self.std not in STANDARDS:
            raise InvalidArgumentError(
                f"std={self.std!r} is not a C++ standard NVRTC takes: expected one of "
                f"{', '.join(repr(s) for s in STANDARDS)}")
        check_flag(self.lto, "lto", integers=False)
        object.__setattr__(self, "extra", _check_strings(self.extra, "extra"))

    @property
    def arguments(self):
        """The NVRTC command line these options make."""
        major, minor = self.arch
        lto = ("-dlto", "--relocatable-device-code=true") if self.lto else ()
        return (f"--gpu-architecture=sm_{major}{minor}", f"--std={self.std}", *lto, *self.extra)


def compile_cuda(source, options, name="kernel.cu"):
    """Compile CUDA C++ ``source`` with NVRTC, or take the result from the store.

    Needs no GPU.

    Parameters
    ----------
    source : str
        The CUDA C++ source. Kernels meant to be found by name are declared ``extern "C"``.
    options : CompileOptions
        The architecture, standard, LTO and further options.
    name : str
        A file name, for the compiler's messages.

    Returns
    -------
    bytes
        A cubin, or LTO-IR where ``options.lto`` is true.

    Raises
    ------
    CompileError
        If NVRTC cannot compile the source; ``log`` holds NVRTC's log.
    LibraryNotFoundError
        If NVRTC is not installed.

    Examples
    --------
    >>> from accelmath._core.gpu.modules import CompileOptions, compile_cuda
    >>> ltoir = compile_cuda('__device__ float twice(float x) { return 2 * x; }',
    ...                      CompileOptions(arch=(9, 0), lto=True), "twice.cu")
    >>> len(ltoir) > 0
    True
    """
    check_source(source)
    if not isinstance(options, CompileOptions):
        raise InvalidArgumentError(
            f"options={options!r} is not a CompileOptions, such as CompileOptions(arch=(9, 0))")
    key = _compile_key(source, options, name)
    thread = _soon.get(key)
    if thread is not None:  # compiling in the background: wait for it rather than compile
        thread.join()
        if key in _done:
            return _done[key]
    return _compile(key, source, options, name)


def compile_soon(source, options, name="kernel.cu", *, deferred=False):
    """Start :func:`compile_cuda` on a thread of its own, once per source, options and name,
    and return the thread. NVRTC runs without the interpreter lock, so the caller goes on at
    full speed; a later :func:`compile_cuda` of the same code waits for this one rather than
    compiling again. A failure is logged, and met again by that later call. The thread is
    not a daemon: a process that ends meanwhile waits for it (NVRTC must not be unloaded
    under a compile), and so keeps its result in the store. ``deferred``: NVRTC runs once no
    other compile of this process is running (a kernel that only later calls may take, such
    as a plan's candidate it went without: beside the compiles a first call waits for, it
    made them several times slower); whichever thread started a code's compile first
    decides.

    Examples
    --------
    >>> from accelmath._core.gpu.modules import CompileOptions, compile_soon, is_compiled
    >>> options = CompileOptions(arch=(9, 0))
    >>> compile_soon('extern "C" __global__ void k2(int *x) { *x = 2; }', options).join()
    >>> is_compiled('extern "C" __global__ void k2(int *x) { *x = 2; }', options)
    True
    """
    key = _compile_key(source, options, name)
    with _soon_lock:
        thread = _soon.get(key)
        if thread is None:
            thread = _soon[key] = threading.Thread(
                target=_compile_quietly, args=(key, source, options, name, deferred),
                name=f"accelmath-compile-{name}")
            thread.start()
    return thread


def wait_for_compiles():
    """Wait for every compile :func:`compile_soon` started in this process."""
    with _soon_lock:
        threads = list(_soon.values())
    for thread in threads:
        thread.join()


def is_compiled(source, options, name="kernel.cu"):
    """Whether :func:`compile_cuda` of this code returns without running NVRTC: compiled by
    :func:`compile_soon` in this process, or kept in the store."""
    key = _compile_key(source, options, name)
    if key in _done:
        return True
    thread = _soon.get(key)
    if thread is not None and thread.is_alive():  # (compiling: the store has nothing yet)
        return False
    return store.load("nvrtc", key) is not None


def _compile_key(source, options, name):
    return json.dumps({"compiler": _compiler(), "options": options.arguments, "name": name,
                       "source": hashlib.sha256(source.encode()).hexdigest()})


def _compile(key, source, options, name, deferred=False):
    image = store.load("nvrtc", key)
    if image is None:
        with _idle:
            if deferred:
                _idle.wait_for(lambda: not _busy[0])
            else:
                _busy[0] += 1
        try:
            image = _nvrtc_compile(source, name, options)
        finally:
            if not deferred:
                with _idle:
                    _busy[0] -= 1
                    _idle.notify_all()
        store.save("nvrtc", key, image)
    return image


def _compile_quietly(key, source, options, name, deferred=False):
    try:
        _done[key] = _compile(key, source, options, name, deferred)
    except Exception as exc:  # the caller's own compile meets it again, and raises it
        _log.info("compiling %s in the background failed: %s", name, exc)


def _compiler():
    """The compiler's identity in the store's keys: NVRTC's file, its size and time. A file
    that changes makes new keys; where the memo of library paths knows the file, NVRTC is
    not loaded just to name it (a few milliseconds of a new process's first call). The path
    is taken as found, not resolved: resolving costs a file-system call per directory."""
    path = _loader.library_file("nvrtc")
    stat = os.stat(path)
    return f"nvrtc {path} {stat.st_size} {stat.st_mtime_ns}"


def _nvrtc_compile(source, name, options):
    """Run NVRTC; the compiled bytes."""
    arguments = [a.encode() for a in options.arguments]
    program = ctypes.c_void_p()
    nvrtc.lib.create_program(ctypes.byref(program), source.encode(), name.encode(), 0, None,
                             None)
    try:
        try:
            nvrtc.lib.compile_program(program, len(arguments),
                                      (ctypes.c_char_p * len(arguments))(*arguments))
        except CudaLibraryError as exc:
            raise CompileError(f"NVRTC could not compile {name} ({exc.status_name}) with "
                               f"{' '.join(options.arguments)}", _nvrtc_log(program)) from None
        log = _nvrtc_log(program)
        if log.strip():
            _log.debug("NVRTC compiled %s with messages:\n%s", name, log)
        if options.lto:
            return _read(nvrtc.lib.get_ltoir_size, nvrtc.lib.get_ltoir, program).raw
        return _read(nvrtc.lib.get_cubin_size, nvrtc.lib.get_cubin, program).raw
    finally:
        nvrtc.lib.destroy_program(ctypes.byref(program))


def _read(get_size, get, handle):
    """A buffer a library fills: ``get_size(handle, &size)``, then ``get(handle, buffer)``."""
    size = ctypes.c_size_t()
    get_size(handle, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(size.value)
    get(handle, buffer)
    return buffer


def _nvrtc_log(program):
    return _read(nvrtc.lib.get_program_log_size, nvrtc.lib.get_program_log,
                 program).value.decode(errors="replace")


def link(images, arch, extra=()):
    """Link LTO-IR ``images`` (from :func:`compile_cuda` with ``lto=True``) into one cubin
    with nvJitLink, optimizing across them; or take the result from the store.

    Needs no GPU. The images must come from an NVRTC no newer than nvJitLink.

    Parameters
    ----------
    images : sequence of bytes
        The LTO-IR images.
    arch : tuple of int
        The target's compute capability ``(major, minor)``.
    extra : sequence of str
        Further nvJitLink options, such as ``("-O0",)`` or ``("-maxrregcount=64",)``.

    Returns
    -------
    bytes
        The cubin.

    Raises
    ------
    CompileError
        If nvJitLink cannot link the images; ``log`` holds its error log.

    Examples
    --------
    >>> from accelmath._core.gpu.modules import CompileOptions, compile_cuda, link
    >>> options = CompileOptions(arch=(9, 0), lto=True)
    >>> twice = compile_cuda('__device__ float twice(float x) { return 2 * x; }', options)
    >>> kernel = compile_cuda('__device__ float twice(float x);'
    ...                       'extern "C" __global__ void k(float *x) { *x = twice(*x); }',
    ...                       options)
    >>> link([twice, kernel], (9, 0))[:4] == b"\\x7fELF"
    True
    """
    major, minor = _check_arch(arch)
    extra = _check_strings(extra, "extra")
    if isinstance(images, (bytes, bytearray)) or not images or not all(
            isinstance(image, (bytes, bytearray)) for image in images):
        raise InvalidArgumentError(
            f"images must be a non-empty sequence of LTO-IR bytes, got {type(images).__name__}")
    arguments = (f"-arch=sm_{major}{minor}", "-lto", *extra)
    key = json.dumps({"linker": "nvJitLink {}.{}".format(*nvjitlink.version()),
                      "options": arguments,
                      "images": [hashlib.sha256(image).hexdigest() for image in images]})
    cubin = store.load("nvjitlink", key)
    if cubin is None:
        cubin = _nvjitlink_link(images, arguments)
        store.save("nvjitlink", key, cubin)
    return cubin


def _nvjitlink_link(images, arguments):
    """Run nvJitLink; the linked cubin."""
    encoded = [a.encode() for a in arguments]
    handle = ctypes.c_void_p()
    nvjitlink.lib.create(ctypes.byref(handle), len(encoded),
                         (ctypes.c_char_p * len(encoded))(*encoded))
    try:
        try:
            for index, image in enumerate(images):
                nvjitlink.lib.add_data(handle, nvjitlink.INPUT_TYPE["ltoir"], bytes(image),
                                       len(image), f"image{index}".encode())
            nvjitlink.lib.complete(handle)
        except CudaLibraryError as exc:
            count = f"{len(images)} LTO-IR image" + ("s" if len(images) > 1 else "")
            raise CompileError(f"nvJitLink could not link {count} ({exc.status_name}) with "
                               f"{' '.join(arguments)}",
                               _nvjitlink_log(handle)) from None
        return _read(nvjitlink.lib.get_linked_cubin_size, nvjitlink.lib.get_linked_cubin,
                     handle).raw
    finally:
        nvjitlink.lib.destroy(ctypes.byref(handle))


def _nvjitlink_log(handle):
    return _read(nvjitlink.lib.get_error_log_size, nvjitlink.lib.get_error_log,
                 handle).value.decode(errors="replace")


class Module:
    """Code loaded on one device (a ``CUmodule``), for the life of the process.

    Made by :func:`load` or :func:`loaded`, not directly.
    """

    def __init__(self, device_id, handle):
        self.device_id = device_id
        self.handle = handle
        self._functions = {}

    def function(self, name):
        """The kernel ``name`` (a ``CUfunction``, as a ``ctypes.c_void_p``); looked up once.

        Raises
        ------
        CudaLibraryError
            ``CUDA_ERROR_NOT_FOUND`` if the code has no kernel of that name (a C++ kernel
            not declared ``extern "C"`` has a mangled name).
        """
        function = self._functions.get(name)
        if function is None:
            function = ctypes.c_void_p()
            driver.lib.module_get_function(ctypes.byref(function), self.handle, name.encode())
            self._functions[name] = function
        return function


def load(device_id, image):
    """Load a cubin (from :func:`compile_cuda` or :func:`link`) on a device, once per
    device and image.

    Parameters
    ----------
    device_id : int
        The device ordinal; its context is made current.
    image : bytes
        The cubin.

    Returns
    -------
    Module
    """
    key = (device_id, hashlib.sha256(image).digest())
    module = _images.get(key)
    if module is None:
        from accelmath._core.gpu.device import ensure_context

        with _lock:
            module = _images.get(key)
            if module is None:
                ensure_context(device_id)
                handle = ctypes.c_void_p()
                driver.lib.module_load_data(ctypes.byref(handle), image)
                module = _images[key] = Module(device_id, handle)
    return module


def loaded(device_id, source, name="kernel.cu", extra=()):
    """CUDA C++ ``source`` compiled for a device's architecture and loaded on it, once per
    device, source, name and options.

    Parameters
    ----------
    device_id : int
        The device ordinal.
    source : str
        The CUDA C++ source.
    name : str
        A file name, for the compiler's messages.
    extra : tuple of str
        Further NVRTC options (see :class:`CompileOptions`).

    Returns
    -------
    Module
    """
    key = (device_id, name, extra, source)
    module = _sources.get(key)
    if module is None:
        with _lock:
            own = _source_locks.setdefault(key, threading.Lock())
        # one compile per key, however many threads ask at once; other keys compile meanwhile
        # (a long compile on a thread of its own must not hold up a short one a call waits for)
        with own:
            module = _sources.get(key)
            if module is None:
                options = device_options(device_id, extra)
                module = _sources[key] = load(device_id, compile_cuda(source, options, name))
    return module


def device_options(device_id, extra=()):
    """The :class:`CompileOptions` of code for a device, as :func:`loaded` compiles it: the
    device's architecture and the further NVRTC options ``extra``."""
    from accelmath._core.gpu.device import compute_capability

    return CompileOptions(arch=compute_capability(device_id), extra=extra)


class SourceModules:
    """One source's modules on each device, loaded on first use (:func:`loaded`), with the
    most blocks worth launching there for grid-stride kernels: 16 per multiprocessor.

    Calling it with a device ordinal and a variant returns ``(module, blocks)``. A variant
    (such as a dtype's name) is compiled alone, with ``-DACCELMATH_<variant>``: a source
    guards each variant's kernels with ``#ifdef ACCELMATH_<variant>``, so that a first call
    compiles the kernels of its dtype, not of every dtype. Kernels outside the guards are in
    every variant's module, and in the module of no variant (``None``).

    Parameters
    ----------
    source : str
        The CUDA C++ source.
    name : str
        A file name, for the compiler's messages.
    """

    WAVES = 16

    def __init__(self, source, name):
        self._source, self._name = source, name
        self._found = {}  # (device_id, variant) -> (module, blocks)

    def __call__(self, device_id, variant=None):
        found = self._found.get((device_id, variant))
        if found is None:
            from accelmath._core.gpu.device import compute_capability, devices

            compute_capability(device_id)  # (NoDeviceError, or an error naming a bad ordinal)
            blocks = self.WAVES * devices()[device_id]["multiprocessor_count"]
            found = self._found[device_id, variant] = (
                loaded(device_id, self._source, self._name, _variant(variant)), blocks)
        return found

    def compile_soon(self, device_id, variant=None):
        """Start compiling a variant for a device in the background (:func:`compile_soon`),
        so that its first use waits less or not at all; the thread."""
        return compile_soon(self._source, device_options(device_id, _variant(variant)),
                            self._name)


def _variant(variant):
    return () if variant is None else (f"-DACCELMATH_{variant}",)

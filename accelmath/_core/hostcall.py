"""Fast calls of C functions from Python, for the hot paths.

A ctypes call costs about 0.5 us of host time (libffi, argument conversion), about an eighth of
a small cuFFT transform's whole call. ``_hostcall.c``, a small CPython extension, calls C
functions of integer and pointer arguments that return an int for a tenth of that. It is
compiled on first use with the system C compiler and kept in the on-disk cache (see
:mod:`accelmath._core.wisdom`; a temporary directory when that is off). Where it cannot be
built (no compiler, no Python headers) or ``ACCELMATH_HOSTCALL=0``, :func:`fast` returns the
ctypes function itself: the results are the same, only slower.
"""

import ctypes
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from accelmath._core import wisdom

__all__ = ["fast", "launcher", "status"]

_SOURCE = Path(__file__).with_name("_hostcall.c")
# argument types passed whole in one integer register
_WORD_TYPES = {ctypes.c_int, ctypes.c_uint, ctypes.c_long, ctypes.c_ulong, ctypes.c_longlong,
               ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_ssize_t, ctypes.c_void_p}
_lock = threading.Lock()
_state = {}  # "module": the extension or None; "status": how it was obtained, or why not


def fast(func):
    """A faster callable for the ctypes function ``func``, or ``func`` itself.

    Parameters
    ----------
    func : ctypes function pointer
        With ``argtypes`` set (integer and pointer types only, at most 8) and an ``int``
        result, like the status-returning functions of the CUDA math libraries.

    Returns
    -------
    callable
        Takes the same arguments as ints (or None for a null pointer) and returns the same
        int. Integers are passed modulo 2**64, with no range check.

    Examples
    --------
    >>> import ctypes
    >>> from accelmath._core import hostcall
    >>> libc = ctypes.CDLL(None)
    >>> labs = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(("abs", libc))
    >>> hostcall.fast(labs)(-7)
    7
    """
    argtypes = getattr(func, "argtypes", None)
    if (argtypes is None or len(argtypes) > 8 or func.restype is not ctypes.c_int
            or not all(t in _WORD_TYPES for t in argtypes)):
        return func
    module = _module()
    if module is None:
        return func
    return module.Function(ctypes.cast(func, ctypes.c_void_p).value, len(argtypes))


def launcher(slow, runs, xtype, read, out_readers, current_stream, local, mask):
    """A plan's ``execute(x, out=out)`` made in C where it can be, else ``slow`` itself.

    The returned callable does what ``slow`` does. For a call ``f(x, out=out)`` it makes the
    checks and the C call of ``slow``'s common case itself, without the interpreter, and it
    passes every other call, and this one wherever a check does not hold, on to ``slow``.

    Parameters
    ----------
    slow : callable
        The execute in Python.
    runs : dict
        ``runs[None]`` is ``(run, func, fail, code)``: ``func`` the :func:`fast` form of a C
        function called as ``func(handle, in_ptr, out_ptr[, code])`` (no ``code`` where it is
        None), ``fail(status)`` raising the error of a nonzero status. No entry: ``slow``.
    xtype : type
        The type ``x`` must have.
    read : callable
        ``read(x)``: the pointer of ``x`` where it fits the plan, else None.
    out_readers : dict
        ``{type: reader}``: readers of ``out`` as ``read`` is of ``x``, by ``out``'s type.
    current_stream : callable
        The handle of the current stream, an int.
    local : threading.local
        Its ``state`` (where this thread has one) has ``stream``, the stream its ``handles``
        are set to; ``handles[0]`` is passed to ``func`` where that stream is the current one.
    mask : int
        Pointers with any of these bits set go to ``slow``.

    Returns
    -------
    callable
        Its ``__wrapped__`` is ``slow``; ``slow`` itself where the call shim cannot be built.
    """
    module = _module()
    if module is None:
        return slow
    return module.Launch(slow, runs, xtype, read, out_readers, current_stream, local, mask)


def status():
    """How C functions are called: ``"compiled: <path>"``, or why ctypes is used."""
    _module()
    return _state["status"]


def _module():
    if "module" not in _state:
        with _lock:
            if "module" not in _state:
                _state["module"], _state["status"] = _load()
    return _state["module"]


def _load():
    if wisdom.switched_off("ACCELMATH_HOSTCALL"):
        return None, "ctypes (ACCELMATH_HOSTCALL is off)"
    source = _SOURCE.read_bytes()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    digest = hashlib.sha256(source + sys.version.encode() + suffix.encode()).hexdigest()[:16]
    name = f"_hostcall-{digest}{suffix}"
    if wisdom.disk_cache_enabled():
        directory = wisdom.cache_dir() / "hostcall"
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return None, f"ctypes (cannot create {directory}: {exc})"
        return _build_and_import(directory / name)
    with tempfile.TemporaryDirectory(prefix="accelmath-") as directory:
        return _build_and_import(Path(directory) / name)  # a loaded library outlives its file


def _compiler():
    """``$CC``, else the compiler Python was built with where it exists here, else ``cc``."""
    if os.environ.get("CC"):
        return shlex.split(os.environ["CC"])
    configured = shlex.split(sysconfig.get_config_var("CC") or "")
    if configured and shutil.which(configured[0]):
        return configured
    return ["cc"]


def _build_and_import(path):
    if not path.exists():
        compiler = _compiler()
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        command = [*compiler, "-O2", "-shared", "-fPIC",
                   f"-I{sysconfig.get_paths()['include']}", str(_SOURCE), "-o", str(partial)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"ctypes (no C compiler: {exc})"
        if result.returncode:
            partial.unlink(missing_ok=True)
            log = (result.stderr or result.stdout).strip().splitlines()
            return None, f"ctypes (compiling the call shim failed: {log[-1] if log else '?'})"
        os.replace(partial, path)  # atomic: other processes see the whole file or none
    spec = importlib.util.spec_from_file_location("accelmath._core._hostcall", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        return None, f"ctypes (cannot load {path}: {exc})"
    return module, f"compiled: {path}"

"""Find and load the CUDA libraries, and bind C functions declared in tables.

Each binding module (``cufft.py``, ``cublas.py``, ...) declares its C functions once, in a
table of :class:`Function` entries, and builds one :class:`Library` from it. A function is
resolved on first use; a function that returns a status is checked in one place,
:meth:`Library._check`, which raises :class:`~accelmath.errors.CudaLibraryError` carrying the
library, the C function and the status name.

Libraries are found with ``cuda-pathfinder`` (pip wheels, conda, the system toolkit), so CUDA 12
and 13 both work; differences between the two (other symbol names) are written as several
candidate C names in one entry. Importing cuda-pathfinder costs tens of milliseconds, so a
layer above may hand :func:`remember_paths` a memo of where it found each library before
(the core keeps it in its on-disk store); a remembered file that no longer loads is looked up
again.
"""

import ctypes
import functools
import os
import threading
from dataclasses import dataclass

from accelmath.errors import CudaLibraryError, LibraryNotFoundError

__all__ = ["Function", "Library", "library_file", "load_library", "remember_paths"]

# Reentrant: loading runs Python (imports, the store's files) that may collect garbage, and a
# finalizer run then (a stream or a page-locked buffer freed) may make the first call of a
# driver function, which loads its library on the same thread.
_lock = threading.RLock()
_loaded = {}
_memo = None  # (recall, keep): recall(name) -> path or None; keep(name, path)


def remember_paths(recall, keep):
    """Use ``recall(name)`` for a library's path before asking cuda-pathfinder, and tell
    ``keep(name, path)`` where cuda-pathfinder found one. Either may be ``None``."""
    global _memo
    _memo = (recall, keep)


def _recalled(name):
    """Where the memo of :func:`remember_paths` says library ``name`` was found, or None."""
    recall = _memo[0] if _memo else None
    return recall(name) if recall else None


@functools.lru_cache(maxsize=1)
def _dlopen():
    """The C library's ``dlopen``, called through ctypes (which releases the interpreter lock
    during a call, where ``ctypes.CDLL`` holds it while it loads), or None where there is
    none to call."""
    try:
        function = ctypes.CDLL(None).dlopen
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_int)
    return function


def _cdll(path):
    """``ctypes.CDLL(path)``, loaded with the interpreter lock released: loading one of the
    CUDA libraries takes tens to hundreds of milliseconds, which the warm-up threads spend
    beside the caller's own work rather than in its way. Where that load fails, the plain
    one says why (OSError)."""
    dlopen = _dlopen()
    if dlopen is not None:
        handle = dlopen(os.fsencode(path), os.RTLD_NOW | ctypes.DEFAULT_MODE)
        if handle:
            return ctypes.CDLL(path, handle=handle)
    return ctypes.CDLL(path)


def _find(name):
    """The path of a library other than the driver, through the memo, else cuda-pathfinder."""
    keep = _memo[1] if _memo else None
    path = _recalled(name)
    if path:
        try:
            return _cdll(path), path
        except OSError:
            pass  # moved or replaced: look it up again
    try:
        import cuda.pathfinder
    except ImportError as exc:
        raise LibraryNotFoundError(name, f"cuda-pathfinder is not installed ({exc})") from None
    try:
        path = cuda.pathfinder.load_nvidia_dynamic_lib(name).abs_path
    except Exception as exc:  # pathfinder raises several unrelated types
        raise LibraryNotFoundError(name, str(exc) or type(exc).__name__) from None
    try:
        cdll = _cdll(path)
    except OSError as exc:
        raise LibraryNotFoundError(name, str(exc)) from None
    if keep:
        keep(name, path)
    return cdll, path


def load_library(name):
    """Load a CUDA library by its cuda-pathfinder name and return ``(ctypes.CDLL, path)``.

    Raises
    ------
    LibraryNotFoundError
        If the library cannot be found or loaded.
    """
    found = _loaded.get(name)
    if found is not None:
        return found
    with _lock:
        if name in _loaded:
            return _loaded[name]
        if name != "cuda":
            _loaded[name] = _find(name)
            return _loaded[name]
        # The driver ships with the display driver, never as a wheel.
        path = "libcuda.so.1"
        try:
            cdll = _cdll(path)
        except OSError as exc:
            raise LibraryNotFoundError(name, str(exc), "it comes with the NVIDIA display driver") from None
        _loaded[name] = (cdll, path)
        return _loaded[name]


def library_file(name):
    """The file library ``name`` is loaded from: where it is loaded, else where the memo of
    :func:`remember_paths` says it was found (without loading it), else where it loads now.

    Raises
    ------
    LibraryNotFoundError
        If the library cannot be found or loaded.
    """
    with _lock:
        if name in _loaded:
            return _loaded[name][1]
    return _recalled(name) or load_library(name)[1]


@dataclass(frozen=True)
class Function:
    """One C function: its Python name, candidate C names, result and argument types.

    ``restype=None`` marks a function that returns a status to check; any other ``restype``
    is returned as is.
    """

    name: str
    c_names: tuple
    argtypes: tuple
    restype: object = None


class Library:
    """A lazily loaded CUDA library whose functions come from a declaration table.

    Parameters
    ----------
    name : str
        The cuda-pathfinder name (``"cufft"``, ``"cublasLt"``, ...).
    functions : sequence of Function
        The declaration table.
    status_names : dict
        Status code to symbolic name.
    status_type : ctypes type
        The C type of the status a checked function returns.
    success : int
        The success status.
    """

    def __init__(self, name, functions, status_names, status_type=ctypes.c_int, success=0):
        self.name = name
        self.functions = {f.name: f for f in functions}
        self.status_names = status_names
        self.status_type = status_type
        self.success = success
        self._raw = {}

    @property
    def cdll(self):
        """The loaded ``ctypes.CDLL`` (loads the library on first use)."""
        return load_library(self.name)[0]

    @property
    def path(self):
        """The file the library was loaded from."""
        return load_library(self.name)[1]

    def status_name(self, status):
        """The symbolic name of a status code."""
        return self.status_names.get(status, f"{self.name} status {status} (not a known status)")

    def c_name(self, name):
        """The C name that ``name`` binds to in the loaded library.

        Raises
        ------
        CudaLibraryError
            If none of the candidate C names exists in the library.
        """
        cdll = self.cdll
        candidates = self.functions[name].c_names
        for c_name in candidates:
            if hasattr(cdll, c_name):
                return c_name
        raise CudaLibraryError(self.name, "/".join(candidates), -1, "symbol not found in " + self.path)

    def bind(self, name):
        """Resolve ``name`` to a ctypes function with its types and status check set."""
        entry = self.functions[name]
        c_name = self.c_name(name)
        # a function object of its own (``cdll[c_name]`` makes a new one each time): the one
        # ``getattr(cdll, c_name)`` caches is shared, and setting the types of a function
        # another thread is calling frees its errcheck under it (an interpreter crash when two
        # threads bind a function at once)
        func = self.cdll[c_name]
        func.argtypes = entry.argtypes
        if entry.restype is None:
            func.restype = self.status_type
            func.errcheck = self._checker(c_name)
        else:
            func.restype = entry.restype
        return func

    def raw(self, name):
        """``name`` bound with no status check, for hot paths that test the status inline.

        Returns ``(function, c_name)``; a failing status goes to :meth:`raise_status`. The
        function is a bare ``CFUNCTYPE`` prototype, the cheapest call ctypes makes.
        """
        raw = self._raw.get(name)
        if raw is None:
            entry = self.functions[name]
            c_name = self.c_name(name)
            restype = self.status_type if entry.restype is None else entry.restype
            func = ctypes.CFUNCTYPE(restype, *entry.argtypes)((c_name, self.cdll))
            raw = self._raw[name] = (func, c_name)
        return raw

    def _checker(self, c_name):
        success = self.success

        def check(status, func, args):
            if status != success:
                raise CudaLibraryError(self.name, c_name, status, self.status_name(status))
            return status

        return check

    def __getattr__(self, name):
        if name not in self.__dict__.get("functions", ()):
            raise AttributeError(f"{self.name} binding has no function {name!r}")
        func = self.bind(name)  # (threads that race here each get a binding of their own)
        setattr(self, name, func)
        return func

    def __dir__(self):
        return [*super().__dir__(), *self.functions]

    def raise_status(self, c_name, status):
        """Raise the error for ``status`` returned by ``c_name`` (for unchecked callers)."""
        raise CudaLibraryError(self.name, c_name, status, self.status_name(status))

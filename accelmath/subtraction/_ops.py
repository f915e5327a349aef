"""The few array operations the subtraction needs, for NumPy, CuPy and torch alike.

An :class:`ArrayKind` names where arrays live (the package and the device) and makes,
moves and combines arrays there with the package's own functions: element-wise products of
spectra, reductions, random numbers. Matrix products, transforms and factorizations go
through accelmath's public API instead. The packages are imported only
when a kind of theirs is made.
"""

import contextlib
import dataclasses
import types

import numpy

from accelmath import linalg
from accelmath.errors import UnsupportedOperandError

__all__ = ["ArrayKind", "kind_of", "kind_of_array"]

_PACKAGES = ("numpy", "cupy", "torch")


def _package_name(obj):
    return type(obj).__module__.partition(".")[0]


def kind_of_array(x, name="array"):
    """The :class:`ArrayKind` of array ``x`` (NumPy, CuPy, or torch), or
    UnsupportedOperandError naming ``name``."""
    package = _package_name(x)
    if isinstance(x, numpy.ndarray):
        return ArrayKind("numpy", None)
    if package == "cupy" and hasattr(x, "device"):
        return ArrayKind("cupy", int(x.device.id))
    if package == "torch" and hasattr(x, "device"):
        return ArrayKind("torch", x.device)
    raise UnsupportedOperandError(
        f"{name} is a {type(x).__module__}.{type(x).__name__}: expected a NumPy array, a CuPy "
        "array or a torch tensor")


def kind_of(like):
    """The :class:`ArrayKind` that ``like`` names: None (NumPy), a module (``numpy``,
    ``cupy``, ``torch``: its current GPU, or the CPU for torch without CUDA), a package name,
    a ``torch.device``, or an array (its package and device).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.subtraction._ops import kind_of
    >>> kind_of(None) == kind_of(np) == kind_of(np.zeros(2))
    True
    """
    if like is None:
        return ArrayKind("numpy", None)
    if isinstance(like, str):
        if like not in _PACKAGES:
            raise UnsupportedOperandError(
                f"like={like!r}: expected None, one of {_PACKAGES}, a module or an array")
        like = __import__(like)
    if isinstance(like, types.ModuleType):
        name = like.__name__
        if name == "numpy":
            return ArrayKind("numpy", None)
        if name == "cupy":
            return ArrayKind("cupy", int(like.cuda.Device().id))
        if name == "torch":
            device = (like.device("cuda", like.cuda.current_device())
                      if like.cuda.is_available() else like.device("cpu"))
            return ArrayKind("torch", device)
        raise UnsupportedOperandError(
            f"like is the module {name!r}: expected numpy, cupy or torch")
    if _package_name(like) == "torch" and type(like).__name__ == "device":
        torch = __import__("torch")
        if like.type == "cuda" and like.index is None:
            like = torch.device("cuda", torch.cuda.current_device())
        return ArrayKind("torch", like)
    return kind_of_array(like, "like")


@dataclasses.dataclass(frozen=True)
class ArrayKind:
    """Where arrays live: ``package`` ("numpy", "cupy", "torch") and ``device`` (None for
    NumPy, the GPU ordinal for CuPy, the ``torch.device`` for torch)."""

    package: str
    device: object

    # --- the package ---------------------------------------------------------------------

    @property
    def module(self):
        """The package's module."""
        return __import__(self.package)

    @property
    def on_gpu(self):
        """Whether the arrays live on a GPU."""
        if self.package == "numpy":
            return False
        return self.package == "cupy" or self.device.type == "cuda"

    @property
    def ordinal(self):
        """The GPU's ordinal (None on the CPU)."""
        if not self.on_gpu:
            return None
        return self.device if self.package == "cupy" else self.device.index

    def describe(self):
        """The kind in words: ``"cupy on GPU 0"``."""
        if self.package == "numpy":
            return "numpy"
        return f"{self.package} on {'GPU ' if self.package == 'cupy' else ''}{self.device}"

    def active(self):
        """A context in which new CuPy arrays land on this kind's GPU (nothing for the
        others, which are told their device)."""
        if self.package == "cupy":
            return self.module.cuda.Device(self.device)
        return contextlib.nullcontext()

    def _dtype(self, dtype):
        if self.package == "torch":
            return getattr(self.module, dtype)
        return dtype

    # --- making and moving arrays --------------------------------------------------------

    def empty(self, shape, dtype="float64"):
        """An uninitialized array."""
        if self.package == "torch":
            return self.module.empty(shape, dtype=self._dtype(dtype), device=self.device)
        return self.module.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype="float64"):
        """An array of zeros."""
        if self.package == "torch":
            return self.module.zeros(shape, dtype=self._dtype(dtype), device=self.device)
        return self.module.zeros(shape, dtype=dtype)

    def asarray(self, a, dtype=None):
        """NumPy data (or a scalar) as an array of this kind (a copy on a GPU)."""
        a = numpy.asarray(a, dtype=dtype)
        if self.package == "numpy":
            return a
        if self.package == "cupy":
            return self.module.asarray(a)
        return self.module.from_numpy(numpy.ascontiguousarray(a)).to(self.device)

    def to_numpy(self, a):
        """An array of this kind as NumPy (a read back from a GPU, which waits for it)."""
        if self.package == "numpy":
            return numpy.asarray(a)
        if self.package == "cupy":
            return self.module.asnumpy(a)
        return a.detach().cpu().numpy()

    def float64(self, a):
        """``a`` as a C-contiguous float64 array of this kind (``a`` itself where it is
        one)."""
        if self.package == "torch":
            return a.to(dtype=self.module.float64).contiguous()
        return self.module.ascontiguousarray(a, dtype=numpy.float64)

    def contiguous(self, a):
        """``a`` as a C-contiguous array of this kind (``a`` itself where it is one)."""
        if self.package == "torch":
            return a.contiguous()
        return self.module.ascontiguousarray(a)

    def element_strides(self, a):
        """The strides of ``a`` in elements."""
        if self.package == "torch":
            return tuple(a.stride())
        return tuple(s // a.itemsize for s in a.strides)

    def is_bool(self, a):
        """Whether ``a`` holds booleans."""
        return str(a.dtype).rpartition(".")[2] in ("bool", "bool_")

    def is_integer(self, a):
        """Whether ``a`` holds integers (booleans included)."""
        name = str(a.dtype).rpartition(".")[2]
        return name.startswith(("int", "uint")) or name in ("bool", "bool_")

    def is_real(self, a):
        """Whether ``a`` holds real numbers (integers or floats, not complex)."""
        return self.is_integer(a) or str(a.dtype).rpartition(".")[2].startswith("float")

    # --- element-wise and reductions -----------------------------------------------------

    def multiply(self, a, b, out):
        """``out = a * b``."""
        if self.package == "torch":
            return self.module.mul(a, b, out=out)
        return self.module.multiply(a, b, out=out)

    def subtract(self, a, b, out):
        """``out = a - b``."""
        if self.package == "torch":
            return self.module.sub(a, b, out=out)
        return self.module.subtract(a, b, out=out)

    def conj(self, a, out):
        """``out = conj(a)``."""
        if self.package == "torch":
            return self.module.conj_physical(a, out=out)
        return self.module.conjugate(a, out=out)

    def sum_first(self, a, out):
        """``out = a.sum(axis=0)``."""
        if self.package == "torch":
            return self.module.sum(a, dim=0, out=out)
        return self.module.sum(a, axis=0, out=out)

    def total(self, a, ones):
        """The sum of every element of 2-D float64 ``a``, as a 0-d array of this kind (no
        read back). On a GPU, two matrix products with ``ones``, a float64 vector of ones of
        this kind at least ``max(a.shape)`` long (made once by the caller): CuPy compiles a
        reduction kernel on its first use, seconds of a new process's first subtraction."""
        if self.package == "numpy":
            return a.sum()
        rows, cols = a.shape
        return self.matmul(ones[:rows], self.matmul(a, ones[:cols]))

    def count_nonfinite(self, a):
        """The number of NaN or infinite elements of ``a``, as an int (a read back)."""
        return int(self.to_numpy((~self.module.isfinite(a)).sum()))

    def matmul(self, a, b, out=None, **terms):
        """The matrix product ``a @ b`` (``accelmath.linalg.matmul``: cuBLASLt on a GPU),
        into ``out`` where given; ``terms`` are matmul's ``c``, ``alpha`` and ``beta``."""
        return linalg.matmul(a, b, out=out, **terms)

    def synchronize(self):
        """Wait for the work queued on this kind's device (nothing on the CPU)."""
        if self.package == "cupy":
            self.module.cuda.Device(self.device).synchronize()
        elif self.package == "torch" and self.device.type == "cuda":
            self.module.cuda.synchronize(self.device)

    # --- random numbers ------------------------------------------------------------------

    def generator(self, seed):
        """The package's random generator, seeded (None: from fresh entropy)."""
        if seed is None:
            seed = int(numpy.random.SeedSequence().entropy % 2**63)
        if self.package == "numpy":
            return numpy.random.default_rng(seed)
        if self.package == "cupy":
            with self.active():
                return self.module.random.default_rng(seed)
        generator = self.module.Generator(device=self.device)
        generator.manual_seed(int(seed) % 2**63)
        return generator

    def standard_normal(self, generator, shape):
        """Standard normal float64 numbers from ``generator``."""
        if self.package == "torch":
            return self.module.randn(shape, generator=generator, dtype=self.module.float64,
                                     device=self.device)
        if self.package == "cupy":
            with self.active():
                return generator.standard_normal(shape, dtype=numpy.float64)
        return generator.standard_normal(shape)


_NUMBA = ("numba", "numba_cuda")


def is_numba(x):
    """Whether ``x`` is a Numba CUDA device array."""
    return _package_name(x) in _NUMBA and hasattr(x, "__cuda_array_interface__")


def from_numba(x):
    """A Numba device array ``x`` as a CuPy array (else a torch tensor) over the same memory,
    for the subtraction's array operations, which Numba lacks; anything else as it is."""
    if not is_numba(x):
        return x
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        return cupy.asarray(x)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        raise UnsupportedOperandError(
            "the image subtraction computes on Numba arrays through CuPy or torch (Numba has "
            "no array operations of its own): pip install cupy-cuda12x (or cupy-cuda13x)")
    return torch.as_tensor(x, device="cuda")


def to_numba(x):
    """Device array ``x`` as a Numba device array over the same memory."""
    from numba import cuda

    return cuda.as_cuda_array(x)

"""The accelmath exception hierarchy.

Every error accelmath raises derives from :class:`AccelmathError` and from the natural
built-in exception (``TypeError``, ``ValueError``, ``RuntimeError``), so callers may catch
either.
"""

import numpy.exceptions
import numpy.linalg

__all__ = [
    "AccelmathError",
    "ArgumentTypeError",
    "AxisError",
    "CompileError",
    "CudaLibraryError",
    "DeviceMismatchError",
    "GradientError",
    "InvalidArgumentError",
    "InvalidArrayLikeError",
    "LibraryNotFoundError",
    "LinAlgError",
    "NoDeviceError",
    "OutOfMemoryError",
    "StateError",
    "TraceError",
    "UnsupportedDTypeError",
    "UnsupportedOperandError",
]


class AccelmathError(Exception):
    """Base class of every accelmath exception."""


class InvalidArgumentError(AccelmathError, ValueError):
    """An argument has a value outside what the function accepts (axes, shapes, norms...)."""


class AxisError(InvalidArgumentError, numpy.exceptions.AxisError):
    """An axis out of bounds for an array's dimensions: NumPy's ``AxisError`` too (and so an
    ``IndexError``), so that code written against NumPy catches it."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument that must be an integer (a length, an axis, a count) and is of another
    type: a ``TypeError`` too, as NumPy raises for it."""


class UnsupportedOperandError(AccelmathError, TypeError):
    """An object that is not an array accelmath can read."""


class InvalidArrayLikeError(UnsupportedOperandError, ValueError):
    """An array-like whose values NumPy cannot make an array of (ragged nesting, a string
    where a number goes): a ``ValueError`` too, as NumPy raises for it."""


class GradientError(UnsupportedOperandError):
    """A tensor that records gradients (``requires_grad``) given while gradients are enabled:
    accelmath is not differentiable yet, so it refuses the tensor rather than detach it
    silently. Call accelmath under ``torch.no_grad()``, or pass ``x.detach()``."""


class UnsupportedDTypeError(AccelmathError, TypeError):
    """An array whose element type the operation does not support."""


class TraceError(AccelmathError, TypeError):
    """A function that cannot be traced into a fused expression: a Python ``if``, ``and``,
    ``or`` or ``not`` on a traced value, a function or method the fusion layer does not
    support, or a result that is not one value."""


class DeviceMismatchError(AccelmathError, ValueError):
    """Operands that live on different devices."""


class StateError(AccelmathError, RuntimeError):
    """An object used in a state that does not allow it (for example after ``free()``)."""


class LinAlgError(AccelmathError, numpy.linalg.LinAlgError):
    """A factorization or solve failed: a singular matrix, one not positive definite, or
    an iteration that did not converge.

    Attributes
    ----------
    index : tuple of int or None
        The batch index of the first matrix that failed (``()`` for a single matrix; None
        where it is not known).
    """

    def __init__(self, message, index=None):
        self.index = index
        if index is not None:
            message = f"{message} (batch index {index})"
        super().__init__(message)


class NoDeviceError(AccelmathError, RuntimeError):
    """A GPU was required, but none is usable."""


class OutOfMemoryError(AccelmathError, MemoryError):
    """An allocation failed: an argument (a transform length, say) asked for more memory than
    the host or the GPU could give; the message names it and the bytes asked for."""


class LibraryNotFoundError(AccelmathError, RuntimeError):
    """A CUDA library could not be found or loaded."""

    PIP_HINT = ("install the CUDA libraries from a clone of accelmath: `pip install \".[cu12]\"` "
                "(CUDA 12 driver) or `pip install \".[cu13]\"` (CUDA 13); a CUDA build of "
                "torch brings them too")

    def __init__(self, library, reason, hint=PIP_HINT):
        self.library = library
        self.reason = reason
        super().__init__(f"could not load the CUDA library {library!r}: {reason}; {hint}")


class CudaLibraryError(AccelmathError, RuntimeError):
    """A CUDA library call returned an error status.

    Attributes
    ----------
    library : str
        The library (``"cufft"``, ``"cublas"``, ...).
    function : str
        The C function that failed.
    status : int
        The raw status code.
    status_name : str
        The symbolic name of the status, for example ``"CUFFT_INVALID_SIZE"``.
    """

    def __init__(self, library, function, status, status_name):
        self.library = library
        self.function = function
        self.status = status
        self.status_name = status_name
        super().__init__(f"{function} failed: {status_name}")


class CompileError(AccelmathError, RuntimeError):
    """Run-time compilation (NVRTC) failed; ``log`` holds the compiler's log."""

    def __init__(self, message, log=""):
        self.log = log
        super().__init__(f"{message}\n{log}" if log else message)

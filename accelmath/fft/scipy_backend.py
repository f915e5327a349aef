"""A ``scipy.fft`` backend: scipy.fft's functions, computed by accelmath.

Pass this module to ``scipy.fft.set_backend`` (or ``scipy.fft.register_backend``), and
``scipy.fft.fft``, ``rfft2``, ``irfftn``... run through :mod:`accelmath.fft`: device arrays
(CuPy, PyTorch, ...) on their GPU through cached cuFFT plans, host arrays on the CPU. Calls
this backend does not handle (``dct``, a ``plan=``, a list instead of an array)
or a dtype accelmath has no FFT of (``longdouble``) return ``NotImplemented``, so that
scipy falls back to its own implementation.

SciPy-only keywords: ``overwrite_x`` is ignored (accelmath never overwrites its input),
``workers`` is passed on (it sets the CPU threads), ``plan`` must be None.

Examples
--------
>>> import numpy as np
>>> import scipy.fft
>>> import accelmath.fft
>>> x = np.random.default_rng(0).standard_normal((4, 8))
>>> with scipy.fft.set_backend(accelmath.fft.scipy_backend):
...     y = scipy.fft.rfft2(x)
>>> bool(np.allclose(y, np.fft.rfft2(x)))
True
"""

from accelmath._core.operand import wrap_operand
from accelmath.errors import UnsupportedDTypeError
from accelmath.fft import _functions
from accelmath.fft import _normalize as norms

__all__ = ["__ua_domain__", "__ua_function__"]

__ua_domain__ = "numpy.scipy.fft"

_FUNCTIONS = {name: getattr(_functions, name)
              for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2",
                           "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft2",
                           "ihfft2", "hfftn", "ihfftn")}
# scipy.fft's positional parameters: (x, n or s, axis or axes, norm, overwrite_x, workers).
_OVERWRITE_X, _WORKERS = 4, 5


def __ua_function__(method, args, kwargs):
    """Run scipy.fft's ``method`` with accelmath, or return ``NotImplemented``.

    Parameters
    ----------
    method : callable
        The scipy.fft function called (matched by its ``__name__``).
    args : tuple
        Its positional arguments, as scipy.fft's signature orders them.
    kwargs : dict
        Its keyword arguments.

    Returns
    -------
    array or NotImplemented
    """
    function = _FUNCTIONS.get(getattr(method, "__name__", None))
    if function is None or len(args) > _WORKERS + 1:
        return NotImplemented
    kwargs = dict(kwargs)
    if kwargs.pop("plan", None) is not None:
        return NotImplemented
    kwargs.pop("overwrite_x", None)
    if len(args) > _WORKERS:
        kwargs["workers"] = args[_WORKERS]
    if not args and "x" in kwargs:
        args = (kwargs.pop("x"),)
    if not args:
        return NotImplemented
    try:
        op = wrap_operand(args[0])
    except TypeError:  # lists, scalars, dtypes accelmath has no FFT of: scipy's own
        return NotImplemented
    try:
        norms.transform_dtypes("c2c", op.dtype)
    except UnsupportedDTypeError:
        return NotImplemented
    import scipy.fft  # loaded already: scipy is calling us

    # accelmath's host path calls scipy.fft itself: that call must not come back here.
    with scipy.fft.skip_backend(_this_module()):
        return function(*args[:_OVERWRITE_X], **kwargs)


def _this_module():
    import sys

    return sys.modules[__name__]

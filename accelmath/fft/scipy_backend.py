"""A ``scipy.fft`` backend: scipy.fft's functions, computed by accelmath.

Pass this module to ``scipy.fft.set_backend``, ``scipy.fft.set_global_backend`` or
``scipy.fft.register_backend``, and ``scipy.fft.fft``, ``rfft2``, ``irfftn``... run through
:mod:`accelmath.fft`: device arrays (CuPy, PyTorch, ...) on their GPU through cached cuFFT
plans, host arrays on the CPU. accelmath's CPU path calls SciPy's FFT engine directly, never
through ``scipy.fft``'s dispatch, so it works inside ``set_backend(..., only=True)`` and as the
global backend. Calls this backend does not handle (``dct`` and the other real transforms, a
``plan=``, an object it cannot read, a dtype it has no FFT of) return ``NotImplemented``, for
scipy to try its next backend (as the global backend, register scipy's own with
``scipy.fft.register_backend("scipy")`` for those).

SciPy-only keywords: ``overwrite_x`` is ignored (accelmath never overwrites its input),
``workers`` is passed on (it sets the CPU threads), ``plan`` must be None. ``s`` without
``axes`` means the last ``len(s)`` axes, as scipy.fft says (without NumPy's deprecation
warning).

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

from accelmath.errors import GradientError, InvalidArgumentError
from accelmath.fft import _functions, _functions_nd
from accelmath.fft import _normalize as norms
from accelmath.fft import _scipy_functions
from accelmath.fft._transform import read_operand

__all__ = ["__ua_domain__", "__ua_function__"]

__ua_domain__ = "numpy.scipy.fft"

_FUNCTIONS = {name: getattr(module, name)
              for module in (_functions, _functions_nd, _scipy_functions) for name in module.__all__}
# the functions of several axes and their default axes: scipy.fft takes an s without axes as
# the last len(s) axes
_DEFAULT_AXES = {name: (-2, -1) if name.endswith("2") else None
                 for name in _FUNCTIONS if name.endswith(("2", "n"))}
# scipy.fft's positional parameters: (x, n or s, axis or axes, norm, overwrite_x, workers).
_S, _AXES, _OVERWRITE_X, _WORKERS = 1, 2, 4, 5


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
    name = getattr(method, "__name__", None)
    function = _FUNCTIONS.get(name)
    if function is None or len(args) > _WORKERS + 1:
        return NotImplemented
    kwargs = dict(kwargs)
    if kwargs.pop("plan", None) is not None:
        return NotImplemented
    kwargs.pop("overwrite_x", None)
    args = list(args)
    if len(args) > _WORKERS:
        kwargs["workers"] = args.pop()
    del args[_OVERWRITE_X:]
    if not args and "x" in kwargs:
        args.append(kwargs.pop("x"))
    if not args:
        return NotImplemented
    try:
        op = read_operand(args[0])
        norms.transform_dtypes("c2c", op.dtype)
    except GradientError:  # accelmath's own error says how to proceed
        raise
    except TypeError:  # objects and dtypes accelmath has no FFT of: scipy's own
        return NotImplemented
    if name in _DEFAULT_AXES:
        _axes_of_s(name, args, kwargs)
        _scipy_lengths(len(op.shape), *_given(args, kwargs))
    return function(*args, **kwargs)


def _scipy_lengths(ndim, s, axes):
    """Refuse what scipy.fft refuses of the functions of several axes and NumPy takes: a None
    in ``s`` (NumPy 2's deprecated default length), an axis given twice (NumPy transforms it
    again)."""
    if s is not None and hasattr(s, "__len__") and any(v is None for v in s):
        raise InvalidArgumentError("shape must be a scalar or iterable of integers (scipy.fft "
                                   f"takes no None in s={tuple(s)})")
    if axes is not None and hasattr(axes, "__len__"):
        normalized = [norms.normalize_axis(a, ndim, "axes") for a in axes]
        if len(set(normalized)) < len(normalized):
            raise InvalidArgumentError(f"all axes must be unique (scipy.fft), got axes={axes}")


def _axes_of_s(name, args, kwargs):
    """Give ``axes`` explicitly where ``s`` comes without them: the last ``len(s)`` axes."""
    s = _given(args, kwargs)[0]
    if s is None:
        return
    last = tuple(range(-(len(s) if hasattr(s, "__len__") else 1), 0))
    if len(args) > _AXES:
        if args[_AXES] is None:
            args[_AXES] = last
    elif kwargs.get("axes", _DEFAULT_AXES[name]) is None:
        kwargs["axes"] = last


def _given(args, kwargs):
    """The ``s`` and ``axes`` of a call of a function of several axes."""
    s = args[_S] if len(args) > _S else kwargs.get("s")
    return s, args[_AXES] if len(args) > _AXES else kwargs.get("axes")

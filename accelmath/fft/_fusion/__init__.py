"""The fusion layer's part of :mod:`accelmath.fft`, loaded where a call first takes a prologue,
an epilogue, a fused product or a spectral filter, so that ``import accelmath.fft`` does not
load :mod:`accelmath.fusion` (tracing, code generation, kernels: about 30 ms).

- :mod:`.fused`: an FFT plan's prologue and epilogue (:class:`~.fused.Fusion`) and what index
  and frequency mean around a transform;
- :mod:`.call`: the stateless functions' calls with a prologue or an epilogue, remembered;
- :mod:`.callbacks`: the same as cuFFT LTO callbacks, timed against the separate passes;
- :mod:`.filter`: :func:`spectral_filter` and its fused passes (the column kernel's, the
  mixed-radix kernels').
"""

import importlib

__all__ = ["fused_call", "multiply", "plain_call", "product", "spectral_filter"]

_loaded = {}  # name -> what it names, imported with its first use


def _load(name):
    found = _loaded.get(name)
    if found is None:
        if name == "product":
            from accelmath.fusion import elementwise

            found = elementwise(multiply)
        else:
            module, _, attribute = name.rpartition(".")
            found = getattr(importlib.import_module(f"accelmath.fft._fusion.{module}"),
                            attribute)
        _loaded[name] = found
    return found


def plain_call(prologue, epilogue, prologue_args, epilogue_args):
    """Whether a call takes no prologue, no epilogue and no arguments for either: the plain
    transform. Arguments given without their function go to the fused call, which refuses
    them (:func:`~.fused.check_unused`)."""
    # (absent()'s rule, written out: this runs on every plain call)
    return (prologue is None and epilogue is None
            and (prologue_args is None or prologue_args.__class__ is tuple and not prologue_args)
            and (epilogue_args is None or epilogue_args.__class__ is tuple and not epilogue_args))


def fused_call(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args):
    """:func:`accelmath.fft._fusion.call.fused_call` (imported with the first call)."""
    return _load("call.fused_call")(call, x, out, stream, prologue, prologue_args, epilogue,
                                    epilogue_args)


def product(a, b):
    """``a * b``, broadcast, as one fused pass on any kind of array."""
    return _load("product")(a, b)


def multiply(a, b):
    """``a * b``: a spectrum product, as a prologue or a fused function traces it."""
    return a * b


def spectral_filter(x, fn, args=(), *, axes=None, stream=None, like=None):
    """Filter a real array in Fourier space: ``irfftn(fn(rfftn(x), *args))``, fused.

    ``fn`` is an ordinary Python function of one element of the half spectrum (and the
    further ``args``), traced once (:mod:`accelmath.fusion`): a product with a transfer
    function, a Gaussian of :func:`accelmath.fusion.frequency`, a derivative... On a GPU the
    forward transform of the first transformed axis, ``fn`` and the inverse transform run as
    one pass where that measures faster: accelmath's column kernel for float32 lengths that
    are powers of two, its mixed-radix kernels for matrices whose lengths have a prime
    factor above 7, such as 4088 (see :mod:`accelmath.fft._fusion.filter`).

    Parameters
    ----------
    x : array
        A real array of any package, or an array-like.
    fn : callable
        ``fn(y, *args)``: the filtered value of the spectrum's element ``y`` (unnormalized,
        as ``rfftn(x)``'s). Inside it, ``frequency(axis)`` is the element's frequency along a
        transformed axis (``rfftfreq`` on the halved last one) and ``index(axis)`` its index.
    args : sequence, optional
        The further arrays (broadcast against the half spectrum) and scalars of ``fn``.
    axes : sequence of int, optional
        The transformed axes (default: all); the last one is halved, as in ``rfftn``.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of ``x``'s package).
    like : str, module or array, optional
        The kind of the result (default: ``x``'s); see :doc:`/guide/arrays`.

    Returns
    -------
    array
        ``irfftn(fn(rfftn(x, axes=axes), *args), s, axes)`` with ``s`` the transformed axes'
        extents: a real array of ``x``'s shape.

    Raises
    ------
    InvalidArgumentError
        ``fn`` is not callable, an axis is out of range or repeated, or an array of ``args``
        does not broadcast to the half spectrum; the errors of :mod:`accelmath.fusion` where
        ``fn`` cannot be traced.

    Examples
    --------
    A Gaussian low-pass filter, computed from the frequencies rather than read:

    >>> import numpy as np, accelmath.fft
    >>> from accelmath.fusion import frequency
    >>> x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    >>> smooth = lambda y, w: y * np.exp(-(frequency(0) ** 2 + frequency(1) ** 2) / w)
    >>> z = accelmath.fft.spectral_filter(x, smooth, (0.01,))
    >>> f0, f1 = np.fft.fftfreq(64)[:, None], np.fft.rfftfreq(64)[None, :]
    >>> expected = np.fft.irfftn(np.fft.rfftn(x) * np.exp(-(f0 ** 2 + f1 ** 2) / 0.01))
    >>> bool(np.allclose(z, expected, atol=1e-5))
    True
    """
    return _load("filter.spectral_filter")(x, fn, args, axes=axes, stream=stream, like=like)

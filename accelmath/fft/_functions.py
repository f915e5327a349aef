"""NumPy's FFT functions (``numpy.fft``), on any array.

Each takes ``numpy.fft``'s arguments plus keyword-only ``out``, ``stream``, ``execution`` and
``workers``, and returns an array of the input's package. Host arrays run on the CPU: NumPy
arrays on SciPy's FFT engine with ``workers`` threads, in their own precision (long double
included); CPU torch tensors on ``torch.fft`` (its own threads), or on SciPy's engine over NumPy
views of them where that measured faster for their shape and dtype. Device arrays run on their GPU
through cached cuFFT plans; the result of a torch tensor has the strides ``torch.fft`` gives
it. Every function describes its call as a :class:`~accelmath.fft._records.Transform` and ends
in :func:`accelmath.fft._transform.transform`.
"""

from accelmath._core.arguments import length
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.fft._fusion import fused_call, plain_call
from accelmath.fft._normalize import swap_norm
from accelmath.fft._records import Transform, record
from accelmath.fft._transform import front, transform

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]


def _one(n):
    """The ``s`` of a one-axis function: ``n`` checked, or None."""
    return None if n is None else (length(n),)


def fft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
        workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """One-dimensional discrete Fourier transform, as ``numpy.fft.fft``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    n : int, optional
        Length of the transformed axis (the input cut or zero-padded); default: the input's.
    axis : int, optional
        The axis to transform (default -1).
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``numpy.fft`` (default "backward").
    out : array, optional
        Where to write the result: of its shape and dtype, on the input's device.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the input's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    workers : int, optional
        CPU threads for host arrays (negative: counted back from the number of CPUs).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform (:mod:`accelmath.fusion`):
        ``prologue(x, *prologue_args)`` of each input element, ``epilogue(y,
        *epilogue_args)`` of each result element, the normalization folded into it.
    prologue_args, epilogue_args : sequence, optional
        Their further arrays (broadcast against the element's array) and scalars.
    like : str, module or array, optional
        The kind of the result (default: the input's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        The complex transform, of the input's package.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal(8)
    >>> bool(np.allclose(accelmath.fft.fft(x), np.fft.fft(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2c", _one(n), (axis,), norm, False, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def ifft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
         workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """One-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifft``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    n : int, optional
        Length of the transformed axis (the input cut or zero-padded); default: the input's.
    axis : int, optional
        The axis to transform (default -1).
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``numpy.fft`` (default "backward").
    out : array, optional
        Where to write the result: of its shape and dtype, on the input's device.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the input's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    workers : int, optional
        CPU threads for host arrays (negative: counted back from the number of CPUs).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform (:mod:`accelmath.fusion`):
        ``prologue(x, *prologue_args)`` of each input element, ``epilogue(y,
        *epilogue_args)`` of each result element, the normalization folded into it.
    prologue_args, epilogue_args : sequence, optional
        Their further arrays (broadcast against the element's array) and scalars.
    like : str, module or array, optional
        The kind of the result (default: the input's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        The complex inverse transform, of the input's package.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal(8)
    >>> bool(np.allclose(accelmath.fft.ifft(x), np.fft.ifft(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2c", _one(n), (axis,), norm, True, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def rfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
         workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """One-dimensional Fourier transform of real input, as ``numpy.fft.rfft``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    n : int, optional
        Length of the transformed axis (the input cut or zero-padded); default: the input's.
    axis : int, optional
        The axis to transform (default -1).
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``numpy.fft`` (default "backward").
    out : array, optional
        Where to write the result: of its shape and dtype, on the input's device.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the input's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    workers : int, optional
        CPU threads for host arrays (negative: counted back from the number of CPUs).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform (:mod:`accelmath.fusion`):
        ``prologue(x, *prologue_args)`` of each input element, ``epilogue(y,
        *epilogue_args)`` of each result element, the normalization folded into it.
    prologue_args, epilogue_args : sequence, optional
        Their further arrays (broadcast against the element's array) and scalars.
    like : str, module or array, optional
        The kind of the result (default: the input's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        The non-negative half of the spectrum: ``n // 2 + 1`` complex points on the axis.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal(8)
    >>> bool(np.allclose(accelmath.fft.rfft(x), np.fft.rfft(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("r2c", _one(n), (axis,), norm, False, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def irfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
          workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Inverse of :func:`rfft`, as ``numpy.fft.irfft``: real output from a half spectrum.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    n : int, optional
        Length of the output on the axis (the input cut or zero-padded to ``n // 2 + 1``);
        default ``2 * (m - 1)``, ``m`` the input's length.
    axis : int, optional
        The axis to transform (default -1).
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``numpy.fft`` (default "backward").
    out : array, optional
        Where to write the result: of its shape and dtype, on the input's device.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the input's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    workers : int, optional
        CPU threads for host arrays (negative: counted back from the number of CPUs).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform (:mod:`accelmath.fusion`):
        ``prologue(x, *prologue_args)`` of each input element, ``epilogue(y,
        *epilogue_args)`` of each result element, the normalization folded into it.
    prologue_args, epilogue_args : sequence, optional
        Their further arrays (broadcast against the element's array) and scalars.
    like : str, module or array, optional
        The kind of the result (default: the input's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        The real signal: ``n`` points on the axis.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.exp(0.7j * np.arange(5.0)) + np.arange(5.0)
    >>> bool(np.allclose(accelmath.fft.irfft(x), np.fft.irfft(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2r", _one(n), (axis,), norm, True, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def hfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
         workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Fourier transform of a Hermitian-symmetric signal given by its first half, as
    ``numpy.fft.hfft``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    n : int, optional
        Length of the output on the axis (the input cut or zero-padded to ``n // 2 + 1``);
        default ``2 * (m - 1)``, ``m`` the input's length.
    axis : int, optional
        The axis to transform (default -1).
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``numpy.fft`` (default "backward").
    out : array, optional
        Where to write the result: of its shape and dtype, on the input's device.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the input's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    workers : int, optional
        CPU threads for host arrays (negative: counted back from the number of CPUs).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform (:mod:`accelmath.fusion`):
        ``prologue(x, *prologue_args)`` of each input element, ``epilogue(y,
        *epilogue_args)`` of each result element, the normalization folded into it.
    prologue_args, epilogue_args : sequence, optional
        Their further arrays (broadcast against the element's array) and scalars.
    like : str, module or array, optional
        The kind of the result (default: the input's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        The real spectrum: ``n`` points on the axis.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.exp(0.7j * np.arange(5.0)) + np.arange(5.0)
    >>> bool(np.allclose(accelmath.fft.hfft(x), np.fft.hfft(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2r", _one(n), (axis,), swap_norm(norm), True, True,
                              execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def ihfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
          workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Inverse of :func:`hfft`, as ``numpy.fft.ihfft``: the half spectrum of a real signal.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    n : int, optional
        Length of the transformed axis (the input cut or zero-padded); default: the input's.
    axis : int, optional
        The axis to transform (default -1).
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``numpy.fft`` (default "backward").
    out : array, optional
        Where to write the result: of its shape and dtype, on the input's device.
    stream : int or stream object, optional
        The CUDA stream (default: the current stream of the input's package).
    execution : {"auto", "cuda", "cpu"}, optional
        "auto" runs where ``a`` lives; "cuda" moves host data to the GPU and back.
    workers : int, optional
        CPU threads for host arrays (negative: counted back from the number of CPUs).
    prologue, epilogue : callable, optional
        Python functions fused before and after the transform (:mod:`accelmath.fusion`):
        ``prologue(x, *prologue_args)`` of each input element, ``epilogue(y,
        *epilogue_args)`` of each result element, the normalization folded into it.
    prologue_args, epilogue_args : sequence, optional
        Their further arrays (broadcast against the element's array) and scalars.
    like : str, module or array, optional
        The kind of the result (default: the input's): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        The first half of the Hermitian-symmetric result: ``n // 2 + 1`` complex points.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal(8)
    >>> bool(np.allclose(accelmath.fft.ihfft(x), np.fft.ihfft(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("r2c", _one(n), (axis,), swap_norm(norm), False, True,
                              execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


# the public functions: their plain calls (the array, n, axis, norm as
# plain values) made in C from the memo's front (accelmath._core.dispatch)
fft, ifft, rfft, irfft, hfft, ihfft = (front(f, ("n", "axis", "norm")) for f in (
    fft, ifft, rfft, irfft, hfft, ihfft))

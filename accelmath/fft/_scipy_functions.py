"""SciPy's Hermitian FFTs of several axes (``scipy.fft.hfft2``, ``ihfft2``, ``hfftn``,
``ihfftn``), which ``numpy.fft`` lacks, on any array.

They take ``scipy.fft``'s arguments (``overwrite_x`` aside; ``workers`` keyword-only) plus
``out``, ``stream`` and ``execution``, as :mod:`accelmath.fft._functions` describes. hfft2 and
hfftn are irfft2 and irfftn of the conjugate with the norm direction swapped; ihfft2 and
ihfftn the conjugate of rfft2 and rfftn, likewise: their
:class:`~accelmath.fft._records.Transform` records say ``conjugate=True`` and hold the swapped
norm.
"""

from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.fft._fusion import fused_call, plain_call
from accelmath.fft._normalize import swap_norm
from accelmath.fft._records import Transform, record
from accelmath.fft._transform import front, transform

__all__ = ["hfft2", "ihfft2", "hfftn", "ihfftn"]


def hfft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
          execution="auto", workers=None, prologue=None, epilogue=None,
          prologue_args=(), epilogue_args=(), like=None):
    """Two-dimensional FFT of a Hermitian-symmetric signal given by its first half on the
    last axis, as ``scipy.fft.hfft2``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    s : sequence of int, optional
        Lengths of the output on the axes (-1: the input's); default: the input's, but
        ``2 * (m - 1)`` on the last axis, ``m`` the input's length there.
    axes : sequence of int, optional
        The axes to transform (default (-2, -1)); an axis given twice is transformed twice.
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``scipy.fft`` (default "backward").
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
        The real spectrum: ``s`` points on the axes.

    Examples
    --------
    >>> import numpy as np, scipy.fft, accelmath.fft
    >>> x = np.exp(0.7j * np.arange(16.0)).reshape(4, 4)
    >>> bool(np.allclose(accelmath.fft.hfft2(x), scipy.fft.hfft2(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2r", s, axes, swap_norm(norm), True, True, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def ihfft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
           execution="auto", workers=None, prologue=None, epilogue=None,
          prologue_args=(), epilogue_args=(), like=None):
    """Inverse of :func:`hfft2`, as ``scipy.fft.ihfft2``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    s : sequence of int, optional
        Lengths of the transformed axes (the input cut or zero-padded; -1: the input's);
        default: the input's.
    axes : sequence of int, optional
        The axes to transform (default (-2, -1)); an axis given twice is transformed twice.
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``scipy.fft`` (default "backward").
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
        The first half of the Hermitian-symmetric result on the last axis.

    Examples
    --------
    >>> import numpy as np, scipy.fft, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(accelmath.fft.ihfft2(x), scipy.fft.ihfft2(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("r2c", s, axes, swap_norm(norm), False, True, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def hfftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
          execution="auto", workers=None, prologue=None, epilogue=None,
          prologue_args=(), epilogue_args=(), like=None):
    """N-dimensional FFT of a Hermitian-symmetric signal given by its first half on the last
    axis, as ``scipy.fft.hfftn``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    s : sequence of int, optional
        Lengths of the output on the axes (-1: the input's); default: the input's, but
        ``2 * (m - 1)`` on the last axis, ``m`` the input's length there.
    axes : sequence of int, optional
        The axes to transform (default: the last ``len(s)`` axes, or all); an axis given
        twice is transformed twice.
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``scipy.fft`` (default "backward").
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
        The real spectrum: ``s`` points on the axes.

    Examples
    --------
    >>> import numpy as np, scipy.fft, accelmath.fft
    >>> x = np.exp(0.7j * np.arange(24.0)).reshape(2, 3, 4)
    >>> bool(np.allclose(accelmath.fft.hfftn(x), scipy.fft.hfftn(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2r", s, axes, swap_norm(norm), True, True, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def ihfftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
           execution="auto", workers=None, prologue=None, epilogue=None,
          prologue_args=(), epilogue_args=(), like=None):
    """Inverse of :func:`hfftn`, as ``scipy.fft.ihfftn``.

    Parameters
    ----------
    a : array
        The input: an array of any package, or an array-like.
    s : sequence of int, optional
        Lengths of the transformed axes (the input cut or zero-padded; -1: the input's);
        default: the input's.
    axes : sequence of int, optional
        The axes to transform (default: the last ``len(s)`` axes, or all); an axis given
        twice is transformed twice.
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode, as in ``scipy.fft`` (default "backward").
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
        The first half of the Hermitian-symmetric result on the last axis.

    Examples
    --------
    >>> import numpy as np, scipy.fft, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal((2, 3, 4))
    >>> bool(np.allclose(accelmath.fft.ihfftn(x), scipy.fft.ihfftn(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("r2c", s, axes, swap_norm(norm), False, True, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


# the public functions: their plain calls (the array, s, axes, norm as
# plain values) made in C from the memo's front (accelmath._core.dispatch)
hfft2, ihfft2, hfftn, ihfftn = (front(f, ("s", "axes", "norm")) for f in (
    hfft2, ihfft2, hfftn, ihfftn))

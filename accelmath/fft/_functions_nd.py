"""NumPy's 2-D and N-D FFT functions (``numpy.fft.fft2`` ... ``irfftn``), on any array; see
:mod:`accelmath.fft._functions`, whose one-axis functions these extend."""

from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.fft._fusion import fused_call, plain_call
from accelmath.fft._records import Transform, record
from accelmath.fft._transform import front, transform

__all__ = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


def fft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
         execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Two-dimensional discrete Fourier transform, as ``numpy.fft.fft2``.

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
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(accelmath.fft.fft2(x), np.fft.fft2(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2c", s, axes, norm, False, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def ifft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
          execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Two-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifft2``.

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
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(accelmath.fft.ifft2(x), np.fft.ifft2(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2c", s, axes, norm, True, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def rfft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
          execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Two-dimensional Fourier transform of real input, as ``numpy.fft.rfft2``.

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
        The half spectrum: ``s[-1] // 2 + 1`` complex points on the last axis.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(accelmath.fft.rfft2(x), np.fft.rfft2(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("r2c", s, axes, norm, False, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def irfft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
           execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Inverse of :func:`rfft2`, as ``numpy.fft.irfft2``.

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
        The real signal: ``s`` points on the axes.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.exp(0.7j * np.arange(16.0)).reshape(4, 4)
    >>> bool(np.allclose(accelmath.fft.irfft2(x), np.fft.irfft2(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2r", s, axes, norm, True, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def fftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
         execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """N-dimensional discrete Fourier transform, as ``numpy.fft.fftn``.

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
    >>> x = np.random.default_rng(0).standard_normal((2, 3, 4))
    >>> bool(np.allclose(accelmath.fft.fftn(x), np.fft.fftn(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2c", s, axes, norm, False, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def ifftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
          execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """N-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifftn``.

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
    >>> x = np.random.default_rng(0).standard_normal((2, 3, 4))
    >>> bool(np.allclose(accelmath.fft.ifftn(x), np.fft.ifftn(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2c", s, axes, norm, True, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def rfftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
          execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """N-dimensional Fourier transform of real input, as ``numpy.fft.rfftn``.

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
        The half spectrum: ``s[-1] // 2 + 1`` complex points on the last axis.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.random.default_rng(0).standard_normal((2, 3, 4))
    >>> bool(np.allclose(accelmath.fft.rfftn(x), np.fft.rfftn(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("r2c", s, axes, norm, False, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


def irfftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
           execution="auto", workers=None, prologue=None, epilogue=None,
        prologue_args=(), epilogue_args=(), like=None):
    """Inverse of :func:`rfftn`, as ``numpy.fft.irfftn``.

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
        The real signal: ``s`` points on the axes.

    Examples
    --------
    >>> import numpy as np, accelmath.fft
    >>> x = np.exp(0.7j * np.arange(24.0)).reshape(2, 3, 4)
    >>> bool(np.allclose(accelmath.fft.irfftn(x), np.fft.irfftn(x)))
    True
    """
    if like is not None:
        like = target_of(like)
    call = record(Transform, ("c2r", s, axes, norm, True, False, execution, workers))
    if plain_call(prologue, epilogue, prologue_args, epilogue_args):
        result = transform(call, a, out, stream)
    else:
        result = fused_call(call, a, out, stream, prologue, prologue_args, epilogue,
                            epilogue_args)
    return result if like is None else returned_as(result, like)


# the public functions: their plain calls (the array, s, axes, norm as
# plain values) made in C from the memo's front (accelmath._core.dispatch)
fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn, irfftn = (
    front(f, ("s", "axes", "norm"))
    for f in (fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn, irfftn))

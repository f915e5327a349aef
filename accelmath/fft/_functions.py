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
from accelmath.fft._normalize import swap_norm
from accelmath.fft._records import Transform, record
from accelmath.fft._transform import transform

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn"]


def _one(n):
    """The ``s`` of a one-axis function: ``n`` checked, or None."""
    return None if n is None else (length(n),)


def fft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
        workers=None):
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
    call = record(Transform, ("c2c", _one(n), (axis,), norm, False, False, execution, workers))
    return transform(call, a, out, stream)


def ifft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
         workers=None):
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
    call = record(Transform, ("c2c", _one(n), (axis,), norm, True, False, execution, workers))
    return transform(call, a, out, stream)


def rfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
         workers=None):
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
    call = record(Transform, ("r2c", _one(n), (axis,), norm, False, False, execution, workers))
    return transform(call, a, out, stream)


def irfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
          workers=None):
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
    call = record(Transform, ("c2r", _one(n), (axis,), norm, True, False, execution, workers))
    return transform(call, a, out, stream)


def hfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
         workers=None):
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
    call = record(Transform, ("c2r", _one(n), (axis,), swap_norm(norm), True, True,
                              execution, workers))
    return transform(call, a, out, stream)


def ihfft(a, n=None, axis=-1, norm=None, *, out=None, stream=None, execution="auto",
          workers=None):
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
    call = record(Transform, ("r2c", _one(n), (axis,), swap_norm(norm), False, True,
                              execution, workers))
    return transform(call, a, out, stream)


def fft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
         execution="auto", workers=None):
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
    call = record(Transform, ("c2c", s, axes, norm, False, False, execution, workers))
    return transform(call, a, out, stream)


def ifft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
          execution="auto", workers=None):
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
    call = record(Transform, ("c2c", s, axes, norm, True, False, execution, workers))
    return transform(call, a, out, stream)


def rfft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
          execution="auto", workers=None):
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
    call = record(Transform, ("r2c", s, axes, norm, False, False, execution, workers))
    return transform(call, a, out, stream)


def irfft2(a, s=None, axes=(-2, -1), norm=None, *, out=None, stream=None,
           execution="auto", workers=None):
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
    call = record(Transform, ("c2r", s, axes, norm, True, False, execution, workers))
    return transform(call, a, out, stream)


def fftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
         execution="auto", workers=None):
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
    call = record(Transform, ("c2c", s, axes, norm, False, False, execution, workers))
    return transform(call, a, out, stream)


def ifftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
          execution="auto", workers=None):
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
    call = record(Transform, ("c2c", s, axes, norm, True, False, execution, workers))
    return transform(call, a, out, stream)


def rfftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
          execution="auto", workers=None):
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
    call = record(Transform, ("r2c", s, axes, norm, False, False, execution, workers))
    return transform(call, a, out, stream)


def irfftn(a, s=None, axes=None, norm=None, *, out=None, stream=None,
           execution="auto", workers=None):
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
    call = record(Transform, ("c2r", s, axes, norm, True, False, execution, workers))
    return transform(call, a, out, stream)


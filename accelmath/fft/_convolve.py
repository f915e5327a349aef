"""Convolution and correlation through FFTs, with ``scipy.signal.fftconvolve``'s and
``scipy.signal.correlate``'s semantics, on any array: :func:`convolve`, :func:`correlate`,
and :class:`Convolver`, one kernel applied to many images with its spectrum kept.

Real inputs go through r2c and c2r transforms, complex ones through c2c; the spectrum product
is the inverse transform's prologue (:mod:`accelmath.fusion`), so it costs no pass of its own.
The transforms are of the full linear size ``s1 + s2 - 1`` along each convolved axis; the
other axes broadcast (an extent of 1 against any).
"""

import operator

import numpy

from accelmath._core.lifetime import Resource
from accelmath._core.operand import check_same_device, wrap_named
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.fft._functions_nd import fftn, ifftn, irfftn, rfftn
from accelmath.fft._fusion import multiply, product

__all__ = ["Convolver", "convolve", "correlate"]

_MODES = ("full", "valid", "same")


def _check_mode(mode):
    if not isinstance(mode, str) or mode not in _MODES:
        raise InvalidArgumentError(
            f"mode={mode!r}: acceptable mode flags are 'valid', 'same', or 'full'")
    return mode


def _check_axes(axes, ndim, shape1, shape2):
    """The convolved axes (non-negative, sorted) of inputs of shapes ``shape1`` and
    ``shape2``; the other axes must match or be 1 in one of them."""
    if axes is None:
        axes = tuple(range(ndim))
    else:
        if isinstance(axes, (int, numpy.integer)) and not isinstance(axes, bool):
            axes = (axes,)
        try:
            axes = tuple(operator.index(a) for a in axes)
        except TypeError:
            raise InvalidArgumentError(f"axes={axes!r} must be an integer or a sequence of "
                                       "them") from None
        for a in axes:
            if not -ndim <= a < ndim:
                raise InvalidArgumentError(f"axes={axes!r}: axis {a} is out of range for "
                                           f"inputs of {ndim} dimensions")
        normalized = tuple(a % ndim for a in axes)
        if len(set(normalized)) != len(normalized):
            raise InvalidArgumentError(f"axes={axes!r} repeats an axis")
        axes = tuple(sorted(normalized))
    for a in range(ndim):
        if a not in axes and shape1[a] != shape2[a] and 1 not in (shape1[a], shape2[a]):
            raise InvalidArgumentError(
                f"incompatible shapes for in1 and in2: {tuple(shape1)} and {tuple(shape2)} "
                f"along axis {a}, which is not convolved")
    return axes


def _operands(in1, in2):
    a, b = wrap_named(in1, "in1"), wrap_named(in2, "in2")
    check_same_device(a, b, names=["in1", "in2"])
    if len(a.shape) != len(b.shape):
        raise InvalidArgumentError(
            f"in1 and in2 should have the same dimensionality, got {len(a.shape)} and "
            f"{len(b.shape)}")
    return a, b


def _compute_dtype(*dtypes, each=False):
    """The dtype the transforms compute in: float32 or float64, complex where an input is;
    ``each``: as ``scipy.signal.fftconvolve`` finds it, from each input's own transform's
    (integers and bools in float64, float16 in float32), else from their promotion."""
    try:
        dtypes = [numpy.dtype(d) for d in dtypes]
        if each:
            dtypes = [numpy.dtype("float64") if d.kind in "biu" else
                      numpy.dtype("float32") if d == numpy.float16 else d for d in dtypes]
        promoted = numpy.result_type(*dtypes)
    except TypeError:
        raise UnsupportedDTypeError(f"inputs of {', '.join(map(str, dtypes))} cannot be "
                                    "convolved") from None
    if promoted.kind == "c":
        return numpy.dtype("complex64" if promoted == numpy.complex64 else "complex128")
    if promoted.kind in "biu":
        return numpy.dtype("float64")
    if promoted.kind != "f":
        raise UnsupportedDTypeError(f"inputs of {promoted} cannot be convolved")
    return numpy.dtype("float32" if promoted.itemsize <= 4 else "float64")


def _swap_needed(mode, shape1, shape2, axes):
    if mode != "valid":
        return False
    if all(shape1[a] >= shape2[a] for a in axes):
        return False
    if all(shape2[a] >= shape1[a] for a in axes):
        return True
    raise InvalidArgumentError("For 'valid' mode, one must be at least as large as the other "
                               "in every dimension")


def _crop(shape, s1, s2, mode, axes):
    """The slices of the full result (of ``shape``) that ``mode`` keeps (scipy's rule)."""
    if mode == "full":
        return None
    if mode == "same":
        target = tuple(s1)
    else:
        target = tuple(s1[a] - s2[a] + 1 if a in axes else shape[a] for a in range(len(shape)))
    return tuple(slice((n - m) // 2, (n - m) // 2 + m) for n, m in zip(shape, target))


def _as(op, dtype):
    """``op``'s array converted to ``dtype`` (itself where it is of it)."""
    if numpy.dtype(op.dtype) == dtype:
        return op.obj
    return op.adapter.astype(op.obj, dtype.name)


class _Geometry:
    """What one convolution of inputs of two shapes computes: the axes, the transform lengths,
    the crop, and which spectrum (0 or 1) the other broadcasts to along the other axes (the
    inverse transform's input, the other multiplied in as its prologue; None where each
    broadcasts along some axis: their product is made first)."""

    def __init__(self, shape1, shape2, mode, axes, real):
        self.axes = axes
        rest = [a for a in range(len(shape1)) if a not in axes]
        self.element = (0 if all(shape2[a] in (1, shape1[a]) for a in rest)
                        else 1 if all(shape1[a] in (1, shape2[a]) for a in rest) else None)
        self.lengths = tuple(shape1[a] + shape2[a] - 1 for a in axes)
        full = tuple(self.lengths[axes.index(a)] if a in axes else max(shape1[a], shape2[a])
                     for a in range(len(shape1)))
        self.crop = _crop(full, shape1, shape2, mode, axes)
        self.real = real

    def spectrum(self, x):
        """The spectrum of ``x`` at the transform lengths."""
        forward = rfftn if self.real else fftn
        return forward(x, s=self.lengths, axes=self.axes)

    def inverse(self, spectrum, other):
        """The cropped convolution whose spectra are ``spectrum`` and ``other``."""
        inverse = irfftn if self.real else ifftn
        if self.element is None:  # (each broadcasts: the product has the larger shape)
            result = inverse(product(spectrum, other), s=self.lengths, axes=self.axes)
        else:  # (the product commutes: the larger one is the element)
            big, small = (spectrum, other) if self.element == 0 else (other, spectrum)
            result = inverse(big, s=self.lengths, axes=self.axes, prologue=multiply,
                             prologue_args=(small,))
        return self.cropped(result)

    def cropped(self, result):
        """The part of the full result that the mode keeps."""
        return result if self.crop is None else result[self.crop]


def convolve(in1, in2, mode="full", axes=None, *, like=None):
    """Convolve two N-dimensional arrays with FFTs, as ``scipy.signal.fftconvolve``.

    Parameters
    ----------
    in1, in2 : array
        Of the same number of dimensions, on one device (NumPy, CuPy, torch, JAX...).
    mode : {"full", "valid", "same"}, optional
        "full" (default): the whole linear convolution; "valid": the points that do not
        depend on zero padding (one input at least as large as the other along every
        convolved axis); "same": the size of ``in1``, centred on the full result.
    axes : int or sequence of int, optional
        The axes to convolve over (default: all). The others must match or be 1 in one input.
    like : str, module or array, optional
        The kind of the result (default: ``in1``'s): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        Of ``in1``'s kind and of ``scipy.signal.fftconvolve``'s dtype: each input's transform
        computes in its own precision (integers and bools in float64, float16 in float32),
        the result in the wider of the two; complex where either input is.

    Examples
    --------
    >>> import numpy as np, scipy.signal
    >>> from accelmath.fft import convolve
    >>> a, b = np.random.default_rng(0).standard_normal((2, 16, 9))
    >>> bool(np.allclose(convolve(a, b[:5, :3], mode="same"),
    ...                  scipy.signal.fftconvolve(a, b[:5, :3], mode="same")))
    True
    """
    if like is not None:
        like = target_of(like)
    return returned_as(_convolve(in1, in2, mode, axes, correlate=False), like)


def correlate(in1, in2, mode="full", axes=None, *, like=None):
    """Cross-correlate two N-dimensional arrays with FFTs, as ``scipy.signal.correlate``
    (``method="fft"``): ``convolve(in1, conj(in2) reversed along the axes)``.

    Parameters
    ----------
    in1, in2 : array
        Of the same number of dimensions, on one device.
    mode : {"full", "valid", "same"}, optional
        As in :func:`convolve`.
    axes : int or sequence of int, optional
        The axes to correlate over (default: all, as ``scipy.signal.correlate`` does).
    like : str, module or array, optional
        The kind of the result (default: ``in1``'s): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Returns
    -------
    array
        Of ``in1``'s kind and, as ``scipy.signal.correlate``'s, of the inputs' promoted
        dtype (computed as :func:`convolve` computes, then converted: integers rounded).

    Examples
    --------
    >>> import numpy as np, scipy.signal
    >>> from accelmath.fft import correlate
    >>> a, b = np.random.default_rng(1).standard_normal((2, 32))
    >>> bool(np.allclose(correlate(a, b[:7]), scipy.signal.correlate(a, b[:7])))
    True
    """
    if like is not None:
        like = target_of(like)
    return returned_as(_convolve(in1, in2, mode, axes, correlate=True), like)


def _flipped(y, axes, dtype, name):
    """Array ``y`` (argument ``name``) reversed along ``axes`` and conjugated where complex:
    the kernel whose convolution is the correlation with ``y`` (a view where the package
    has one)."""
    op = wrap_named(y, name)
    y = op.obj  # (a lazily conjugated torch view: its values, resolved)
    if op.package == "torch":
        y = y.flip(tuple(axes)) if axes else y
    else:
        y = y[tuple(slice(None, None, -1) if a in axes else slice(None)
                    for a in range(len(op.shape)))]
    return y.conj() if dtype.kind == "c" else y


def _convolve(in1, in2, mode, axes, correlate):
    mode = _check_mode(mode)
    a, b = _operands(in1, in2)
    ndim = len(a.shape)
    axes = _check_axes(axes, ndim, a.shape, b.shape)
    dtype = _compute_dtype(a.dtype, b.dtype, each=True)
    if a.size == 0 or b.size == 0:  # (scipy's answer: an empty 1-D array, of a's kind here)
        return a.adapter.from_numpy(numpy.empty(0, dtype), a.obj)
    x, y = _as(a, dtype), _as(b, dtype)
    if correlate:  # (scipy.signal.correlate checks every axis, fftconvolve the transformed)
        y = _flipped(y, axes, dtype, "in2")
        _swap_needed(mode, a.shape, b.shape, tuple(range(ndim)))  # (for its error alone)
    axes = _transformed(axes, a.shape, b.shape)
    if _swap_needed(mode, a.shape, b.shape, axes):
        x, y = y, x
        s1, s2 = b.shape, a.shape
    else:
        s1, s2 = a.shape, b.shape
    geometry = _Geometry(tuple(s1), tuple(s2), mode, axes, dtype.kind != "c")
    if not axes:
        result = geometry.cropped(product(x, y))
    else:
        result = geometry.inverse(geometry.spectrum(x), geometry.spectrum(y))
    if not correlate:
        return result
    # scipy.signal.correlate gives the inputs' promotion, integers rounded
    return _as_inputs(result, numpy.result_type(numpy.dtype(a.dtype), numpy.dtype(b.dtype)),
                      dtype)


def _as_inputs(result, target, dtype):
    """``result`` (of ``dtype``) as ``scipy.signal.correlate`` gives it for inputs whose
    promotion is ``target``: converted to it, integers rounded first."""
    if target == dtype:
        return result
    if target.kind in "iu":
        result = result.round()
    op = wrap_named(result, "the result")
    return op.adapter.astype(op.obj, target.name)


def _transformed(axes, shape1, shape2):
    """The axes the transforms run over: those of ``axes`` along which neither input has one
    point (as SciPy's: along those, a convolution is a product, broadcast)."""
    return tuple(a for a in axes if shape1[a] != 1 and shape2[a] != 1)


class Convolver(Resource):
    """One kernel convolved with many images of one shape: the kernel's spectrum is made
    once and kept.

    Parameters
    ----------
    kernel : array
        The kernel (any package; the images must be of its package and device).
    shape : tuple of int
        The images' shape (the same number of dimensions as the kernel).
    mode : {"full", "valid", "same"}, optional
        As in :func:`convolve`, the image being ``in1``.
    axes : int or sequence of int, optional
        The axes to convolve over (default: all).
    dtype : dtype, optional
        The images' dtype (default: the kernel's); the transforms compute in the promotion
        of both.
    correlate : bool, optional
        Correlate with the kernel instead (:func:`correlate`).

    Examples
    --------
    >>> import numpy as np, scipy.signal
    >>> from accelmath.fft import Convolver
    >>> rng = np.random.default_rng(2)
    >>> psf = rng.standard_normal((5, 5))
    >>> with Convolver(psf, (32, 32), mode="same") as blur:
    ...     images = [rng.standard_normal((32, 32)) for _ in range(3)]
    ...     ok = [np.allclose(blur(x), scipy.signal.fftconvolve(x, psf, mode="same"))
    ...           for x in images]
    >>> ok
    [True, True, True]
    """

    what = "Convolver"

    def __init__(self, kernel, shape, mode="full", axes=None, dtype=None, correlate=False):
        mode = _check_mode(mode)
        k = wrap_named(kernel, "kernel")
        try:
            shape = tuple(operator.index(n) for n in shape)
        except TypeError:
            raise InvalidArgumentError(f"shape={shape!r} must be a sequence of integers") \
                from None
        if len(shape) != len(k.shape):
            raise InvalidArgumentError(
                f"the images have {len(shape)} dimensions and the kernel {len(k.shape)}; they "
                "must have the same number")
        if any(n < 1 for n in shape) or k.size == 0:
            raise InvalidArgumentError(f"shape={shape} and a kernel of shape {tuple(k.shape)} "
                                       "must not be empty")
        checked = _check_axes(axes, len(shape), shape, k.shape)
        self.axes = _transformed(checked, shape, k.shape)
        self.dtype = _compute_dtype(k.dtype, k.dtype if dtype is None else dtype)
        self.shape, self.mode = shape, mode
        if correlate:  # (as correlate(): every axis checked, the kernel reversed along all)
            _swap_needed(mode, shape, k.shape, tuple(range(len(shape))))
        if _swap_needed(mode, shape, k.shape, self.axes):
            raise InvalidArgumentError(
                "mode='valid' here needs images at least as large as the kernel along every "
                "convolved axis")
        self._geometry = _Geometry(shape, tuple(k.shape), mode, self.axes,
                                   self.dtype.kind != "c")
        y = _as(k, self.dtype)
        if correlate:  # (along the axes given, length-1 ones too: a product there, reversed)
            y = _flipped(y, checked, self.dtype, "kernel")
        self._spectrum = self._geometry.spectrum(y) if self.axes else y
        self._device = k.device_id
        super().__init__()

    def _release(self):
        self._spectrum = None

    def __call__(self, image, *, like=None):
        """The image convolved with the kernel (correlated, where made so).

        Parameters
        ----------
        image : array
            Of the Convolver's shape, on the kernel's device.
        like : str, module or array, optional
            The kind of the result (default: the image's): a package's name or module
            (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

        Returns
        -------
        array
            Of the image's kind (or ``like``'s).
        """
        if like is not None:
            like = target_of(like)
        return returned_as(self._convolved(image), like)

    def _convolved(self, image):
        self._check_live()
        op = wrap_named(image, "image")
        if tuple(op.shape) != self.shape:
            raise InvalidArgumentError(f"image has shape {tuple(op.shape)}; this Convolver is "
                                       f"for images of shape {self.shape}")
        if op.device_id != self._device:
            raise InvalidArgumentError("image is not on the kernel's device")
        if _compute_dtype(op.dtype, self.dtype) != self.dtype:
            raise InvalidArgumentError(
                f"image is {op.dtype}; this Convolver computes in {self.dtype}: make it with "
                f"dtype={op.dtype!r} for such images")
        if not self.axes:  # (a product: no axis where both have more than one point)
            return self._geometry.cropped(product(_as(op, self.dtype), self._spectrum))
        spectrum = self._geometry.spectrum(_as(op, self.dtype))
        return self._geometry.inverse(spectrum, self._spectrum)

    def __repr__(self):
        return (f"Convolver(shape={self.shape}, axes={self.axes}, mode={self.mode!r}, "
                f"dtype={self.dtype})")

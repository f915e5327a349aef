"""Image subtraction (the SFFT method): :class:`Subtractor` for a pipeline's loop over pairs
of one shape, :func:`subtract` for one pair, and :class:`SubtractionResult`.

A subtraction has two passes. The solve pass fits the model (see
:mod:`accelmath.subtraction._model`) to the masked images, the pixels outside the mask set to
0 in both, as the published method does: transforms of the planes, correlation maps at the
lags the normal equations read, the normal equations solved. The subtract pass applies the
kernel to the unmasked images in Fourier space and gives the difference image. Where no
mask is given, both passes share the same transforms.
"""

import dataclasses
import time

import numpy

from accelmath import Resource
from accelmath.errors import (DeviceMismatchError, InvalidArgumentError, UnsupportedDTypeError,
                              UnsupportedOperandError)
from accelmath.subtraction import _kernels, _model
from accelmath.subtraction._model import LagRules, centre, check_integer, configure
from accelmath.subtraction._ops import from_numba, is_numba, kind_of, kind_of_array, to_numba
from accelmath.subtraction._solve import background_products, solve
from accelmath.subtraction._spectra import Spectra

# On a GPU the subtract stage runs directly (:mod:`._direct`) once its kernel is compiled:
# measured on an H200 at 4088^2, 2.0 ms where a mask was given against 8.4 for the Fourier
# form, which transforms the unmasked planes again, and 2.1 without a mask against 2.5 for
# the Fourier form reusing the planes' spectra.

__all__ = ["Subtractor", "SubtractionResult", "subtract"]

STAGES = ("planes", "transforms", "products", "solve", "subtract")


@dataclasses.dataclass(frozen=True)
class SubtractionResult:
    """What one subtraction gives.

    Attributes
    ----------
    difference : array
        The difference image, float64, of the inputs' kind (NumPy, CuPy, torch, on their
        device): ``science - reference (*) K - background`` when the reference is convolved,
        ``science (*) K - reference`` (the same sign for a transient in the science image)
        when the science image is.
    coefficients : numpy.ndarray
        (Fij, 2w + 1, 2w + 1), NumPy: the coefficients ``c[ij, a + w, b + w]`` of the
        modified delta basis for each kernel term ``x^i y^j`` (terms in the order of
        ``configuration.kernel_terms``). ``c[ij, w, w]`` is the term's kernel sum; the
        published code's solution holds these times N0 * N1. :meth:`kernel_at` gives the
        kernel itself.
    ratio : float
        The photometric ratio: the kernel's sum at the image centre, pixel
        ``(N0 // 2, N1 // 2)`` (the same everywhere with ``constant_ratio``).
    background : numpy.ndarray
        (Fpq,), NumPy: the background coefficients ``d[pq]`` of ``x^p y^q`` (terms in the
        order of ``configuration.background_terms``).
    timings : dict
        Stage name -> seconds, in the order the stages run ("planes", "transforms",
        "products", "solve", "subtract"), measured with the device synchronized at each
        stage's end when the subtraction was asked for ``timings=True``; else empty.
    configuration : Configuration
        The configuration that made it.
    """

    difference: object
    coefficients: numpy.ndarray
    ratio: float
    background: numpy.ndarray
    timings: dict
    configuration: _model.Configuration

    def kernel_at(self, row, col):
        """The (2w + 1) x (2w + 1) convolution kernel at pixel (row, col), as NumPy:
        ``kernel[a + w, b + w]`` weighs the convolved image's pixel (row - a, col - b).

        Examples
        --------
        >>> from accelmath.subtraction import subtract, synthetic_pair
        >>> pair = synthetic_pair(64, seed=1, stars=40, kernel_half_width=2)
        >>> result = subtract(pair.reference, pair.science, mask=pair.mask, half_width=2,
        ...                   kernel_order=0)
        >>> kernel = result.kernel_at(32, 32)
        >>> kernel.shape, bool(abs(kernel.sum() - result.ratio) < 1e-9)
        ((5, 5), True)
        """
        c = self.configuration
        return _model.kernel_at(self.coefficients, c.shape, c.kernel_order, row, col)


class _Clock:
    """Stage timings: with the device synchronized at each stage's end, or nothing."""

    def __init__(self, kind, enabled):
        self.kind, self.enabled = kind, enabled
        self.timings = {}
        self._last = time.perf_counter() if enabled else None

    def lap(self, stage):
        if self.enabled:
            self.kind.synchronize()
            now = time.perf_counter()
            self.timings[stage] = now - self._last
            self._last = now


class Subtractor(Resource):
    """Subtracts image pairs of one shape with one configuration, keeping its FFT plans,
    DFT matrices and buffers from pair to pair.

    Parameters
    ----------
    shape : int or (int, int)
        The images' shape (an int n: n x n).
    half_width : int, optional
        The kernel half-width w (default 9: a 19 x 19 kernel). The normal equations read
        lags up to +-2w, so ``4w + 1 <= min(shape)``.
    kernel_order : int, optional
        The degree DK of the kernel's spatial polynomial (default 2).
    background_order : int, optional
        The degree DB of the differential background's polynomial (default 0).
    constant_ratio : bool, optional
        Constrain the kernel's sum (the photometric ratio) to be the same over the image
        (default True).
    solver : {"cholesky", "lu"}, optional
        How the normal equations are solved (default "cholesky").
    convolve : {"reference", "science"}, optional
        Which image is convolved to match the other (default "reference").
    like : optional
        Where the images will live: None (inferred from the first pair), a module (numpy,
        cupy, torch), a package name, a ``torch.device`` or an array.
    chunk_bytes : int, optional
        Bytes of the spectrum products computed at once (bounds the memory beside the
        spectra; default 256 MiB on a GPU, 16 MiB on the CPU).
    workers : int, optional
        CPU threads of the host transforms (NumPy and CPU torch images).

    Notes
    -----
    Memory on a GPU at N0 x N1 with Fij kernel terms: the planes (Fij + 1 real images), their
    half spectra (Fij + 1), one more half spectrum, the product chunk and the transforms'
    work areas: about 3 GB at 4088 x 4088 with PHROSTY's configuration.

    The arrays of a result never alias the subtractor's buffers.

    Examples
    --------
    >>> from accelmath.subtraction import Subtractor, synthetic_pair
    >>> pairs = [synthetic_pair(64, seed=seed, stars=40, kernel_half_width=2)
    ...          for seed in (1, 2)]
    >>> with Subtractor(64, half_width=2, kernel_order=1) as subtractor:
    ...     ratios = [subtractor.subtract(p.reference, p.science, mask=p.mask).ratio
    ...               for p in pairs]
    >>> [abs(r - 1.3) < 0.05 for r in ratios]
    [True, True]
    """

    what = "Subtractor"

    def __init__(self, shape, *, half_width=9, kernel_order=2, background_order=0,
                 constant_ratio=True, solver="cholesky", convolve="reference", like=None,
                 chunk_bytes=None, workers=None):
        self.configuration = configure(shape, half_width, kernel_order, background_order,
                                       constant_ratio, solver, convolve)
        self._rules = LagRules.of(self.configuration)
        self._background = background_products(self.configuration)
        self._chunk_bytes = (None if chunk_bytes is None
                             else check_integer(chunk_bytes, "chunk_bytes", 1))
        self._workers = workers
        self._engine = None
        super().__init__()
        if like is not None:
            self._prepare(kind_of(from_numba(like)))

    @property
    def kind(self):
        """The :class:`~accelmath.subtraction._ops.ArrayKind` it was prepared for, or None
        before its first pair (when made without ``like``)."""
        return None if self._engine is None else self._engine[0]

    def _prepare(self, kind):
        spectra = Spectra(self.configuration, self._rules, kind, self._chunk_bytes,
                          self._workers)
        with kind.active():
            index = self._rules.on(kind.asarray)
            if kind.on_gpu:
                index.update({name: kind.asarray(a) for name, a in
                              _kernels.extra_index(self._rules, self.configuration).items()})
            background = kind.asarray(self._background)
        self._engine = (kind, spectra, index, background)

    def subtract(self, reference, science, *, mask=None, timings=False):
        """Subtract one pair.

        Parameters
        ----------
        reference, science : (N0, N1) arrays
            The images, aligned, of the subtractor's shape and array kind; integer and
            float32 images are computed in float64. Every pixel must be finite. Numba
            device arrays are computed on CuPy (else torch) views of them, and the
            difference comes back as a Numba array.
        mask : (N0, N1) bool array, optional
            True where the solve pass uses the pixel (of the same kind). Default: every
            pixel.
        timings : bool, optional
            Measure each stage, synchronizing the device at its end (default False: no
            synchronization beyond the one that reads the solution back).

        Returns
        -------
        SubtractionResult
        """
        self._check_live()
        if is_numba(reference):  # (computed on CuPy or torch views, handed back as Numba's)
            result = self.subtract(from_numba(reference), from_numba(science),
                                   mask=from_numba(mask), timings=timings)
            return dataclasses.replace(result, difference=to_numba(result.difference))
        shape = self.configuration.shape
        reference, reference_kind = _image(reference, "reference", shape)
        science, science_kind = _image(science, "science", shape)
        if self._engine is None:
            self._prepare(reference_kind)
        kind, spectra, index, background = self._engine
        _check_kind(kind, reference_kind, "reference")
        _check_kind(kind, science_kind, "science")
        if mask is not None:
            mask, mask_kind = _image(mask, "mask", shape)
            _check_kind(kind, mask_kind, "mask")
            if not kind.is_bool(mask):
                raise UnsupportedDTypeError(
                    f"mask holds {mask.dtype}: expected booleans (True where the solve pass "
                    "uses the pixel)")
        with kind.active():
            return self._run(kind, spectra, index, background, reference, science, mask,
                             timings)

    def _run(self, kind, spectra, index, background, reference, science, mask, timings):
        configuration = self.configuration
        clock = _Clock(kind, bool(timings))
        reference, science = kind.float64(reference), kind.float64(science)
        if mask is not None:
            mask = kind.contiguous(mask)
        flip = configuration.convolve == "science"
        convolved, other = (science, reference) if flip else (reference, science)
        spectra.renew_stale_plans()
        ones = spectra.ones
        totals = (kind.total(reference, ones), kind.total(science, ones))
        selected = spectra.fill(convolved, other, mask)
        if not kind.on_gpu:  # (on a GPU, read where the solution is read anyway)
            _check_sums(kind, totals + (selected,), reference, science)
        clock.lap("planes")
        spectra.transform()
        clock.lap("transforms")
        maps = spectra.correlations()
        polynomial = spectra.polynomial_correlations()
        clock.lap("products")
        if kind.on_gpu:
            _check_sums(kind, totals + (selected,), reference, science)
        solution = solve(kind, self._rules, index, maps, polynomial, background, configuration)
        clock.lap("solve")
        side, fij = configuration.side, len(configuration.kernel_terms)
        coefficients = solution[:fij * side * side].reshape(fij, side, side)
        d = solution[fij * side * side:]
        order = configuration.background_order
        polynomial_d = numpy.zeros((order + 1, order + 1))
        for k, (p, q) in enumerate(configuration.background_terms):
            polynomial_d[p, q] = d[k]
        kernels = _model.effective_kernels(coefficients)
        if spectra.direct_ready():
            difference = spectra.direct_difference(convolved, other, kernels, polynomial_d,
                                                   flip)
        else:
            if mask is not None:
                spectra.fill(convolved, other, None)
                spectra.transform()
            kernels = kind.asarray(kernels.astype(numpy.complex128).swapaxes(0, 1).reshape(
                side, fij * side))
            difference = spectra.difference(kernels, polynomial_d, flip)
        clock.lap("subtract")
        row, col = centre(configuration.shape)
        ratio = float(_model.kernel_at(coefficients, configuration.shape,
                                       configuration.kernel_order, row, col).sum())
        return SubtractionResult(difference, coefficients, ratio, d, clock.timings,
                                 configuration)

    def _release(self):
        """Release the plans and buffers; a later :meth:`subtract` raises StateError."""
        if self._engine is not None:
            self._engine[1].free()
        self._engine = None

    def __repr__(self):
        state = "freed" if self._freed else (
            "not prepared" if self._engine is None else self._engine[0].describe())
        c = self.configuration
        return (f"Subtractor({c.describe()}, solver={c.solver!r}, convolve={c.convolve!r}, "
                f"{state})")


def subtract(reference, science, *, mask=None, timings=False, **configuration):
    """Subtract one image pair (the SFFT method): a one-shot :class:`Subtractor`.

    Parameters
    ----------
    reference, science : (N0, N1) arrays
        The aligned images (NumPy, CuPy or torch, both of one kind); the result comes back
        in their kind.
    mask : (N0, N1) bool array, optional
        True where the solve pass uses the pixel. Default: every pixel.
    timings : bool, optional
        Measure each stage (see :meth:`Subtractor.subtract`).
    **configuration
        ``half_width``, ``kernel_order``, ``background_order``, ``constant_ratio``,
        ``solver``, ``convolve``, ``chunk_bytes``, ``workers``, as :class:`Subtractor`
        takes them.

    Returns
    -------
    SubtractionResult

    Examples
    --------
    >>> from accelmath.subtraction import subtract, synthetic_pair
    >>> pair = synthetic_pair(64, seed=0, stars=40, kernel_half_width=3)
    >>> result = subtract(pair.reference, pair.science, mask=pair.mask, half_width=3)
    >>> abs(result.ratio - pair.ratio) < 0.05, result.coefficients.shape
    (True, (6, 7, 7))
    """
    if "like" in configuration:
        raise InvalidArgumentError("subtract takes the array kind from the images; like= is "
                                   "for Subtractor")
    if not is_numba(reference):  # (Numba's: the Subtractor reads them through CuPy or torch)
        reference = _image(reference, "reference", None)[0]
    with Subtractor(tuple(reference.shape), like=reference, **configuration) as subtractor:
        return subtractor.subtract(reference, science, mask=mask, timings=timings)


def _image(x, name, shape):
    """``(x, its ArrayKind)``: ``x`` as an array (array-likes become NumPy) of two
    dimensions, of ``shape`` where given, real; else a clear error naming ``name``."""
    try:
        kind = kind_of_array(x, name)
    except UnsupportedOperandError:
        if type(x).__module__.partition(".")[0] in ("cupy", "torch", "jax", "jaxlib"):
            raise
        try:
            x = numpy.asarray(x)
        except Exception:
            raise UnsupportedOperandError(
                f"{name} is a {type(x).__name__}: expected an array") from None
        if x.dtype.kind not in "biufc":
            raise UnsupportedOperandError(
                f"{name} is not an array of numbers (dtype {x.dtype})") from None
        kind = kind_of_array(x, name)
    if len(x.shape) != 2:
        raise InvalidArgumentError(f"{name} has shape {tuple(x.shape)}: expected a 2-D image")
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise InvalidArgumentError(
            f"{name} has shape {tuple(x.shape)}, but the images must have shape {tuple(shape)}"
            f" (the subtractor's shape; reference and science of one shape)")
    if not kind.is_real(x):
        raise UnsupportedDTypeError(f"{name} holds {x.dtype}: expected real pixel values "
                                    "(integers or floats)")
    return x, kind


def _check_kind(kind, image_kind, name):
    if image_kind != kind:
        raise DeviceMismatchError(
            f"{name} is {image_kind.describe()}, but this subtractor works on "
            f"{kind.describe()}: give every image of one kind (or make another Subtractor)")


def _check_sums(kind, sums, reference, science):
    """The images' finiteness and the mask's pixel count, from the images' sums and the
    mask's count queued before (one read back, at the point where the solution is read
    anyway)."""
    values = [None if s is None else float(kind.to_numpy(s)) for s in sums]
    for name, image, total in (("reference", reference, values[0]),
                               ("science", science, values[1])):
        if not numpy.isfinite(total):
            bad = kind.count_nonfinite(image)
            if bad:
                raise InvalidArgumentError(
                    f"{name} has {bad} NaN or infinite pixels: give them a finite value (0, "
                    "say) and leave them out of the mask")
            raise InvalidArgumentError(
                f"{name} has pixel values so large that their sum overflows float64")
    if values[2] is not None and values[2] == 0:
        raise InvalidArgumentError("mask selects no pixel: every value is False")

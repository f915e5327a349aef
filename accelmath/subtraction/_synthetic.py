"""Synthetic star-field pairs for tests, examples and the demo.

The reference image is a field of point sources (a power-law flux distribution) seen
through a Gaussian PSF, on a smooth sky. The science image is the reference convolved
(circularly) by a known kernel, a sampled Gaussian that widens the PSF to the science
image's, scaled by the photometric ratio, with one transient added. Both images get Gaussian
noise. So the subtraction's model holds exactly, and a correct subtraction recovers the
kernel and the ratio, leaves noise of the propagated level and shows the transient.

The star catalogue comes from NumPy's generator (the same for every array kind); the noise
from the array package's own generator, on its device: a pair is deterministic for a seed
within one package.
"""

import dataclasses
import functools
import math

import numpy

from accelmath import fft
from accelmath.errors import InvalidArgumentError
from accelmath.subtraction._model import check_integer, check_shape
from accelmath.subtraction._ops import kind_of
from accelmath.subtraction._spectra import kernel_matrices

__all__ = ["SyntheticPair", "synthetic_pair", "gaussian_kernel"]

FLUX_MIN = 200.0  # the faintest star's flux
FLUX_SLOPE = 1.5  # N(> F) ~ F^-1.5: stars of uniform density in space


@dataclasses.dataclass(frozen=True)
class SyntheticPair:
    """A synthetic image pair and what was put into it.

    Attributes
    ----------
    reference, science : arrays
        (N0, N1) float64 images, of the kind asked for.
    mask : array
        (N0, N1) bool: True where the solve pass should use the pixel: where the stars'
        light exceeds the reference's noise (or a small level for noiseless images), away
        from the transient and from saturated stars.
    ratio : float
        The photometric ratio put in (the true kernel's sum).
    transient : tuple
        ``(row, col, flux)`` of the transient added to the science image.
    noise_reference, noise_science : float
        The standard deviation of every pixel's Gaussian noise, in each image.
    kernel : numpy.ndarray
        The true (2h + 1) x (2h + 1) kernel (sum ``ratio``) that made the science image
        from the reference: ``kernel[a + h, b + h]`` weighs the reference pixel
        (row - a, col - b).
    sigma_reference, sigma_science : float
        The Gaussian PSF widths (pixels).
    """

    reference: object
    science: object
    mask: object
    ratio: float
    transient: tuple
    noise_reference: float
    noise_science: float
    kernel: numpy.ndarray
    sigma_reference: float
    sigma_science: float

    def expected_noise(self, kernel=None):
        """The standard deviation a correct difference image has:
        ``sqrt(noise_science^2 + noise_reference^2 * sum(kernel^2))``, with the true kernel
        (or the one given, a subtraction's :meth:`SubtractionResult.kernel_at`).

        Examples
        --------
        >>> from accelmath.subtraction import synthetic_pair
        >>> pair = synthetic_pair(64, seed=0, stars=50, noise=(2.0, 3.0))
        >>> 3.0 < pair.expected_noise() < 3.5
        True
        """
        kernel = self.kernel if kernel is None else numpy.asarray(kernel)
        return math.sqrt(self.noise_science ** 2
                         + self.noise_reference ** 2 * float(numpy.sum(kernel ** 2)))


def gaussian_kernel(sigma, half_width, total=1.0):
    """A (2h + 1) x (2h + 1) sampled circular Gaussian of width ``sigma`` that sums to
    ``total``.

    Examples
    --------
    >>> from accelmath.subtraction._synthetic import gaussian_kernel
    >>> k = gaussian_kernel(1.0, 3, total=2.0)
    >>> k.shape, round(float(k.sum()), 12)
    ((7, 7), 2.0)
    """
    offsets = numpy.arange(-half_width, half_width + 1, dtype=numpy.float64)
    profile = numpy.exp(-0.5 * (offsets / sigma) ** 2)
    kernel = numpy.outer(profile, profile)
    return kernel * (total / kernel.sum())


@functools.lru_cache(maxsize=8)
def _kernel_matrices(shape, half_width):
    """:func:`kernel_matrices`, made once per shape and kernel size (a pair needs four);
    never written to."""
    return kernel_matrices(shape, half_width)


def _spectrum(kind, shape, kernel):
    """The half spectrum of a small kernel placed modulo ``shape`` (centre at pixel 0), of
    ``kind``: two small DFT matrices, no image-sized host array."""
    w0, w1t = _kernel_matrices(tuple(shape), kernel.shape[0] // 2)
    left = kind.asarray(w0 @ kernel.astype(numpy.complex128))
    return kind.matmul(left, kind.asarray(w1t))


def _convolve(kind, image, kernel):
    """``image`` convolved circularly by the small ``kernel`` (over its last two axes)."""
    shape = tuple(image.shape[-2:])
    spectrum = fft.rfft2(image) * _spectrum(kind, shape, kernel)
    return fft.irfft2(spectrum, s=shape)


def synthetic_pair(size, *, seed=None, stars=3000, ratio=1.3, sigma_reference=1.5,
                   sigma_science=2.2, sky=0.0, noise=(2.0, 3.0), transient_flux=None,
                   kernel_half_width=None, saturation=None, like=None):
    """A synthetic star-field pair with a known kernel, ratio and transient.

    Parameters
    ----------
    size : int or (int, int)
        The images' shape (an int n: n x n).
    seed : int, optional
        Makes the pair reproducible within one array package (default: fresh entropy).
    stars : int, optional
        The number of stars (default 3000), fluxes from a power law
        ``N(> F) ~ F^-1.5`` above 200.
    ratio : float, optional
        The photometric ratio, science over reference (default 1.3).
    sigma_reference, sigma_science : float, optional
        The PSF widths in pixels (default 1.5 and 2.2; the science one the larger).
    sky : float, optional
        The level of a smooth (periodic) sky left in the reference after sky subtraction;
        the science image's is the reference's seen through the kernel, ``ratio`` times it
        (default 0). The solve pass sets the pixels outside the mask to 0, as the method
        does, so it expects images whose sky was subtracted.
    noise : float or (float, float), optional
        The standard deviation of the Gaussian noise of each pixel, of (reference, science)
        (default (2, 3)).
    transient_flux : float, optional
        The transient's flux (default: a signal-to-noise ratio of 30 for PSF photometry).
    kernel_half_width : int, optional
        The true kernel's half-width h (default ``ceil(4 sigma)`` of the kernel's Gaussian,
        sigma the quadrature difference of the PSF widths).
    saturation : float, optional
        Pixel values above this are clipped in both images, and the stars that reach it
        are left out of the mask (default None: no saturation).
    like : optional
        Where the images are made: None (NumPy), a module (numpy, cupy, torch), a package
        name, a ``torch.device`` or an array.

    Returns
    -------
    SyntheticPair

    Examples
    --------
    >>> from accelmath.subtraction import synthetic_pair
    >>> pair = synthetic_pair((48, 64), seed=3, stars=40)
    >>> pair.reference.shape, pair.mask.dtype, pair.ratio
    ((48, 64), dtype('bool'), 1.3)
    """
    shape = check_shape(size)
    stars = check_integer(stars, "stars", 0)
    noise_reference, noise_science = _pair_of(noise, "noise")
    for name, value in (("ratio", ratio), ("sigma_reference", sigma_reference),
                        ("sigma_science", sigma_science)):
        if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise InvalidArgumentError(f"{name} must be a positive number, got {value!r}")
    if not sigma_science > sigma_reference:
        raise InvalidArgumentError(
            f"sigma_science={sigma_science!r} must exceed sigma_reference={sigma_reference!r}: "
            "the reference is the sharper image, convolved to match the science image")
    sigma_kernel = math.sqrt(sigma_science ** 2 - sigma_reference ** 2)
    half = (math.ceil(4 * sigma_kernel) if kernel_half_width is None
            else check_integer(kernel_half_width, "kernel_half_width", 0))
    if 2 * half + 1 > min(shape):
        raise InvalidArgumentError(
            f"kernel_half_width={half} does not fit images of shape {shape}")
    kernel = gaussian_kernel(sigma_kernel, half, total=float(ratio))
    kind = kind_of(like)
    host = numpy.random.default_rng(seed)
    position, flux = _catalogue(host, shape, stars)
    reach = half + 1
    transient = _transient(host, shape, reach, sigma_science, noise_science, transient_flux,
                           (position, flux, sigma_reference))
    threshold = max(noise_reference, 0.05 * FLUX_MIN / (2 * math.pi * sigma_reference ** 2))
    with kind.active():
        generator = kind.generator(None if seed is None else int(host.integers(2**62)))
        light = _light(kind, shape, position, flux, sigma_reference)
        noiseless_reference = light + _sky(kind, shape, float(sky))
        noiseless_science = _convolve(kind, noiseless_reference, kernel)
        _add_transient(kind, noiseless_science, transient, sigma_science)
        # the zero-filled pixels may bring this much star light into a pixel of the mask
        tolerance = 0.1 * max(noise_science, threshold)
        excluded = _excluded(kind, shape, transient, sigma_science, tolerance)
        if saturation is not None:
            saturated = (noiseless_reference > saturation) | (noiseless_science > saturation)
            excluded |= _dilate(kind, saturated, reach)
            for image in (noiseless_reference, noiseless_science):
                image[image > saturation] = float(saturation)
        mask = _dilate(kind, light > threshold, reach) & ~excluded
        mask = _consistent(kind, light, mask, kernel, tolerance)
        reference = noiseless_reference + kind.standard_normal(generator, shape) * noise_reference
        science = noiseless_science + kind.standard_normal(generator, shape) * noise_science
    return SyntheticPair(reference, science, mask, float(ratio), transient,
                         noise_reference, noise_science, kernel, float(sigma_reference),
                         float(sigma_science))


def _pair_of(value, name):
    values = value if isinstance(value, (tuple, list)) else (value, value)
    if len(values) != 2 or not all(isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)
                                   for v in values):
        raise InvalidArgumentError(
            f"{name} must be a non-negative number or a pair of them, got {value!r}")
    return float(values[0]), float(values[1])


def _catalogue(host, shape, count):
    """Star positions (count, 2), uniform over the image, and fluxes from the power law."""
    position = host.uniform(0.0, 1.0, (count, 2)) * numpy.array(shape, dtype=numpy.float64)
    flux = FLUX_MIN * host.uniform(0.0, 1.0, count) ** (-1.0 / FLUX_SLOPE)
    return position, flux


def _excluded(kind, shape, transient, sigma, tolerance):
    """The transient's pixels: where its light exceeds ``tolerance``. (The images are
    periodic, as the model's convolution is, so their edges need no exclusion.)"""
    row, col, flux = transient
    peak = flux / (2 * math.pi * sigma ** 2)
    radius = math.ceil(sigma * math.sqrt(2 * math.log(max(peak / tolerance, 1.0)))) + 1
    offsets = numpy.arange(-radius, radius + 1)
    disc = offsets[:, None] ** 2 + offsets[None, :] ** 2 <= radius ** 2
    excluded = kind.zeros(shape, "bool")
    rows = kind.asarray((int(round(row)) + offsets) % shape[0])
    cols = kind.asarray((int(round(col)) + offsets) % shape[1])
    excluded[rows[:, None], cols[None, :]] |= kind.asarray(disc)
    return excluded


def _consistent(kind, light, mask, kernel, tolerance):
    """``mask`` less the pixels where the star light outside it, convolved by the kernel,
    exceeds ``tolerance``, until none is left: the solve pass sets the pixels outside the
    mask to 0 in both images, and the light the kernel would have carried from them into the
    mask would bias the fit. Each round only shrinks the mask, so the loop ends; in a crowded
    field the excluded light can spread from star to star for a hundred rounds or more, and
    stopping any earlier leaves a biased mask."""
    while True:
        carried = _convolve(kind, light * ~mask, kernel)
        bad = mask & (carried > tolerance)
        if not int(kind.to_numpy(bad.sum())):
            return mask
        mask &= ~bad


def _light(kind, shape, position, flux, sigma):
    """The stars' light: each flux shared out over the four pixels around the star's
    position (bilinearly), convolved by the Gaussian PSF."""
    n0, n1 = shape
    base = numpy.floor(position).astype(numpy.int64)
    fraction = position - base
    index, weight = [], []
    for dr, dc in ((0, 0), (0, 1), (1, 0), (1, 1)):
        wr = fraction[:, 0] if dr else 1.0 - fraction[:, 0]
        wc = fraction[:, 1] if dc else 1.0 - fraction[:, 1]
        index.append(((base[:, 0] + dr) % n0) * n1 + (base[:, 1] + dc) % n1)
        weight.append(flux * wr * wc)
    # stars sharing a pixel summed here, so the device writes each pixel once (the same
    # image every run: no atomic additions in varying order)
    pixels, where = numpy.unique(numpy.concatenate(index), return_inverse=True)
    values = numpy.bincount(where, weights=numpy.concatenate(weight))
    deltas = kind.zeros((n0 * n1,))
    deltas[kind.asarray(pixels)] = kind.asarray(values)
    psf = gaussian_kernel(sigma, math.ceil(5 * sigma))
    return _convolve(kind, deltas.reshape(n0, n1), psf)


def _dilate(kind, flags, reach):
    """``flags`` (bool, over the last two axes) grown by ``reach`` pixels (a square)."""
    box = numpy.ones((2 * reach + 1, 2 * reach + 1))
    return _convolve(kind, kind.float64(flags), box) > 0.5


def _sky(kind, shape, level):
    """A smooth periodic sky around ``level``: ``level (1 + 0.05 sin(2 pi r / N0)
    cos(2 pi c / N1))``."""
    rows = numpy.sin(2 * numpy.pi * numpy.arange(shape[0]) / shape[0])[:, None]
    cols = numpy.cos(2 * numpy.pi * numpy.arange(shape[1]) / shape[1])[None, :]
    return kind.matmul(kind.asarray(0.05 * level * rows), kind.asarray(cols)) + level


def _transient(host, shape, edge, sigma, noise, flux, stars, candidates=32):
    """``(row, col, flux)`` of the transient, placed away from the edges and, of
    ``candidates`` random places, at the one with the least star light around it: the light
    of a star next to it would be left out of the mask with it, and in a crowded field that
    light, carried by the kernel into the pixels beside it, takes them out too, star after
    star, until little of the image is left to fit."""
    margin = edge + math.ceil(4 * sigma)  # (its pixels in the mask's exclusion, and the kernel's)
    rows = host.uniform(margin, max(margin, shape[0] - margin), candidates)
    cols = host.uniform(margin, max(margin, shape[1] - margin), candidates)
    position, fluxes, sigma_star = stars
    offsets = numpy.stack([rows, cols], axis=1)[:, None, :] - position[None, :, :]
    offsets -= numpy.round(offsets / numpy.array(shape)) * numpy.array(shape)  # (periodic)
    distance = numpy.maximum(numpy.sqrt((offsets ** 2).sum(axis=-1)) - margin, 0.0)
    light = (fluxes * numpy.exp(-0.5 * (distance / sigma_star) ** 2)).sum(axis=1)
    best = int(numpy.argmin(light))
    if flux is None:
        # S/N 30 for photometry with the PSF: flux / (noise * sqrt(4 pi sigma^2))
        flux = 30.0 * noise * math.sqrt(4 * math.pi) * sigma
    return float(rows[best]), float(cols[best]), float(flux)


def _add_transient(kind, image, transient, sigma):
    """Add a Gaussian of width ``sigma`` and the transient's flux at its position."""
    row, col, flux = transient
    half = math.ceil(5 * sigma)
    r0, c0 = int(math.floor(row)), int(math.floor(col))
    offsets = numpy.arange(-half, half + 1)
    dr = (r0 + offsets - row)[:, None]
    dc = (c0 + offsets - col)[None, :]
    patch = numpy.exp(-0.5 * (dr ** 2 + dc ** 2) / sigma ** 2)
    patch *= flux / (2 * math.pi * sigma ** 2)
    rows = kind.asarray((r0 + offsets) % image.shape[0])
    cols = kind.asarray((c0 + offsets) % image.shape[1])
    image[rows[:, None], cols[None, :]] += kind.asarray(patch)

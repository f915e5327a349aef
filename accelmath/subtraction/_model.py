"""The SFFT model: its configuration, its terms and coordinates, and the lag rules of its
normal equations. Pure NumPy, no device.

The model fits the image J that is not convolved by the image I that is:

    J ~= sum_ij sum_ab c[ij, a, b] x^i y^j (I (*) K_ab)  +  sum_pq d[pq] x^p y^q

with (*) circular convolution, ``x = (row + 1) / N0`` and ``y = (col + 1) / N1``, i + j <= DK,
p + q <= DB, and the modified delta basis: ``K_00`` the delta at (0, 0), ``K_ab`` for
(a, b) != (0, 0) the delta at (a, b) minus the delta at (0, 0), ``|a|, |b| <= w``. Convolving
by a delta at (a, b) moves the image by (a, b), so with ``X = I x^i y^j`` the basis image of
``c[ij, a, b]`` is ``B_s = roll(X, s) - [s != 0] X`` (s = (a, b)).

With the cross-correlation ``C_XY(l) = sum_r X(r) Y(r + l)`` (indices modulo the shape), the
normal equations read each correlation at a few lags only:

- ``<B_s, B'_t> = C(s - t) - [t != 0] C(s) - [s != 0] C(-t) + [s != 0][t != 0] C(0)``
  (C of the two kernel planes: lags within +-2w per axis),
- ``<B_s, T_pq> = C_XT(s) - [s != 0] C_XT(0)`` and ``<B_s, J> = C_XJ(s) - [s != 0] C_XJ(0)``
  (lags within +-w),
- ``<T_pq, T_p'q'>`` and ``<T_pq, J>``: lag 0 only.

:class:`LagRules` holds these rules as index arrays into a stack of correlation maps sampled
on the lag grid ``-2w..2w`` per axis, so that any array package fills the matrix by indexing.

The unknowns are ordered as the published code orders them: the kernel coefficients by
``ij`` (``(0, 0), (0, 1), ..., (0, DK), (1, 0), ...``), then ``a``, then ``b``, then the
background coefficients by ``pq`` in the same order.
"""

import dataclasses
import operator

import numpy

from accelmath.errors import InvalidArgumentError

__all__ = ["Configuration", "LagRules", "configure", "check_integer", "check_shape", "terms",
           "coordinates", "centre", "effective_kernels", "kernel_at", "SOLVERS", "CONVOLVED"]

SOLVERS = ("cholesky", "lu")
CONVOLVED = ("reference", "science")
#: The most unknowns a configuration makes (its normal matrix: 8 GiB of float64). PHROSTY's
#: (half_width 9, kernel_order 2) makes 2167.
MAX_UNKNOWNS = 32768


@dataclasses.dataclass(frozen=True)
class Configuration:
    """A checked configuration of the subtraction (see :func:`configure`).

    Attributes
    ----------
    shape : tuple of int
        The images' shape (N0, N1).
    half_width : int
        The kernel half-width w: the kernel is (2w + 1) x (2w + 1).
    kernel_order, background_order : int
        DK and DB, the degrees of the kernel's and the background's polynomials.
    constant_ratio : bool
        The kernel's sum (the photometric ratio) is the same over the image.
    solver : {"cholesky", "lu"}
    convolve : {"reference", "science"}
        The image that is convolved.
    """

    shape: tuple
    half_width: int
    kernel_order: int
    background_order: int
    constant_ratio: bool
    solver: str
    convolve: str

    @property
    def kernel_terms(self):
        """The (i, j) of the kernel's polynomial, in the unknowns' order."""
        return terms(self.kernel_order)

    @property
    def background_terms(self):
        """The (p, q) of the background's polynomial, in the unknowns' order."""
        return terms(self.background_order)

    @property
    def side(self):
        """The kernel's side, 2w + 1."""
        return 2 * self.half_width + 1

    def describe(self):
        """The configuration in words, for error messages."""
        return (f"shape={self.shape}, half_width={self.half_width}, "
                f"kernel_order={self.kernel_order}, background_order={self.background_order}, "
                f"constant_ratio={self.constant_ratio}")


def _choice(value, name, allowed):
    if not isinstance(value, str) or value not in allowed:
        listed = ", ".join(f'"{a}"' for a in allowed)
        raise InvalidArgumentError(f"Invalid {name} {value!r}, should be one of {listed}")
    return value


def check_integer(value, name, minimum):
    """``value`` as an int of at least ``minimum`` (anything with ``__index__`` but a bool), or
    InvalidArgumentError naming ``name``: the showcase's counts (``minimum=0``) and lengths
    (``minimum=1``).

    The showcase checks its own arguments here: it sits on accelmath's public API only, and
    these are its options, not the FFT's or the solvers'.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.subtraction._model import check_integer
    >>> check_integer(np.int64(3), "stars", 0)
    3
    """
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}") from None
    if value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    return value


def _flag(value, name):
    if not isinstance(value, (bool, numpy.bool_)):
        raise InvalidArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_shape(shape):
    """``shape`` as a pair of positive ints: an int n means (n, n)."""
    if isinstance(shape, (int, numpy.integer)) and not isinstance(shape, bool):
        shape = (shape, shape)
    try:
        shape = tuple(shape)
    except TypeError:
        raise InvalidArgumentError(
            f"shape must be an int or a pair of ints (rows, cols), got {shape!r}") from None
    if len(shape) != 2:
        raise InvalidArgumentError(
            f"shape must be an int or a pair of ints (rows, cols), got {shape!r}")
    return tuple(check_integer(n, "each length of shape", 1) for n in shape)


def configure(shape, half_width=9, kernel_order=2, background_order=0, constant_ratio=True,
              solver="cholesky", convolve="reference"):
    """Check a configuration and return it as a :class:`Configuration`.

    Raises InvalidArgumentError for a value out of range, naming it: in particular a
    half-width too large for the image (the normal equations read lags up to +-2w per axis,
    which must be distinct modulo the image's lengths: ``4w + 1 <= min(shape)``).

    Examples
    --------
    >>> from accelmath.subtraction._model import configure
    >>> configure(64, half_width=3).describe()
    'shape=(64, 64), half_width=3, kernel_order=2, background_order=0, constant_ratio=True'
    """
    shape = check_shape(shape)
    half_width = check_integer(half_width, "half_width", 0)
    kernel_order = check_integer(kernel_order, "kernel_order", 0)
    background_order = check_integer(background_order, "background_order", 0)
    constant_ratio = _flag(constant_ratio, "constant_ratio")
    solver = _choice(solver, "solver", SOLVERS)
    convolve = _choice(convolve, "convolve", CONVOLVED)
    if 4 * half_width + 1 > min(shape):
        raise InvalidArgumentError(
            f"half_width={half_width} is too large for images of shape {shape}: the normal "
            f"equations read lags up to +-2*half_width per axis, which needs "
            f"4*half_width+1 = {4 * half_width + 1} <= {min(shape)} pixels per axis")
    kernel_terms = (kernel_order + 1) * (kernel_order + 2) // 2
    unknowns = (kernel_terms * (2 * half_width + 1) ** 2
                + (background_order + 1) * (background_order + 2) // 2)
    if unknowns > MAX_UNKNOWNS or unknowns > shape[0] * shape[1]:
        raise InvalidArgumentError(
            f"kernel_order={kernel_order}, half_width={half_width} and "
            f"background_order={background_order} make {unknowns} unknowns: at most "
            f"{min(MAX_UNKNOWNS, shape[0] * shape[1])} are taken (no more than the pixels, "
            f"and a normal matrix of at most {MAX_UNKNOWNS ** 2 * 8 / 2 ** 30:.0f} GiB)")
    return Configuration(shape, half_width, kernel_order, background_order,
                         bool(constant_ratio), solver, convolve)



def terms(order):
    """The exponents (i, j) with i + j <= ``order``, in the order of the unknowns.

    Examples
    --------
    >>> from accelmath.subtraction._model import terms
    >>> terms(1)
    ((0, 0), (0, 1), (1, 0))
    """
    return tuple((i, j) for i in range(order + 1) for j in range(order + 1 - i))


def coordinates(shape):
    """The scaled coordinates ``x = (row + 1) / N0`` and ``y = (col + 1) / N1``, as two
    NumPy vectors.

    Examples
    --------
    >>> from accelmath.subtraction._model import coordinates
    >>> coordinates((2, 4))[1]
    array([0.25, 0.5 , 0.75, 1.  ])
    """
    return tuple((numpy.arange(n, dtype=numpy.float64) + 1.0) / n for n in shape)


def centre(shape):
    """The image's centre pixel, ``(N0 // 2, N1 // 2)``: where the photometric ratio is
    reported."""
    return shape[0] // 2, shape[1] // 2


def effective_kernels(coefficients):
    """The kernel of each polynomial term from the basis coefficients ``c[ij, a, b]`` (shape
    (Fij, 2w + 1, 2w + 1)): the delta basis collapsed, so the centre holds
    ``2 c[ij, 0, 0] - sum_ab c[ij, a, b]`` and each kernel sums to ``c[ij, 0, 0]``."""
    kernels = numpy.array(coefficients, dtype=numpy.float64, copy=True)
    w = kernels.shape[-1] // 2
    kernels[:, w, w] = 2.0 * kernels[:, w, w] - kernels.sum(axis=(1, 2))
    return kernels


def kernel_at(coefficients, shape, kernel_order, row, col):
    """The (2w + 1) x (2w + 1) convolution kernel at pixel (row, col), from the basis
    coefficients (see :func:`effective_kernels`)."""
    x, y = (row + 1.0) / shape[0], (col + 1.0) / shape[1]
    weights = numpy.array([x ** i * y ** j for i, j in terms(kernel_order)])
    return numpy.tensordot(weights, effective_kernels(coefficients), axes=1)


@dataclasses.dataclass(frozen=True, eq=False)
class LagRules:
    """Where each entry of the normal equations reads the correlation maps.

    The maps are sampled on the lag grid ``lags = -2w..2w`` per axis (``nl = 4w + 1``), map
    ``k`` at flat index ``(l0 + 2w) * nl + (l1 + 2w)``. The kernel planes' maps are those of
    the pairs ``(pairs[0][k], pairs[1][k])``, ``pairs[0] <= pairs[1]`` (the others are their
    mirror images, ``C_YX(l) = C_XY(-l)``).

    Attributes
    ----------
    lags : ndarray
        The lags of each axis, -2w..2w.
    pairs : tuple of ndarray
        Row and column term index of each distinct pair of kernel planes.
    difference : ndarray
        (Fab, Fab) flat lag index of ``s - t`` for basis shifts s, t.
    shift, mirror : ndarray
        (Fab,) flat lag index of ``s`` and of ``-s``.
    zero : int
        Flat lag index of lag (0, 0).
    moved : ndarray
        (Fab,) 1.0 where the basis shift is not (0, 0), else 0.0.
    free : ndarray
        Indices of the unknowns that are solved for (all, or all but the kernel sums of the
        terms ij != 00 under the constant-ratio constraint).
    count : int
        The number of unknowns, Fij * Fab + Fpq.
    """

    lags: numpy.ndarray
    pairs: tuple
    difference: numpy.ndarray
    shift: numpy.ndarray
    mirror: numpy.ndarray
    zero: int
    moved: numpy.ndarray
    free: numpy.ndarray
    count: int

    @classmethod
    def of(cls, configuration):
        """The rules of a :class:`Configuration`."""
        w = configuration.half_width
        side, nl = 2 * w + 1, 4 * w + 1
        lags = numpy.arange(-2 * w, 2 * w + 1)
        a, b = (g.ravel() for g in numpy.meshgrid(numpy.arange(-w, w + 1),
                                                  numpy.arange(-w, w + 1), indexing="ij"))

        def flat(l0, l1):
            return (l0 + 2 * w) * nl + (l1 + 2 * w)

        fij = len(configuration.kernel_terms)
        fab = side * side
        count = fij * fab + len(configuration.background_terms)
        free = numpy.arange(count)
        if configuration.constant_ratio:
            # the kernel sums c[ij, 0, 0] of the terms ij != 00 are zero: dropped unknowns
            centre_index = w * side + w
            fixed = numpy.arange(1, fij) * fab + centre_index
            free = numpy.setdiff1d(free, fixed)
        return cls(lags=lags, pairs=tuple(numpy.triu_indices(fij)),
                   difference=flat(a[:, None] - a[None, :], b[:, None] - b[None, :]),
                   shift=flat(a, b), mirror=flat(-a, -b), zero=int(flat(0, 0)),
                   moved=((a != 0) | (b != 0)).astype(numpy.float64), free=free, count=count)

    def on(self, convert):
        """The index arrays passed through ``convert`` (to move them to a device), as a
        dict: the fields that are arrays, ``rows`` and ``cols`` (``pairs``) and ``both``
        (``moved[:, None] * moved[None, :]``)."""
        arrays = {name: getattr(self, name)
                  for name in ("difference", "shift", "mirror", "moved", "free")}
        arrays.update(rows=self.pairs[0], cols=self.pairs[1],
                      both=self.moved[:, None] * self.moved[None, :])
        return {name: convert(array) for name, array in arrays.items()}

"""The normal equations of the subtraction: filled from the correlation maps by the lag rules
of :mod:`~accelmath.subtraction._model`, constrained, and solved in float64 by a Cholesky
factorization (or LU) from ``accelmath.linalg``.

The system is scaled to a unit diagonal before it is factored (the kernel's and the
background's unknowns differ by many orders of magnitude), which makes the factorization's
pivots a measure of how far the matrix is from singular: a pivot below
``SINGULAR_PIVOT * n`` means the data cannot tell some unknowns apart, and the subtraction
says so rather than return a meaningless kernel.
"""

import numpy

from accelmath import linalg
from accelmath.errors import LinAlgError
from accelmath.subtraction import _kernels
from accelmath.subtraction._model import coordinates

__all__ = ["background_products", "assemble", "solve", "SINGULAR_PIVOT"]

# Pivots of the unit-diagonal system below this (times its size) mean a singular system:
# about 10 units of roundoff (float64) per unknown.
SINGULAR_PIVOT = 10 * numpy.finfo(numpy.float64).eps


def background_products(configuration):
    """``<T_pq, T_p'q'>`` over the whole image (Fpq, Fpq), NumPy: sums of products of the
    coordinate powers, which factor into a row sum and a column sum."""
    x, y = coordinates(configuration.shape)
    order = configuration.background_order
    sx = numpy.array([numpy.sum(x ** k) for k in range(2 * order + 1)])
    sy = numpy.array([numpy.sum(y ** k) for k in range(2 * order + 1)])
    pq = configuration.background_terms
    return numpy.array([[sx[p + p2] * sy[q + q2] for p2, q2 in pq] for p, q in pq])


def assemble(kind, rules, index, maps, polynomial, background):
    """The normal matrix and right-hand side of all the unknowns, as arrays of ``kind``.

    Parameters
    ----------
    kind : ArrayKind
    rules : LagRules
    index : dict
        ``rules.on(kind.asarray)``: its index arrays on the device.
    maps : (nl, pairs + Fij, nl) complex array
        The correlation maps in the real parts (:meth:`Spectra.correlations`).
    polynomial : (Fij + 1, (DB + 1)(2w + 1), (DB + 1)(2w + 1)) array
        The planes' correlations with the background polynomials
        (:meth:`Spectra.polynomial_correlations`).
    background : (Fpq, Fpq) array
        :func:`background_products`, of ``kind``.
    """
    pairs = len(rules.pairs[0])
    fij = polynomial.shape[0] - 1
    fab = index["moved"].shape[0]
    side = int(round(fab ** 0.5))
    fpq = background.shape[0]
    n = fij * fab
    flat = maps.real.swapaxes(0, 1).reshape(maps.shape[1], -1)
    moved, both = index["moved"], index["both"]

    # the kernel block: <B_s, B'_t> for each pair of kernel planes
    omega = flat[:pairs]
    blocks = (omega[:, index["difference"]] - omega[:, index["shift"]][:, :, None] * moved
              - moved[:, None] * omega[:, index["mirror"]][:, None, :]
              + omega[:, rules.zero][:, None, None] * both)
    full = kind.zeros((fij, fij, fab, fab))
    rows, cols = index["rows"], index["cols"]
    full[cols, rows] = blocks.swapaxes(1, 2)
    full[rows, cols] = blocks
    matrix = kind.zeros((n + fpq, n + fpq))
    matrix[:n, :n] = full.swapaxes(1, 2).reshape(n, n)

    # the kernel-background block: <B_s, T_pq>, and the background block
    order = int(round(polynomial.shape[1] / side)) - 1
    w = side // 2
    for k, (p, q) in enumerate((p, q) for p in range(order + 1) for q in range(order + 1 - p)):
        gamma = polynomial[:fij, p * side:(p + 1) * side, q * side:(q + 1) * side]
        gamma = gamma.reshape(fij, fab)
        column = (gamma - gamma[:, w * side + w][:, None] * moved).reshape(n)
        matrix[:n, n + k] = column
        matrix[n + k, :n] = column
    matrix[n:, n:] = background

    # the right-hand side: <B_s, J> and <T_pq, J>
    theta = flat[pairs:]
    rhs = kind.zeros((n + fpq,))
    rhs[:n] = (theta[:, index["shift"]] - theta[:, rules.zero][:, None] * moved).reshape(n)
    for k, (p, q) in enumerate((p, q) for p in range(order + 1) for q in range(order + 1 - p)):
        rhs[n + k] = polynomial[fij, p * side + w, q * side + w]
    return matrix, rhs


def _singular(configuration, detail):
    return LinAlgError(
        f"the normal equations of the subtraction ({configuration.describe()}) are singular "
        f"({detail}): the images inside the mask do not determine every kernel and background "
        "coefficient; use a larger mask, a smaller half_width or lower polynomial orders")


def solve(kind, rules, index, maps, polynomial, background, configuration):
    """Solve the normal equations for the unknowns ``rules.free`` (the others are 0).

    ``index`` is ``rules.on(kind.asarray)`` (with :func:`~._kernels.extra_index`'s arrays on
    a GPU); ``maps``, ``polynomial`` and ``background`` are as :func:`assemble` takes them.
    On a GPU the kernels of :mod:`._kernels` fill the scaled system of the free unknowns
    directly; elsewhere :func:`assemble` fills the whole one, which is then reduced.

    Returns the solution of all the unknowns as a NumPy vector (a read back).
    """
    count, nf = rules.count, rules.free.shape[0]
    symmetric = configuration.solver == "lu"  # (LU reads both triangles)
    if kind.on_gpu:
        description = _kernels.normal(maps, polynomial, background, index, rules,
                                      configuration)
        diagonal = kind.empty((nf,))
        _kernels.normal_diagonal(description, index["free"], diagonal)
        scale = _scale(configuration, kind.to_numpy(diagonal))
        scaled, b = kind.empty((nf, nf)), kind.empty((nf,))
        _kernels.normal_system(description, index["free"], kind.asarray(scale), symmetric,
                               scaled, b)
    else:
        matrix, rhs = assemble(kind, rules, index, maps, polynomial, background)
        if nf != count:
            free = index["free"]
            matrix = matrix[free][:, free]
            rhs = rhs[free]
        scale = _scale(configuration, kind.to_numpy(matrix.diagonal()))
        on_kind = kind.asarray(scale)
        scaled = matrix * on_kind[:, None] * on_kind[None, :]
        b = rhs * on_kind
        if symmetric:
            scaled = (scaled + scaled.T) * 0.5
    try:
        if configuration.solver == "cholesky":
            factor = linalg.cho_factor(scaled, lower=True, check_finite=False)
            pivots = _diagonal(kind, factor[0]) ** 2
            solution = None if pivots.min() < SINGULAR_PIVOT * nf else linalg.cho_solve(
                factor, b, check_finite=False)
        else:
            factor = linalg.lu_factor(scaled, check_finite=False)
            pivots = numpy.abs(_diagonal(kind, factor[0]))
            solution = None if pivots.min() < SINGULAR_PIVOT * nf * pivots.max() else (
                linalg.lu_solve(factor, b, check_finite=False))
    except LinAlgError as exc:
        raise _singular(configuration, f"{configuration.solver}: {exc}") from None
    if solution is None:
        raise _singular(configuration, f"smallest pivot {pivots.min():.3g} of the scaled "
                                       f"{configuration.solver} factorization")
    result = numpy.zeros(count)
    result[rules.free] = kind.to_numpy(solution) * scale
    return result


def _scale(configuration, diagonal):
    """``1 / sqrt(diagonal)`` (NumPy), the scaling to a unit diagonal, or the error for an
    unknown without data."""
    if not numpy.all(diagonal > 0):
        first = int(numpy.argmin(diagonal > 0))
        raise _singular(configuration, f"unknown {first} has no data")
    return 1.0 / numpy.sqrt(diagonal)


def _diagonal(kind, a):
    """The diagonal of square matrix ``a`` of ``kind``, as NumPy (a read back)."""
    if not kind.on_gpu:
        return kind.to_numpy(a.diagonal())
    out = kind.empty((a.shape[0],))
    _kernels.diagonal(a, sum(kind.element_strides(a)), out)
    return kind.to_numpy(out)

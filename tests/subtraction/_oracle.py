"""The float64 oracle of the subtraction tests: the SFFT model as a dense design matrix."""

import numpy as np

from accelmath.subtraction._model import coordinates


def design(convolved, other, mask, configuration):
    """``(A, t)``: the columns of every unknown over every pixel, and the target, for the
    solve pass (the pixels outside ``mask`` set to 0 in both images, the background
    planes whole), in the unknowns' order."""
    x, y = coordinates(convolved.shape)
    weight = np.ones(convolved.shape) if mask is None else mask.astype(np.float64)
    masked, target = convolved * weight, other * weight
    w = configuration.half_width
    columns = []
    for i, j in configuration.kernel_terms:
        plane = masked * x[:, None] ** i * y[None, :] ** j
        for a in range(-w, w + 1):
            for b in range(-w, w + 1):
                moved = np.roll(plane, (a, b), axis=(0, 1))
                columns.append((moved - plane if (a, b) != (0, 0) else moved).ravel())
    for p, q in configuration.background_terms:
        columns.append(np.broadcast_to(x[:, None] ** p * y[None, :] ** q,
                                       convolved.shape).ravel())
    return np.stack(columns, axis=1), target.ravel()


def kept(configuration):
    """The unknowns solved for (the kernel sums of the terms ij != 00 dropped under the
    constant-ratio constraint)."""
    side = configuration.side
    count = len(configuration.kernel_terms) * side * side + len(configuration.background_terms)
    keep = np.ones(count, bool)
    if configuration.constant_ratio:
        centre = (side // 2) * side + side // 2
        keep[np.arange(1, len(configuration.kernel_terms)) * side * side + centre] = False
    return keep


def least_squares(convolved, other, mask, configuration):
    """The solution of all the unknowns by numpy.linalg.lstsq (0 where constrained)."""
    a, t = design(convolved, other, mask, configuration)
    keep = kept(configuration)
    solution = np.zeros(a.shape[1])
    solution[keep] = np.linalg.lstsq(a[:, keep], t, rcond=None)[0]
    return solution


def difference(convolved, other, solution, configuration):
    """The subtract pass on the unmasked images, densely."""
    a, t = design(convolved, other, None, configuration)
    return (t - a @ solution).reshape(convolved.shape)


def pair(rng, shape, kernel, noise=0.1):
    """A random pair: I white noise plus a smooth part, J = I (*) kernel + noise."""
    from scipy.ndimage import convolve

    image = rng.standard_normal(shape) + 2.0 * rng.random(shape)
    other = convolve(image, kernel, mode="wrap") + noise * rng.standard_normal(shape) + 0.3
    return image, other

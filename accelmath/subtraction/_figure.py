"""The figure of ``accelmath demo``, drawn with matplotlib (its Agg backend, no window).

Six panels a reader understands without the README: the reference, the science image and
their difference, each with a colour bar in counts, the transient circled and labelled with
its S/N; a zoom on the transient in the difference; the histogram of the residual over the
pixels the demo measures its noise on, against a Gaussian of the expected noise; and the
numbers the demo checks. The figure's title names the method, the image size, the device and
the warm subtraction's time. Images larger than :data:`PANEL` pixels a side are shown as block
means, so that the time to draw hardly grows with the image (about a second on two CPU cores,
at 1024 x 1024 as at 4088 x 4088).

matplotlib is imported inside :func:`draw_figure` only: ``import accelmath`` stays light.
"""

import math
import os
import textwrap
from typing import NamedTuple

import numpy as np

__all__ = ["PANEL", "ZOOM", "FigureImages", "draw_figure", "zoom_window"]

#: The largest side, in pixels, of an image as drawn; larger ones are shown as block means.
PANEL = 512
#: The zoom's side, in image pixels.
ZOOM = 64
_UNITS = "counts"
_WIDTH, _HEIGHT, _DPI = 15.0, 9.6, 100  # the figure: 1500 x 960 pixels
# Where the panels sit, in fractions of the figure: placed by hand rather than by matplotlib's
# constrained layout, which measures every label and doubles the time to draw.
_LEFT, _COLUMN, _SIDE = 0.04, 0.325, 0.22  # first panel's left, column pitch, image side
_BOTTOMS = (0.535, 0.065)  # the rows' bottoms
_MARK = "#00c000"  # the transient's circle: green, seen on gray and on red-blue alike


class FigureImages(NamedTuple):
    """What the figure draws besides the report's numbers (host NumPy arrays, float64)."""

    reference: np.ndarray
    science: np.ndarray
    difference: np.ndarray
    transient: tuple  # (row, col, flux) in image pixels
    residual: np.ndarray  # the difference over the pixels the noise is measured on
    seed: int  # the synthetic pair's, shown so that the figure says how to make it again


def _reduction(shape, side):
    """The block size that brings ``shape`` to at most ``side`` pixels a side."""
    return max(1, math.ceil(max(shape) / side))


def _thumbnail(image, factor):
    """``image`` reduced by means over ``factor`` x ``factor`` blocks (the rows and columns
    beyond a whole block dropped)."""
    if factor == 1:
        return image
    rows, cols = image.shape[0] // factor * factor, image.shape[1] // factor * factor
    blocks = image[:rows, :cols].reshape(rows // factor, factor, cols // factor, factor)
    return blocks.mean(axis=(1, 3))


def zoom_window(shape, transient, side=ZOOM):
    """The ``(top, left, side)`` of the square the zoom shows: ``side`` pixels (at most the
    image's) around the transient, moved inside the image where the transient is near an edge.

    Examples
    --------
    >>> from accelmath.subtraction._figure import zoom_window
    >>> zoom_window((256, 256), (100.4, 3.0, 50.0))
    (68, 0, 64)
    >>> zoom_window((40, 40), (20.0, 20.0, 1.0))
    (0, 0, 40)
    """
    side = min(side, *shape)
    top = min(max(0, int(round(transient[0])) - side // 2), shape[0] - side)
    left = min(max(0, int(round(transient[1])) - side // 2), shape[1] - side)
    return top, left, side


def robust_std(values):
    """1.4826 times the median absolute deviation of ``values``: a Gaussian's standard
    deviation that the stars' light (in an image) or their residuals (in a difference) do not
    move."""
    return 1.4826 * float(np.median(np.abs(values - np.median(values))))


def _extent(shape, factor, top=0, left=0):
    """The ``imshow`` extent that puts an image reduced by ``factor`` in image pixel
    coordinates (a pixel's centre at its index), so that marks need no conversion."""
    rows, cols = shape[0] * factor, shape[1] * factor
    return (left - 0.5, left + cols - 0.5, top + rows - 0.5, top - 0.5)


def _panel(figure, column, row):
    """The axes of the image panel at ``(column, row)``, and its colour bar's axes."""
    left, bottom = _LEFT + column * _COLUMN, _BOTTOMS[row]
    height = _SIDE * _WIDTH / _HEIGHT  # (square on the page)
    axes = figure.add_axes((left, bottom, _SIDE, height))
    return axes, figure.add_axes((left + _SIDE + 0.008, bottom, 0.01, height))


def _colour_bar(figure, shown, bar_axes, factor, ticks=None):
    """The colour bar of an image panel, labelled with the unit of what it shows."""
    bar = figure.colorbar(shown, cax=bar_axes, ticks=ticks)
    bar.set_label(_UNITS if factor == 1 else f"{_UNITS} (mean of {factor} x {factor} pixels)")
    return bar


def _asinh_ticks(low, high, width, count=6):
    """Colour-bar ticks spread evenly on an asinh scale, rounded to two significant digits,
    with 0 where it is in range (the scale's own ticks crowd around zero)."""
    spread = np.sinh(np.linspace(np.arcsinh(low / width), np.arcsinh(high / width), count))
    ticks = {0.0} if low <= 0 <= high else set()
    for value in spread[1:] * width:
        if value and abs(value) > width:  # (the linear part is the zero tick's)
            digits = 1 - int(math.floor(math.log10(abs(value))))
            ticks.add(round(float(value), digits))
    return sorted(t for t in ticks if low <= t <= high)


def _star_field(figure, panel, image, factor, title):
    """A reference or science image: gray, on an asinh scale from a little below the sky to
    the bright stars, linear within a few noise levels of the sky so that the noise shows."""
    from matplotlib.colors import AsinhNorm
    from matplotlib.ticker import NullLocator

    low, high = np.percentile(image, (0.5, 99.8))
    width = max(3.0 * robust_std(image), 1e-12)
    high = max(high, low + width)
    axes, bar = panel
    shown = axes.imshow(image, cmap="gray", extent=_extent(image.shape, factor),
                        norm=AsinhNorm(linear_width=width, vmin=low, vmax=high),
                        interpolation="nearest")
    axes.set_title(title)
    colours = _colour_bar(figure, shown, bar, factor, _asinh_ticks(low, high, width))
    colours.ax.yaxis.set_major_formatter("{x:g}")
    colours.ax.yaxis.set_minor_locator(NullLocator())


def _mark(axes, transient, radius, side, label=None):
    """Circle the transient; label the circle on the side with more room (the image is
    ``side`` pixels a side), so that the label stays inside the panel."""
    from matplotlib.patches import Circle

    row, col = transient[0], transient[1]
    axes.add_patch(Circle((col, row), radius, fill=False, edgecolor=_MARK, linewidth=2))
    if label is None:
        return
    below = row < side / 2  # (rows grow downwards)
    align = "right" if col > 0.65 * side else "left" if col < 0.35 * side else "center"
    shift = {"right": radius, "left": -radius, "center": 0.0}[align]
    axes.annotate(label, (col + shift, row + (radius if below else -radius)),
                  xytext=(0, -6 if below else 6), textcoords="offset points", ha=align,
                  va="top" if below else "bottom", fontsize=10, fontweight="bold",
                  bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "alpha": 0.9,
                        "edgecolor": _MARK})


def _difference(figure, panel, image, factor, transient, snr):
    """The difference: blue below zero, red above, white at zero; the colour range five of
    the shown image's noise levels each way, so that noise fills it and the transient stands
    out; the transient circled and labelled with its S/N."""
    limit = max(5.0 * robust_std(image), 1e-12)
    axes, bar = panel
    shown = axes.imshow(image, cmap="RdBu_r", vmin=-limit, vmax=limit,
                        extent=_extent(image.shape, factor), interpolation="nearest")
    side = image.shape[0] * factor
    _mark(axes, transient, max(8.0, side / 30), side, f"transient, S/N {snr:.1f}")
    axes.set_title("difference: science \u2212 kernel \u2297 reference")
    _colour_bar(figure, shown, bar, factor)


def _zoom(figure, panel, difference, transient):
    """The difference around the transient, pixel for pixel, its colour range reaching the
    transient's peak."""
    top, left, side = zoom_window(difference.shape, transient)
    cut = difference[top:top + side, left:left + side]
    limit = max(5.0 * robust_std(cut), float(np.max(np.abs(cut))), 1e-12)
    axes, bar = panel
    shown = axes.imshow(cut, cmap="RdBu_r", vmin=-limit, vmax=limit,
                        extent=_extent(cut.shape, 1, top, left), interpolation="nearest")
    _mark(axes, transient, side / 6, side)
    axes.set_title(f"difference, {side} x {side} around the transient")
    _colour_bar(figure, shown, bar, 1)


def _histogram(axes, residual, expected, measured):
    """The residual's distribution against the Gaussian that the expected noise makes."""
    reach = 5.0 * expected
    density, edges = np.histogram(residual, bins=81, range=(-reach, reach), density=True)
    # (density=True divides by the pixels within the range; scale to all of them)
    inside = np.count_nonzero(np.abs(residual) <= reach)
    density *= inside / max(residual.size, 1)
    axes.stairs(density, edges, fill=True, color="#9ecae1",
                label=f"difference over {residual.size:,} pixels\naway from the edge and the "
                      f"transient\n(robust std {measured:.3g} {_UNITS})")
    x = np.linspace(-reach, reach, 401)
    gauss = np.exp(-0.5 * (x / expected) ** 2) / (expected * math.sqrt(2 * math.pi))
    axes.plot(x, gauss, color="#d62728", linewidth=2,
              label=f"Gaussian of the expected noise\n(std {expected:.3g} {_UNITS})")
    axes.set_xlim(-reach, reach)
    axes.set_ylim(0, 1.45 * max(float(density.max()), float(gauss.max())))
    axes.set_xlabel(f"difference ({_UNITS})")
    axes.set_ylabel(f"fraction of pixels per {_UNITS[:-1]}")
    axes.set_title("residual noise: measured against expected")
    axes.legend(loc="upper left", fontsize=9, frameon=False)


def _summary(axes, report, seed):
    """The numbers the demo checks, in words, on an empty panel."""
    r = report
    failures = r.failures
    rows = [
        ("photometric ratio", f"injected {r.ratio_injected:.4f}, recovered "
                              f"{r.ratio_recovered:.4f}"),
        ("residual noise", f"{r.noise_measured:.3g} {_UNITS} measured, "
                           f"{r.noise_expected:.3g} expected"),
        ("transient", f"S/N {r.transient_snr:.1f} (matched filter): "
                      + ("found" if r.transient_found else "NOT found")),
        ("time", f"first subtraction {r.first_call_s:.3f} s (plans made, code compiled); "
                 f"warm {r.warm_s:.3f} s"),
        ("repeat", f"accelmath demo --size {r.size} --device {r.device.split(':')[0]} "
                   f"--seed {seed}"),
        ("checks", "passed" if not failures else "FAILED: " + "; ".join(failures)),
    ]
    axes.set_axis_off()
    axes.set_title("what the demo checks", loc="left", fontweight="bold")
    size = 10.0
    line = 1.25 * size / 72 * _DPI / axes.get_window_extent().height  # in axes fractions
    y = 0.97
    for name, value in rows:
        failed = name == "checks" and failures
        value = textwrap.fill(value, 36)
        axes.text(0.0, y, name, fontsize=size, fontweight="bold", transform=axes.transAxes,
                  va="top")
        axes.text(0.37, y, value, fontsize=size, va="top", transform=axes.transAxes,
                  color="#b00000" if failed else "black")
        y -= (1.6 + value.count("\n")) * line


def draw_figure(path, report, images):
    """Draw the demo's figure and write it to ``path`` as a PNG file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (PNG, whatever its name's suffix).
    report : DemoReport
        The demo's numbers: the device, size, S/N, noise, timings and checks shown.
    images : FigureImages
        The images, the transient's position, the residual's pixels and the seed.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from accelmath.subtraction._figure import FigureImages, draw_figure
    >>> noise = np.random.default_rng(0).normal(0.0, 2.0, (64, 64))
    >>> images = FigureImages(noise, noise, noise, (30.0, 30.0, 100.0), noise.ravel(), 7)
    >>> report = SimpleNamespace(device="cpu", size=64, ratio_injected=1.3,
    ...     ratio_recovered=1.3, noise_measured=2.0, noise_expected=2.0, transient_snr=30.0,
    ...     transient_found=True, first_call_s=0.1, warm_s=0.01, failures=[])
    >>> path = os.path.join(tempfile.mkdtemp(), "figure.png")
    >>> draw_figure(path, report, images)
    >>> open(path, "rb").read(8) == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # a Figure with its own Agg canvas: no pyplot, so no GUI backend and no global state
    figure = Figure(figsize=(_WIDTH, _HEIGHT), dpi=_DPI)
    FigureCanvasAgg(figure)
    factor = _reduction(images.difference.shape, PANEL)
    shown = " (block means)" if factor > 1 else ""
    _star_field(figure, _panel(figure, 0, 0), _thumbnail(images.reference, factor), factor,
                f"reference{shown}")
    _star_field(figure, _panel(figure, 1, 0), _thumbnail(images.science, factor), factor,
                f"science: blurred more, brighter, a transient{shown}")
    _difference(figure, _panel(figure, 2, 0), _thumbnail(images.difference, factor), factor,
                images.transient, report.transient_snr)
    _zoom(figure, _panel(figure, 0, 1), images.difference, images.transient)
    # (room on its left for the zoom's colour bar labels, and its own)
    histogram = figure.add_axes((_LEFT + _COLUMN + 0.06, _BOTTOMS[1], 0.23, 0.344))
    _histogram(histogram, images.residual, report.noise_expected, report.noise_measured)
    _summary(figure.add_axes((_LEFT + 2 * _COLUMN, _BOTTOMS[1], 0.3, 0.344)), report,
             images.seed)
    device = report.device.split(" (")[0]  # (the reason the GPU cannot run is in the report)
    figure.suptitle(f"SFFT image subtraction of a synthetic {report.size} x {report.size} star "
                    f"field (seed {images.seed})\n{device}; warm subtraction "
                    f"{report.warm_s:.3f} s", fontsize=14, fontweight="bold", y=0.985)
    _publish(figure, path)


def _publish(figure, path):
    """Write ``figure`` to ``path`` as PNG, atomically
    (:func:`~accelmath.subtraction._runs.fits.write_beside`: a link at ``path`` is replaced,
    never followed); a file object as it is."""
    if not isinstance(path, (str, os.PathLike)):
        figure.savefig(path, format="png")
        return
    from accelmath.subtraction._runs.fits import write_beside

    write_beside(os.fspath(path), lambda file: figure.savefig(file, format="png"),
                 ".png")

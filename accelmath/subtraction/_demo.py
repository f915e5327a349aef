"""``accelmath demo``: a synthetic star-field pair subtracted end to end, checked, and drawn.

The demo makes a reference and a science image of one star field (the science image blurred
more, brighter by the photometric ratio, with a transient added), subtracts them with PHROSTY's
configuration (kernel half-width 9, kernel polynomial order 2, background order 0, constant
photometric ratio, float64), and reports what a user checks:

- the photometric ratio, injected and recovered;
- the residual noise against the expected: the robust standard deviation (1.4826 times the
  median absolute deviation, which a bright star's residual does not move) of the difference
  over the pixels farther than ``2 * half_width`` from the edge and farther than
  ``8 * sigma_science`` from the transient, against ``sqrt(s_sci^2 + s_ref^2 * sum(K^2))``,
  where ``s_sci`` and ``s_ref`` are the root mean squares of the images' per-pixel noise sigmas over those pixels
  and ``sum(K^2)`` is the sum of the squared kernel pixels, averaged over a grid of positions
  (the reference's noise, convolved with the kernel, adds ``s_ref^2 * sum(K^2)``);
- the transient's detection: the difference is smoothed with the science image's Gaussian
  point-spread function (a matched filter); its S/N is the smoothed value at the injected
  position over the robust standard deviation (1.4826 times the median absolute deviation) of
  the smoothed difference over the same pixels, and it is found when the brightest pixel of the
  smoothed difference, away from the edge, lies within ``2 * sigma_science`` of it;
- per-stage timings of a warm subtraction, the first call's time (plans made, code compiled or
  loaded) and the total wall time;

and draws a figure (``accelmath-demo.png`` by default; see :mod:`._figure`): the reference, the
science image and the difference, the transient circled with its S/N, a zoom on it, the
residual's histogram against the expected noise, and the numbers checked.

A run without a seed draws one and prints it, so that any run can be repeated with ``--seed``.
"""

import math
import os
import sys
import time
from typing import NamedTuple

import numpy as np

from accelmath.errors import InvalidArgumentError, NoDeviceError
from accelmath.subtraction._figure import robust_std
from accelmath.subtraction._gpu import gpu_name, gpu_package, gpu_problem
from accelmath.subtraction._ops import kind_of_array

__all__ = ["CONFIGURATION", "CPU_SIZE", "DEVICES", "DemoReport", "FIGURE", "GPU_SIZE",
           "MIN_SIZE", "NOISE_TOLERANCE", "RATIO_TOLERANCE", "figure_path", "resolve_device",
           "run_demo"]

#: What ``--device`` accepts.
DEVICES = ("auto", "cpu", "cuda")
#: The default image side on a GPU (the Roman Space Telescope's detector) and on the CPU (a
#: size that runs in a few seconds on two cores).
GPU_SIZE = 4088
CPU_SIZE = 1024
MIN_SIZE = 192  # the demo's checks hold from here: PHROSTY's 19 x 19 kernel needs room
MAX_SIZE = 16384  # a float64 pair of this side is 4 GiB, its subtraction's planes some 40
STARS = 3000  # as PHROSTY's fields have, at most one per PIXELS_PER_STAR pixels
PIXELS_PER_STAR = 90  # (smaller fields, crowded with 3000 stars, leave too few pixels to fit)
#: The figure's file name: in the working directory by default, or in the folder given.
FIGURE = "accelmath-demo.png"
#: PHROSTY's configuration of the subtraction.
CONFIGURATION = {"half_width": 9, "kernel_order": 2, "background_order": 0,
                 "constant_ratio": True}
#: The checks the demo's result must pass: the recovered ratio within this relative error of
#: the injected, the residual noise within this relative difference of the expected.
RATIO_TOLERANCE = 1e-2
NOISE_TOLERANCE = 0.1


class DemoReport(NamedTuple):
    """What the demo measured (the numbers it prints)."""

    device: str
    size: int
    ratio_injected: float
    ratio_recovered: float
    noise_measured: float
    noise_expected: float
    transient_snr: float
    transient_found: bool
    timings: dict
    first_call_s: float
    warm_s: float
    total_s: float
    figure: str

    @property
    def failures(self):
        """The checks the result failed, in words (empty when it passed them all)."""
        failed = []
        if not abs(self.ratio_recovered / self.ratio_injected - 1) <= RATIO_TOLERANCE:
            failed.append(f"the recovered ratio is off by more than {RATIO_TOLERANCE:.0%}")
        if not abs(self.noise_measured / self.noise_expected - 1) <= NOISE_TOLERANCE:
            failed.append(f"the residual noise is off the expected by more than "
                          f"{NOISE_TOLERANCE:.0%}")
        if not self.transient_found:
            failed.append("the transient is not the brightest peak of the difference")
        return failed


class _Device(NamedTuple):
    name: str  # "cpu" or "cuda"
    like: object  # the array module the pair is made with
    label: str  # what the report says


def _gpu_module():
    """The GPU's array package and its label, ``(module, label)``, or None."""
    module = gpu_package()
    if module is None:
        return None
    name = "CuPy" if module.__name__ == "cupy" else module.__name__
    return module, f"{name} {module.__version__}"


def resolve_device(device="auto"):
    """The device the demo runs on: ``(name, array module, label)``.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"}
        ``"cuda"``: a GPU through CuPy, else torch with CUDA (an error if neither, or no usable
        GPU, or no cuFFT); ``"cpu"``: NumPy; ``"auto"``: the GPU where ``"cuda"`` would work,
        else the CPU.

    Returns
    -------
    tuple
        ``(name, like, label)``: ``"cuda"`` or ``"cpu"``, the module the arrays are made with,
        and a description for the report.

    Raises
    ------
    NoDeviceError
        ``device="cuda"`` on a machine where the GPU path cannot run; the message says why.

    Examples
    --------
    >>> from accelmath.subtraction._demo import resolve_device
    >>> name, like, label = resolve_device("cpu")
    >>> name, like.__name__
    ('cpu', 'numpy')
    """
    if device not in DEVICES:
        raise InvalidArgumentError(
            f"device={device!r} is not one of {', '.join(repr(d) for d in DEVICES)}")
    if device != "cpu":
        problem = gpu_problem()
        module = None if problem else _gpu_module()
        if module is None and problem is None:
            problem = "neither CuPy nor torch with CUDA is installed"
        if module is not None:
            return _Device("cuda", module[0], f"cuda: {gpu_name()}, {module[1]} arrays")
        if device == "cuda":
            raise NoDeviceError(f"--device cuda cannot run here: {problem}")
    cpu = f"cpu: NumPy {np.__version__} arrays, {os.cpu_count()} cores"
    if device == "auto":
        cpu += f" (the GPU path cannot run here: {problem})"
    return _Device("cpu", np, cpu)


class _Progress:
    """One line per stage on a stream; on a terminal each line overwrites the one before."""

    def __init__(self, stream, stages):
        self.stream = stream
        self.stages = stages
        self.index = 0
        self.terminal = bool(getattr(stream, "isatty", lambda: False)())
        self.width = 0

    def _show(self, text, end):
        if self.terminal:
            self.stream.write("\r" + text.ljust(self.width) + end)
            self.width = 0 if end else len(text)
        else:
            self.stream.write(text + "\n" if end else "")
        self.stream.flush()

    def start(self, what):
        self.index += 1
        self._show(f"[{self.index}/{self.stages}] {what} ...", "")
        self.what = what
        self.started = time.perf_counter()

    def done(self):
        seconds = time.perf_counter() - self.started
        last = self.index == self.stages
        self._show(f"[{self.index}/{self.stages}] {self.what}: {seconds:.2f} s",
                   "\n" if last or not self.terminal else "")
        return seconds


def _to_numpy(array):
    """A host NumPy copy of a NumPy, CuPy or torch array (a scalar stays a float)."""
    if np.isscalar(array):
        return float(array)
    return kind_of_array(array).to_numpy(array)


def _synchronize(like):
    """Wait for the GPU's queued work, so that a wall-clock time includes it."""
    name = getattr(like, "__name__", "")
    if name == "cupy":
        like.cuda.get_current_stream().synchronize()
    elif name == "torch":
        like.cuda.synchronize()


def _kernel_squares(result, shape, margin, points=9):
    """The sum of the squared kernel pixels, averaged over a ``points`` x ``points`` grid of
    positions at least ``margin`` from the edge (the kernel varies over the image)."""
    total = 0.0
    for row in np.linspace(margin, shape[0] - 1 - margin, points):
        for col in np.linspace(margin, shape[1] - 1 - margin, points):
            total += float(np.sum(result.kernel_at(row, col) ** 2))
    return total / points**2


class _Region(NamedTuple):
    pixels: np.ndarray  # bool: away from the edge and the transient
    margin: int  # the edge's width


def _region(shape, transient, half_width, sigma):
    """The pixels the noise is measured on: away from the edge (where the circular
    convolution wraps) and from the transient."""
    margin = 2 * half_width
    radius = 8.0 * sigma
    rows, cols = np.ogrid[:shape[0], :shape[1]]
    pixels = (rows - transient[0])**2 + (cols - transient[1])**2 > radius**2
    edge = np.zeros(shape, bool)
    edge[margin:shape[0] - margin, margin:shape[1] - margin] = True
    return _Region(pixels & edge, margin)


def _mean_square(sigma, pixels):
    """The mean of ``sigma**2`` over ``pixels`` (``sigma`` a number or a per-pixel map)."""
    sigma = _to_numpy(sigma)
    if np.ndim(sigma) == 0:
        return float(sigma) ** 2
    return float(np.mean(np.asarray(sigma, dtype=np.float64)[pixels] ** 2))


def _detection(difference, transient, region, sigma):
    """``(S/N, found, peak)`` of the transient in the difference smoothed by the PSF."""
    import scipy.ndimage

    smoothed = scipy.ndimage.gaussian_filter(difference, sigma, mode="wrap")
    noise = robust_std(smoothed[region.pixels])
    row, col = int(round(transient[0])), int(round(transient[1]))
    snr = float(smoothed[row, col]) / noise if noise > 0 else math.inf
    m = region.margin
    inner = smoothed[m:smoothed.shape[0] - m, m:smoothed.shape[1] - m]
    peak = np.unravel_index(int(np.argmax(inner)), inner.shape)
    peak = (int(peak[0]) + m, int(peak[1]) + m)
    found = math.hypot(peak[0] - transient[0], peak[1] - transient[1]) <= 2.0 * sigma
    return snr, found, peak


def figure_path(output=None):
    """The absolute path of the PNG file the demo writes for ``output``.

    Parameters
    ----------
    output : str or os.PathLike, optional
        The file to write; an existing folder (or a path ending in a separator) for
        :data:`FIGURE` inside it; None for :data:`FIGURE` in the working directory.

    Returns
    -------
    str
        The file's absolute path (its folder may not exist yet: :func:`run_demo` makes it).

    Raises
    ------
    InvalidArgumentError
        ``output`` is an empty string.

    Examples
    --------
    >>> import os, tempfile
    >>> from accelmath.subtraction._demo import figure_path
    >>> folder = tempfile.mkdtemp()
    >>> figure_path(folder) == os.path.join(folder, "accelmath-demo.png")
    True
    >>> figure_path(os.path.join(folder, "run-1.png")) == os.path.join(folder, "run-1.png")
    True
    """
    if output is None:
        return os.path.abspath(FIGURE)
    path = os.fspath(output)
    if not path:
        raise InvalidArgumentError(f"output={output!r}: expected a file or folder name")
    separators = tuple(filter(None, (os.sep, os.altsep)))
    if os.path.isdir(path) or path.endswith(separators):
        path = os.path.join(path, FIGURE)
    return os.path.abspath(path)


def _make_folder(folder, output):
    """Make the figure's folder, or say which ``output`` it cannot be made for, and why."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        given = None if output is None else os.fspath(output)
        raise OSError(f"output={given!r}: the figure's folder {folder} cannot be made: "
                      f"{exc.strerror} ({exc.filename})") from exc


_PNG = b"\x89PNG\r\n\x1a\n"  # (the first bytes of every PNG file)


def _check_figure(path, output):
    """Refuse a figure path where something else than a figure is: a link (followed, it
    would write someone's file), anything but a regular file, or a file that is not a PNG
    image (an earlier figure is replaced; :func:`~._figure.draw_figure` writes beside it and
    renames, so a link planted meanwhile is replaced, not followed)."""
    if not os.path.lexists(path):
        return
    given = None if output is None else os.fspath(output)
    if os.path.islink(path) or not os.path.isfile(path):
        raise InvalidArgumentError(f"output={given!r}: {path} is a link or not a regular file; "
                                   "the demo writes its figure to a file of its own (pass "
                                   "--output)")
    try:
        with open(path, "rb") as f:
            head = f.read(len(_PNG))
    except OSError as exc:
        raise InvalidArgumentError(f"output={given!r}: {path} cannot be read: "
                                   f"{exc.strerror}") from None
    if head != _PNG:
        raise InvalidArgumentError(f"output={given!r}: {path} exists and is not a PNG image; "
                                   "the demo replaces only an earlier figure (pass --output)")


def _fresh_seed():
    """A random seed for a run not given one, small enough to type back in."""
    return int(np.random.default_rng().integers(1, 2**31))


def run_demo(size=None, device="auto", output=None, seed=None, out=None, progress=None):
    """Make a synthetic star-field pair, subtract it, check the result and draw it.

    Parameters
    ----------
    size : int, optional
        The images' side in pixels: 4088 on a GPU and 1024 on the CPU by default, at least
        :data:`MIN_SIZE`. The field holds 3000 stars, fewer on images of under 520 x 520
        pixels (one star per 90 pixels at most).
    device : {"auto", "cpu", "cuda"}
        Where it runs (see :func:`resolve_device`).
    output : str or os.PathLike, optional
        The PNG file the figure is written to (its folder made if missing); an existing
        folder for ``accelmath-demo.png`` inside it; by default ``accelmath-demo.png`` in the
        working directory (see :func:`figure_path`).
    seed : int, optional
        The random seed of the synthetic pair. Without one a fresh seed is drawn; the report
        prints the seed used either way, so that the run can be repeated.
    out, progress : file, optional
        Where the report (``sys.stdout``) and the per-stage progress (``sys.stderr``) go.

    Returns
    -------
    DemoReport
        The numbers the report prints; its ``failures`` list the checks the result failed
        (the ratio within ``RATIO_TOLERANCE``, the noise within ``NOISE_TOLERANCE``, the
        transient found).

    Raises
    ------
    NoDeviceError
        ``device="cuda"`` where no GPU path can run.
    OSError
        The figure's folder cannot be made or its file written.

    Examples
    --------
    >>> import io, tempfile
    >>> from accelmath.subtraction._demo import run_demo
    >>> report = run_demo(size=128, device="cpu", output=tempfile.mkdtemp(), seed=1,
    ...                   out=io.StringIO(), progress=io.StringIO())  # doctest: +SKIP
    >>> abs(report.ratio_recovered / report.ratio_injected - 1) < 1e-2  # doctest: +SKIP
    True
    """
    start = time.perf_counter()
    name, like, label = resolve_device(device)
    from accelmath import subtraction
    from accelmath.subtraction._figure import FigureImages, draw_figure

    out = sys.stdout if out is None else out
    progress = _Progress(sys.stderr if progress is None else progress, 6)
    size = (GPU_SIZE if name == "cuda" else CPU_SIZE) if size is None else int(size)
    if size < MIN_SIZE:
        raise InvalidArgumentError(
            f"size={size}: the demo takes images of at least {MIN_SIZE} x {MIN_SIZE} pixels "
            "(PHROSTY's 19 x 19 kernel and its polynomial terms need that many to fit)")
    if size > MAX_SIZE:
        raise InvalidArgumentError(
            f"size={size}: the demo takes images of at most {MAX_SIZE} x {MAX_SIZE} pixels "
            "(a float64 pair of that side is 4 GiB, and its subtraction holds some ten times "
            "that)")
    seed = _fresh_seed() if seed is None else int(seed)
    if not 0 <= seed < 2**63:
        raise InvalidArgumentError(f"seed={seed}: a seed is a whole number from 0 to 2**63 - 1")
    figure = figure_path(output)
    _make_folder(os.path.dirname(figure), output)  # (before the work: fail at once)
    _check_figure(figure, output)
    shape = (size, size)

    progress.start(f"making a {size} x {size} star-field pair, seed {seed}")
    stars = min(STARS, size * size // PIXELS_PER_STAR)
    pair = subtraction.synthetic_pair(size, seed=seed, stars=stars, like=like)
    _synchronize(like)
    progress.done()

    progress.start("planning the subtraction")
    subtractor = subtraction.Subtractor(shape, **CONFIGURATION, like=like)
    _synchronize(like)
    progress.done()
    with subtractor:
        progress.start("first subtraction (plans made, code compiled or loaded)")
        subtractor.subtract(pair.reference, pair.science, mask=pair.mask)
        _synchronize(like)
        first = progress.done()
        progress.start("warm subtraction")
        result = subtractor.subtract(pair.reference, pair.science, mask=pair.mask, timings=True)
        _synchronize(like)
        warm = progress.done()
        # to the host before the subtractor lets its buffers go
        difference = np.asarray(_to_numpy(result.difference), dtype=np.float64)

    progress.start("measuring the residual and the transient")
    half_width = CONFIGURATION["half_width"]
    sigma = float(pair.sigma_science)
    transient = tuple(float(v) for v in pair.transient)
    region = _region(shape, transient, half_width, sigma)
    residual = difference[region.pixels]
    measured = robust_std(residual)
    squares = _kernel_squares(result, shape, region.margin)
    expected = math.sqrt(_mean_square(pair.noise_science, region.pixels)
                         + _mean_square(pair.noise_reference, region.pixels) * squares)
    snr, found, peak = _detection(difference, transient, region, sigma)
    progress.done()

    report = DemoReport(label, size, float(pair.ratio), float(result.ratio), measured, expected,
                        snr, found, dict(result.timings), first, warm, math.nan, figure)
    progress.start(f"drawing the figure into {os.path.basename(figure)}")
    images = FigureImages(np.asarray(_to_numpy(pair.reference), dtype=np.float64),
                          np.asarray(_to_numpy(pair.science), dtype=np.float64),
                          difference, transient, residual, seed)
    draw_figure(figure, report, images)
    progress.done()
    report = report._replace(total_s=time.perf_counter() - start)
    out.write("\n".join(_report_lines(report, seed, transient, peak, region)) + "\n")
    out.flush()
    return report


def _report_lines(report, seed, transient, peak, region):
    r = report
    config = ", ".join(f"{k}={v}" for k, v in CONFIGURATION.items())
    error = abs(r.ratio_recovered / r.ratio_injected - 1)
    lines = [
        "accelmath demo: image subtraction (SFFT) of a synthetic star-field pair",
        f"device: {r.device}",
        f"images: {r.size} x {r.size} float64, seed {seed} (repeat with --seed {seed}); "
        f"PHROSTY's configuration ({config})",
        f"photometric ratio: injected {r.ratio_injected:.6f}, recovered {r.ratio_recovered:.6f} "
        f"(relative error {error:.1e})",
        f"residual noise: {r.noise_measured:.6g} measured, {r.noise_expected:.6g} expected "
        f"(ratio {r.noise_measured / r.noise_expected:.4f}; robust std of the difference over "
        f"{int(region.pixels.sum())} pixels away from the edge and the transient)",
        f"transient at ({transient[0]:.0f}, {transient[1]:.0f}), flux {transient[2]:.4g}: "
        f"S/N {r.transient_snr:.1f} in the smoothed difference; brightest peak at "
        f"({peak[0]}, {peak[1]}): {'found' if r.transient_found else 'NOT found'}",
        "warm subtraction, per stage:",
    ]
    width = max((len(stage) for stage in r.timings), default=0)
    lines += [f"  {stage:<{width}}  {seconds * 1e3:9.2f} ms"
              for stage, seconds in r.timings.items()]
    lines += [
        f"  {'sum':<{width}}  {sum(r.timings.values()) * 1e3:9.2f} ms",
        f"first subtraction: {r.first_call_s:.3f} s (plans made, code compiled or loaded); "
        f"warm: {r.warm_s:.3f} s",
        f"total wall time: {r.total_s:.2f} s (first call included, with the pair made, the "
        "checks and the figure)",
        f"figure: {r.figure}",
        "checks: " + ("passed" if not r.failures else "FAILED: " + "; ".join(r.failures)),
    ]
    return lines

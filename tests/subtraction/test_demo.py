"""``accelmath demo``: the device choice, the measured numbers against their own definitions,
the progress display, the seed, where the figure goes, the figure, and the command end to end
on the CPU (on the GPU where there is one)."""

import io
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accelmath.errors import InvalidArgumentError, NoDeviceError
from accelmath.subtraction import _demo, _figure
from accelmath.subtraction._demo import FIGURE, figure_path, resolve_device, run_demo

REPO = Path(__file__).resolve().parents[2]
SIZE = 512  # small enough for CI; smaller fields of 3000 stars are too crowded to fit well
SMALL = 256  # where only the seed and the files matter: fast, though too crowded to pass


def _png(path):
    """The figure's pixels, ``(height, width, 4)`` floats in [0, 1], as matplotlib reads them."""
    import matplotlib.image

    return matplotlib.image.imread(path, format="png")


def _seed_printed(printed):
    """The seed the report says the pair was made with, checking that it says how to repeat."""
    found = re.search(r"seed (\d+) \(repeat with --seed (\d+)\)", printed)
    assert found, printed
    assert found.group(1) == found.group(2)
    return int(found.group(1))


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One demo run on the CPU at SIZE: (report, printed report, progress, output folder, seed)."""
    seed = int(np.random.default_rng().integers(2**31))
    folder = tmp_path_factory.mktemp("demo")
    out, progress = io.StringIO(), io.StringIO()
    report = run_demo(size=SIZE, device="cpu", output=str(folder), seed=seed, out=out,
                      progress=progress)
    return report, out.getvalue(), progress.getvalue(), folder, seed


def test_the_ratio_is_recovered(demo_run):
    report, printed, _, _, _ = demo_run
    assert report.failures == [] and printed.endswith("\nchecks: passed\n")
    assert report.size == SIZE and report.device.startswith("cpu: NumPy")
    assert abs(report.ratio_recovered / report.ratio_injected - 1) < 1e-2
    assert (f"photometric ratio: injected {report.ratio_injected:.6f}, recovered "
            f"{report.ratio_recovered:.6f}") in printed


def test_the_numbers_are_what_they_say(demo_run):
    """The same pair subtracted here: the recovered ratio, the residual's std over the region
    the docstring describes, and the expected noise from the kernel pixels, each computed
    again from their definitions."""
    from accelmath import subtraction

    report, _, _, _, seed = demo_run
    stars = min(_demo.STARS, SIZE * SIZE // _demo.PIXELS_PER_STAR)
    pair = subtraction.synthetic_pair(SIZE, seed=seed, stars=stars)
    result = subtraction.subtract(pair.reference, pair.science, mask=pair.mask,
                                  **_demo.CONFIGURATION)
    assert result.ratio == pytest.approx(report.ratio_recovered, rel=1e-9)
    w = _demo.CONFIGURATION["half_width"]
    sigma = pair.sigma_science
    row, col = pair.transient[0], pair.transient[1]
    rr, cc = np.mgrid[:SIZE, :SIZE]
    keep = ((rr - row)**2 + (cc - col)**2 > (8 * sigma)**2)
    keep &= (rr >= 2 * w) & (rr < SIZE - 2 * w) & (cc >= 2 * w) & (cc < SIZE - 2 * w)
    difference = np.asarray(result.difference)
    values = difference[keep]  # their robust standard deviation: 1.4826 MAD
    robust = 1.4826 * np.median(np.abs(values - np.median(values)))
    assert report.noise_measured == pytest.approx(robust, rel=1e-9)
    # the kernel's pixels: the delta basis collapsed, c[ij, a, b] weighed by x^i y^j
    c = np.asarray(result.coefficients)
    order = _demo.CONFIGURATION["kernel_order"]
    exponents = [(i, j) for i in range(order + 1) for j in range(order + 1 - i)]
    squares = []
    for r in np.linspace(2 * w, SIZE - 1 - 2 * w, 9):
        for q in np.linspace(2 * w, SIZE - 1 - 2 * w, 9):
            x, y = (r + 1) / SIZE, (q + 1) / SIZE
            k = sum(x**i * y**j * c[t] for t, (i, j) in enumerate(exponents))
            k = k.copy()
            k[w, w] = 2 * k[w, w] - k.sum()
            squares.append(np.sum(k**2))

    def mean_square(s):
        return float(np.mean(np.broadcast_to(np.asarray(s, float), (SIZE, SIZE))[keep] ** 2))

    expected = math.sqrt(mean_square(pair.noise_science)
                         + mean_square(pair.noise_reference) * np.mean(squares))
    assert report.noise_expected == pytest.approx(expected, rel=1e-9)


def test_the_residual_matches_the_expected_noise(demo_run):
    report, printed, _, _, _ = demo_run
    assert 0.9 < report.noise_measured / report.noise_expected < 1.15
    assert "residual noise: " in printed and " expected (ratio " in printed


def test_the_transient_is_found(demo_run):
    report, printed, _, _, _ = demo_run
    assert report.transient_found and report.transient_snr > 5
    assert "brightest peak at" in printed and ": found" in printed


def test_a_crowded_field_whose_excluded_light_spreads_far_still_passes(tmp_path):
    """Seed 1493055523 at 512 x 512: the light left out around the transient reaches, star by
    star, the brightest star of the field; its mask needs more than a hundred rounds to stop
    carrying light into itself, and a mask cut short biased the ratio by 3%."""
    from accelmath import subtraction
    from accelmath.subtraction._ops import kind_of
    from accelmath.subtraction._synthetic import _convolve, _light

    seed = 1493055523
    pair = subtraction.synthetic_pair(SIZE, seed=seed)
    catalogue = np.random.default_rng(seed)
    position = catalogue.uniform(0.0, 1.0, (3000, 2)) * SIZE
    flux = 200.0 * catalogue.uniform(0.0, 1.0, 3000) ** (-1.0 / 1.5)
    light = _light(kind_of(None), (SIZE, SIZE), position, flux, pair.sigma_reference)
    carried = _convolve(kind_of(None), light * ~pair.mask, pair.kernel)
    assert carried[pair.mask].max() <= 0.1 * max(pair.noise_science, pair.noise_reference)
    report = run_demo(size=SIZE, device="cpu", output=str(tmp_path), seed=seed,
                      out=io.StringIO(), progress=io.StringIO())
    assert report.failures == []


def test_the_timings_and_wall_time_are_printed(demo_run):
    report, printed, _, _, _ = demo_run
    assert report.timings and all(seconds >= 0 for seconds in report.timings.values())
    lines = printed.splitlines()
    start = lines.index("warm subtraction, per stage:")
    for offset, stage in enumerate(report.timings, start + 1):
        assert lines[offset].split()[0] == stage.split()[0] and lines[offset].endswith(" ms")
    assert report.total_s >= report.first_call_s + report.warm_s
    assert any(line.startswith("first subtraction: ") for line in lines)
    assert any(line.startswith("total wall time: ") and "first call included" in line
               for line in lines)


def test_the_progress_is_a_line_per_stage(demo_run):
    _, _, progress, _, _ = demo_run
    lines = progress.splitlines()
    assert len(lines) == 6 and "\r" not in progress
    for index, line in enumerate(lines, 1):
        assert line.startswith(f"[{index}/6] ") and line.endswith(" s")


def _region(pixels, left, bottom, width, height):
    """The pixels of a box given in figure fractions (from the bottom left, as matplotlib)."""
    rows, cols = pixels.shape[:2]
    top = int(round((1 - bottom - height) * rows))
    return pixels[top:int(round((1 - bottom) * rows)),
                  int(round(left * cols)):int(round((left + width) * cols))]


def _background(pixels):
    """The fraction of the pixels that are the figure's white background."""
    return float(np.mean(np.all(pixels[..., :3] > 0.99, axis=-1)))


def _marked(pixels):
    """The pixels in the transient's mark colour."""
    from matplotlib.colors import to_rgb

    return np.all(np.abs(pixels[..., :3] - np.array(to_rgb(_figure._MARK))) < 0.02, axis=-1)


def test_the_figure_is_a_png_with_text_and_panels(demo_run):
    report, printed, _, folder, seed = demo_run
    path = folder / FIGURE
    assert report.figure == str(path) and f"figure: {path}" in printed
    pixels = _png(path)
    assert pixels.shape == (round(_figure._HEIGHT * _figure._DPI),
                            round(_figure._WIDTH * _figure._DPI), 4)
    # the title band (above the top row's panel titles) holds text: neither uniform nor blank
    title = _region(pixels, 0.0, 0.93, 1.0, 0.07)
    assert title[..., :3].std() > 0.05 and 0.01 < 1 - _background(title) < 0.5
    # the panels fill the figure (text alone would leave more than 95% of it background), and
    # the image panels show images, not a flat colour
    assert _background(pixels) < 0.75
    for column in range(3):
        panel = _region(pixels, _figure._LEFT + column * _figure._COLUMN, _figure._BOTTOMS[0],
                        _figure._SIDE, 0.3)
        assert panel[..., :3].std() > 0.05 and _background(panel) < 0.5, column
    # the summary panel, bottom right, holds lines of text
    summary = _region(pixels, _figure._LEFT + 2 * _figure._COLUMN, _figure._BOTTOMS[1], 0.3,
                      0.344)
    assert 0.01 < 1 - _background(summary) < 0.4
    # the transient is circled in the difference (top right) and in the zoom (bottom left)
    top_right = _region(pixels, _figure._LEFT + 2 * _figure._COLUMN, _figure._BOTTOMS[0],
                        _figure._SIDE, 0.35)
    bottom_left = _region(pixels, _figure._LEFT, _figure._BOTTOMS[1], _figure._SIDE, 0.35)
    assert _marked(top_right).sum() > 50 and _marked(bottom_left).sum() > 200
    assert _marked(pixels).sum() == _marked(top_right).sum() + _marked(bottom_left).sum()


def test_the_figure_draws_its_text():
    """The figure's words, caught on their way to the Agg renderer."""
    from matplotlib.backends.backend_agg import RendererAgg

    noise = np.random.default_rng().normal(0.0, 2.0, (200, 200))
    images = _figure.FigureImages(noise, noise, noise, (150.0, 40.0, 80.0), noise.ravel(), 77)
    report = _demo.DemoReport("cpu: NumPy, 2 cores (the GPU path cannot run here: no GPU)", 200,
                              1.3, 1.2999, 2.01, 2.0, 31.5, True, {}, 0.5, 0.25, 1.0, "")
    drawn = []
    original = RendererAgg.draw_text

    def draw_text(self, gc, x, y, text, *args, **kwargs):
        drawn.append(text)
        return original(self, gc, x, y, text, *args, **kwargs)

    from unittest import mock

    with mock.patch.object(RendererAgg, "draw_text", draw_text):
        _figure.draw_figure(io.BytesIO(), report, images)
    text = "\n".join(drawn)
    assert ("SFFT image subtraction of a synthetic 200 x 200 star field (seed 77)\n"
            "cpu: NumPy, 2 cores; warm subtraction 0.250 s") in text
    for words in ("reference", "science", "difference: science \u2212 kernel \u2297 reference",
                  "transient, S/N 31.5", "difference, 64 x 64 around the transient",
                  "residual noise", "Gaussian of the expected noise", "difference (counts)",
                  "--seed 77", "passed"):
        assert words in text, words
    assert text.count("counts") >= 4 + 2  # the four colour bars, the histogram's axis, legend


def test_large_images_are_shown_as_block_means():
    image = np.random.default_rng().normal(size=(4088, 4088))
    factor = _figure._reduction(image.shape, _figure.PANEL)
    shown = _figure._thumbnail(image, factor)
    assert factor == 8 and shown.shape == (511, 511)
    assert shown[3, 5] == pytest.approx(image[24:32, 40:48].mean(), rel=1e-12)
    small = image[:300, :300]  # at most a panel: drawn pixel for pixel
    assert _figure._reduction(small.shape, _figure.PANEL) == 1
    np.testing.assert_array_equal(_figure._thumbnail(small, 1), small)


@pytest.mark.parametrize("shape,transient,window", [
    ((512, 512), (200.0, 300.0), (168, 268, 64)),  # centred
    ((512, 512), (3.0, 510.0), (0, 448, 64)),  # moved inside at a corner
    ((40, 50), (20.0, 25.0), (0, 5, 40)),  # the image shorter than the zoom
])
def test_the_zoom_window(shape, transient, window):
    assert _figure.zoom_window(shape, (*transient, 1.0)) == window
    top, left, side = window
    assert 0 <= top <= shape[0] - side and 0 <= left <= shape[1] - side
    assert top <= transient[0] < top + side and left <= transient[1] < left + side


def test_a_run_without_a_seed_prints_the_one_it_drew_and_repeats(tmp_path):
    """No seed: one is drawn and printed; given back, it makes the same pair and numbers.
    (At SIZE: a smaller field of a random seed may be too crowded to subtract at all.)"""
    def run(seed):
        out = io.StringIO()
        report = run_demo(size=SIZE, device="cpu", output=str(tmp_path), seed=seed, out=out,
                          progress=io.StringIO())
        return report, _seed_printed(out.getvalue())

    first, drawn = run(None)
    again, repeated = run(drawn)
    assert repeated == drawn
    for field in ("ratio_injected", "ratio_recovered", "noise_measured", "noise_expected",
                  "transient_snr", "transient_found"):
        assert getattr(again, field) == getattr(first, field), field
    assert len({_demo._fresh_seed() for _ in range(3)}) == 3  # fresh each time


def test_the_seed_given_is_printed(demo_run):
    _, printed, _, _, seed = demo_run
    assert _seed_printed(printed) == seed


def test_where_the_figure_goes(tmp_path, monkeypatch):
    from accelmath.errors import InvalidArgumentError

    monkeypatch.chdir(tmp_path)
    assert figure_path() == str(tmp_path / FIGURE)
    assert figure_path(tmp_path) == str(tmp_path / FIGURE)  # an existing folder
    assert figure_path("x.png") == str(tmp_path / "x.png")  # a file, relative
    assert figure_path(tmp_path / "new" / "y.png") == str(tmp_path / "new" / "y.png")
    assert figure_path("later" + os.sep) == str(tmp_path / "later" / FIGURE)
    (tmp_path / "d.png").mkdir()  # a folder, whatever its name
    assert figure_path("d.png") == str(tmp_path / "d.png" / FIGURE)
    with pytest.raises(InvalidArgumentError, match="output=''"):
        figure_path("")


def test_a_folder_that_cannot_be_made_fails_before_the_work(tmp_path):
    (tmp_path / "a file").write_text("")
    target = tmp_path / "a file" / "x.png"
    progress = io.StringIO()
    with pytest.raises(OSError) as info:
        run_demo(size=SMALL, device="cpu", output=target, seed=3, out=io.StringIO(),
                 progress=progress)
    assert str(info.value).startswith(f"output={str(target)!r}: the figure's folder "
                                      f"{tmp_path / 'a file'} cannot be made: ")
    assert progress.getvalue() == ""


def test_the_figure_is_written_to_the_file_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "figures" / "run.png"  # its folder made
    report = run_demo(size=SMALL, device="cpu", output=target, seed=3, out=io.StringIO(),
                      progress=io.StringIO())
    assert report.figure == str(target) and target.is_file()
    assert _png(target).shape[2] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures"]
    report = run_demo(size=SMALL, device="cpu", seed=3, out=io.StringIO(),
                      progress=io.StringIO())  # by default, into the working directory
    assert report.figure == str(tmp_path / FIGURE) and (tmp_path / FIGURE).is_file()


def test_the_figure_replaces_only_an_earlier_figure(tmp_path):
    """A link (someone's file behind it), a folder entry that is no regular file, a file
    that is no PNG: refused before the work, and left as they are; an earlier figure is
    replaced, through a new file renamed into place."""
    from accelmath.errors import InvalidArgumentError

    theirs = tmp_path / "theirs.txt"
    theirs.write_text("someone's")
    link = tmp_path / "link.png"
    link.symlink_to(theirs)
    notes = tmp_path / "notes.png"
    notes.write_text("my notes")
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    for target, words in ((link, "is a link or not a regular file"),
                          (fifo, "is a link or not a regular file"),
                          (notes, "is not a PNG image")):
        progress = io.StringIO()
        with pytest.raises(InvalidArgumentError, match=words):
            run_demo(size=SMALL, device="cpu", output=target, seed=3, out=io.StringIO(),
                     progress=progress)
        assert progress.getvalue() == ""
    assert theirs.read_text() == "someone's" and notes.read_text() == "my notes"
    assert link.is_symlink()
    earlier = tmp_path / "earlier.png"
    run_demo(size=SMALL, device="cpu", output=earlier, seed=3, out=io.StringIO(),
             progress=io.StringIO())
    first = earlier.stat().st_ino
    run_demo(size=SMALL, device="cpu", output=earlier, seed=4, out=io.StringIO(),
             progress=io.StringIO())
    assert earlier.stat().st_ino != first and _png(earlier).shape[2] == 4
    assert not [p for p in tmp_path.iterdir()
                if p.name.endswith(".tmp") or p.name.startswith(".accelmath-")]


def test_failed_checks_are_named(demo_run):
    report = demo_run[0]
    wrong = report._replace(ratio_recovered=report.ratio_injected * 1.02, transient_found=False,
                            noise_measured=report.noise_expected * 1.2)
    assert wrong.failures == ["the recovered ratio is off by more than 1%",
                              "the residual noise is off the expected by more than 10%",
                              "the transient is not the brightest peak of the difference"]
    assert report._replace(noise_measured=report.noise_expected * 0.95).failures == []


def test_the_progress_overwrites_itself_on_a_terminal(tmp_path):
    stream = _Terminal()
    progress = _demo._Progress(stream, 2)
    progress.start("one")
    progress.done()
    progress.start("two")
    progress.done()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith(" s\n")
    assert text.count("\r") == 4 and "[1/2] one: " in text and "[2/2] two: " in text


def test_the_device_choice():
    from accelmath._core.gpu.device import gpu_available

    assert resolve_device("cpu")[:2] == ("cpu", np)
    with pytest.raises(InvalidArgumentError, match="device='tpu' is not one of"):
        resolve_device("tpu")
    if not gpu_available():
        name, _, label = resolve_device("auto")
        assert name == "cpu" and "(the GPU path cannot run here: no usable GPU" in label
        with pytest.raises(NoDeviceError, match="--device cuda cannot run here: no usable GPU"):
            resolve_device("cuda")


def test_the_command_end_to_end(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    result = subprocess.run(
        [sys.executable, "-m", "accelmath", "demo", "--size", "512", "--device", "cpu",
         "--seed", "5", "--output", "new.png"], capture_output=True, text=True,
        env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("accelmath demo: ")
    assert result.stdout.splitlines()[-1] == "checks: passed"
    assert "images: 512 x 512 float64, seed 5 (repeat with --seed 5)" in result.stdout
    assert len(result.stderr.splitlines()) == 6
    # --output names the file (not a folder of that name), relative to the working directory
    assert (tmp_path / "new.png").is_file() and os.listdir(tmp_path) == ["new.png"]
    assert f"figure: {tmp_path / 'new.png'}" in result.stdout


@pytest.mark.gpu
def test_the_demo_on_cupy(cp, tmp_path):
    report = run_demo(size=1024, device="cuda", output=str(tmp_path), seed=11,
                      out=io.StringIO(), progress=io.StringIO())
    assert "CuPy" in report.device
    assert abs(report.ratio_recovered / report.ratio_injected - 1) < 1e-2
    assert 0.9 < report.noise_measured / report.noise_expected < 1.15
    assert report.transient_found and (tmp_path / FIGURE).exists()


@pytest.mark.gpu
def test_the_demo_on_torch(torch_cuda, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as where CuPy is not installed
    report = run_demo(size=1024, device="cuda", output=str(tmp_path), seed=12,
                      out=io.StringIO(), progress=io.StringIO())
    assert "torch" in report.device
    assert abs(report.ratio_recovered / report.ratio_injected - 1) < 1e-2
    assert report.transient_found and (tmp_path / FIGURE).exists()


@pytest.mark.gpu
def test_the_demo_at_its_gpu_size(cp, tmp_path):
    out = io.StringIO()
    report = run_demo(device="auto", output=str(tmp_path), seed=13, out=out,
                      progress=io.StringIO())
    assert report.size == 4088 and report.device.startswith("cuda: ")
    assert report.failures == [] and out.getvalue().endswith("\nchecks: passed\n")
    assert 0.95 < report.noise_measured / report.noise_expected < 1.05


@pytest.mark.parametrize("size, seed", [(192, 1), (256, 2)])
def test_small_fields_are_less_crowded_and_pass(size, seed, tmp_path):
    """(Fixed seeds: at these sizes a fit has few pixels, and its checks are tight.)"""
    report = run_demo(size=size, device="cpu", output=str(tmp_path), seed=seed,
                      out=io.StringIO(), progress=io.StringIO())
    assert report.failures == [], (seed, report)


def test_a_size_too_small_for_the_kernel_or_too_large_is_refused(tmp_path):
    for size, words in ((128, "at least 192 x 192"), (16385, "at most 16384 x 16384"),
                        (10 ** 23, "at most 16384")):
        with pytest.raises(InvalidArgumentError, match=words):
            run_demo(size=size, device="cpu", output=str(tmp_path), out=io.StringIO(),
                     progress=io.StringIO())

"""``accelmath demo``: the device choice, the measured numbers against their own definitions,
the progress display, the figure, and the command end to end on the CPU (on the GPU where
there is one)."""

import io
import math
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from accelmath.errors import InvalidArgumentError, NoDeviceError
from accelmath.subtraction import _demo
from accelmath.subtraction._demo import FIGURE, resolve_device, run_demo

REPO = Path(__file__).resolve().parents[2]
SIZE = 512  # small enough for CI; smaller fields of 3000 stars are too crowded to fit well


def _png_pixels(path):
    """The pixels of an 8-bit grayscale PNG the demo wrote (checked chunk by chunk)."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat = 8, b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        kind, body = data[position + 4:position + 8], data[position + 8:position + 8 + length]
        assert struct.unpack(">I", data[position + 8 + length:position + 12 + length])[0] == \
            zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert (depth, color) == (8, 0)
        idat += body if kind == b"IDAT" else b""
        position += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, width + 1)
    return rows[:, 1:]


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
    pair = subtraction.synthetic_pair(SIZE, seed=seed)
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


def test_the_figure_shows_four_panels(demo_run):
    from accelmath import subtraction
    from accelmath.subtraction._png import asinh_stretch

    report, printed, _, folder, seed = demo_run
    path = folder / FIGURE
    assert report.figure == str(path) and f"figure: {path}" in printed
    pixels = _png_pixels(path)
    side = SIZE  # below the panel size: shown pixel for pixel
    zoom = _demo.ZOOM * max(1, side // _demo.ZOOM)
    assert pixels.shape == (side, 3 * side + zoom + 3 * 4)
    for column in (side, 2 * side + 4, 3 * side + 8):  # the separators
        assert (pixels[:, column:column + 4] == 255).all()
    pair = subtraction.synthetic_pair(SIZE, seed=seed)
    np.testing.assert_array_equal(pixels[:, :side], asinh_stretch(pair.reference))
    np.testing.assert_array_equal(pixels[:, side + 4:2 * side + 4], asinh_stretch(pair.science))
    # the difference: mid-gray noise, the transient bright at its place
    difference = pixels[:, 2 * side + 8:3 * side + 8].astype(int)
    assert abs(np.median(difference) - 128) < 40
    row, col = (int(round(v)) for v in pair.transient[:2])
    assert difference[row - 1:row + 2, col - 1:col + 2].mean() > 200
    shown = pixels[:, 3 * side + 12:].astype(int)  # the zoom, padded to the panels' height
    top = (side - zoom) // 2
    middle = top + zoom // 2
    assert shown[middle - 3:middle + 3, zoom // 2 - 3:zoom // 2 + 3].mean() > 190
    assert (shown[:top] == 128).all()


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
         "--seed", "5", "--output", str(tmp_path / "new")], capture_output=True, text=True,
        env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("accelmath demo: ")
    assert result.stdout.splitlines()[-1] == "checks: passed"
    assert "images: 512 x 512 float64, seed 5" in result.stdout
    assert len(result.stderr.splitlines()) == 6
    assert (tmp_path / "new" / FIGURE).exists()


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

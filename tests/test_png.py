"""The demo's PNG writer: the file decodes (signature, chunks and their CRCs, IHDR, the
inflated rows) back to the pixels written; the stretch and the panel layout."""

import struct
import zlib

import numpy as np
import pytest

from accelmath.errors import InvalidArgumentError
from accelmath.subtraction._png import asinh_stretch, panels, write_png


def _decode(data):
    """A minimal, independent PNG reader for 8-bit grayscale, filter-0 files: checks every
    chunk's CRC and returns ``(header, pixels, chunk types)``."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks = 8, []
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length:position + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, f"bad CRC in {kind}"
        chunks.append((kind, body))
        position += 12 + length
    assert position == len(data)
    kinds = [kind for kind, _ in chunks]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
    header = struct.unpack(">IIBBBBB", chunks[0][1])
    width, height = header[:2]
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    rows = np.frombuffer(raw, np.uint8).reshape(height, width + 1)
    assert (rows[:, 0] == 0).all()  # filter type None
    return header, rows[:, 1:], kinds


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (64, 3), (50, 200)])
def test_the_file_decodes_to_the_pixels(tmp_path, shape):
    pixels = np.random.default_rng().integers(0, 256, shape, dtype=np.uint8)
    path = tmp_path / "x.png"
    write_png(path, pixels)
    header, decoded, kinds = _decode(path.read_bytes())
    assert header == (shape[1], shape[0], 8, 0, 0, 0, 0)  # width, height, 8-bit grayscale
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]
    np.testing.assert_array_equal(decoded, pixels)


def test_a_strided_view_is_written_as_its_values(tmp_path):
    base = np.random.default_rng().integers(0, 256, (30, 40), dtype=np.uint8)
    view = base[::3, ::-2]
    write_png(tmp_path / "v.png", view)
    np.testing.assert_array_equal(_decode((tmp_path / "v.png").read_bytes())[1], view)


@pytest.mark.parametrize("bad", [np.zeros((4, 4)), np.zeros((4, 4, 3), np.uint8),
                                 np.zeros((0, 4), np.uint8), np.zeros(5, np.uint8)])
def test_what_is_not_a_grayscale_image_is_refused(tmp_path, bad):
    with pytest.raises(InvalidArgumentError, match="2-D uint8"):
        write_png(tmp_path / "bad.png", bad)


def test_the_stretch_maps_the_percentiles_to_black_and_white():
    image = np.random.default_rng().standard_normal((64, 64)) * 5 + 3
    levels = asinh_stretch(image, low=1, high=99)
    lo, hi = np.percentile(image, [1, 99])
    assert levels.dtype == np.uint8 and levels.shape == image.shape
    assert (levels[image <= lo] == 0).all() and (levels[image >= hi] == 255).all()
    order = np.argsort(image, axis=None)
    assert (np.diff(levels.ravel()[order].astype(int)) >= 0).all()  # monotone


def test_the_stretch_follows_the_asinh_curve():
    image = np.random.default_rng().uniform(-1, 7, (40, 30))
    softening = 8.0
    lo, hi = np.percentile(image, [0, 100])
    t = (image - lo) / (hi - lo)
    expected = np.round(np.arcsinh(softening * t) / np.arcsinh(softening) * 255)
    np.testing.assert_array_equal(asinh_stretch(image, 0, 100, softening), expected)


def test_the_symmetric_stretch_puts_zero_at_mid_gray():
    image = np.random.default_rng().standard_normal((32, 32))
    image[0, 0] = 0.0
    levels = asinh_stretch(image, symmetric=True)
    assert levels[0, 0] == 128
    assert (levels[image > 0] >= 128).all() and (levels[image < 0] <= 128).all()


def test_a_constant_or_empty_image_is_black():
    assert (asinh_stretch(np.full((3, 3), 2.5)) == 0).all()
    assert (asinh_stretch(np.full((2, 2), np.nan)) == 0).all()


def test_panels_side_by_side_with_separators():
    rng = np.random.default_rng()
    a, b, c = (rng.integers(0, 256, (5, w), dtype=np.uint8) for w in (3, 4, 2))
    joined = panels([a, b, c], separator=2, gray=200)
    assert joined.shape == (5, 3 + 2 + 4 + 2 + 2)
    np.testing.assert_array_equal(joined[:, :3], a)
    assert (joined[:, 3:5] == 200).all() and (joined[:, 9:11] == 200).all()
    np.testing.assert_array_equal(joined[:, 5:9], b)
    np.testing.assert_array_equal(joined[:, 11:], c)
    with pytest.raises(InvalidArgumentError, match="one height"):
        panels([a, np.zeros((4, 2), np.uint8)])

"""A small PNG writer for 8-bit grayscale images, and the stretch that makes one of an image.

NumPy, :mod:`zlib` and :mod:`struct` only: the demo draws its figure without matplotlib.
A PNG file is the 8-byte signature and three chunks (IHDR: width, height, bit depth 8, color
type 0 = grayscale; IDAT: the rows, each preceded by its filter byte 0, deflated; IEND), each
chunk its length, type, data and the CRC-32 of type and data.
"""

import struct
import zlib

import numpy as np

from accelmath.errors import InvalidArgumentError

__all__ = ["asinh_stretch", "panels", "write_png"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def write_png(path, pixels):
    """Write a 2-D ``uint8`` array as an 8-bit grayscale PNG file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced if it exists).
    pixels : numpy.ndarray
        2-D, ``uint8``: row 0 is the top of the picture, 0 black and 255 white.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from accelmath.subtraction._png import write_png
    >>> path = os.path.join(tempfile.mkdtemp(), "ramp.png")
    >>> write_png(path, np.arange(256, dtype=np.uint8).reshape(16, 16))
    >>> open(path, "rb").read(8)
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    pixels = np.asarray(pixels)
    if pixels.ndim != 2 or pixels.dtype != np.uint8 or 0 in pixels.shape:
        raise InvalidArgumentError(
            f"pixels must be a non-empty 2-D uint8 array, not {pixels.dtype} of shape "
            f"{pixels.shape}")
    height, width = pixels.shape
    rows = np.empty((height, width + 1), np.uint8)
    rows[:, 0] = 0  # filter type None on every row
    rows[:, 1:] = pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(SIGNATURE + _chunk(b"IHDR", header)
                + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))


def asinh_stretch(image, low=0.5, high=99.5, softening=10.0, symmetric=False):
    """An image as 8-bit gray levels: clipped to its percentiles, then an asinh curve.

    Parameters
    ----------
    image : array_like
        2-D, real.
    low, high : float
        The percentiles mapped to black and white. With ``symmetric``, the range is
        ``[-v, v]`` with ``v`` the larger absolute of the two (a difference image, zero gray).
    softening : float
        How strongly faint levels are lifted: ``asinh(softening * t) / asinh(softening)`` of
        the clipped level ``t`` in [0, 1] (near linear for small values).
    symmetric : bool
        Center the range on zero.

    Returns
    -------
    numpy.ndarray
        ``uint8``, the shape of ``image``.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.subtraction._png import asinh_stretch
    >>> asinh_stretch(np.array([[0.0, 1.0], [2.0, 3.0]]), low=0, high=100).tolist()
    [[0, 163], [221, 255]]
    """
    image = np.asarray(image, dtype=np.float64)
    finite = image[np.isfinite(image)]
    if finite.size == 0:
        return np.zeros(image.shape, np.uint8)
    lo, hi = np.percentile(finite, [low, high])
    if symmetric:
        hi = max(abs(lo), abs(hi))
        lo = -hi
    span = hi - lo if hi > lo else 1.0
    level = np.clip((np.nan_to_num(image, nan=lo) - lo) / span, 0.0, 1.0)
    if symmetric:  # the curve on either side of zero gray
        centered = 2.0 * level - 1.0
        level = 0.5 + 0.5 * np.arcsinh(softening * centered) / np.arcsinh(softening)
    else:
        level = np.arcsinh(softening * level) / np.arcsinh(softening)
    return np.round(level * 255.0).astype(np.uint8)


def panels(images, separator=4, gray=255):
    """Put ``uint8`` images of one height side by side, with a thin separator between them.

    Parameters
    ----------
    images : sequence of numpy.ndarray
        2-D ``uint8`` images, all of one height.
    separator : int
        The separator's width in pixels.
    gray : int
        The separator's gray level.

    Returns
    -------
    numpy.ndarray
        ``uint8``, the images' height by their widths plus the separators.

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.subtraction._png import panels
    >>> panels([np.zeros((2, 3), np.uint8), np.zeros((2, 2), np.uint8)], separator=1).shape
    (2, 6)
    """
    heights = {image.shape[0] for image in images}
    if len(heights) != 1:
        raise InvalidArgumentError(f"the panels must have one height, not {sorted(heights)}")
    height = heights.pop()
    line = np.full((height, separator), gray, np.uint8)
    parts = []
    for index, image in enumerate(images):
        if index:
            parts.append(line)
        parts.append(image)
    return np.concatenate(parts, axis=1)

"""FITS images in and out (``astropy.io.fits``): :func:`read_pair` reads a reference, a
science image and an optional mask, checked, and :func:`write_difference` writes a difference
image with the science image's header (its WCS kept) and a record of the fit.

FITS stores numbers big-endian. The images are read memory-mapped and converted once to the
machine's byte order (one copy, made here, stated), so that no later subtraction converts
them again on each call.
"""

import bz2
import contextlib
import functools
import gzip
import lzma
import math
import os
import re
import socket
import stat
import uuid
import warnings
from typing import NamedTuple

import numpy

from accelmath.errors import InvalidArgumentError

__all__ = ["FitsPair", "read_pair", "write_beside", "write_difference"]

# the header records of a difference image: keyword -> comment
RECORDS = {"AMRATIO": "photometric ratio, science / reference",
           "AMHALFW": "kernel half-width (kernel 2w+1 wide)",
           "AMKORD": "degree of the kernel's spatial variation",
           "AMBORD": "degree of the differential background",
           "AMCONV": "the image the kernel convolved",
           "AMVERS": "accelmath version of this difference"}


class FitsPair(NamedTuple):
    """A reference and a science image read from FITS files, with the mask and the science
    image's header.

    Attributes
    ----------
    reference, science : array
        The images (2-D, the machine's byte order, float32 or float64 as stored; integer
        images as float64), on the device of ``like``.
    mask : array or None
        True where the solve pass uses the pixel (see :func:`read_pair`).
    header : astropy.io.fits.Header
        The science image's header, for the difference image.
    paths : tuple of str
        The files read: reference, science, and the mask's where there is one.
    invalid : numpy.ndarray or None
        True where either image is NaN or infinite (read as zero there), on the host; None
        where every pixel is finite. :func:`write_difference` writes NaN there.
    """

    reference: object
    science: object
    mask: object
    header: object
    paths: tuple
    invalid: object = None


def _fits():
    try:
        from astropy.io import fits
    except ImportError:
        raise ImportError("reading and writing FITS files takes astropy: pip install astropy "
                          '(or the "fits" extra: pip install ".[fits]")') from None
    return fits


def _image(path, hdu, what):
    """The data (native byte order) and header of the image HDU ``hdu`` of ``path`` (None:
    the first HDU holding an image)."""
    name = os.fspath(path)
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            found = _read_image(name, hdu, what)
        except Exception as exc:  # (said after the warnings: a truncation's comes first)
            error = exc
    for warning in caught:  # (astropy warns of a truncated file, then reads zeros)
        if "truncated" in str(warning.message):
            raise InvalidArgumentError(f"{what}: {name} is truncated ({warning.message})") \
                from None
    if error is not None:
        raise error
    for warning in caught:  # (passed on once the recording has ended: never to itself)
        warnings.warn_explicit(warning.message, warning.category, warning.filename,
                               warning.lineno)
    return found


def _unreadable(exc, what, name):
    """The error of data that cannot be read, naming the file."""
    return InvalidArgumentError(f"{what}: {name} cannot be read ({exc})")


def fits_in_memory(h, what, name):
    """Refuse, before its data are read, an image whose header declares more bytes than half
    this machine's memory (a compressed file declares what it likes); True otherwise."""
    header = h.header
    try:
        axes = range(1, int(header.get("NAXIS", 0)) + 1)
        size = math.prod(int(header.get(f"NAXIS{i}", 0)) for i in axes) * max(
            abs(int(header.get("BITPIX", 8))) // 8, 1)
    except (TypeError, ValueError, OverflowError):
        return True  # (astropy's reading says what is wrong)
    if size > _memory() // 2:
        raise InvalidArgumentError(f"{what}: the image of {name} declares {size} bytes, more "
                                   "than half of this machine's memory")
    return True


def _memory():
    """This machine's memory in bytes (unlimited where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return 2 ** 63


def _read_image(name, hdu, what):
    # (read, not memory-mapped: a mapped file cut short by its writer meanwhile would end the
    # process with SIGBUS; the data are copied into native numbers all the same)
    fits = _fits()
    if os.path.exists(name) and not os.path.isfile(name):  # (a pipe, /dev/zero: endless)
        raise InvalidArgumentError(f"{what}: {name} is not a regular file (a folder, a pipe, "
                                   "a device)")
    try:
        hdus = fits.open(name, memmap=False, lazy_load_hdus=False)
    except FileNotFoundError:
        raise InvalidArgumentError(f"{what}: no such file: {name}") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:  # (KeyError: a header's card)
        raise InvalidArgumentError(f"{what}: {name} is not a readable FITS file ({exc})") \
            from None
    with hdus:
        try:
            if hdu is None:
                found = next((h for h in hdus if h.is_image and fits_in_memory(h, what, name)
                              and h.data is not None), None)
                if found is None:
                    raise InvalidArgumentError(f"{what}: {name} holds no image HDU")
            else:
                found = hdus[hdu]
        except (KeyError, IndexError):
            raise InvalidArgumentError(f"{what}: {name} has no HDU {hdu!r} (it has "
                                       f"{[h.name for h in hdus]})") from None
        except (OSError, ValueError, TypeError) as exc:  # (a truncated file: its data)
            raise _unreadable(exc, what, name) from None
        except MemoryError:
            raise InvalidArgumentError(f"{what}: the image of {name} does not fit in this "
                                       "machine's memory") from None
        if not found.is_image:
            raise InvalidArgumentError(f"{what}: HDU {hdu!r} of {name} is a "
                                       f"{type(found).__name__}, not an image")
        if hdu is not None:  # (the search above checked the HDU it found)
            fits_in_memory(found, what, name)
        try:
            data = found.data
            if data is None:
                raise InvalidArgumentError(f"{what}: HDU {hdu!r} of {name} holds no data")
            if data.ndim != 2:
                raise InvalidArgumentError(f"{what}: {name} holds a {data.ndim}-D image of "
                                           f"shape {data.shape}; a subtraction takes 2-D ones")
            kind = data.dtype.kind
            dtype = data.dtype if kind == "f" and data.dtype.itemsize in (4, 8) else "float64"
            # the one conversion: big-endian (or scaled, or integer) data to native numbers
            array = numpy.array(data, dtype=numpy.dtype(dtype).newbyteorder("="), order="C")
        except (OSError, ValueError, TypeError) as exc:  # (truncated data)
            raise _unreadable(exc, what, name) from None
        except KeyError as exc:
            raise InvalidArgumentError(f"{what}: {name} has a damaged header ({exc!r} "
                                       "missing)") from None
        except MemoryError:
            raise InvalidArgumentError(f"{what}: the image of {name} does not fit in this "
                                       "machine's memory") from None
        return array, found.header.copy()


def read_pair(reference, science, mask=None, *, hdu=None, mask_hdu=None, mask_excludes=True,
              like=None):
    """Read a reference and a science image (and a mask) from FITS files, checked.

    Parameters
    ----------
    reference, science : str or os.PathLike
        The FITS files.
    mask : str, os.PathLike or array, optional
        A mask of the same shape: a FITS file or an array. With ``mask_excludes`` (default)
        its nonzero pixels are the bad ones, left out of the fit, as in data-quality masks;
        else its nonzero pixels are the ones to use. Pixels that are NaN in either image are
        left out too.
    hdu, mask_hdu : int or str, optional
        The HDU (index or name) of the images and of the mask (default: the first holding an
        image).
    mask_excludes : bool, optional
        See ``mask``.
    like : optional
        Where the arrays go: None (NumPy), a module (cupy, torch), a package name or an
        array (see :func:`~accelmath.subtraction.synthetic_pair`).

    Returns
    -------
    FitsPair

    Raises
    ------
    InvalidArgumentError
        Naming the file and what is wrong: missing, not FITS, truncated, no image HDU, not
        2-D, shapes that differ, or NaN or infinite pixels that no mask covers while a mask
        was given... (without a mask, non-finite pixels are left out by a mask made here).

    Examples
    --------
    >>> import tempfile, os, numpy as np
    >>> from astropy.io import fits
    >>> from accelmath.subtraction import read_pair
    >>> folder = tempfile.mkdtemp()
    >>> for name in ("ref.fits", "sci.fits"):
    ...     fits.PrimaryHDU(np.ones((8, 8), ">f4")).writeto(os.path.join(folder, name))
    >>> pair = read_pair(os.path.join(folder, "ref.fits"), os.path.join(folder, "sci.fits"))
    >>> pair.reference.dtype.byteorder in "=<|", pair.reference.shape
    (True, (8, 8))
    """
    ref, _ = _image(reference, hdu, "reference")
    sci, header = _image(science, hdu, "science")
    if ref.shape != sci.shape:
        raise InvalidArgumentError(f"the reference {os.fspath(reference)} is {ref.shape} and "
                                   f"the science image {os.fspath(science)} {sci.shape}: they "
                                   "must be of one shape")
    paths = (os.fspath(reference), os.fspath(science))
    finite = numpy.isfinite(ref) & numpy.isfinite(sci)
    use = None
    if mask is not None:
        if isinstance(mask, (str, os.PathLike)):
            values, _ = _image(mask, mask_hdu, "mask")
            paths += (os.fspath(mask),)
        else:
            values = numpy.asarray(mask)
        if values.shape != ref.shape:
            raise InvalidArgumentError(f"the mask is {values.shape} and the images {ref.shape}")
        use = (values == 0) if mask_excludes else (values != 0)
        uncovered = int(numpy.count_nonzero(use & ~finite))
        if uncovered:
            bad = [p for p, image in zip(paths, (ref, sci))
                   if numpy.count_nonzero(use & ~numpy.isfinite(image))]
            raise InvalidArgumentError(
                f"{uncovered} NaN or infinite pixels of {' and '.join(bad)} are not covered "
                "by the mask: mark them in the mask")
    elif not finite.all():
        use = finite
    if not finite.all():  # (left out of the fit; each image zero where it is not finite,
        # its finite pixels kept: a reference pixel under a science NaN is convolved into its
        # neighbours' values, which a zero there would spoil)
        for image in (ref, sci):
            image[~numpy.isfinite(image)] = 0.0
    if like is not None:
        from accelmath.subtraction._ops import kind_of

        kind = kind_of(like)
        ref, sci = kind.asarray(ref), kind.asarray(sci)
        use = None if use is None else kind.asarray(use)
    return FitsPair(ref, sci, use, header, paths, None if finite.all() else ~finite)


def check_output(path, overwrite, inputs=(), flag="overwrite=True"):
    """``(name, folder)`` of an output ``path`` that :func:`write_difference` can write (a
    caller asks before its work): a file's name, not there unless ``overwrite`` (and then a
    regular file or a link of this user's, which is replaced, not followed; never another
    user's, never one of the files ``inputs`` names), in a folder that exists and is
    writable; else InvalidArgumentError naming it (and ``flag``, the caller's word for
    overwriting)."""
    name = os.fspath(path)
    if not name or name.endswith(os.sep):
        raise InvalidArgumentError(f"the output {name!r} names no file")
    if name.lower().endswith(".zip"):
        raise InvalidArgumentError(f"the output {name} is a zip file, which astropy does not "
                                   "write; name it .fits, or .fits.gz for gzip")
    if os.path.lexists(name):
        if not overwrite:
            raise InvalidArgumentError(f"{name} exists; pass {flag} to replace it")
        status = os.lstat(name)
        if not (stat.S_ISREG(status.st_mode) or stat.S_ISLNK(status.st_mode)):
            raise InvalidArgumentError(f"{name} exists and is not a regular file (a folder, a "
                                       "pipe, a device): a difference replaces only a file")
        uid = _uid()
        if uid is not None and status.st_uid != uid:
            raise InvalidArgumentError(f"{name} exists and belongs to another user (uid "
                                       f"{status.st_uid}): a difference replaces only its "
                                       "writer's own files")
        for given in inputs:
            if given is not None and _same_file(status, given):
                raise InvalidArgumentError(f"{name} is the input {os.fspath(given)}: a "
                                           "difference never replaces its own inputs")
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        raise InvalidArgumentError(f"{name} cannot be written: its folder {folder} does not "
                                   "exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"{name} cannot be written: its folder {folder} is not "
                                   "writable")
    return name, folder


def _same_file(status, given):
    """Whether ``given`` (an input's path) is the file of ``status`` (an lstat)."""
    try:
        other = os.stat(given)
    except (OSError, TypeError, ValueError):
        return False
    return (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino)


def write_difference(path, difference, header=None, result=None, *, dtype="float32",
                     overwrite=False, invalid=None):
    """Write a difference image to a FITS file, atomically: a reader never sees a half-written
    file (it is written beside the target, as a hidden ``.accelmath-*.fits`` file, and renamed
    into place). What a write killed before its rename left, a later write into the same
    folder on the same machine removes (this user's, of a process that has ended).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    difference : array
        The 2-D difference image (any kind: NumPy, CuPy, torch, Numba).
    header : astropy.io.fits.Header, optional
        The science image's header (its WCS and the rest kept); the data's own keywords
        (BITPIX, NAXIS...) are made for the written data.
    result : SubtractionResult, optional
        The subtraction: its ratio and configuration are recorded in the header
        (:data:`RECORDS`).
    dtype : str, optional
        The stored type, "float32" (default) or "float64".
    overwrite : bool, optional
        Replace an existing file (default: refuse).
    invalid : array of bool, optional
        Pixels written as NaN: where an input was not finite (:attr:`FitsPair.invalid`).

    Returns
    -------
    str
        The path written.
    """
    fits = _fits()
    from accelmath import __version__
    from accelmath.subtraction._ops import from_numba, kind_of

    if dtype not in ("float32", "float64"):
        raise InvalidArgumentError(f"dtype={dtype!r}: a difference is written as float32 or "
                                   "float64")
    name, _ = check_output(path, overwrite)
    difference = from_numba(difference)  # (a Numba array: read through a CuPy or torch view)
    data = numpy.asarray(kind_of(difference).to_numpy(difference), dtype=dtype)
    if data.ndim != 2:
        raise InvalidArgumentError(f"the difference is {data.ndim}-D; a FITS image of it must "
                                   "be 2-D")
    if invalid is not None:
        invalid = numpy.asarray(invalid, dtype=bool)
        if invalid.shape != data.shape:
            raise InvalidArgumentError(f"invalid has shape {invalid.shape}; the difference "
                                       f"{data.shape}")
        data = numpy.where(invalid, numpy.nan, data).astype(dtype, copy=False)
    hdu = fits.PrimaryHDU(data, header=None if header is None else header.copy())
    for key in ("CHECKSUM", "DATASUM"):  # (the science data's: they would fail to verify)
        hdu.header.remove(key, ignore_missing=True, remove_all=True)
    if result is not None:
        c = result.configuration
        values = {"AMRATIO": float(result.ratio), "AMHALFW": c.half_width,
                  "AMKORD": c.kernel_order, "AMBORD": c.background_order,
                  "AMCONV": c.convolve, "AMVERS": __version__}
        for key, value in values.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = str(value)
            hdu.header[key] = (value, RECORDS[key])
    else:
        hdu.header["AMVERS"] = (__version__, RECORDS["AMVERS"])
    # (compressed as the name says: astropy compresses by the file's extension; without
    # overwrite, a link refuses a file made since the check above, as a rename would not)
    write_beside(name, lambda file: hdu.writeto(file, output_verify="silentfix"),
                 ".fits" + compressed_suffix(name), os.replace if overwrite else _publish_new)
    return name


def compressed_suffix(name):
    """The end of ``name`` by which astropy reads and writes it compressed (``".gz"``,
    ``".bz2"``, ``".xz"``), or ``""``."""
    suffix = os.path.splitext(name)[1].lower()
    return suffix if suffix in _COMPRESSED else ""


def write_beside(name, write, suffix, publish=os.replace):
    """Write the file ``name`` atomically: ``write(file)`` into a new file beside it (hidden,
    ``.accelmath-<process id>@<host>-<hex><suffix>``; made new, never through a link, with the
    permissions the umask gives any new file), ``file`` a binary file object over the
    descriptor that made it (compressed as a ``.gz``, ``.bz2`` or ``.xz`` suffix says), so
    that a link another user puts in its place meanwhile is never written through; then
    ``publish(temporary, name)`` (a rename: a link at ``name`` is replaced, never followed).
    The temporary file goes where either fails; those of killed writes go at the first write
    into a folder (:func:`_sweep`)."""
    folder = os.path.dirname(os.path.abspath(name))
    _sweep(folder)
    temporary = os.path.join(folder,
                             f"{_TEMPORARY}{os.getpid()}@{_host()}-{uuid.uuid4().hex}{suffix}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
    made = os.fstat(descriptor)
    try:
        with contextlib.ExitStack() as stack:
            file = stack.enter_context(os.fdopen(descriptor, "wb"))
            compress = _COMPRESSORS.get(os.path.splitext(suffix)[1].lower())
            if compress is not None:
                file = stack.enter_context(compress(file))
            write(file)
        if not _still(temporary, made):
            raise InvalidArgumentError(f"the file written for {name} was replaced while it was "
                                       "written (by another user?); nothing was published")
        publish(temporary, name)
    except BaseException:
        if _still(temporary, made):  # (ours alone: never what replaced it)
            os.unlink(temporary)
        raise


def _still(path, made):
    """Whether ``path`` is still the file of ``made`` (its status when it was made)."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# the compressed writes, by their suffix: a file object over the temporary file's descriptor
_COMPRESSORS = {".gz": lambda file: gzip.GzipFile(fileobj=file, mode="wb"),
                ".bz2": lambda file: bz2.BZ2File(file, "wb"),
                ".xz": lambda file: lzma.LZMAFile(file, "wb")}


# A write's temporary file beside its target: ".accelmath-<process id>@<host>-<hex><suffix>"
_TEMPORARY = ".accelmath-"
_COMPRESSED = (".gz", ".bz2", ".xz")  # what astropy writes compressed, by the name's end
# the suffixes of the writes: differences (maybe compressed) and the demo's figure
_LEFT = re.compile(re.escape(_TEMPORARY) + r"(\d+)@(.+)-[0-9a-f]{32}(?:" + "|".join(
    re.escape(suffix) for suffix in (".png", ".fits", *(".fits" + c for c in _COMPRESSED))) + ")")
_swept = set()  # the folders whose left temporaries this process removed


@functools.lru_cache(maxsize=1)
def _host():
    """This machine's name, in a write's temporary files (asked once, at the first write)."""
    return socket.gethostname()


def _sweep(folder):
    """Remove, once per folder and process, the temporary files that writes on this machine
    left where their process was killed: regular files of this user, named as a write names
    them with this host and a process id that no process has now. Nothing else is touched:
    other users' files, links, other machines' writes, those of live processes."""
    if folder in _swept:
        return
    _swept.add(folder)
    uid = _uid()
    if uid is None:
        return
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for entry in entries:
            found = _LEFT.fullmatch(entry.name)
            if found is None or found.group(2) != _host() or _alive(int(found.group(1))):
                continue
            try:
                status = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(status.st_mode) and status.st_uid == uid:
                    os.unlink(entry.path)
            except OSError:  # (gone meanwhile, or not ours to remove)
                pass


def _uid():
    """This process's effective user id (None where the system has none: Windows)."""
    return getattr(os, "geteuid", lambda: None)()


def _alive(pid):
    """Whether a process ``pid`` exists on this machine (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        pass  # (another user's; or no such pid to test: left alone)
    return True


def _publish_new(temporary, name):
    """Give the written file ``temporary`` the name ``name``, which must not exist: by a hard
    link, which refuses a file made since the caller looked; where the filesystem has no hard
    links (SMB, FAT, some FUSE mounts), by a rename after a last look."""
    exists = InvalidArgumentError(f"{name} exists; pass overwrite=True to replace it")
    try:
        os.link(temporary, name)
    except FileExistsError:
        raise exists from None
    except OSError:  # (no hard links here)
        if os.path.lexists(name):
            raise exists from None
        os.replace(temporary, name)
        return
    os.unlink(temporary)

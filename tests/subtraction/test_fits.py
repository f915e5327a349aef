"""FITS in and out: a pair read back from files (big-endian, memory-mapped, integer or
float) subtracts as the arrays do; the difference is written atomically with the science
header's WCS and the fit's record; a bad file gives an error naming it and what is wrong."""

import os

import numpy as np
import pytest

from accelmath.errors import InvalidArgumentError
from accelmath.subtraction import read_pair, subtract, synthetic_pair, write_difference

fits = pytest.importorskip("astropy.io.fits")

SIZE = 96


def _wcs_header():
    header = fits.Header()
    header["CTYPE1"], header["CTYPE2"] = "RA---TAN", "DEC--TAN"
    header["CRVAL1"], header["CRVAL2"] = 150.1, 2.2
    header["CRPIX1"], header["CRPIX2"] = 48.0, 48.0
    header["CD1_1"], header["CD2_2"] = -3e-5, 3e-5
    header["OBJECT"] = "synthetic field"
    return header


@pytest.fixture
def files(tmp_path):
    pair = synthetic_pair(SIZE, seed=int(np.random.default_rng().integers(2**31)), stars=80,
                          kernel_half_width=3)
    paths = {}
    for name, data, header in (("ref", pair.reference, None),
                               ("sci", pair.science, _wcs_header()),
                               ("mask", (~np.asarray(pair.mask)).astype(np.uint8), None)):
        paths[name] = tmp_path / f"{name}.fits"
        fits.PrimaryHDU(np.asarray(data).astype(">f4" if name != "mask" else ">i2"),
                        header=header).writeto(paths[name])
    return pair, paths


def test_a_pair_from_files_subtracts_as_its_arrays(files):
    pair, paths = files
    read = read_pair(paths["ref"], paths["sci"], mask=paths["mask"])
    assert read.reference.dtype == np.float32 and read.reference.dtype.isnative
    assert read.reference.flags.c_contiguous and read.reference.shape == (SIZE, SIZE)
    np.testing.assert_array_equal(read.mask, np.asarray(pair.mask))
    np.testing.assert_array_equal(read.science, np.asarray(pair.science).astype(np.float32))
    from_files = subtract(read.reference, read.science, mask=read.mask, half_width=3)
    from_arrays = subtract(np.asarray(pair.reference, np.float32),
                           np.asarray(pair.science, np.float32), mask=np.asarray(pair.mask),
                           half_width=3)
    np.testing.assert_array_equal(np.asarray(from_files.difference),
                                  np.asarray(from_arrays.difference))
    assert abs(from_files.ratio - pair.ratio) < 0.2  # (a small crowded field: a rough fit)


def test_the_difference_keeps_the_wcs_and_records_the_fit(files, tmp_path, monkeypatch):
    _, paths = files
    read = read_pair(paths["ref"], paths["sci"], mask=paths["mask"])
    result = subtract(read.reference, read.science, mask=read.mask, half_width=3)
    out = tmp_path / "diff.fits"
    assert write_difference(out, result.difference, read.header, result) == str(out)
    with fits.open(out) as hdus:
        header, data = hdus[0].header, hdus[0].data
        assert data.dtype == np.dtype(">f4") and data.shape == (SIZE, SIZE)
        np.testing.assert_allclose(data, np.asarray(result.difference), rtol=1e-6, atol=1e-3)
        for key in ("CTYPE1", "CRVAL1", "CRPIX2", "CD1_1", "OBJECT"):
            assert header[key] == _wcs_header()[key]
        assert header["AMRATIO"] == pytest.approx(result.ratio)
        assert (header["AMHALFW"], header["AMKORD"]) == (3, result.configuration.kernel_order)
        assert header["AMVERS"]
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".accelmath-")]
    with pytest.raises(InvalidArgumentError, match="exists; pass overwrite=True"):
        write_difference(out, result.difference, read.header, result)
    write_difference(out, result.difference, read.header, result, overwrite=True,
                     dtype="float64")
    with fits.open(out) as hdus:
        assert hdus[0].data.dtype == np.dtype(">f8")
    # a filesystem without hard links (SMB, FAT): a rename after a last look
    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    write_difference(tmp_path / "unlinked.fits", result.difference)
    with fits.open(tmp_path / "unlinked.fits") as hdus:
        np.testing.assert_allclose(hdus[0].data, np.asarray(result.difference), rtol=1e-6,
                                   atol=1e-3)
    with pytest.raises(InvalidArgumentError, match="exists; pass overwrite=True"):
        write_difference(tmp_path / "unlinked.fits", result.difference)
    monkeypatch.undo()
    old = os.umask(0o027)  # (the file gets what the umask gives a new file)
    try:
        write_difference(tmp_path / "masked.fits", result.difference)
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "masked.fits").st_mode & 0o777 == 0o640
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".accelmath-")]


def test_nan_pixels_are_left_out_or_named(files, tmp_path):
    pair, paths = files
    science = np.asarray(pair.science).astype(">f4")
    science[5, 7] = np.nan
    nan_path = tmp_path / "nan.fits"
    fits.PrimaryHDU(science).writeto(nan_path)
    read = read_pair(paths["ref"], nan_path)  # (no mask: left out by one made here)
    assert read.mask is not None and not read.mask[5, 7] and read.mask.sum() == SIZE**2 - 1
    assert np.isfinite(read.science).all()
    # the reference's own pixel there is kept: it is convolved into its neighbours' values
    assert read.reference[5, 7] == np.float32(np.asarray(pair.reference)[5, 7])
    assert read.invalid is not None and read.invalid.sum() == 1 and read.invalid[5, 7]
    assert read_pair(paths["ref"], paths["sci"]).invalid is None
    # the difference is NaN there, as the science image is
    result = subtract(read.reference, read.science, mask=read.mask, half_width=3)
    out = write_difference(tmp_path / "diff.fits", result.difference, read.header, result,
                           invalid=read.invalid)
    written = fits.getdata(out)
    assert np.isnan(written[5, 7]) and np.isfinite(np.delete(written.ravel(), 5 * SIZE + 7)).all()
    covering = np.zeros((SIZE, SIZE), np.uint8)
    covering[5, 7] = 1
    assert not read_pair(paths["ref"], nan_path, mask=covering).mask[5, 7]
    with pytest.raises(InvalidArgumentError, match=r"1 NaN or infinite pixels of .*nan.fits"):
        read_pair(paths["ref"], nan_path, mask=np.zeros((SIZE, SIZE)))


def test_bad_files_are_named(files, tmp_path):
    _, paths = files
    with pytest.raises(InvalidArgumentError, match="reference: no such file: .*missing.fits"):
        read_pair(tmp_path / "missing.fits", paths["sci"])
    text = tmp_path / "text.fits"
    text.write_text("not a FITS file")
    with pytest.raises(InvalidArgumentError, match="science: .*text.fits"):
        read_pair(paths["ref"], text)
    truncated = tmp_path / "truncated.fits"
    truncated.write_bytes(paths["sci"].read_bytes()[:2880 + 1000])
    with pytest.raises(InvalidArgumentError, match="truncated.fits is truncated"):
        read_pair(paths["ref"], truncated)
    table = tmp_path / "table.fits"
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(
        [fits.Column(name="x", format="E", array=np.ones(3))])]).writeto(table)
    with pytest.raises(InvalidArgumentError, match="holds no image HDU"):
        read_pair(paths["ref"], table)
    with pytest.raises(InvalidArgumentError, match="BinTableHDU, not an image"):
        read_pair(table, table, hdu=1)
    with pytest.raises(InvalidArgumentError, match="has no HDU 'SCI'"):
        read_pair(paths["ref"], paths["sci"], hdu="SCI")
    small = tmp_path / "small.fits"
    fits.PrimaryHDU(np.ones((10, 12), ">f4")).writeto(small)
    with pytest.raises(InvalidArgumentError, match=r"\(96, 96\) and the science image .* "
                                                   r"\(10, 12\)"):
        read_pair(paths["ref"], small)
    cube = tmp_path / "cube.fits"
    fits.PrimaryHDU(np.ones((2, 4, 4), ">f4")).writeto(cube)
    with pytest.raises(InvalidArgumentError, match="3-D image"):
        read_pair(cube, cube)


def test_a_file_astropy_warns_of_is_read_once_and_its_warnings_passed_on(files, tmp_path):
    # (the warnings were passed on while still recorded: each one recorded again, for ever)
    import threading
    import warnings

    _, paths = files
    extra = tmp_path / "extra.fits"
    extra.write_bytes(paths["sci"].read_bytes() + b"x" * 10)  # (bytes after the last HDU)
    outcome = {}

    def read():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome["pair"] = read_pair(paths["ref"], extra)
        outcome["warnings"] = len(caught)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "reading a file astropy warns of did not end"
    assert outcome["warnings"] >= 1 and outcome["pair"].science.shape == (SIZE, SIZE)


def test_scaled_integer_images_are_read_as_their_values(tmp_path):
    # uint16 data: astropy writes them with BZERO, which it does not memory-map
    values = (np.arange(SIZE * SIZE, dtype=np.uint16) % 40000).reshape(SIZE, SIZE)
    for name in ("ref", "sci"):
        fits.PrimaryHDU(values).writeto(tmp_path / f"{name}.fits")
    assert fits.getheader(tmp_path / "ref.fits")["BZERO"] == 32768
    pair = read_pair(tmp_path / "ref.fits", tmp_path / "sci.fits")
    np.testing.assert_array_equal(np.asarray(pair.reference), values)


def test_the_difference_does_not_carry_the_science_data_checksums(files, tmp_path):
    pair, paths = files
    signed = tmp_path / "signed.fits"
    with fits.open(paths["sci"]) as hdus:
        hdus.writeto(signed, checksum=True)
    read = read_pair(paths["ref"], signed)
    assert "CHECKSUM" in read.header
    out = write_difference(tmp_path / "diff.fits", np.ones((SIZE, SIZE)), read.header)
    with fits.open(out, checksum=True) as hdus:  # (a stale checksum would fail to verify)
        assert "CHECKSUM" not in hdus[0].header and "DATASUM" not in hdus[0].header


def _dead_pid():
    """The id of a process that has ended (a child, waited for)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_later_write_removes_only_what_killed_writes_left(tmp_path):
    """A write killed before its rename leaves its temporary file; the next write into that
    folder (once per folder and process) removes such files of this user, host and a process
    that has ended, and nothing else."""
    from accelmath.subtraction._runs import fits as _fits

    host, hex_ = _fits._host(), "0123456789abcdef" * 2
    dead, live = _dead_pid(), os.getppid()
    left = tmp_path / f".accelmath-{dead}@{host}-{hex_}.fits"
    kept = {
        "live": tmp_path / f".accelmath-{live}@{host}-{hex_}.fits",
        "other host": tmp_path / f".accelmath-{dead}@{host}x-{hex_}.fits",
        "older name": tmp_path / f".accelmath-{hex_}.fits",
        "not a write's": tmp_path / f".accelmath-{dead}@{host}-{hex_}.fits.bak",
        "a folder": tmp_path / f".accelmath-{dead}@{host}-{'f' * 32}.fits",
    }
    for path in [left, *kept.values()]:
        if path.name.startswith(f".accelmath-{dead}@{host}-fff"):
            path.mkdir()
        else:
            path.write_bytes(b"partial")
    target = tmp_path / "elsewhere.txt"
    target.write_text("someone's")
    link = tmp_path / f".accelmath-{dead}@{host}-{'e' * 32}.fits"
    link.symlink_to(target)
    kept["a link"] = link
    if os.geteuid() == 0:  # (root can give a file to another user)
        foreign = tmp_path / f".accelmath-{dead}@{host}-{'d' * 32}.fits"
        foreign.write_bytes(b"partial")
        os.chown(foreign, 12345, 12345)
        kept["another user's"] = foreign
    _fits._swept.discard(str(tmp_path))
    write_difference(tmp_path / "diff.fits", np.zeros((4, 4)))
    assert not left.exists()
    for what, path in kept.items():
        assert os.path.lexists(path), what
    assert target.read_text() == "someone's"
    assert not [f for f in os.listdir(tmp_path)
                if f.startswith(".accelmath-") and f.endswith(".fits")
                and f.split("-")[1].split("@")[0] == str(os.getpid())]


def test_a_write_never_goes_through_a_link_put_in_its_temporary_files_place(tmp_path):
    """Another user who can write into the output folder swaps the temporary file for a link
    to a file of the writer's while it is written: the write goes to the file made, not
    through the link; nothing is published; the link (not the writer's) stays."""
    from accelmath.subtraction._runs import fits as _fits

    precious = tmp_path / "precious"
    precious.write_text("the writer's own")
    swapped = []

    def write(file):
        temporary = next(p for p in tmp_path.iterdir() if p.name.startswith(".accelmath-"))
        temporary.unlink()
        temporary.symlink_to(precious)  # (the attacker, in the gap)
        swapped.append(temporary)
        fits.PrimaryHDU(np.ones((4, 4), np.float32)).writeto(file)

    with pytest.raises(InvalidArgumentError, match="replaced while it was written"):
        _fits.write_beside(str(tmp_path / "diff.fits"), write, ".fits")
    assert precious.read_text() == "the writer's own"
    assert not (tmp_path / "diff.fits").exists() and swapped[0].is_symlink()


def test_a_figure_write_removes_what_a_killed_figure_write_left(tmp_path):
    # (every write beside its target sweeps its folder, the demo's figure too)
    from accelmath.subtraction._runs import fits as _fits

    left = tmp_path / f".accelmath-{_dead_pid()}@{_fits._host()}-{'0123456789abcdef' * 2}.png"
    left.write_bytes(b"partial")
    _fits._swept.discard(str(tmp_path))
    _fits.write_beside(str(tmp_path / "figure.png"), lambda file: file.write(b"png"), ".png")
    assert not left.exists() and (tmp_path / "figure.png").exists()


def test_outputs_replace_only_files_and_never_an_input(tmp_path, files):
    """With overwrite: a pipe or a folder is refused, and so is an input's own file (the
    command names its inputs); without, anything there is refused."""
    from accelmath.subtraction._runs.fits import check_output

    pipe = tmp_path / "pipe.fits"
    os.mkfifo(pipe)
    (tmp_path / "folder.fits").mkdir()
    for target in (pipe, tmp_path / "folder.fits"):
        with pytest.raises(InvalidArgumentError, match="not a regular file"):
            check_output(target, True)
    _, paths = files
    with pytest.raises(InvalidArgumentError, match="is the input"):
        check_output(paths["sci"], True, inputs=(paths["ref"], paths["sci"], None))
    link = tmp_path / "to-sci.fits"
    link.symlink_to(paths["sci"])  # (a link is replaced itself: the input stays)
    assert check_output(link, True, inputs=(paths["ref"], paths["sci"]))[0] == str(link)
    assert check_output(tmp_path / "new.fits", False, inputs=(paths["sci"],))


def test_inputs_that_are_not_regular_files_or_have_damaged_headers(tmp_path):
    """A pipe or a device is refused before it is read (it would never end); a header whose
    NAXIS names cards it lacks is called damaged."""
    pipe = tmp_path / "pipe.fits"
    os.mkfifo(pipe)
    for name in (pipe, "/dev/zero"):
        with pytest.raises(InvalidArgumentError, match="not a regular file"):
            read_pair(name, name)
    cards = ["SIMPLE  =                    T", "BITPIX  =                  -32",
             "NAXIS   =                  999", "END"]
    damaged = tmp_path / "damaged.fits"
    damaged.write_bytes("".join(c.ljust(80) for c in cards).ljust(2880).encode())
    with pytest.raises(InvalidArgumentError, match="damaged.fits"):
        read_pair(damaged, damaged)


def test_an_image_declared_larger_than_memory_is_refused_unread(tmp_path):
    """A compressed file declares what it likes: an image whose header asks for more than
    half of the machine's memory is refused before its data are read (none are here)."""
    import gzip

    cards = ["SIMPLE  =                    T", "BITPIX  =                  -64",
             "NAXIS   =                    2", "NAXIS1  =              9000000",
             "NAXIS2  =              9000000", "END"]
    bomb = tmp_path / "bomb.fits.gz"
    bomb.write_bytes(gzip.compress("".join(c.ljust(80) for c in cards).ljust(2880).encode()))
    with pytest.raises(InvalidArgumentError, match=r"bomb.fits.gz declares 648000000000000 "
                                                   "bytes, more than half"):
        read_pair(bomb, bomb)


def test_another_users_file_is_never_replaced(tmp_path):
    """With overwrite too, an output that exists is replaced only where it is the writer's
    own (a file, or a link)."""
    from accelmath.subtraction._runs.fits import check_output

    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user here")
    theirs = tmp_path / "theirs.fits"
    theirs.write_text("someone's")
    os.chown(theirs, 12345, 12345)
    with pytest.raises(InvalidArgumentError, match="belongs to another user"):
        write_difference(theirs, np.zeros((4, 4)), overwrite=True)
    assert theirs.read_text() == "someone's"
    mine = tmp_path / "mine.fits"
    mine.write_text("mine")
    check_output(mine, overwrite=True)


@pytest.mark.parametrize("suffix", [".fits.gz", ".fits.bz2", ".fits.xz"])
def test_a_compressed_output_is_compressed_and_checked_whole(tmp_path, suffix):
    """An output named .gz (or .bz2, .xz) is written compressed, as astropy writes such names; a
    manifest's check of it decompresses it (its size says nothing), and calls a copy cut
    short not complete. A zip output is refused: astropy writes none."""
    from accelmath.subtraction._runs.manifest import _state, is_complete

    out = tmp_path / f"diff{suffix}"
    data = np.random.default_rng().standard_normal((64, 64))
    write_difference(out, data)
    magic = open(out, "rb").read(3)
    assert magic == {".gz": b"\x1f\x8b\x08", ".bz2": b"BZh", ".xz": b"\xfd7z"}[suffix[5:]]
    with fits.open(out) as hdus:
        np.testing.assert_allclose(hdus[0].data, data.astype(np.float32))
    assert is_complete(out)
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(out.read_bytes()[: out.stat().st_size // 2])
    assert not is_complete(cut) and _state(str(cut)) in ("cut", "foreign")
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".accelmath-")]
    with pytest.raises(InvalidArgumentError, match="zip"):
        write_difference(tmp_path / "diff.fits.zip", data)

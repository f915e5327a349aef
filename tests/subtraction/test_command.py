"""``accelmath subtract``: one pair of FITS files with a line per stage, a manifest of pairs
with a line per pair (a failing one reported, the run resumable), and its usage errors."""

import subprocess
import sys

import numpy as np
import pytest

from accelmath.__main__ import main
from accelmath.subtraction import read_pair, subtract, synthetic_pair

fits = pytest.importorskip("astropy.io.fits")


def _files(folder, name, seed):
    pair = synthetic_pair(64, seed=seed, stars=40, kernel_half_width=3)
    names = []
    for part, data in (("ref", pair.reference), ("sci", pair.science),
                       ("mask", (~np.asarray(pair.mask)).astype(np.uint8))):
        path = folder / f"{name}-{part}.fits"
        fits.PrimaryHDU(np.asarray(data)).writeto(path)
        names.append(path)
    return names


def test_one_pair(tmp_path, capsys):
    ref, sci, mask = _files(tmp_path, "a", int(np.random.default_rng().integers(2**31)))
    out = tmp_path / "diff.fits"
    status = main(["subtract", str(ref), str(sci), "-o", str(out), "--mask", str(mask),
                   "--half-width", "3", "--device", "cpu"])
    printed = capsys.readouterr().err
    assert status == 0, printed
    for stage in ("[1/4] reading", "[2/4] planning on cpu", "[3/4] subtracting",
                  "[4/4] writing"):
        assert stage in printed
    with fits.open(out) as hdus:
        read = read_pair(ref, sci, mask)
        direct = subtract(read.reference, read.science, mask=read.mask, half_width=3)
        assert hdus[0].header["AMRATIO"] == pytest.approx(direct.ratio, rel=1e-12)
        assert hdus[0].header["AMHALFW"] == 3
    assert main(["subtract", str(ref), str(sci), "-o", str(out), "--half-width", "3"]) == 1
    assert "exists; pass --overwrite" in capsys.readouterr().err
    # an output that cannot be written is said before the work, naming its folder
    missing = tmp_path / "no-such-folder" / "diff.fits"
    assert main(["subtract", str(ref), str(sci), "-o", str(missing)]) == 1
    assert "no-such-folder does not exist" in capsys.readouterr().err
    assert main(["subtract", str(ref), str(sci), "-o", ""]) == 1
    assert "names no file" in capsys.readouterr().err


def test_a_manifest(tmp_path, capsys):
    rng = np.random.default_rng()
    rows = ["reference,science,mask"]
    for k in range(2):
        rows.append(",".join(p.name for p in _files(tmp_path, f"p{k}", int(rng.integers(2**31)))))
    rows.append("gone-ref.fits,gone-sci.fits,")
    manifest = tmp_path / "pairs.csv"
    manifest.write_text("\n".join(rows) + "\n")
    arguments = ["subtract", "--pairs", str(manifest), "--out-dir", str(tmp_path / "out"),
                 "--half-width", "3"]
    assert main(arguments) == 1
    printed = capsys.readouterr().err
    assert printed.count("written ") == 2 and "FAILED" in printed and "gone-ref.fits" in printed
    assert "2 written, 0 skipped, 1 failed" in printed
    assert (tmp_path / "out" / "p0-sci-diff.fits").exists()
    assert main(arguments) == 1
    assert "0 written, 2 skipped, 1 failed" in capsys.readouterr().err


@pytest.mark.parametrize("arguments, words", [
    (["subtract"], "give REFERENCE and SCIENCE files, or --pairs"),
    (["subtract", "a.fits", "b.fits"], "-o/--output names the difference"),
    (["subtract", "a.fits", "b.fits", "--pairs", "p.csv"], "either REFERENCE SCIENCE or"),
    (["subtract", "a.fits", "b.fits", "-o", "c.fits"], "reference: no such file"),
    (["subtract", "--pairs", "p.csv", "-o", "c.fits", "--device", "cpu"],
     "-o, --device: for one pair, not for --pairs"),
    (["subtract", "a.fits", "b.fits", "-o", "c.fits", "--gpus", "0,1"],
     "--gpus: for --pairs, not for one pair"),
])
def test_usage_errors_are_one_line(arguments, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(arguments) == 1
    assert words in capsys.readouterr().err


def test_the_command_line_runs_as_a_program(tmp_path):
    ref, sci, _ = _files(tmp_path, "b", 7)
    ran = subprocess.run([sys.executable, "-m", "accelmath", "subtract", str(ref), str(sci),
                          "-o", str(tmp_path / "d.fits"), "--half-width", "3", "--kernel-order",
                          "1", "--device", "cpu"], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    with fits.open(tmp_path / "d.fits") as hdus:
        assert hdus[0].header["AMKORD"] == 1

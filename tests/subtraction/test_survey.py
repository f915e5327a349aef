"""Many pairs of FITS files from a manifest: every pair written beside its outputs' folder,
a rerun skipping the complete outputs and redoing a cut-short one, a failing pair reported
without stopping the others, and the same outcomes on a Dask cluster of CPU workers."""

import os
import sys

import numpy as np
import pytest

from accelmath.errors import InvalidArgumentError
from accelmath.subtraction import read_pair, subtract, synthetic_pair
from accelmath.subtraction._runs.manifest import SurveyPair, is_complete, read_manifest, subtract_files

fits = pytest.importorskip("astropy.io.fits")

SIZE = 64
CONFIGURATION = {"half_width": 3}


def _write_pair(folder, name, seed):
    pair = synthetic_pair(SIZE, seed=seed, stars=40, kernel_half_width=3)
    paths = []
    for part, data in (("ref", pair.reference), ("sci", pair.science),
                       ("mask", (~np.asarray(pair.mask)).astype(np.uint8))):
        path = folder / f"{name}-{part}.fits"
        fits.PrimaryHDU(np.asarray(data)).writeto(path)
        paths.append(path.name)
    return paths


@pytest.fixture
def survey(tmp_path):
    rng = np.random.default_rng()
    rows = ["reference,science,mask"]
    for k in range(3):
        rows.append(",".join(_write_pair(tmp_path, f"p{k}", int(rng.integers(2**31)))))
    rows.append("missing-ref.fits,missing-sci.fits,")  # (a pair that fails)
    (tmp_path / "pairs.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def test_a_manifest_runs_resumes_and_reports_failures(survey):
    out = survey / "out"
    pairs = read_manifest(survey / "pairs.csv", out)
    assert [os.path.basename(p.output) for p in pairs[:3]] == [
        "p0-sci-diff.fits", "p1-sci-diff.fits", "p2-sci-diff.fits"]
    assert pairs[0].mask.endswith("p0-mask.fits") and pairs[3].mask is None
    seen = []
    outcomes = subtract_files(pairs[:3], configuration=CONFIGURATION, progress=seen.append)
    assert [o.status for o in outcomes] == ["written"] * 3 and len(seen) == 3
    for pair, outcome in zip(pairs[:3], outcomes):  # (each the fit of its files, subtracted here)
        read = read_pair(pair.reference, pair.science, pair.mask)
        direct = subtract(read.reference, read.science, mask=read.mask, **CONFIGURATION)
        assert outcome.ratio == pytest.approx(direct.ratio, rel=1e-12)
    assert all(is_complete(p.output) for p in pairs[:3])
    with fits.open(pairs[0].output) as hdus:
        assert hdus[0].header["AMRATIO"] == pytest.approx(outcomes[0].ratio)
    # a rerun skips what is complete, and redoes an output cut short
    cut = pairs[1].output
    with open(cut, "rb") as f:
        whole = f.read()
    with open(cut, "wb") as f:
        f.write(whole[: len(whole) // 2])
    assert not is_complete(cut)
    again = subtract_files(pairs[:3], configuration=CONFIGURATION)
    assert [o.status for o in again] == ["skipped", "written", "skipped"]
    assert is_complete(cut)
    assert not [f for f in os.listdir(out) if f.startswith(".accelmath-")]


def test_a_manifest_runs_without_dask(survey, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # (as where it is not installed)
    pairs = read_manifest(survey / "pairs.csv", survey / "no-dask")[:1]
    outcomes = subtract_files(pairs, configuration=CONFIGURATION)
    assert [(o.status, o.error) for o in outcomes] == [("written", None)]


def test_a_failing_pair_is_reported_and_the_others_go_on(survey):
    pairs = read_manifest(survey / "pairs.csv", survey / "out")
    failing = pairs[3]._replace(output=str(survey / "out" / "failing.fits"))
    outcomes = subtract_files([failing, pairs[2]], configuration=CONFIGURATION)
    assert [o.status for o in outcomes] == ["failed", "written"]
    assert "missing-ref.fits" in outcomes[0].error and "no such file" in outcomes[0].error
    assert not os.path.exists(failing.output)


def test_manifest_errors_name_the_row(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("ref,sci\na.fits,b.fits\n")
    with pytest.raises(InvalidArgumentError, match="no column reference or science"):
        read_manifest(bad)
    bad.write_text("reference,science\na.fits,\n")
    with pytest.raises(InvalidArgumentError, match="row 2: no science file"):
        read_manifest(bad)
    bad.write_text("reference,science\na.fits,s/x.fits\nb.fits,t/x.fits\n")
    with pytest.raises(InvalidArgumentError, match="rows 2 and 3 both write"):
        read_manifest(bad, tmp_path / "out")
    bad.write_text("reference,science,output\na.fits,s/x.fits,one.fits\nb.fits,t/x.fits,"
                   "two.fits\n")
    assert [os.path.basename(p.output) for p in read_manifest(bad)] == ["one.fits", "two.fits"]
    with pytest.raises(InvalidArgumentError, match="cannot be read"):
        read_manifest(tmp_path / "none.csv")


def test_a_dask_cluster_of_cpu_workers_gives_the_same_outcomes(survey):
    distributed = pytest.importorskip("distributed")
    pairs = read_manifest(survey / "pairs.csv", survey / "dask-out")
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                            dashboard_address=None) as client:
        outcomes = subtract_files(pairs, configuration=CONFIGURATION, client=client)
    assert [o.status for o in outcomes] == ["written", "written", "written", "failed"]
    local = subtract_files(pairs[:3], configuration=CONFIGURATION, overwrite=True)
    assert [o.ratio for o in outcomes[:3]] == pytest.approx([o.ratio for o in local], rel=1e-9)


def test_an_incomplete_or_foreign_file_is_not_complete(tmp_path):
    assert not is_complete(tmp_path / "none.fits")
    text = tmp_path / "text.fits"
    text.write_text("hello")
    assert not is_complete(text)
    cube = tmp_path / "cube.fits"
    fits.PrimaryHDU(np.ones((2, 3, 3))).writeto(cube)
    assert not is_complete(cube)
    image = tmp_path / "image.fits"
    fits.PrimaryHDU(np.ones((3, 3))).writeto(image)
    assert not is_complete(image)  # (a whole image, but not a difference this code wrote)
    header = fits.Header()
    header["AMVERS"] = "0.1.0"
    ours = tmp_path / "ours.fits"
    fits.PrimaryHDU(np.ones((3, 3)), header=header).writeto(ours)
    assert is_complete(ours)
    link = tmp_path / "link.fits"
    link.symlink_to(ours)
    assert not is_complete(link)
    assert SurveyPair("a", "b", None, "c").mask is None


def test_an_output_this_code_did_not_write_is_left_as_it_is(survey):
    pairs = read_manifest(survey / "pairs.csv", survey / "out")[:1]
    output = pairs[0].output
    os.makedirs(os.path.dirname(output), exist_ok=True)
    catalog = survey / "catalog.fits"
    fits.BinTableHDU.from_columns([fits.Column("x", "E", array=np.ones(3))]).writeto(catalog)
    image = survey / "image.fits"
    fits.PrimaryHDU(np.ones((SIZE, SIZE))).writeto(image)
    cube = survey / "cube.fits"  # (whole, with the record: still not a difference)
    hdu = fits.PrimaryHDU(np.ones((2, SIZE, SIZE)))
    hdu.header["AMVERS"], hdu.header["OBJECT"] = "0.1.0", "precious"
    hdu.writeto(cube)
    for planted, kind in ((catalog, "did not write"), (image, "did not write"),
                          (cube, "did not write"), ("pipe", "did not write"),
                          ("link", "a link"), ("dangling", "a link")):
        if planted == "link":
            os.symlink(image, output)
        elif planted == "dangling":
            os.symlink(survey / "nowhere.fits", output)
        elif planted == "pipe":  # (never opened: a reader would wait for a writer forever)
            os.mkfifo(output)
        else:
            with open(planted, "rb") as f, open(output, "wb") as g:
                g.write(f.read())
        before = (os.readlink(output) if os.path.islink(output) else "pipe"
                  if planted == "pipe" else open(output, "rb").read())
        outcome, = subtract_files(pairs, configuration=CONFIGURATION)
        assert outcome.status == "failed" and kind in outcome.error, (planted, outcome)
        after = (os.readlink(output) if os.path.islink(output) else "pipe"
                 if not os.path.isfile(output) else open(output, "rb").read())
        assert after == before
        os.remove(output)
    outcome, = subtract_files(pairs, configuration=CONFIGURATION)
    assert outcome.status == "written" and is_complete(output)


def test_manifests_as_spreadsheets_write_them(tmp_path):
    manifest = tmp_path / "pairs.csv"
    # a byte-order mark, spaces and capitals in the header, CRLF, a blank line
    manifest.write_bytes("\ufeffReference, Science ,Mask\r\nr0.fits,s0.fits,\r\n\r\n"
                         "r1.fits,s1.fits,m1.fits\r\n".encode())
    pairs = read_manifest(manifest)
    assert [os.path.basename(p.science) for p in pairs] == ["s0.fits", "s1.fits"]
    assert pairs[0].mask is None and pairs[1].mask.endswith("m1.fits")
    manifest.write_text("reference,science\n\nr.fits,\n")
    with pytest.raises(InvalidArgumentError, match="row 3: no science file"):  # (its line)
        read_manifest(manifest)
    manifest.write_text("reference,science\nr.fits,s.fits,extra.fits\n")
    with pytest.raises(InvalidArgumentError, match="row 2: 1 cell"):
        read_manifest(manifest)
    for text in ("", "reference,science\n"):
        manifest.write_text(text)
        with pytest.raises(InvalidArgumentError, match="no column|lists no pairs"):
            read_manifest(manifest)


def test_a_manifest_may_not_write_what_another_row_reads(tmp_path):
    manifest = tmp_path / "pairs.csv"
    manifest.write_text("reference,science,output\nr0.fits,s0.fits,s1.fits\n"
                        "r1.fits,s1.fits,d1.fits\n")
    with pytest.raises(InvalidArgumentError, match="row 2 writes .*s1.fits, which row 3 reads"):
        read_manifest(manifest)
    # the same file through a folder that is a link: one file
    (tmp_path / "alias").symlink_to(tmp_path)
    manifest.write_text("reference,science,output\nr0.fits,s0.fits,alias/s1.fits\n"
                        "r1.fits,s1.fits,d1.fits\n")
    with pytest.raises(InvalidArgumentError, match="row 2 writes .*s1.fits, which row 3 reads"):
        read_manifest(manifest)


@pytest.mark.gpu
def test_a_manifest_runs_on_the_gpu(survey, cp):
    pairs = read_manifest(survey / "pairs.csv", survey / "gpu-out")[:3]
    outcomes = subtract_files(pairs, configuration=CONFIGURATION)
    assert [(o.status, o.error) for o in outcomes] == [("written", None)] * 3
    for pair, outcome in zip(pairs, outcomes):  # (the GPU's fit is the CPU's)
        read = read_pair(pair.reference, pair.science, pair.mask)
        direct = subtract(read.reference, read.science, mask=read.mask, **CONFIGURATION)
        assert outcome.ratio == pytest.approx(direct.ratio, rel=1e-8)
        with fits.open(pair.output) as hdus:
            difference = hdus[0].data.astype(np.float64)
        expected = np.asarray(direct.difference, np.float64)
        assert np.linalg.norm(difference - expected) <= 1e-5 * np.linalg.norm(expected)


def test_an_existing_file_that_is_not_a_difference_is_left_alone(survey):
    pairs = read_manifest(survey / "pairs.csv", survey / "kept")[:1]
    os.makedirs(survey / "kept")
    with open(pairs[0].output, "w") as f:
        f.write("someone's notes")
    outcome = subtract_files(pairs, configuration=CONFIGURATION)[0]
    assert outcome.status == "failed" and "did not write" in outcome.error
    with open(pairs[0].output) as f:
        assert f.read() == "someone's notes"
    assert subtract_files(pairs, configuration=CONFIGURATION, overwrite=True)[0].status == \
        "written"


def test_an_output_that_is_an_input_is_refused(tmp_path):
    (tmp_path / "pairs.csv").write_text("reference,science,output\nr.fits,s.fits,s.fits\n")
    with pytest.raises(InvalidArgumentError, match="row 2: the output .* pair's own files"):
        read_manifest(tmp_path / "pairs.csv")


def test_where_the_pairs_run_is_said_once_and_checked(survey):
    pairs = read_manifest(survey / "pairs.csv", survey / "where")[:1]
    with pytest.raises(InvalidArgumentError, match="pass one of them"):
        subtract_files(pairs, scheduler="tcp://127.0.0.1:1", gpus=[0])
    with pytest.raises(InvalidArgumentError, match="gpus=\\[7\\]"):
        subtract_files(pairs, gpus=[7])
    with pytest.raises(InvalidArgumentError, match="unknown configuration"):
        subtract_files(pairs, configuration={"half_widht": 3})
    assert subtract_files([], configuration=CONFIGURATION, gpus=[7]) == []
    # (the Subtractor's FFT threads: subtract_many's own workers= shadows them; this does not)
    assert subtract_files([], configuration={**CONFIGURATION, "workers": 2}) == []
    with pytest.raises(InvalidArgumentError, match="out of subtract_files's configuration"):
        subtract_files(pairs, configuration={"shape": (8, 8)})


def test_a_pair_whose_worker_was_lost_fails_alone():
    # (a worker killed with its pair: its future raises; the other pairs' outcomes are kept)
    import types

    from accelmath.subtraction._runs.manifest import Outcome, _on_cluster

    class Future:
        def __init__(self, key, value):
            self.key, self.value = key, value

        def result(self):
            if isinstance(self.value, Exception):
                raise self.value
            return self.value

    class Client:
        def __init__(self):
            self.count = 0

        def submit(self, fn, pair, *args, pure):
            self.count += 1
            lost = RuntimeError("KilledWorker: the worker died")
            return Future(self.count, lost if self.count == 1 else Outcome(pair, "written"))

    distributed = types.SimpleNamespace(as_completed=iter)
    pairs = [SurveyPair("a", "b", None, "c"), SurveyPair("d", "e", None, "f")]
    seen = []
    outcomes = _on_cluster(distributed, Client(), pairs, {}, False, True, seen.append)
    assert [o.status for o in outcomes] == ["failed", "written"] and len(seen) == 2
    assert "the worker died" in outcomes[0].error and outcomes[0].pair == pairs[0]


def test_gpus_0_runs_on_a_local_cluster_of_cpu_workers(survey, monkeypatch):
    # (as the docstring says; without a GPU the default runs in this process)
    pytest.importorskip("distributed")
    from accelmath.subtraction._runs import cluster as _dask

    asked = []

    def local_cluster(gpus, *args, **kwargs):
        asked.append(gpus)
        raise RuntimeError("a local cluster was asked for")

    monkeypatch.setattr(_dask, "_local_cluster", local_cluster)
    monkeypatch.setattr("accelmath.subtraction._gpu.gpu_count", lambda: 0)
    pairs = read_manifest(survey / "pairs.csv", survey / "cpu-workers")[:1]
    with pytest.raises(RuntimeError, match="local cluster"):
        subtract_files(pairs, configuration=CONFIGURATION, gpus=0)
    assert asked == [0]
    assert subtract_files(pairs, configuration=CONFIGURATION)[0].status == "written"


def test_a_survey_writes_nan_where_an_input_pixel_is_not_finite(survey):
    pairs = read_manifest(survey / "pairs.csv", survey / "nan-out")[:1]
    science = fits.getdata(pairs[0].science).astype(np.float64)
    science[10, 20] = np.nan
    header = fits.getheader(pairs[0].science)
    fits.PrimaryHDU(science, header=header).writeto(pairs[0].science, overwrite=True)
    mask = fits.getdata(pairs[0].mask)
    mask[10, 20] = 1  # (a bad pixel: the mask covers it)
    fits.PrimaryHDU(mask).writeto(pairs[0].mask, overwrite=True)
    outcome, = subtract_files(pairs, configuration=CONFIGURATION)
    assert outcome.status == "written", outcome.error
    written = fits.getdata(pairs[0].output)
    assert np.isnan(written[10, 20]) and np.isfinite(written).sum() == SIZE * SIZE - 1

"""Many pairs of FITS files: a manifest of pairs, subtracted where they lie, resumable.

:func:`read_manifest` reads a CSV manifest (a header row, the columns ``reference`` and
``science``, optionally ``mask`` and ``output``). :func:`subtract_files` runs its pairs: in
this process on a machine with at most one GPU, or over Dask on every GPU of the machine (a
local cluster, one worker per GPU) or on a cluster given by its scheduler's address. Each
pair is read, subtracted and written by the process that runs it (no image crosses the
scheduler), with one warm :class:`~accelmath.subtraction.Subtractor` per worker and image
shape. A pair whose output exists and is complete is skipped; an output is written atomically
(:func:`~accelmath.subtraction.write_difference`); a pair that fails is reported with its
error and the others go on.
"""

import csv
import os
import time
import warnings
from typing import NamedTuple, Optional

from accelmath.errors import InvalidArgumentError

__all__ = ["Outcome", "SurveyPair", "is_complete", "read_manifest", "subtract_files"]

_COLUMNS = ("reference", "science", "mask", "output")


class SurveyPair(NamedTuple):
    """One pair of a manifest: the files, absolute."""

    reference: str
    science: str
    mask: Optional[str]
    output: str


class Outcome(NamedTuple):
    """What became of one pair: ``status`` "written", "skipped" (its output was complete)
    or "failed" (``error`` says why); ``seconds`` of the pair's run; ``ratio`` of the fit."""

    pair: SurveyPair
    status: str
    error: Optional[str] = None
    seconds: float = 0.0
    ratio: Optional[float] = None


def read_manifest(path, out_dir=None):
    """The pairs of a CSV manifest.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file: a header row naming the columns ``reference`` and ``science``, and
        optionally ``mask`` and ``output``; relative paths are relative to the manifest's
        folder.
    out_dir : str or os.PathLike, optional
        Where outputs without an ``output`` go: ``<out_dir>/<science file's stem>-diff.fits``
        (default: the manifest's folder).

    Returns
    -------
    list of SurveyPair

    Raises
    ------
    InvalidArgumentError
        For a missing column, an empty cell where a file is needed, or two pairs writing one
        output, naming the row.

    Examples
    --------
    >>> import os, tempfile
    >>> from accelmath.subtraction._runs.manifest import read_manifest
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "pairs.csv"), "w") as f:
    ...     _ = f.write("reference,science\\nref1.fits,sci1.fits\\n")
    >>> pair = read_manifest(os.path.join(folder, "pairs.csv"))[0]
    >>> os.path.basename(pair.science), pair.mask, os.path.basename(pair.output)
    ('sci1.fits', None, 'sci1-diff.fits')
    """
    name = os.fspath(path)
    base = os.path.dirname(os.path.abspath(name))
    out_dir = base if out_dir is None else os.path.abspath(os.fspath(out_dir))
    if os.path.exists(name) and not os.path.isfile(name):  # (a pipe, /dev/zero: endless)
        raise InvalidArgumentError(f"the manifest {name} is not a regular file (a folder, a "
                                   "pipe, a device)")
    try:
        # (utf-8-sig: a spreadsheet's byte-order mark is not part of the first column's name)
        with open(name, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            fields = [(n or "").strip().lower() for n in reader.fieldnames or ()]
            reader.fieldnames = fields
            rows = []
            for row in reader:  # (numbered as the file's lines: blank ones are skipped)
                rows.append((reader.line_num, row))
    except OSError as exc:
        raise InvalidArgumentError(f"the manifest {name} cannot be read: {exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"the manifest {name} is not a CSV file: {exc}") from None
    missing = [c for c in ("reference", "science") if c not in fields]
    if missing:
        raise InvalidArgumentError(
            f"the manifest {name} has no column {' or '.join(missing)} in its header row "
            f"(it has {fields}); expected reference,science[,mask][,output]")
    if not rows:
        raise InvalidArgumentError(f"the manifest {name} lists no pairs: a header row, then a "
                                   "row per pair")

    def absolute(value):
        return os.path.normpath(os.path.join(base, value))

    pairs, outputs, inputs = [], {}, {}
    for number, row in rows:
        if None in row:  # (cells beyond the header's columns)
            raise InvalidArgumentError(f"{name}, row {number}: {len(row[None])} cell(s) more "
                                       f"than the header's columns {fields}")
        cells = {c: (row.get(c) or "").strip() for c in _COLUMNS}
        for column in ("reference", "science"):
            if not cells[column]:
                raise InvalidArgumentError(f"{name}, row {number}: no {column} file")
        stem = os.path.splitext(os.path.basename(cells["science"]))[0]
        output = (absolute(cells["output"]) if cells["output"]
                  else os.path.join(out_dir, f"{stem}-diff.fits"))
        # (files compared as their real paths: a folder reached through a link is one)
        real = os.path.realpath(output)
        if real in outputs:
            raise InvalidArgumentError(
                f"{name}, rows {outputs[real]} and {number} both write {output}: give one an "
                "output column")
        outputs[real] = number
        pair = SurveyPair(absolute(cells["reference"]), absolute(cells["science"]),
                          absolute(cells["mask"]) if cells["mask"] else None, output)
        own = [os.path.realpath(p) for p in (pair.reference, pair.science, pair.mask)
               if p is not None]
        if real in own:
            raise InvalidArgumentError(f"{name}, row {number}: the output {output} is one of "
                                       "the pair's own files")
        for path in own:
            inputs.setdefault(path, number)
        pairs.append(pair)
    for output, number in outputs.items():
        if output in inputs:
            raise InvalidArgumentError(f"{name}, row {number} writes {output}, which row "
                                       f"{inputs[output]} reads")
    return pairs


def is_complete(path):
    """Whether ``path`` is a whole difference image that this code wrote: not a link, a FITS
    file whose header carries the ``AMVERS`` record (see :func:`write_difference`) and that
    holds the data its header declares (a file cut short by a crash is not complete)."""
    return _state(path) == "complete"


def _state(path):
    """What an existing output is: ``"link"``; ``"complete"`` (:func:`is_complete`);
    ``"cut"``, a difference of this code cut short; or ``"foreign"``, anything else (not a
    regular file, not FITS, unreadable, a FITS file this code did not write, or not an
    image)."""
    if os.path.islink(path):
        return "link"
    if not os.path.isfile(path):  # (a pipe or a device is never opened: it would not end)
        return "foreign"
    try:
        from astropy.io import fits
    except ImportError:
        return "foreign"
    from accelmath.subtraction._runs.fits import compressed_suffix

    packed = compressed_suffix(path) != ""
    try:
        size = os.path.getsize(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (astropy's word on a cut-short file: "cut" here)
            with fits.open(path, memmap=False, lazy_load_hdus=False) as hdus:
                header = hdus[0].header
                # (a difference of this code is an image with its record)
                if "AMVERS" not in header or header.get("NAXIS", 0) != 2:
                    return "foreign"
                if packed:  # (its size says nothing: whole where its data decompress)
                    return "complete" if _decompresses(hdus[0]) else "cut"
        pixels = header.get("NAXIS1", 0) * header.get("NAXIS2", 0)  # (NAXIS is 2 here)
        data = pixels * abs(header.get("BITPIX", 8)) // 8
        needed = len(header.tostring()) + -(-data // 2880) * 2880
        return "complete" if size >= needed else "cut"
    except (OSError, ValueError, TypeError, KeyError):
        return "foreign"


def _decompresses(hdu):
    """Whether the data of a compressed file's ``hdu`` read whole (a warning of a short one
    taken as an error; data declared larger than half this machine's memory are not read)."""
    from accelmath.subtraction._runs.fits import fits_in_memory

    try:
        fits_in_memory(hdu, "an output", "its file")
    except InvalidArgumentError:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            hdu.data
        except (OSError, EOFError, ValueError, Warning):
            return False
    return True


def _run_one(pair, configuration, overwrite, mask_excludes):
    """Read, subtract and write one pair here (a worker or this process): its Outcome."""
    from accelmath.subtraction._runs.cluster import _gpu_kind, _warm_subtractors
    from accelmath.subtraction._runs.fits import check_output, read_pair, write_difference

    start = time.perf_counter()
    try:
        if not overwrite and os.path.lexists(pair.output):
            state = _state(pair.output)
            if state == "complete":
                return Outcome(pair, "skipped", seconds=time.perf_counter() - start)
            if state != "cut":  # (only a difference of ours cut short is replaced)
                what = ("a link" if state == "link" else
                        "something this code did not write (its differences are FITS images "
                        "with an AMVERS record)")
                raise InvalidArgumentError(
                    f"the output {pair.output} exists and is {what}: it is left as it is "
                    "(pass overwrite=True, or --overwrite, to replace it)")
        folder = os.path.dirname(pair.output)
        if folder:
            os.makedirs(folder, exist_ok=True)
        check_output(pair.output, overwrite=True,  # (before the work: a folder not writable)
                     inputs=(pair.reference, pair.science, pair.mask))
        kind = _gpu_kind()
        read = read_pair(pair.reference, pair.science, pair.mask, mask_excludes=mask_excludes,
                         like=None if kind is None else kind.module)
        with _warm_subtractors().hold(read.reference, configuration) as subtractor:
            result = subtractor.subtract(read.reference, read.science, mask=read.mask)
            write_difference(pair.output, result.difference, read.header, result,
                             overwrite=True, invalid=read.invalid)
        return Outcome(pair, "written", seconds=time.perf_counter() - start,
                       ratio=float(result.ratio))
    except Exception as exc:  # (reported with the pair; the others go on)
        return Outcome(pair, "failed", f"{type(exc).__name__}: {exc}",
                       time.perf_counter() - start)


def subtract_files(pairs, *, configuration=None, client=None, scheduler=None, gpus=None,
                   overwrite=False, mask_excludes=True, progress=None):
    """Subtract many pairs of FITS files, each written beside where it is read.

    Parameters
    ----------
    pairs : sequence of SurveyPair
        The pairs (:func:`read_manifest` makes them from a CSV file).
    configuration : dict, optional
        :class:`~accelmath.subtraction.Subtractor` parameters (``half_width``,
        ``kernel_order``...).
    client : distributed.Client, optional
        Run on this Dask cluster.
    scheduler : str, optional
        Or on the cluster of this scheduler address.
    gpus : int or sequence of int, optional
        Without either: the GPUs to use, a count or ordinals (default all). The first GPU
        alone (or none on a machine without one) runs in this process; anything else (more
        GPUs, another one, 0 for CPU workers) on a local cluster of one worker per GPU (a
        script must then call this under ``if __name__ == "__main__":``).
    overwrite : bool, optional
        Subtract pairs whose output is complete too (default: skip them).
    mask_excludes : bool, optional
        The masks' convention (see :func:`~accelmath.subtraction.read_pair`).
    progress : callable, optional
        Called with each :class:`Outcome` as it arrives.

    Returns
    -------
    list of Outcome
        In the pairs' order.
    """
    from accelmath.subtraction._runs.cluster import (_check_configuration, _cores,
                                                     _gpu_ordinals, _import_distributed,
                                                     _local_cluster)
    from accelmath.subtraction._gpu import gpu_count

    configuration = dict(configuration or {})
    _check_configuration(configuration, "subtract_files", shadowed=())
    pairs = list(pairs)
    report = progress or (lambda outcome: None)
    if sum(x is not None for x in (client, scheduler, gpus)) > 1:
        raise InvalidArgumentError(
            f"client={client!r}, scheduler={scheduler!r} and gpus={gpus!r}: each says where the "
            "pairs run; pass one of them")
    if not pairs:
        return []
    if client is None and scheduler is None:
        count = gpu_count()
        ordinals = _gpu_ordinals(gpus, count)
        if ordinals == [0] or gpus is None and not count:  # (this process, no cluster)
            outcomes = []
            for pair in pairs:
                outcomes.append(_run_one(pair, configuration, overwrite, mask_excludes))
                report(outcomes[-1])
            return outcomes
    distributed = _import_distributed()
    if client is not None:
        return _on_cluster(distributed, client, pairs, configuration, overwrite, mask_excludes,
                           report)
    if scheduler is not None:
        try:
            own = distributed.Client(scheduler)
        except (ValueError, TypeError, OSError) as exc:  # (an address that is none, or down)
            raise InvalidArgumentError(f"scheduler={scheduler!r}: no Dask scheduler reached "
                                       f"there ({type(exc).__name__}: {exc})") from None
        with own:
            return _on_cluster(distributed, own, pairs, configuration, overwrite,
                               mask_excludes, report)
    with _local_cluster(gpus, None, cores=min(_cores(), len(pairs)),
                        caller="subtract_files") as cluster:
        with distributed.Client(cluster) as own:
            return _on_cluster(distributed, own, pairs, configuration, overwrite,
                               mask_excludes, report)


def _on_cluster(distributed, client, pairs, configuration, overwrite, mask_excludes, report):
    """The pairs' outcomes from the workers of ``client``, in the pairs' order."""
    futures = [client.submit(_run_one, pair, configuration, overwrite, mask_excludes,
                             pure=False) for pair in pairs]
    index = {future.key: k for k, future in enumerate(futures)}
    outcomes = [None] * len(pairs)
    for future in distributed.as_completed(futures):
        k = index[future.key]
        try:
            outcome = future.result()
        except Exception as exc:  # (a worker lost with the pair: that pair fails alone)
            outcome = Outcome(pairs[k], "failed", f"{type(exc).__name__}: {exc}", 0.0)
        outcomes[k] = outcome
        report(outcome)
    return outcomes

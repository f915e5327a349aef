"""``accelmath subtract``: image subtraction of FITS files from the command line.

One pair: ``accelmath subtract REF.fits SCI.fits -o DIFF.fits`` reads the pair (and a mask),
subtracts it on the device asked for, and writes the difference with the science image's
header and the fit's record, printing a line per stage. Many pairs: ``accelmath subtract
--pairs pairs.csv --out-dir DIR`` runs a CSV manifest
(:mod:`accelmath.subtraction._runs.manifest`) on every GPU of the machine or on a Dask
scheduler, resumable, a line per pair.
"""

import argparse
import sys
import time

from accelmath.errors import AccelmathError, InvalidArgumentError

__all__ = ["add_subtract", "run_pairs", "run_single"]

_KNOBS = (("half_width", int, 9, "kernel half-width w (the kernel is 2w + 1 wide)"),
          ("kernel_order", int, 2, "polynomial degree of the kernel's spatial variation"),
          ("background_order", int, 0, "polynomial degree of the differential background"),
          ("solver", str, "cholesky", "the normal equations' solver: cholesky or lu"),
          ("convolve", str, "reference", "the image the kernel convolves: reference or "
                                         "science"))


def _configuration(args):
    configuration = {name: getattr(args, name) for name, *_ in _KNOBS}
    configuration["constant_ratio"] = not args.varying_ratio
    return configuration


class _Stages:
    """Prints ``[k/n] stage: seconds`` as each stage ends."""

    def __init__(self, count, stream):
        self.count, self.stream, self.done = count, stream, 0

    def run(self, what, step):
        start = time.perf_counter()
        value = step()
        self.done += 1
        print(f"[{self.done}/{self.count}] {what}: {time.perf_counter() - start:.2f} s",
              file=self.stream, flush=True)
        return value


def run_single(args, stream=None):
    """One pair of files (see the module docstring); the exit status. Progress goes to
    ``stream`` (default: ``sys.stderr`` as it is at the call)."""
    stream = sys.stderr if stream is None else stream
    from accelmath.subtraction import Subtractor, read_pair, write_difference
    from accelmath.subtraction._demo import resolve_device
    from accelmath.subtraction._runs.fits import check_output

    if args.output is None:
        raise InvalidArgumentError("-o/--output names the difference image to write")
    # (before the work: an output there, or a folder that cannot take it)
    check_output(args.output, args.overwrite, inputs=(args.reference, args.science, args.mask),
                 flag="--overwrite")
    _, like, label = resolve_device(args.device)
    stages = _Stages(4, stream)
    hdu = int(args.hdu) if args.hdu is not None and args.hdu.isdecimal() else args.hdu
    pair = stages.run(f"reading {args.reference} and {args.science}", lambda: read_pair(
        args.reference, args.science, args.mask, hdu=hdu,
        mask_excludes=args.mask_means == "bad", like=like))
    subtractor = stages.run(f"planning on {label}", lambda: Subtractor(
        tuple(pair.reference.shape), like=like, **_configuration(args)))
    with subtractor:
        result = stages.run("subtracting", lambda: subtractor.subtract(
            pair.reference, pair.science, mask=pair.mask))
        stages.run(f"writing {args.output}", lambda: write_difference(
            args.output, result.difference, pair.header, result, overwrite=args.overwrite,
            invalid=pair.invalid))
    print(f"photometric ratio {result.ratio:.6f}; difference written to {args.output}",
          file=stream)
    return 0


def run_pairs(args, stream=None):
    """A manifest of pairs (see the module docstring); the exit status: 1 where a pair
    failed. Progress goes to ``stream`` (default: ``sys.stderr`` at the call)."""
    stream = sys.stderr if stream is None else stream
    from accelmath.subtraction._runs.manifest import read_manifest, subtract_files

    pairs = read_manifest(args.pairs, args.out_dir)
    done = [0]

    def report(outcome):
        done[0] += 1
        where = outcome.pair.output
        if outcome.status == "written":
            line = f"written {where} (ratio {outcome.ratio:.6f}, {outcome.seconds:.2f} s)"
        elif outcome.status == "skipped":
            line = f"skipped {where} (complete)"
        else:
            line = f"FAILED {outcome.pair.science}: {outcome.error}"
        print(f"[{done[0]}/{len(pairs)}] {line}", file=stream, flush=True)

    outcomes = subtract_files(pairs, configuration=_configuration(args),
                              scheduler=args.scheduler, gpus=args.gpus,
                              overwrite=args.overwrite,
                              mask_excludes=args.mask_means == "bad", progress=report)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("written", "skipped", "failed")}
    print(", ".join(f"{n} {s}" for s, n in counts.items()), file=stream)
    return 1 if counts["failed"] else 0


def _run(args):
    try:
        single = {"-o": args.output, "--mask": args.mask, "--hdu": args.hdu,
                  "--device": None if args.device == "auto" else args.device}
        many = {"--out-dir": args.out_dir, "--scheduler": args.scheduler, "--gpus": args.gpus}
        if args.pairs is not None:
            if args.reference or args.science:
                raise InvalidArgumentError("give either REFERENCE SCIENCE or --pairs, not both")
            _refuse(single, "one pair", "--pairs (the manifest names each pair's files)")
            return run_pairs(args)
        if not (args.reference and args.science):
            raise InvalidArgumentError("give REFERENCE and SCIENCE files, or --pairs MANIFEST")
        _refuse(many, "--pairs", "one pair")
        return run_single(args)
    except (AccelmathError, OSError, ImportError) as exc:
        print(f"accelmath subtract: {exc}", file=sys.stderr)
        return 1


def _refuse(options, belong, given):
    """InvalidArgumentError where any of ``options`` (flag: value) was given: they belong to
    ``belong``, not to the ``given`` form."""
    flags = [flag for flag, value in options.items() if value is not None]
    if flags:
        raise InvalidArgumentError(f"{', '.join(flags)}: for {belong}, not for {given}")


def _gpus(text):
    try:
        return [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid GPU list (ordinals, comma-separated): {text!r}") from None


def add_subtract(commands):
    """The ``subtract`` command's parser, added to ``commands`` (argparse's subparsers)."""
    command = commands.add_parser(
        "subtract", help="subtract FITS images (one pair, or a manifest of many)",
        description="Image subtraction (the SFFT method) of FITS files: one pair, REFERENCE "
                    "SCIENCE -o DIFFERENCE, or many, --pairs MANIFEST.csv --out-dir DIR (a "
                    "CSV with a header row and the columns reference,science and optionally "
                    "mask,output; outputs default to DIR/<science stem>-diff.fits). A pair "
                    "whose output is complete is skipped (--overwrite redoes it), outputs are "
                    "written atomically, and a failing pair is reported without stopping the "
                    "others. The difference keeps the science image's header (its WCS) and "
                    "records the fit. Defaults: PHROSTY's configuration.")
    command.add_argument("reference", nargs="?", help="the reference image (FITS)")
    command.add_argument("science", nargs="?", help="the science image (FITS)")
    command.add_argument("-o", "--output", metavar="FILE", help="the difference image to write")
    command.add_argument("--mask", metavar="FILE", help="a mask image (FITS) of the pair")
    command.add_argument("--mask-means", choices=("bad", "use"), default="bad",
                         help="what the mask's nonzero pixels are: bad pixels left out of the "
                              "fit (default), or the pixels to use")
    command.add_argument("--hdu", help="the HDU of the images, an index or a name (default: "
                                       "the first image)")
    command.add_argument("--pairs", metavar="MANIFEST", help="a CSV manifest of pairs")
    command.add_argument("--out-dir", metavar="DIR", help="where the manifest's outputs go "
                                                          "(default: the manifest's folder)")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="run the manifest on this Dask scheduler (tcp://host:port)")
    command.add_argument("--gpus", type=_gpus, metavar="LIST",
                         help="the GPUs to run the manifest on, e.g. 0,1 (default: all)")
    command.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                         help="where one pair runs (default: the GPU where usable)")
    command.add_argument("--overwrite", action="store_true",
                         help="replace existing outputs")
    for name, kind, default, text in _KNOBS:
        command.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind,
                             default=default, help=f"{text} (default: {default})")
    command.add_argument("--varying-ratio", action="store_true",
                         help="let the photometric ratio vary over the image (default: "
                              "constant)")
    command.set_defaults(run=_run)
    return command

"""Image subtraction in Fourier space (the SFFT method of Hu et al., as the Roman Space
Telescope's PHROSTY pipeline runs it), on accelmath's FFT and linear algebra.

:func:`subtract` subtracts one pair; a :class:`Subtractor` keeps its plans and buffers for
a loop over pairs of one shape; :func:`synthetic_pair` makes a star-field pair with a known
kernel, ratio and transient; :func:`subtract_many` spreads many pairs over a Dask cluster;
:func:`read_pair` and :func:`write_difference` read and write FITS files (astropy), and
:func:`subtract_files` runs a survey of them from a :func:`read_manifest` CSV. Images may be NumPy arrays (computed on the CPU), CuPy arrays or torch tensors (on their
GPU); the difference comes back in the images' kind.

Examples
--------
>>> from accelmath.subtraction import subtract, synthetic_pair
>>> pair = synthetic_pair(64, seed=0, stars=40, kernel_half_width=3)
>>> result = subtract(pair.reference, pair.science, mask=pair.mask, half_width=3)
>>> abs(result.ratio - pair.ratio) < 0.05
True
"""

import importlib

# Each public name and the module that holds it, imported when the name is first asked for:
# the command line (``accelmath subtract``'s parser lives here) and ``import
# accelmath.subtraction._anything`` load none of them.
_WHERE = {
    "subtract": "_subtractor", "Subtractor": "_subtractor", "SubtractionResult": "_subtractor",
    "synthetic_pair": "_synthetic", "SyntheticPair": "_synthetic", "Configuration": "_model",
    "read_pair": "_runs.fits", "write_difference": "_runs.fits", "FitsPair": "_runs.fits",
    "read_manifest": "_runs.manifest", "subtract_files": "_runs.manifest",
    "SurveyPair": "_runs.manifest", "Outcome": "_runs.manifest",
    "subtract_many": "_runs.cluster", "local_cluster": "_runs.cluster",
}
__all__ = list(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'accelmath.subtraction' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"accelmath.subtraction.{module}"), name)
    globals()[name] = value  # (found at once the next time)
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))

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

from accelmath.subtraction._fits import FitsPair, read_pair, write_difference
from accelmath.subtraction._model import Configuration
from accelmath.subtraction._subtractor import SubtractionResult, Subtractor, subtract
from accelmath.subtraction._survey import Outcome, SurveyPair, read_manifest, subtract_files
from accelmath.subtraction._synthetic import SyntheticPair, synthetic_pair

__all__ = ["subtract", "Subtractor", "SubtractionResult", "synthetic_pair", "SyntheticPair",
           "Configuration", "read_pair", "write_difference", "FitsPair", "read_manifest",
           "subtract_files", "SurveyPair", "Outcome", "subtract_many", "local_cluster"]

_DASK = ("subtract_many", "local_cluster")


def __getattr__(name):
    if name in _DASK:  # (imports nothing heavy, but only when asked for)
        return getattr(importlib.import_module("accelmath.subtraction._dask"), name)
    raise AttributeError(f"module 'accelmath.subtraction' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_DASK))

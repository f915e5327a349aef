"""The records an FFT call is described and remembered by (accelmath.fft._records): what the
public functions hand on, what the call memo keys, and the equality the memo relies on."""

import numpy as np
import pytest

import accelmath.fft
from accelmath.fft import _functions, _functions_nd, _scipy_functions, _transform
from accelmath.fft._records import CallKey, Checked, PlanKey, Transform, record

# function -> (kind, inverse, conjugate, norm swapped)
FUNCTIONS = {
    "fft": ("c2c", False, False, False), "ifft": ("c2c", True, False, False),
    "rfft": ("r2c", False, False, False), "irfft": ("c2r", True, False, False),
    "hfft": ("c2r", True, True, True), "ihfft": ("r2c", False, True, True),
    "fft2": ("c2c", False, False, False), "ifft2": ("c2c", True, False, False),
    "rfft2": ("r2c", False, False, False), "irfft2": ("c2r", True, False, False),
    "fftn": ("c2c", False, False, False), "ifftn": ("c2c", True, False, False),
    "rfftn": ("r2c", False, False, False), "irfftn": ("c2r", True, False, False),
    "hfft2": ("c2r", True, True, True), "ihfft2": ("r2c", False, True, True),
    "hfftn": ("c2r", True, True, True), "ihfftn": ("r2c", False, True, True),
}
SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
ONE_AXIS = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}


@pytest.fixture
def described(monkeypatch):
    """The Transform records the public functions hand on (the calls still run)."""
    seen = []
    transform = _transform.transform

    def recording(call, x, out, stream):
        seen.append(call)
        return transform(call, x, out, stream)

    monkeypatch.setattr(_functions, "transform", recording)
    monkeypatch.setattr(_functions_nd, "transform", recording)
    monkeypatch.setattr(_scipy_functions, "transform", recording)
    return seen


def test_record_builds_what_the_constructor_builds():
    fields = ("c2r", (8,), (0,), "ortho", True, False, "cpu", 2)
    built = record(Transform, fields)
    assert type(built) is Transform and built == Transform(*fields)
    assert built._asdict() == dict(zip(Transform._fields, fields))


def test_a_call_key_equals_its_fields_and_hashes_alike():
    """The memo's hit path looks a CallKey up by a plain tuple of its fields."""
    call = Transform("c2c", None, (-1,), None, False, False, "auto", None)
    fields = (call, False, np.ndarray, ((8,), np.dtype("complex64")))
    key = CallKey(*fields)
    assert key == fields and hash(key) == hash(fields)
    assert {key: "entry"}[fields] == "entry"
    # the same values equal the same key; another value of any field another
    assert CallKey(Transform(*call), *fields[1:]) == key
    assert CallKey(call._replace(norm="ortho"), *fields[1:]) != key
    assert CallKey(call, True, *fields[2:]) != key


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_public_functions_describe_the_call_as_asked(name, described):
    kind, inverse, conjugate, swapped = FUNCTIONS[name]
    x = np.random.default_rng(0).standard_normal((4, 6)) + 0j
    if kind == "r2c":
        x = x.real
    n, axes = ((6,), (-1,)) if name in ONE_AXIS else ((4, 6), (0, 1))
    kwargs = {"n": 6, "axis": -1} if name in ONE_AXIS else {"s": (4, 6), "axes": (0, 1)}
    getattr(accelmath.fft, name)(x, norm="ortho", workers=1, **kwargs)
    assert described == [Transform(kind, n, axes, "ortho", inverse, conjugate, "auto", 1)]
    described.clear()
    getattr(accelmath.fft, name)(x)  # (the norm as given: None, or hfft's swapped default)
    (call,) = described
    assert call.norm == (SWAPPED["backward"] if swapped else None)
    assert call.s is None and call.workers is None and call.execution == "auto"


def test_remembered_calls_are_keyed_by_call_keys():
    accelmath.fft.clear_cache()
    x = np.ones((4, 8), np.complex64)
    accelmath.fft.fft(x, axis=0, workers=-1)
    (key,) = _transform.dispatcher._calls
    assert type(key) is CallKey and type(key.transform) is Transform
    # as asked, its workers checked (-1: all CPUs, as check_workers keeps it)
    assert key == (Transform("c2c", None, (0,), None, False, False, "auto", -1), False,
                   np.ndarray, ((4, 8), np.dtype("complex64")))
    assert type(_transform.dispatcher.recall(key)) is _transform.HostCall
    accelmath.fft.fft(x, axis=0, workers=-1)  # (a hit: nothing more remembered)
    assert len(_transform.dispatcher._calls) == 1


def test_repeated_axes_run_as_records_of_their_runs(monkeypatch):
    """A call over an axis given twice runs as one checked record per run of distinct axes,
    in NumPy's order: hfftn's first run a c2c the other way, its norm swapped back."""
    parts = []
    transform = _transform.transform

    def recording(call, x, out, stream):
        parts.append(call)
        return transform(call, x, out, stream)

    monkeypatch.setattr(_transform, "transform", recording)
    x = np.random.default_rng(1).standard_normal((4, 6)) + 0j
    result = accelmath.fft.hfftn(x, axes=(1, 0, 1), norm="forward")
    # (hfftn is irfftn of the conjugate, the norm swapped; scipy.fft refuses repeated axes)
    assert np.allclose(result, np.fft.irfftn(np.conj(x), axes=(1, 0, 1), norm="backward"))
    assert parts == [Transform("c2c", (6,), (1,), "forward", False, False, "auto", None),
                     Transform("c2r", (4, 10), (0, 1), "backward", True, True, "auto", None)]


def test_records_are_documented_named_tuples():
    for cls in (Transform, CallKey, Checked, PlanKey):
        assert issubclass(cls, tuple) and cls.__doc__
        assert cls._fields == tuple(cls.__annotations__)

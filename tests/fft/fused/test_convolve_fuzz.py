"""convolve, correlate and Convolver on random shapes, axes, modes and dtypes, fresh each run,
against scipy.signal: the same values, shapes and errors (axes of one point included, where
SciPy's fftconvolve multiplies instead of transforming)."""

import numpy as np
import pytest
import scipy.signal

import accelmath.fft as F
from accelmath.errors import InvalidArgumentError

SEED = int(np.random.default_rng().integers(2**31))


def _case(rng):
    ndim = int(rng.integers(1, 4))
    s1 = tuple(int(v) for v in rng.integers(1, 9, ndim))
    s2 = tuple(int(v) for v in rng.integers(1, 9, ndim))
    axes = None
    if ndim > 1 and rng.random() < 0.5:
        count = int(rng.integers(1, ndim + 1))
        axes = tuple(sorted(int(a) for a in rng.choice(ndim, count, replace=False)))
        s2 = tuple(s2[a] if a in axes else (s1[a] if rng.random() < 0.5 else 1)
                   for a in range(ndim))
    mode = str(rng.choice(["full", "same", "valid"]))
    a = rng.standard_normal(s1)
    if rng.random() < 0.3:
        a = a + 1j * rng.standard_normal(s1)
    return a, rng.standard_normal(s2), mode, axes


def _outcome(call):
    try:
        return call()
    except ValueError as exc:
        return exc


@pytest.mark.parametrize("round_", range(4), ids=lambda r: f"seed{SEED}-{r}")
def test_random_cases_are_scipys(round_):
    rng = np.random.default_rng(SEED + round_)
    for _ in range(60):
        a, b, mode, axes = _case(rng)
        pairs = [(lambda: F.convolve(a, b, mode=mode, axes=axes),
                  lambda: scipy.signal.fftconvolve(a, b, mode=mode, axes=axes))]
        if axes is None:
            pairs.append((lambda: F.correlate(a, b, mode=mode),
                          lambda: scipy.signal.correlate(a, b, mode=mode, method="fft")))
        for ours, theirs in pairs:
            got, expected = _outcome(ours), _outcome(theirs)
            where = f"seed {SEED}: {a.shape} {b.shape} {mode} axes={axes}"
            if isinstance(expected, ValueError):
                assert isinstance(got, ValueError), where
                continue
            assert not isinstance(got, ValueError), f"{where}: {got}"
            assert got.shape == expected.shape, where
            np.testing.assert_allclose(got, expected, atol=1e-9, err_msg=where)
        if axes is None:  # a Convolver made to correlate, axes of one point among them
            got = _outcome(lambda: _correlated(a, b, mode))
            expected = _outcome(lambda: scipy.signal.correlate(a, b, mode=mode, method="fft"))
            where = f"seed {SEED}: Convolver correlate {a.shape} {b.shape} {mode}"
            if isinstance(expected, ValueError) or isinstance(got, ValueError):
                # (a Convolver takes no image smaller than its kernel in 'valid' mode)
                assert isinstance(got, ValueError) and mode == "valid", where
            else:
                np.testing.assert_allclose(got, expected, atol=1e-9, err_msg=where)
        if axes is None and mode != "valid":
            with F.Convolver(b, a.shape, mode=mode, dtype=a.dtype) as convolver:
                np.testing.assert_allclose(convolver(a), scipy.signal.fftconvolve(a, b, mode=mode),
                                           atol=1e-9)


def _correlated(image, kernel, mode):
    with F.Convolver(kernel, image.shape, mode=mode, dtype=image.dtype,
                     correlate=True) as convolver:
        return convolver(image)


def test_a_correlating_convolver_reverses_its_kernel_along_axes_of_one_point():
    kernel = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(_correlated(np.ones(1), kernel, "full"), [3.0, 2.0, 1.0])
    image, kernel = np.arange(6.0).reshape(1, 6), np.arange(9.0).reshape(3, 3)
    np.testing.assert_allclose(_correlated(image, kernel, "full"),
                               scipy.signal.correlate(image, kernel), atol=1e-12)


def test_axes_of_one_point_multiply():
    a, b = np.random.default_rng().standard_normal((2, 4, 2, 2)), np.ones((1, 6, 3))
    a = a[0]
    expected = scipy.signal.fftconvolve(a, b, mode="valid")  # (axis 0 dropped: b is larger)
    np.testing.assert_allclose(F.convolve(a, b, mode="valid"), expected, atol=1e-12)
    with pytest.raises(ValueError, match="at least as large"):  # (correlate checks them all)
        F.correlate(np.ones((1, 8)), np.ones((4, 4)), mode="valid")


def test_a_convolver_refuses_images_of_a_wider_dtype():
    with F.Convolver(np.ones(3), (8,)) as convolver:
        with pytest.raises(InvalidArgumentError, match="make it with dtype='complex128'"):
            convolver(np.ones(8, complex))


@pytest.mark.parametrize("dtypes", [("int16", "int16"), ("int16", "float32"), ("uint8", "float32"),
                                    ("float16", "float16"), ("bool", "bool"),
                                    ("complex64", "int64"), ("int8", "complex64"),
                                    ("float16", "float32"), ("int32", "float16")])
def test_result_dtypes_are_scipys(dtypes):
    """``convolve`` gives ``fftconvolve``'s dtype (each input's transform in its own
    precision: integers in float64); ``correlate`` gives ``scipy.signal.correlate``'s (the
    inputs' promotion, integers rounded), with its values."""
    rng = np.random.default_rng()

    def draw(dtype, n):
        if dtype == "bool":
            return rng.random(n) > 0.5
        return (rng.standard_normal(n) * 20).astype(dtype)

    a, b = draw(dtypes[0], 16), draw(dtypes[1], 5)
    ours, theirs = F.convolve(a, b), scipy.signal.fftconvolve(a, b)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-2 * np.abs(theirs).max())
    ours, theirs = F.correlate(a, b), scipy.signal.correlate(a, b, method="fft")
    assert ours.dtype == theirs.dtype
    if theirs.dtype.kind in "biu":  # (both rounded from float64: the same, but at a tie)
        assert np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max() <= 1
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-2, atol=1e-2 * np.abs(theirs).max())

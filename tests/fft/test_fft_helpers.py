"""fftfreq, rfftfreq, fftshift and ifftshift against numpy.fft, on NumPy and torch arrays."""

import numpy as np
import pytest

import accelmath.fft
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError, UnsupportedOperandError


@pytest.mark.parametrize("n", [1, 2, 3, 8, 11, 4088])
@pytest.mark.parametrize("d", [1.0, 0.5, 1e-3])
def test_frequencies(n, d):
    for name in ("fftfreq", "rfftfreq"):
        actual = getattr(accelmath.fft, name)(n, d)
        expected = getattr(np.fft, name)(n, d)
        assert isinstance(actual, np.ndarray) and actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=1e-15)


def test_frequencies_take_numpy_integers():
    np.testing.assert_array_equal(accelmath.fft.fftfreq(np.int64(5)), np.fft.fftfreq(5))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_like_torch(name):
    torch = pytest.importorskip("torch")
    actual = getattr(accelmath.fft, name)(9, 0.25, like=torch.zeros(3))
    assert isinstance(actual, torch.Tensor) and actual.device.type == "cpu"
    np.testing.assert_allclose(actual.numpy(), getattr(np.fft, name)(9, 0.25), rtol=1e-15)


def test_frequencies_like_numpy():
    actual = accelmath.fft.fftfreq(6, like=np.zeros(2, np.float32))
    assert isinstance(actual, np.ndarray)
    np.testing.assert_array_equal(actual, np.fft.fftfreq(6))


SHIFT_CASES = [((7,), None), ((6,), None), ((4, 5), None), ((4, 5), 0), ((4, 5), -1),
               ((3, 4, 5), (0, 2)), ((3, 4, 5), (-1, 0)), ((3, 4, 5), [1]), ((1, 5), None)]


@pytest.mark.parametrize("shape, axes", SHIFT_CASES)
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, shape, axes):
    x = np.arange(int(np.prod(shape))).reshape(shape)
    actual = getattr(accelmath.fft, name)(x, axes)
    assert isinstance(actual, np.ndarray)
    np.testing.assert_array_equal(actual, getattr(np.fft, name)(x, axes))


@pytest.mark.parametrize("shape, axes", SHIFT_CASES)
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_of_torch_tensors(name, shape, axes):
    torch = pytest.importorskip("torch")
    x = np.arange(int(np.prod(shape))).reshape(shape)
    actual = getattr(accelmath.fft, name)(torch.from_numpy(x), axes)
    assert isinstance(actual, torch.Tensor)
    np.testing.assert_array_equal(actual.numpy(), getattr(np.fft, name)(x, axes))


def test_shifts_invert_each_other():
    x = np.random.default_rng(0).standard_normal((5, 6, 7))
    np.testing.assert_array_equal(accelmath.fft.ifftshift(accelmath.fft.fftshift(x)), x)
    np.testing.assert_array_equal(
        accelmath.fft.fftshift(accelmath.fft.ifftshift(x, axes=(0, 2)), axes=(0, 2)), x)


def test_shifted_spectrum_matches_shifted_frequencies():
    x = np.random.default_rng(1).standard_normal(9)
    spectrum = accelmath.fft.fftshift(accelmath.fft.fft(x))
    frequencies = accelmath.fft.fftshift(accelmath.fft.fftfreq(9))
    assert np.all(np.diff(frequencies) > 0)
    np.testing.assert_allclose(spectrum, np.fft.fftshift(np.fft.fft(x)), rtol=1e-12)


def test_shifts_as_numpy_takes_them():
    """Lists, and axes given twice (rolled twice), as numpy.fft takes them; fftfreq's
    ``device`` as NumPy's."""
    assert accelmath.fft.ifftshift([1, 2, 3]).tolist() == np.fft.ifftshift([1, 2, 3]).tolist()
    x = np.arange(15).reshape(3, 5)
    assert (accelmath.fft.fftshift(x, axes=(1, 1)) == np.fft.fftshift(x, axes=(1, 1))).all()
    assert (accelmath.fft.fftfreq(5, device="cpu") == np.fft.fftfreq(5)).all()


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("d", [None, 0, 0.0, "x", np.zeros(2)])
def test_frequencies_refuse_a_spacing_that_is_not_a_nonzero_number(name, d):
    # (NumPy's own raise TypeError, ZeroDivisionError, or warn and give inf: found by the fuzz)
    with pytest.raises(InvalidArgumentError, match=r"^d must be a nonzero number"):
        getattr(accelmath.fft, name)(4, d)


def test_frequencies_take_numpy_spacings():
    assert (accelmath.fft.fftfreq(4, np.array(0.5)) == np.fft.fftfreq(4, 0.5)).all()
    assert (accelmath.fft.rfftfreq(4, np.float32(2)) == np.fft.rfftfreq(4, np.float32(2))).all()


@pytest.mark.parametrize("x", [None, [[1.0, 2.0], [3.0]]])
def test_shifts_name_x_for_what_is_not_an_array(x):
    with pytest.raises((UnsupportedOperandError, UnsupportedDTypeError), match=r"^x: "):
        accelmath.fft.fftshift(x)


@pytest.mark.parametrize("dtype", [object, "datetime64[s]", "U2", np.clongdouble])
def test_shifts_take_numpy_arrays_of_any_dtype(dtype):
    """A roll reads no value: NumPy arrays of dtypes no transform takes shift as NumPy's do,
    their axes checked as every shift's are."""
    x = np.arange(12).reshape(3, 4).astype(dtype)
    for name in ("fftshift", "ifftshift"):
        for axes in (None, 0, (1,), (-1, 0)):
            got = getattr(accelmath.fft, name)(x, axes)
            np.testing.assert_array_equal(got, getattr(np.fft, name)(x, axes))
            assert got.dtype == x.dtype
        with pytest.raises(InvalidArgumentError, match="axis"):
            getattr(accelmath.fft, name)(x, 2)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_of_a_0d_array_give_it_back(name):
    # (numpy.fft's fail inside numpy.roll: "not enough values to unpack")
    actual = getattr(accelmath.fft, name)(np.float64(3.0))
    assert isinstance(actual, np.ndarray) and actual.shape == () and actual == 3.0

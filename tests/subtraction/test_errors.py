"""Bad input ends in a clear accelmath error naming the problem."""

import numpy as np
import pytest

from accelmath.errors import (DeviceMismatchError, InvalidArgumentError, LinAlgError,
                              StateError, UnsupportedDTypeError, UnsupportedOperandError)
from accelmath.subtraction import Subtractor, subtract


def images(shape=(40, 40)):
    rng = np.random.default_rng()
    return rng.standard_normal(shape) + 1.0, rng.standard_normal(shape) + 1.0


def test_images_of_different_shapes():
    a, _ = images((40, 40))
    _, b = images((40, 42))
    with pytest.raises(InvalidArgumentError, match=r"science has shape \(40, 42\)"):
        subtract(a, b, half_width=2)


def test_images_not_two_dimensional():
    a, b = images()
    with pytest.raises(InvalidArgumentError, match="2-D"):
        subtract(a[None], b, half_width=2)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("which", ["reference", "science"])
def test_non_finite_pixels(value, which):
    a, b = images()
    (a if which == "reference" else b)[3, 4] = value
    with pytest.raises(InvalidArgumentError, match=f"{which} has 1 NaN or infinite"):
        subtract(a, b, half_width=2)


def test_half_width_too_large_for_the_image():
    a, b = images((20, 20))
    with pytest.raises(InvalidArgumentError, match="half_width=5 is too large"):
        subtract(a, b, half_width=5)


def test_a_configuration_of_more_unknowns_than_can_be_solved_is_refused_at_once():
    # (a kernel order of 40 made 310822 unknowns: a normal matrix of 770 GB, met only when
    # it was allocated)
    from accelmath.subtraction import Subtractor

    with pytest.raises(InvalidArgumentError, match="310822 unknowns: at most 32768"):
        Subtractor((256, 256), kernel_order=40)
    with pytest.raises(InvalidArgumentError, match="no more than the pixels"):
        Subtractor((64, 64), half_width=3, kernel_order=12)


def test_mask_of_another_shape():
    a, b = images()
    with pytest.raises(InvalidArgumentError, match=r"mask has shape \(40, 41\)"):
        subtract(a, b, mask=np.ones((40, 41), bool), half_width=2)


def test_mask_all_false():
    a, b = images()
    with pytest.raises(InvalidArgumentError, match="mask selects no pixel"):
        subtract(a, b, mask=np.zeros((40, 40), bool), half_width=2)


def test_mask_not_boolean():
    a, b = images()
    with pytest.raises(UnsupportedDTypeError, match="mask holds float64"):
        subtract(a, b, mask=np.ones((40, 40)), half_width=2)


def test_complex_images():
    a, b = images()
    with pytest.raises(UnsupportedDTypeError, match="reference holds complex128"):
        subtract(a + 0j, b, half_width=2)


def test_not_an_array():
    _, b = images()
    with pytest.raises(UnsupportedOperandError):
        subtract("image", b, half_width=2)


def test_singular_configuration():
    # a mask of one row: x is constant there, so the kernel's x terms repeat its constant one
    a, b = images()
    mask = np.zeros((40, 40), bool)
    mask[20] = True
    with pytest.raises(LinAlgError, match=r"kernel_order=1.*singular"):
        subtract(a, b, mask=mask, half_width=2, kernel_order=1, constant_ratio=False)


def test_constant_image_is_singular():
    _, b = images()
    with pytest.raises(LinAlgError, match="singular"):
        subtract(np.full((40, 40), 3.0), b, half_width=2, kernel_order=0)


def test_shape_of_the_subtractor():
    a, b = images((40, 40))
    with Subtractor((40, 44), half_width=2) as subtractor:
        with pytest.raises(InvalidArgumentError, match=r"must have shape \(40, 44\)"):
            subtractor.subtract(a, b)


def test_use_after_free():
    a, b = images()
    subtractor = Subtractor(40, half_width=2)
    subtractor.subtract(a, b)
    subtractor.free()
    subtractor.free()  # (idempotent)
    with pytest.raises(StateError, match="freed"):
        subtractor.subtract(a, b)


def test_images_of_another_kind_than_the_subtractor():
    torch = pytest.importorskip("torch")
    a, b = images()
    with Subtractor(40, half_width=2, like=np) as subtractor:
        with pytest.raises(DeviceMismatchError, match="this subtractor works on numpy"):
            subtractor.subtract(torch.from_numpy(a), torch.from_numpy(b))

"""accelmath.linalg._device.cusolver's reading of info codes (CPU: the codes given as arrays)."""

import numpy as np
import pytest

from accelmath.errors import LinAlgError
from accelmath.linalg._device.cusolver import check_codes


def test_no_failure_raises_nothing():
    check_codes(np.zeros(6, np.int32), (2, 3), "failed")
    check_codes(np.zeros(6, np.int32), (2, 3), "failed", (("a", (2, 3)), ("b", (2, 3))))


def test_the_first_positive_code_is_named_with_its_batch_index():
    with pytest.raises(LinAlgError, match=r"^failed \(batch index \(1, 0\)\)$") as e:
        check_codes(np.array([0, 0, 0, 4, 2, 0], np.int32), (2, 3), "failed")
    assert e.value.index == (1, 0)


def test_negative_codes_are_cusolvers_invalid_arguments_without_names():
    with pytest.raises(RuntimeError, match="invalid argument 3"):
        check_codes(np.array([0, -3], np.int32), (2,), "failed")


def test_with_names_nan_and_inf_codes_name_the_operand_before_any_failure():
    # -1: the first operand holds a NaN or an infinity, -2: the second; the first operand
    # with any is named (at its first matrix, its own batch index), before a factorization's
    # failure
    both = (("a", (2, 3)), ("b", (2, 3)))
    codes = np.array([3, -2, 0, -1, -1, 0], np.int32)
    with pytest.raises(LinAlgError, match=r"^a: array must not contain infs or NaNs "
                                          r"\(batch index \(1, 0\)\)$"):
        check_codes(codes, (2, 3), "failed", both)
    codes[3:5] = 0
    with pytest.raises(LinAlgError, match=r"^b: .* \(batch index \(0, 1\)\)$"):
        check_codes(codes, (2, 3), "failed", both)
    with pytest.raises(LinAlgError, match=r"^failed \(batch index \(0,\)\)$"):
        check_codes(np.array([3, 0], np.int32), (2,), "failed", (("a", (2,)),))
    with pytest.raises(LinAlgError, match=r"^x: .* \(batch index \(\)\)$"):
        check_codes(np.array([-1], np.int32), (), "failed", (("x", ()),))


def test_a_broadcast_operand_is_named_at_its_own_index():
    # a (3, 3) matrix solved against b (2, 5, 3, 1): batch (2, 5), a's own index ()
    codes = np.zeros(10, np.int32)
    codes[7] = -1
    with pytest.raises(LinAlgError, match=r"^a: .* \(batch index \(\)\)$"):
        check_codes(codes, (2, 5), "failed", (("a", ()), ("b", (2, 5))))
    codes[7] = -2
    with pytest.raises(LinAlgError, match=r"^b: .* \(batch index \(1, 2\)\)$"):
        check_codes(codes, (2, 5), "failed", (("a", (1, 5)), ("b", (2, 5))))
    codes[7] = -1
    with pytest.raises(LinAlgError, match=r"^a: .* \(batch index \(0, 2\)\)$"):
        check_codes(codes, (2, 5), "failed", (("a", (1, 5)), ("b", (2, 5))))

"""The argument checks every domain shares: values returned normalized, each bad one refused
with a message that quotes it and says what is allowed."""

import os

import numpy as np
import pytest

from accelmath._core.arguments import (check_execution, check_workers, count, index, length,
                                       normalize_axis)
from accelmath.errors import InvalidArgumentError


@pytest.mark.parametrize("value, expected", [(3, 3), (np.int64(-2), -2), (np.uint8(7), 7)])
def test_index(value, expected):
    result = index(value, "n")
    assert result == expected and type(result) is int


@pytest.mark.parametrize("value", [True, 2.0, "3", None, np.float64(1.0), [1]])
def test_index_refuses_what_is_no_integer(value):
    with pytest.raises(InvalidArgumentError, match=f"^n must be an integer, got {value!r}$".
                       replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        index(value, "n")


def test_length_and_count():
    assert length(1) == 1 and count(0, "max_size") == 0
    with pytest.raises(InvalidArgumentError, match=r"^n must be at least 1, got 0$"):
        length(0)
    with pytest.raises(InvalidArgumentError, match=r"^s\[1\] must be at least 1, got -3$"):
        length(-3, "s[1]")
    with pytest.raises(InvalidArgumentError, match=r"^max_bytes must be at least 0, got -1$"):
        count(-1, "max_bytes")
    with pytest.raises(InvalidArgumentError, match="max_size must be an integer, got 1.5"):
        count(1.5, "max_size")


@pytest.mark.parametrize("axis, ndim, expected", [(0, 1, 0), (-1, 3, 2), (2, 3, 2),
                                                  (np.int32(-3), 3, 0)])
def test_normalize_axis(axis, ndim, expected):
    assert normalize_axis(axis, ndim) == expected


@pytest.mark.parametrize("axis, ndim", [(3, 3), (-4, 3), (0, 0)])
def test_axis_out_of_bounds(axis, ndim):
    with pytest.raises(InvalidArgumentError,
                       match=f"^axis {axis} is out of bounds for an array of dimension {ndim}$"):
        normalize_axis(axis, ndim)


def test_axis_that_is_no_integer():
    with pytest.raises(InvalidArgumentError, match="^axis must be an integer, got 0.5$"):
        normalize_axis(0.5, 2, "axis")


def test_execution():
    for execution in ("auto", "cuda", "cpu"):
        assert check_execution(execution) == execution
    for bad in ("gpu", "AUTO", None, ["cpu"]):
        with pytest.raises(InvalidArgumentError,
                           match=f'Invalid execution {bad!r}, should be "auto", "cuda" or "cpu"'
                           .replace("[", r"\[").replace("]", r"\]")):
            check_execution(bad)


def test_workers():
    cpus = os.cpu_count()
    assert check_workers(None) is None
    assert check_workers(np.int64(2)) == 2 and check_workers(-1) == -1
    assert check_workers(-cpus) == -cpus
    for bad in (0, True, 1.5, "2", -cpus - 1):
        with pytest.raises(InvalidArgumentError, match=(
                rf"^workers must be None or a nonzero integer of at least {-cpus} \(negative: "
                rf"counted back from the {cpus} CPUs\), got {bad!r}$")):
            check_workers(bad)

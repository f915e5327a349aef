"""accelmath's environment switches (accelmath._core.switches)."""

import pytest

from accelmath._core.switches import switched_off


@pytest.mark.parametrize("value, off", [("0", True), ("false", True), (" OFF ", True),
                                        ("No", True), ("1", False), ("yes", False),
                                        ("", False)])
def test_switched_off(monkeypatch, value, off):
    monkeypatch.setenv("ACCELMATH_TEST_SWITCH", value)
    assert switched_off("ACCELMATH_TEST_SWITCH") is off


def test_unset_is_on(monkeypatch):
    monkeypatch.delenv("ACCELMATH_TEST_SWITCH", raising=False)
    assert switched_off("ACCELMATH_TEST_SWITCH") is False

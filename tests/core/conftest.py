"""What the core's tests share: an empty on-disk store of the test's own."""

import pytest


@pytest.fixture
def store_root(tmp_path, monkeypatch):
    """The directory of an empty store of this test's own (not created yet), the store on."""
    directory = tmp_path / "store"
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(directory))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)
    return directory

"""The layouts torch gives its FFT results (accelmath.fft._package_layouts): asked of torch's
meta tensors once, then read from the on-disk store."""

import pytest

from accelmath.fft import _package_layouts
from accelmath.fft._package_layouts import package_fft_strides


@pytest.fixture
def fresh_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCELMATH_CACHE", raising=False)


def test_torch_s_layout_is_asked_once_then_read_from_the_store(fresh_store, monkeypatch):
    torch = pytest.importorskip("torch")
    theirs = torch.fft.rfftn(torch.empty(6, 40, 32, device="meta"), dim=(0, 1)).stride()
    args = ("torch", "r2c", (6, 40, 32), (1280, 32, 1), "float32", (0, 1), (6, 40, 17))
    assert package_fft_strides(*args) == tuple(theirs)

    def asked(*args):
        raise AssertionError("asked torch again")

    monkeypatch.setattr(_package_layouts, "_meta_strides", asked)
    assert package_fft_strides(*args) == tuple(theirs)
    with pytest.raises(AssertionError, match="asked torch again"):  # another layout: asked
        package_fft_strides("torch", "r2c", (6, 40, 32), (1280, 32, 1), "float32", (1, 2),
                            (6, 40, 17))


def test_an_unknown_layout_is_remembered_as_unknown(fresh_store, monkeypatch):
    pytest.importorskip("torch")
    args = ("torch", "c2c", (4, 4), (4, 1), "no_such_dtype", (0,), (4, 4))
    assert package_fft_strides(*args) is None
    monkeypatch.setattr(_package_layouts, "_meta_strides", lambda *a: [1, 1])
    assert package_fft_strides(*args) is None  # from the store


def test_other_packages_keep_the_default():
    assert package_fft_strides("cupy", "r2c", (4, 6), (6, 1), "float32", (0, 1), (4, 4)) is None

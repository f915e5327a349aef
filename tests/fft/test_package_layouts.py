"""The layouts torch gives its FFT results (accelmath.fft._package_layouts): told by torch's
transform of a probe (on the CPU here: the logic is the device's), or asked of its meta tensors
where there is no device, once, then read from the on-disk store."""

import numpy as np
import pytest

from accelmath.fft import _package_layouts
from accelmath.fft._package_layouts import package_fft_strides, probe_strides


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


def _layouts(rng, count):
    """Random tensor layouts: axis orders, strided views, extents of 1, transform axes in any
    order."""
    torch = pytest.importorskip("torch")
    for _ in range(count):
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(rng.choice([1, 3, 4, 6, 8])) for _ in range(ndim))
        order = rng.permutation(ndim)
        t = torch.empty([shape[a] for a in order]).permute(*np.argsort(order).tolist())
        if rng.random() < 0.3:
            t = torch.empty([2 * n for n in shape])[tuple(slice(None, None, 2) for _ in shape)]
        axes = tuple(rng.permutation(rng.choice(ndim, int(rng.integers(1, ndim + 1)),
                                                replace=False)).tolist())
        yield t, shape, axes


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
def test_the_probe_tells_the_layout_of_the_real_transform(kind):
    torch = pytest.importorskip("torch")
    for t, shape, axes in _layouts(np.random.default_rng(), 100):
        if kind == "r2c":
            x = t
            theirs = torch.fft.rfftn(x, dim=axes)
        else:
            x = t.to(torch.complex64)
            if kind == "c2c":
                theirs = torch.fft.fftn(x, dim=axes)
            else:
                s = [max(2 * (shape[a] - 1), 1) if a == axes[-1] else shape[a] for a in axes]
                theirs = torch.fft.irfftn(x, s=s, dim=axes)
        dtype = str(x.dtype).removeprefix("torch.")
        got = probe_strides(torch, "cpu", kind, shape, x.stride(), dtype, axes,
                            tuple(theirs.shape))
        assert got == list(theirs.stride()), (kind, shape, x.stride(), axes)


@pytest.mark.parametrize("stored", [{"strides": 5}, {"strides": [1]}, {"strides": ["a", 1, 2]},
                                    {"strides": [True, 1, 2]}, {"strides": [-1, 1, 2]}, {}])
def test_a_stored_answer_of_another_form_is_asked_again(fresh_store, stored):
    """An entry this module did not save (valid JSON, hostile or damaged) is not used: torch
    is asked again, and its answer replaces it."""
    torch = pytest.importorskip("torch")
    from accelmath._core.disk import store

    args = ("torch", "r2c", (6, 40, 32), (1280, 32, 1), "float32", (0, 1), (6, 40, 17))
    key = f"torch {torch.__version__} r2c {args[2]} {args[3]} float32 (0, 1) {args[6]}"
    store.save_json(_package_layouts._NAMESPACE, key, stored)
    theirs = torch.fft.rfftn(torch.empty(6, 40, 32, device="meta"), dim=(0, 1)).stride()
    assert package_fft_strides(*args) == tuple(theirs)

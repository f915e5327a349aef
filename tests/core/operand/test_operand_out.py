"""What ``out=`` may be, on the CPU path of every domain: the memory written is the memory
checked (an object's ``__array__`` that gives other memory than its interface describes, an
ndarray subclass that misstates its shape, are refused rather than written past their end);
elements that share memory (a stride 0) and data marked read-only are refused."""

import numpy as np
import pytest

import accelmath.fft as F
import accelmath.linalg as L
from accelmath.errors import InvalidArgumentError
from accelmath.fusion import elementwise

N = 1 << 12


class Lying:
    """An interface that describes N complex64 elements at a buffer of 4, whose NumPy view
    (``__array__``) is that buffer of 4."""

    def __init__(self, dtype="<c8", shape=(N,), read_only=False):
        self.buffer = np.zeros(4, np.dtype(dtype))
        self.__cuda_array_interface__ = {"shape": shape, "typestr": dtype, "version": 3,
                                         "data": (self.buffer.ctypes.data, read_only)}

    def __array__(self, dtype=None, copy=None):
        return self.buffer


class Misstated(np.ndarray):
    """An ndarray that says it has N elements more than it has."""

    @property
    def shape(self):
        return (N,)


def _calls(out):
    x = np.ones(N, np.complex64)
    return [lambda: F.fft(x, out=out), lambda: F.FFT(x).execute(x, out=out)]


def test_a_view_that_is_not_the_memory_described_is_not_written():
    out = Lying()
    for call in _calls(out):
        with pytest.raises(InvalidArgumentError, match="not what it describes"):
            call()
    assert not out.buffer.any()
    # (an ndarray subclass is read as NumPy sees its memory: its own shape is not asked)
    misstated = np.zeros(4, np.complex64).view(Misstated)
    for call in _calls(misstated):
        with pytest.raises(InvalidArgumentError, match=r"wrong shape \(4,\)"):
            call()
    f = elementwise(lambda v: v * 2)
    with pytest.raises(InvalidArgumentError, match="not what it describes"):
        f(np.ones(N, np.complex64), out=Lying())
    with pytest.raises(InvalidArgumentError, match=r"shape \(4,\)"):
        f(np.ones(N, np.complex64), out=misstated)
    with pytest.raises(InvalidArgumentError, match="not what it describes"):
        L.matmul(np.ones((64, 64), np.complex64), np.ones((64, 64), np.complex64),
                 out=Lying(shape=(64, 64)))


def test_an_interface_marked_read_only_is_not_written():
    out = Lying(read_only=True)
    for call in _calls(out):
        with pytest.raises(InvalidArgumentError, match="read-only"):
            call()
    assert not out.buffer.any()


def test_elements_that_share_memory_are_no_out():
    torch = pytest.importorskip("torch")
    x = np.arange(8.0) + 0j
    shared = np.lib.stride_tricks.as_strided(np.zeros(1, complex), (8,), (0,))
    assert shared.flags.writeable
    expanded = torch.zeros(1, dtype=torch.complex128).expand(8)
    for out in (shared, expanded):
        source = torch.from_numpy(x) if isinstance(out, torch.Tensor) else x
        with pytest.raises(InvalidArgumentError, match="stride 0 along axis 0"):
            F.fft(source, out=out)
        with pytest.raises(InvalidArgumentError, match="stride 0 along axis 0"):
            elementwise(lambda v: v * 2)(source, out=out)
    a = np.ones((8, 8))
    with pytest.raises(InvalidArgumentError, match="stride 0 along axis 1"):
        L.matmul(a, a, out=np.lib.stride_tricks.as_strided(np.zeros(8), (8, 8), (8, 0)))
    # (a stride 0 along an axis of one element shares nothing)
    one = np.lib.stride_tricks.as_strided(np.zeros(8, complex), (1, 8), (0, 16))
    np.testing.assert_allclose(F.fft(x.reshape(1, 8), out=one), np.fft.fft(x)[None])

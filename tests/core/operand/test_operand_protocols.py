"""Producers of the CUDA array protocols (``__cuda_array_interface__``, ``__dlpack__``), seen
through operands; fakes made from NumPy arrays stand for device producers (no GPU needed:
wrapping only reads)."""

import re
import sys

import numpy as np
import pytest

from accelmath._core.operand import adapter_for, wrap_operand
from accelmath._core.operand import protocols
from accelmath._core.operand.protocols import GenericAdapter
from accelmath.errors import NoDeviceError, UnsupportedDTypeError, UnsupportedOperandError

DEVICE_POINTER = 0x7F0000000000  # never read: wrap only describes


class DLPackProducer:
    """An array known only by ``__dlpack__``, saying it lives on ``device_type``, that
    records the stream argument of each export."""

    def __init__(self, array, device_type, takes_stream=True):
        self.array, self.device_type, self.takes_stream = array, device_type, takes_stream
        self.streams = []

    def __dlpack_device__(self):
        return self.device_type, 0

    def __dlpack__(self, **kwargs):
        if kwargs and not self.takes_stream:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'stream'")
        self.streams.append(kwargs.get("stream"))
        return self.array.__dlpack__()


class ArrayInterfaceProducer:
    """An array known only by ``__cuda_array_interface__`` (version 3)."""

    def __init__(self, shape, typestr, ptr=DEVICE_POINTER, strides=None, stream=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": strides,
                                         "version": 3, "stream": stream}


@pytest.fixture
def device_pointers(monkeypatch):
    """The driver says DEVICE_POINTER is memory of device 1 (and knows no other)."""
    monkeypatch.setattr(protocols, "pointer_device",
                        lambda ptr: 1 if ptr == DEVICE_POINTER else None)


def test_producers_get_a_generic_adapter_named_by_their_package():
    adapter = adapter_for(ArrayInterfaceProducer((3,), "<f4"))
    assert isinstance(adapter, GenericAdapter) and adapter.package == __name__.partition(".")[0]
    assert adapter.layout_key(ArrayInterfaceProducer((3,), "<f4")) is None


def test_array_interface_strides_of_part_elements_are_refused(device_pointers):
    with pytest.raises(UnsupportedOperandError, match="not multiples of the 8-byte element"):
        wrap_operand(ArrayInterfaceProducer((4, 3), "<c8", strides=(48, 12)))


def test_array_interface(device_pointers):
    op = wrap_operand(ArrayInterfaceProducer((4, 3), "<c8", strides=(48, 16)))
    assert (op.ptr, op.shape, op.strides, op.dtype) == (DEVICE_POINTER, (4, 3), (6, 2),
                                                        "complex64")
    assert op.device_id == 1 and op.package == __name__.partition(".")[0]


def test_array_interface_without_strides_is_c_order(device_pointers):
    op = wrap_operand(ArrayInterfaceProducer([2, 3, 4], "<i2"))
    assert op.shape == (2, 3, 4) and op.strides == (12, 4, 1) and op.dtype == "int16"


class HostArrayInterfaceProducer(ArrayInterfaceProducer):
    """A producer of both protocols over host memory (NumPy reads it through the other)."""

    def __init__(self, a):
        super().__init__(a.shape, a.dtype.str, ptr=a.ctypes.data)
        self.__array_interface__ = a.__array_interface__


def test_array_interface_of_host_memory(monkeypatch):
    # (the driver does not know the pointer: host memory, read through __array_interface__)
    monkeypatch.setattr(protocols, "pointer_device", lambda ptr: None)
    a = np.arange(5.0)
    producer = HostArrayInterfaceProducer(a)
    op = wrap_operand(producer)
    assert op.ptr == a.ctypes.data and op.device_id is None
    np.testing.assert_array_equal(op.adapter.to_numpy(producer), a)
    empty = ArrayInterfaceProducer((0, 3), "<f8", ptr=0)  # (no data, at no address)
    op = wrap_operand(empty)
    assert op.device_id is None and op.shape == (0, 3)
    host = op.adapter.to_numpy(empty)
    assert host.shape == (0, 3) and host.dtype == np.float64


def test_array_interface_data_no_driver_knows(monkeypatch):
    """A pointer the driver does not know, of an object with no other way to its data: no
    GPU (NoDeviceError), or no CUDA memory (an unsupported operand), never read as host
    memory."""
    from accelmath._core.gpu import device

    monkeypatch.setattr(protocols, "pointer_device", lambda ptr: None)
    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "no NVIDIA driver (a test)")
    with pytest.raises(NoDeviceError, match=re.escape(
            f"an operand of type {__name__}.ArrayInterfaceProducer has __cuda_array_interface__ "
            f"(CUDA device memory), but no CUDA GPU is usable: no NVIDIA driver (a test)")):
        wrap_operand(ArrayInterfaceProducer((3,), "<f4"))
    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: None)
    with pytest.raises(UnsupportedOperandError, match=re.escape(
            f"has data pointer {DEVICE_POINTER:#x}, which is no memory the CUDA driver knows")):
        wrap_operand(ArrayInterfaceProducer((3,), "<f4"))


class Interface:
    """An object whose ``__cuda_array_interface__`` is what it is given."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


class Failing:
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("the producer failed")


_GOOD = {"shape": (4, 3), "typestr": "<f8", "data": (DEVICE_POINTER, False), "version": 3}


@pytest.mark.parametrize("cai, problem", [
    ([("shape", (4,))], "is a list, not a dict"),
    ({"typestr": "<f8", "data": (DEVICE_POINTER, False)}, "has no 'shape' entry"),
    ({"shape": (4,), "data": (DEVICE_POINTER, False)}, "has no 'typestr' entry"),
    ({"shape": (4,), "typestr": "<f8"}, "has no 'data' entry"),
    ({**_GOOD, "shape": (4, -3)}, "has shape (4, -3)"),
    ({**_GOOD, "shape": "4"}, "has shape '4'"),
    ({**_GOOD, "shape": (4.0, 3)}, "has shape (4.0, 3)"),
    ({**_GOOD, "shape": (True, 3)}, "has shape (True, 3)"),
    ({**_GOOD, "typestr": 8}, "has typestr 8"),
    ({**_GOOD, "data": DEVICE_POINTER}, f"has data {DEVICE_POINTER}"),
    ({**_GOOD, "data": ("0x10", False)}, "has data ('0x10', False)"),
    ({**_GOOD, "data": (0, False)}, "has a null data pointer for 12 elements of shape (4, 3)"),
    ({**_GOOD, "strides": (8,)}, "has strides (8,) for shape (4, 3)"),
    ({**_GOOD, "strides": (24, "8")}, "has strides (24, '8') for shape (4, 3)"),
    ({**_GOOD, "mask": object()}, "has a mask: masked arrays are not read"),
    ({**_GOOD, "stream": "default"}, "has stream 'default'"),
])
def test_malformed_array_interfaces(device_pointers, cai, problem):
    with pytest.raises(UnsupportedOperandError, match=re.escape(
            f"the __cuda_array_interface__ of {__name__}.Interface {problem}; expected a dict "
            f"with 'shape'")):
        wrap_operand(Interface(cai))


def test_an_array_interface_that_cannot_be_read():
    with pytest.raises(UnsupportedOperandError, match=re.escape(
            "could not be read (RuntimeError: the producer failed)")):
        GenericAdapter("test").wrap(Failing())


def test_a_failing_protocol_is_refused_naming_the_producer_whatever_reads_it_first():
    with pytest.raises(UnsupportedOperandError, match=re.escape(
            "could not be read (RuntimeError: the producer failed)")):
        wrap_operand(Failing())  # (the adapter lookup reads the property too)

    class FailingDLPack:
        def __dlpack__(self, stream=None):
            raise RuntimeError("the producer failed")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(UnsupportedOperandError, match=re.escape(
            "FailingDLPack failed: RuntimeError: the producer failed")):
        wrap_operand(FailingDLPack())


def test_array_interface_of_the_other_byte_order(device_pointers):
    other, native = (">", "<") if sys.byteorder == "little" else ("<", ">")
    with pytest.raises(UnsupportedDTypeError, match=re.escape(
            f"unsupported dtype '{other}f8': not this machine's byte order "
            f"({sys.byteorder}-endian), expected '{native}f8'")):
        wrap_operand(ArrayInterfaceProducer((3,), f"{other}f8"))
    assert wrap_operand(ArrayInterfaceProducer((3,), f"{other}i1")).dtype == "int8"
    assert wrap_operand(ArrayInterfaceProducer((3,), "|b1")).dtype == "bool"


def test_pointer_device_of_no_pointer():
    assert protocols.pointer_device(0) is None


@pytest.mark.parametrize("typestr", ["<f16", "|V8", "<m8", "<U4"])
def test_array_interface_unsupported_dtype(typestr):
    with pytest.raises(UnsupportedDTypeError, match=f"unsupported dtype '{typestr}'"):
        wrap_operand(ArrayInterfaceProducer((3,), typestr))


def test_array_interface_stream_is_kept_for_the_consumer(device_pointers):
    """Version 3 of ``__cuda_array_interface__`` names the stream that may still write the
    data: the operand keeps it for the work that reads the data to wait for."""
    assert wrap_operand(ArrayInterfaceProducer((4, 2), "<c8", stream=7)).ready == 7
    assert wrap_operand(ArrayInterfaceProducer((4, 2), "<c8", stream=None)).ready is None
    assert wrap_operand(np.zeros(3)).ready is None


def test_dlpack_device_data_is_asked_for_in_stream_order():
    """A CUDA producer is asked for its data in the order of the legacy default stream (1 in
    the protocol); host producers get no stream argument; producers older than the argument
    are asked without it."""
    a = np.arange(12.0).reshape(3, 4)
    cuda = DLPackProducer(a, device_type=2)
    op = wrap_operand(cuda)
    assert cuda.streams == [1]
    assert (op.shape, op.strides, op.dtype) == ((3, 4), (4, 1), "float64")
    host = DLPackProducer(a, device_type=1)
    wrap_operand(host)
    assert host.streams == [None]
    old = DLPackProducer(a, device_type=2, takes_stream=False)
    assert wrap_operand(old).shape == (3, 4) and old.streams == [None]


def test_dlpack_host_producer():
    a = np.arange(24, dtype=np.complex64).reshape(4, 6)[1:, ::2]
    op = wrap_operand(DLPackProducer(a, device_type=1))
    assert (op.ptr, op.shape, op.strides, op.dtype) == (a.ctypes.data, (3, 3), (6, 2),
                                                        "complex64")
    assert op.device_id is None and op.ready is None and op.keepalive is not None
    np.testing.assert_array_equal(op.adapter.to_numpy(op.obj), a)


def test_the_array_interface_comes_first(device_pointers):
    class Both(ArrayInterfaceProducer):
        def __dlpack__(self, **kwargs):
            raise AssertionError("read through __dlpack__")

    assert wrap_operand(Both((2,), "<f4")).device_id == 1


def test_an_instance_without_the_protocols():
    class Sometimes:
        def __init__(self, cai):
            if cai is not None:
                self.__cuda_array_interface__ = cai

    adapter = adapter_for(Sometimes(ArrayInterfaceProducer((2,), "<f4").
                                    __cuda_array_interface__))
    with pytest.raises(UnsupportedOperandError, match="unsupported operand of type .*Sometimes"):
        adapter.wrap(Sometimes(None))


def test_host_results_of_generic_producers():
    a = np.arange(6.0)
    adapter = adapter_for(DLPackProducer(a, device_type=1))
    converted = adapter.astype(DLPackProducer(a, device_type=1), "complex128")
    assert isinstance(converted, np.ndarray) and converted.dtype == np.complex128
    assert adapter.from_numpy(a, None) is a

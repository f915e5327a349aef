"""Producers of the CUDA array protocols, seen through operands (no GPU needed)."""

import numpy as np

from accelmath._core.operand import wrap_operand


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


def test_array_interface_stream_is_kept_for_the_consumer():
    """Version 3 of ``__cuda_array_interface__`` names the stream that may still write the
    data: the operand keeps it for the work that reads the data to wait for."""

    class Producer:
        def __init__(self, stream):
            self.__cuda_array_interface__ = {"shape": (4, 2), "typestr": "<c8", "data": (0, False),
                                             "version": 3, "stream": stream}

    assert wrap_operand(Producer(7)).ready == 7
    assert wrap_operand(Producer(None)).ready is None
    assert wrap_operand(np.zeros(3)).ready is None

"""PyTorch tensors as operands (CPU here; CUDA in test_operand_gpu.py): zero copy, lazy
conjugation resolved, the layout key and the fast-path reader."""

import numpy as np
import pytest

from accelmath._core.operand import adapter_named, wrap_operand
from accelmath.errors import UnsupportedDTypeError, UnsupportedOperandError

torch = pytest.importorskip("torch")


@pytest.fixture(params=["exchange", "attributes"])
def adapter(request):
    """The torch adapter, reading tensors through DLPack's C exchange API where torch and
    the call shim offer it, and one that reads their attributes (as with torch before 2.10)."""
    if request.param == "exchange":
        return adapter_named("torch")
    from accelmath._core.operand.torch_tensors import TorchAdapter

    attributes = TorchAdapter()
    attributes._api = None
    return attributes


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("view", [
    lambda t: t,
    lambda t: t.T,
    lambda t: t[:, ::2],
    lambda t: t[1:, 2:5],
    lambda t: t.unsqueeze(0).expand(3, 5, 7),  # (stride 0: read, as it is)
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.bfloat16,
                                   torch.complex32, torch.int64])
def test_views_are_read_in_place(view, dtype):
    x = view(torch.zeros(5, 7, dtype=dtype))
    op = wrap_operand(x)
    assert op.obj is x and op.package == "torch" and op.device_id is None
    assert op.ptr == x.data_ptr() and op.shape == x.shape and op.strides == x.stride()
    assert op.dtype == str(dtype).removeprefix("torch.")


def test_unsupported_dtype_is_named():
    x = torch.zeros(3, dtype=torch.float8_e4m3fn)
    with pytest.raises(UnsupportedDTypeError, match="unsupported dtype torch.float8_e4m3fn; "
                                                    "accelmath handles bool"):
        wrap_operand(x)


def test_devices_other_than_cpu_and_cuda():
    with pytest.raises(UnsupportedOperandError, match="tensor on device meta; accelmath reads "
                                                      "CPU and CUDA tensors"):
        wrap_operand(torch.empty(3, device="meta"))


@pytest.mark.parametrize("lazy", [lambda t: t.conj(), lambda t: t.conj().imag])
def test_lazy_views_are_resolved(lazy):
    x = lazy(torch.randn(4, 3, dtype=torch.complex64))
    assert x.is_conj() or x.is_neg()
    op = wrap_operand(x)
    assert op.obj is not x and not op.obj.is_conj() and not op.obj.is_neg()
    np.testing.assert_array_equal(op.obj.numpy(), x.resolve_conj().resolve_neg().numpy())
    assert op.ready is None  # (host memory: no stream to wait for)


def test_layout_key(adapter):
    x = torch.zeros(4, 6, dtype=torch.complex64)
    key = adapter.layout_key(x)
    assert key == (x.shape, (6, 1), torch.complex64, -1, False, False)
    assert adapter.layout_key(torch.ones(4, 6, dtype=torch.complex64)) == key
    assert adapter.layout_key(x.T) != key
    assert adapter.layout_key(x.conj()) != key
    assert adapter.layout_key(x.to(torch.complex128)) != key
    assert adapter.data_ptr(x) == x.data_ptr()


@pytest.mark.parametrize("make", [
    lambda dtype: torch.zeros(4, 6, dtype=dtype),  # C order: the flag is read
    lambda dtype: torch.zeros(6, 4, dtype=dtype).T,  # strided: the strides are read
])
@pytest.mark.parametrize("dtype, other", [(torch.complex64, torch.complex128),
                                          (torch.float32, torch.float16)])
def test_reader_reads_only_tensors_of_its_key(adapter, make, dtype, other):
    x = make(dtype)
    read = adapter.reader(adapter.layout_key(x))
    assert read(x) == x.data_ptr()
    same = make(dtype)
    assert read(same) == same.data_ptr()
    assert read(make(other)) is None  # dtype
    assert read(torch.zeros(3, 6, dtype=dtype)) is None  # shape
    other_order = x.contiguous() if not x.is_contiguous() else x.T.contiguous().T
    assert other_order.shape == x.shape and read(other_order) is None  # strides
    # the lazy bit: conj of complex tensors, neg of real ones (a conjugate's imaginary part,
    # read by a key of an imaginary part without it: the same strides)
    if not dtype.is_complex:
        x = make(torch.complex64).imag
        read = adapter.reader(adapter.layout_key(x))
        assert read(x) == x.data_ptr()
    lazy = make(dtype).conj() if dtype.is_complex else make(torch.complex64).conj().imag
    assert lazy.is_conj() or lazy.is_neg()
    assert lazy.shape == x.shape and lazy.stride() == x.stride() and lazy.dtype == dtype
    assert read(lazy) is None


@pytest.mark.parametrize("make", [
    lambda dtype: torch.zeros(4, 6, dtype=dtype),
    lambda dtype: torch.zeros(6, 4, dtype=dtype).T,
])
def test_a_keyed_reader_checks_all_but_the_shape_and_dtype(adapter, make):
    """A front's reader (its key found the shape and dtype equal already) leaves those out
    and checks the rest: strides, the lazy bits, gradients."""
    x = make(torch.complex64)
    read = adapter.reader(adapter.layout_key(x), keyed=True)
    assert read(x) == x.data_ptr()
    other_order = x.contiguous() if not x.is_contiguous() else x.T.contiguous().T
    for turned_away in (other_order, x.conj(), x.clone().requires_grad_()):
        assert read(turned_away) is None
    # the caller's key holds the dtype: the attributes' reader leaves it out; the exchange
    # API's reads it in the same C call as the rest
    double = make(torch.complex128)
    exchanged = type(read).__name__ == "ExchangeReader"
    assert read(double) == (None if exchanged else double.data_ptr())


def test_cpu_tensors_never_match_cuda_keys(adapter):
    """get_device is -1 for CPU tensors: a key of cuda:0 (or any CUDA device) turns them
    away, and a CPU key is not one of a CUDA device."""
    x = torch.zeros(4, 6, dtype=torch.complex64)
    cpu_key = adapter.layout_key(x)
    assert cpu_key[3] == -1
    for device in (0, 1):
        cuda_key = (*cpu_key[:3], device, *cpu_key[4:])
        assert adapter.reader(cuda_key)(x) is None
        strided = adapter.layout_key(x.T)
        assert adapter.reader((*strided[:3], device, *strided[4:]))(x.T) is None
    assert adapter.reader(cpu_key)(x) == x.data_ptr()


def test_readers_turn_away_tensors_of_other_devices(adapter):
    """Meta tensors number their device -1, as CPU ones do; the reader of a CPU key asks
    is_cpu (and that of a CUDA key is_cuda)."""
    x = torch.zeros(4, 6, dtype=torch.float32)
    meta = torch.zeros(4, 6, dtype=torch.float32, device="meta")
    assert meta.get_device() == x.get_device() == -1
    for y, z in ((x, meta), (x.T, meta.T)):
        read = adapter.reader(adapter.layout_key(y))
        assert read(y) == y.data_ptr() and read(z) is None


def test_reader_of_a_lazy_key_compares_whole_keys(adapter):
    x = torch.zeros(4, 6, dtype=torch.complex64).conj()
    read = adapter.reader(adapter.layout_key(x))
    assert read(x) == x.data_ptr()
    assert read(x.conj()) is None


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_allocation_and_host_conversions(adapter):
    t, ptr = adapter.empty_strided((3, 4), (1, 3), "complex64", None)
    assert t.stride() == (1, 3) and t.dtype == torch.complex64 and ptr == t.data_ptr()
    allocate = adapter.allocator((2, 5), (5, 1), "float32", None)
    a, ptr = allocate()
    assert a.shape == (2, 5) and a.stride() == (5, 1) and ptr == a.data_ptr()
    for shape, strides in [((2, 3, 4), (12, 4, 1)), ((2, 3, 4), (1, 2, 6)), ((), ()),
                           ((4, 1, 1), (1, 1, 1)), ((0, 3), (3, 1)), ((7,), (1,))]:
        make, pointer = adapter.allocation(shape, strides, "float64", None)
        made, other = make(), make()
        assert made.shape == shape and made.dtype == torch.float64 and not made.requires_grad
        assert made.stride() == strides or 0 in shape
        assert pointer(made) == made.data_ptr() and (not made.numel()
                                                     or pointer(other) != pointer(made))
    z = adapter.zeros((3,), "float64", None)
    assert not z.any()
    counting = torch.arange(3.0, dtype=torch.float64)
    converted = adapter.astype(counting, "complex128")
    assert converted.dtype == torch.complex128 and torch.equal(converted.real, counting)
    half = torch.ones(3, dtype=torch.complex32)
    assert adapter.to_numpy(half).dtype == np.complex64  # (NumPy has no complex32)
    conj = torch.tensor([1 + 2j]).conj()
    assert adapter.to_numpy(conj)[0] == 1 - 2j
    back = adapter.from_numpy(np.arange(3.0), z)
    assert isinstance(back, torch.Tensor) and back.device == z.device
    assert torch.equal(back, counting)
    six = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(adapter.permute(six, (1, 0)), six.T)


def test_a_users_subclass_of_tensor_is_read_as_a_tensor():
    # (a subclass defined outside torch: torch's adapter, not the generic DLPack one, so that
    # results are tensors)
    import accelmath.fft as F
    from accelmath._core.operand import adapter_for

    class Mine(torch.Tensor):
        pass

    t = torch.randn(8, dtype=torch.complex128).as_subclass(Mine)
    assert adapter_for(t) is adapter_named("torch")
    result = F.fft(t)
    assert isinstance(result, torch.Tensor)
    np.testing.assert_allclose(result.numpy(), np.fft.fft(t.numpy()), rtol=1e-12)

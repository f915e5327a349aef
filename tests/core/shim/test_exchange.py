"""The DLPack C exchange API, read by the call shim: a torch tensor's layout in one C call, the
same answers as its attributes give, and the attributes' reader wherever the API is not used."""

import pytest

from accelmath._core import exchange, hostcall

torch = pytest.importorskip("torch")
API = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
try:
    from accelmath._core import _hostcall
except ImportError:
    _hostcall = None
pytestmark = pytest.mark.skipif(API is None or _hostcall is None,
                                reason="needs torch's exchange API and the call shim")
T = torch.Tensor
LAZY = ((T.is_conj, False), (T.is_neg, False), (T.requires_grad, False))


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """hostcall as in a new process, switched on."""
    monkeypatch.setattr(hostcall, "_imported", {})
    monkeypatch.delenv("ACCELMATH_HOSTCALL", raising=False)


def _reader(x, checks=LAZY, fallback=None):
    layout = exchange.exchange_layout(API, x)
    return exchange.exchange_reader(API, (T, torch.nn.Parameter), layout[:7], checks, fallback)


@pytest.mark.parametrize("dtype, code", [(torch.float32, (2, 32, 1)), (torch.float64, (2, 64, 1)),
                                         (torch.complex64, (5, 64, 1)),
                                         (torch.complex128, (5, 128, 1)),
                                         (torch.float16, (2, 16, 1)), (torch.int8, (0, 8, 1))])
def test_the_layout_is_the_attributes(dtype, code):
    x = torch.zeros(5, 6, dtype=dtype)[1:, ::2]
    assert exchange.exchange_layout(API, x) == (*code, 1, 0, (4, 3), (6, 2), x.data_ptr())


@pytest.mark.parametrize("make", [lambda: torch.randn(4, 6, dtype=torch.complex64),
                                  lambda: torch.randn(6, 4, dtype=torch.complex64).T,
                                  lambda: torch.randn(5, 7, dtype=torch.complex64)[1:, 1:]])
def test_a_reader_takes_its_layout_and_turns_the_rest_away(make):
    x = make()
    read = _reader(x)
    assert type(read).__name__ == "ExchangeReader"
    assert read(x) == x.data_ptr()
    same = make()
    assert read(same) == same.data_ptr()
    assert read(torch.nn.Parameter(same, requires_grad=False)) == same.data_ptr()
    other_order = x.contiguous() if not x.is_contiguous() else x.T.contiguous().T
    turned_away = [x.to(torch.complex128), x.real, torch.zeros(4, 5, dtype=torch.complex64),
                   other_order, x.conj(), torch._neg_view(x), x.clone().requires_grad_(),
                   torch.empty(4, 6, dtype=torch.complex64, device="meta")]
    for y in turned_away:
        assert read(y) is None, y


def test_the_stride_of_an_axis_of_length_one_is_not_read():
    x = torch.zeros(4, 1, dtype=torch.float32)
    read = _reader(x)
    column = torch.zeros(4, 5)[:, 2:3]  # strides (5, 1)
    assert read(column) is None  # axis 0's stride differs
    row = torch.zeros(1, 4).T  # strides (1, 4): the same elements
    assert row.stride() == (1, 4) and read(row) == row.data_ptr()
    assert _reader(torch.zeros(1, 4))(torch.zeros(3, 4)[1:2]) is not None


def test_other_types_go_to_the_fallback():
    class Sub(torch.Tensor):
        pass

    x = torch.zeros(4, 6)
    sub = x.as_subclass(Sub)
    assert _reader(x)(sub) is None
    assert _reader(x)("not an array") is None
    seen = []
    read = _reader(x, fallback=lambda y: seen.append(y) or 7)
    assert read(sub) == 7 and seen == [sub]
    assert read(x) == x.data_ptr() and seen == [sub]


def test_a_check_that_raises_propagates():
    def boom(x):
        raise KeyError("boom")

    x = torch.zeros(3)
    with pytest.raises(KeyError):
        _reader(x, checks=((boom, True),))(x)


def test_bad_arguments_raise():
    x = torch.zeros(3)
    layout = exchange.exchange_layout(API, x)[:7]
    module = hostcall._extension()
    with pytest.raises(ValueError):
        module.ExchangeReader(API, (T,), (*layout[:5], (3, 1), (1,)), (), None)
    with pytest.raises(TypeError):
        module.ExchangeReader(API, (T,), layout, ((len,),), None)
    with pytest.raises(TypeError):
        module.ExchangeReader(API, (T,), layout, (), 3)
    with pytest.raises(ValueError):  # not a capsule of this name
        module.ExchangeReader(object(), (T,), layout, (), None)
    with pytest.raises(TypeError):
        module.ExchangeStream(API)


def test_a_stream_of_the_cpu_is_none():
    assert exchange.exchange_stream(API, 1, 0)() == 0


def test_switched_off_it_is_not_used(monkeypatch):
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    x = torch.zeros(3)
    assert exchange.exchange_layout(API, x) is None
    assert exchange.exchange_reader(API, (T,), (2, 32, 1, 1, 0, (3,), (1,)), (), None) is None
    assert exchange.exchange_stream(API, 1, 0) is None


def test_the_torch_adapter_reads_through_it_on_cuda_layouts_too():
    from accelmath._core.operand.torch_tensors import TorchAdapter

    adapter = TorchAdapter()
    x = torch.zeros(4, 6, dtype=torch.complex64)
    key = adapter.layout_key(x)
    read = adapter.reader(key)
    assert type(read).__name__ == "ExchangeReader" and read(x) == x.data_ptr()
    cuda = adapter.reader((*key[:3], 0, *key[4:]))  # a key of cuda:0 never reads CPU memory
    assert type(cuda).__name__ == "ExchangeReader" and cuda(x) is None


def test_dtypes_of_one_dlpack_code_are_told_apart():
    """torch's sub-byte integers (uint1-7, int1-7) read as DLPack's 8-bit ones: a reader of
    uint8 or int8 compares the dtype too."""
    from accelmath._core.operand.torch_tensors import TorchAdapter

    adapter = TorchAdapter()
    for dtype, sub in ((torch.uint8, getattr(torch, "uint4", None)),
                       (torch.int8, getattr(torch, "int4", None))):
        x = torch.zeros(4, 6, dtype=dtype)
        read = adapter.reader(adapter.layout_key(x))
        assert read(x) == x.data_ptr()
        if sub is not None:
            assert exchange.exchange_layout(API, torch.empty(4, 6, dtype=sub))[:3] == \
                exchange.exchange_layout(API, x)[:3]
            assert read(torch.empty(4, 6, dtype=sub)) is None
    assert not adapter._dlpack_shared(adapter._dlpack_dtype(torch.float32))


def test_the_checks_run_before_the_address_is_read():
    """A check that moves the tensor's memory (as set_ does) leaves the reader the new
    address, or none, never the old one."""
    x = torch.zeros(4, 6)
    other = torch.ones(4, 6)

    def move(t):
        t.set_(other)
        return True

    assert _reader(x, checks=((move, True),))(x) == other.data_ptr()


def test_a_dtype_code_is_checked_when_made():
    x = torch.zeros(3)
    layout = exchange.exchange_layout(API, x)[:7]
    module = hostcall._extension()
    for bad in ((258, 32, 1), (2, 256, 1), (2, 32, 1 << 16)):
        with pytest.raises(ValueError, match="out of DLPack's ranges"):
            module.ExchangeReader(API, (T,), (*bad, *layout[3:]), (), None)


def test_a_dtype_asked_while_the_shim_is_off_is_asked_again(monkeypatch):
    from accelmath._core.operand.torch_tensors import TorchAdapter

    adapter = TorchAdapter()
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    assert adapter._dlpack_dtype(torch.float64) is None
    monkeypatch.delenv("ACCELMATH_HOSTCALL")
    assert adapter._dlpack_dtype(torch.float64) == (2, 64, 1)

"""PyTorch tensors: CPU and CUDA memory, read from the tensor's own methods; results allocated
by torch's caching allocator in the order of its current stream.

Tensors that record gradients are refused while gradients are enabled (accelmath is not
differentiable yet, and a silent detach would cut the caller's autograd graph).
"""

import functools

from accelmath._core import exchange, hostcall
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand.base import Adapter
from accelmath._core.operand.record import ITEMSIZE, Operand, unsupported_dtype
from accelmath.errors import GradientError, UnsupportedOperandError

__all__ = ["TorchAdapter"]


class TorchAdapter(Adapter):
    """The adapter of ``torch.Tensor`` (and its subclasses, ``torch.nn.Parameter`` among them)."""

    package = "torch"
    complex32 = True

    def __init__(self):
        import torch

        self._torch = torch
        self._to_name = {}
        for name in ITEMSIZE:
            tdtype = getattr(torch, name, None)
            if isinstance(tdtype, torch.dtype):
                self._to_name[tdtype] = name
        self._to_torch = {v: k for k, v in self._to_name.items()}
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        # DLPack's C exchange API (torch 2.10 and later): a tensor's layout in one C call
        self._api = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
        self._dlpack_dtypes = {}  # torch dtype -> DLPack's (code, bits, lanes)

    def check_gradients(self, x):
        """Raise GradientError if tensor ``x`` records gradients while they are enabled (a
        tensor with ``requires_grad`` is taken under ``torch.no_grad()``)."""
        if x.requires_grad and self._torch.is_grad_enabled():
            raise GradientError(
                f"tensor of shape {tuple(x.shape)} and dtype {x.dtype} has requires_grad=True "
                "while gradients are enabled, and accelmath is not differentiable yet: call it "
                "under torch.no_grad(), or pass x.detach()")

    def wrap(self, x):
        name = self._to_name.get(x.dtype)
        if name is None:
            raise unsupported_dtype(x.dtype)
        if x.requires_grad:
            self.check_gradients(x)
        device = x.get_device()
        if not (x.is_cuda if device >= 0 else x.is_cpu):
            raise UnsupportedOperandError(
                f"tensor on device {x.device}; accelmath reads CPU and CUDA tensors")
        ready = None
        if x.is_conj() or x.is_neg():
            # A lazily conjugated or negated view: its memory holds other values. The operand
            # describes a resolved copy (``operand.obj is not x`` tells callers so), made on
            # torch's current stream: work on another stream waits for it.
            x = x.resolve_conj().resolve_neg()
            if device >= 0:
                ready = self.current_stream(device)
        # torch.Size is a tuple: kept as it is, saving a conversion per call
        return Operand(x, x.data_ptr(), x.shape, x.stride(), name,
                       None if device < 0 else device, self, ready=ready)

    def layout_key(self, x):
        # None for tensors that record gradients: whether one may be read depends on the grad
        # mode of each call, so each is wrapped (and checked) every time.
        if x.requires_grad:
            return None
        return x.shape, x.stride(), x.dtype, x.get_device(), x.is_conj(), x.is_neg()

    def data_ptr(self, x):
        return x.data_ptr()

    def reader(self, key, keyed=False):
        shape, strides, dtype, device, conj, neg = key
        if conj or neg:
            return super().reader(key)
        tensor = self._torch.Tensor
        # C order: torch's flag says the same as the strides (up to the strides of axes of
        # length 1, which address nothing) for less than the strides tuple costs.
        # The lazy bits: conj and neg on complex tensors (only torch's private _neg_view
        # sets neg there, but a reader must refuse whatever the layout key does); neg on
        # real ones (the imaginary part of a conjugated view), which have no conj.
        # get_device is -1 for CPU tensors and the index for CUDA ones, so a tensor of one is
        # never read for the other; other devices (meta tensors, other accelerators) number
        # theirs alike, so a key also asks is_cpu or is_cuda. A key comes from a tensor
        # without requires_grad (layout_key), so a tensor with it is turned away whatever the
        # grad mode: no need to ask torch.is_grad_enabled() here.
        # keyed: the dtype and shape were found equal already, 0.1-0.2 us a tensor less
        contiguous = strides == contiguous_strides(shape)
        lazy = [(tensor.is_conj if dtype.is_complex else tensor.is_neg, False),
                *([(tensor.is_neg, False)] if dtype.is_complex else []),
                (tensor.requires_grad, False)]
        generic = hostcall.reader(
            [*([] if keyed else [(tensor.dtype, dtype), (tensor.shape, shape)]),
             (tensor.is_contiguous, True) if contiguous else (tensor.stride, strides),
             (tensor.get_device, device), *lazy,
             (tensor.is_cpu if device < 0 else tensor.is_cuda, True)],
            tensor.data_ptr)
        # Plain tensors (and parameters) through the exchange API: dtype, device, shape and
        # strides in one C call; the lazy bits and requires_grad, which DLPack does not
        # describe, as above. Subclasses (which may override what a tensor says of itself)
        # go to the reader above.
        code = self._dlpack_dtype(dtype)
        if code is not None and self._dlpack_shared(code):
            lazy = [(tensor.dtype, dtype), *lazy]  # (DLPack's code is another dtype's too)
        fast = None if code is None else exchange.exchange_reader(
            self._api, (tensor, self._torch.nn.Parameter),
            (*code, 1 if device < 0 else 2, max(device, 0), shape, strides), lazy, generic)
        return generic if fast is None else fast

    def _dlpack_dtype(self, dtype):
        """DLPack's (code, bits, lanes) of a torch dtype, as the exchange API gives it (None
        where it is not used, or names no such dtype)."""
        if dtype not in self._dlpack_dtypes:
            try:  # (a CPU tensor, whatever torch's default device or mode)
                layout = exchange.exchange_layout(
                    self._api, self._torch.empty(0, dtype=dtype, device="cpu"))
            except Exception:  # (BufferError) a dtype DLPack does not name
                self._dlpack_dtypes[dtype] = None
            else:
                if layout is None:  # the call shim not used now: asked again next time
                    return None
                self._dlpack_dtypes[dtype] = layout[:3]
        return self._dlpack_dtypes[dtype]

    @staticmethod
    def _dlpack_shared(code):
        """Whether DLPack's ``code`` may be that of more than one torch dtype, so that a reader
        compares the dtype too: torch's sub-byte integers (uint1-7, int1-7) read as DLPack's
        8-bit ones; wider codes are each one dtype's."""
        return code[1] <= 8

    def stream_scope(self, handle, device_id):
        cuda = self._torch.cuda
        if device_id is None:
            device_id = cuda.current_device()
        stream = (cuda.default_stream(device_id) if handle == 0
                  else cuda.ExternalStream(handle, device=device_id))
        return cuda.stream(stream)

    def stream_getter(self, device_id):
        if device_id is not None:
            # (2: DLPack's CUDA) torch's current stream of the device, in one C call
            current = exchange.exchange_stream(self._api, 2, device_id)
            if current is not None:
                return current
        if self._raw_stream is not None:
            return functools.partial(self._raw_stream, device_id)
        return super().stream_getter(device_id)

    def allocation(self, shape, strides, dtype, device_id):
        torch = self._torch
        device = "cpu" if device_id is None else f"cuda:{device_id}"
        shape, strides = tuple(shape), tuple(strides)
        # Calls of C functions bound to their arguments: no interpreter frame. For C order
        # (nothing empty), empty_like of a scalar broadcast to the shape takes its dtype and
        # device without parsing them, 0.15 us a call less than new_empty_strided's two
        # tuples, where it makes that layout (torch's choice: asked once, of one it makes).
        scalar = torch.empty((), dtype=self._to_torch[dtype], device=device)
        make = functools.partial(scalar.new_empty_strided, shape, strides)
        if 0 not in shape and strides == contiguous_strides(shape):
            like = functools.partial(torch.empty_like, scalar.expand(shape))
            if like().stride() == strides:
                make = like
        return make, torch.Tensor.data_ptr

    def empty(self, shape, dtype, device_id):
        device = "cpu" if device_id is None else f"cuda:{device_id}"
        return self._torch.empty(shape, dtype=self._to_torch[dtype], device=device)

    def empty_strided(self, shape, strides, dtype, device_id):
        device = "cpu" if device_id is None else f"cuda:{device_id}"
        t = self._torch.empty_strided(shape, strides, dtype=self._to_torch[dtype], device=device)
        return t, t.data_ptr()

    def permute(self, x, axes):
        return x.permute(axes)

    def from_dlpack(self, x):
        if hasattr(x, "__dlpack__"):
            return self._torch.from_dlpack(x)
        return self._torch.as_tensor(x)  # __cuda_array_interface__ only

    def astype(self, x, dtype):
        return x.to(self._to_torch[dtype])

    def current_stream(self, device_id):
        if self._raw_stream is not None:
            return self._raw_stream(device_id)
        return self._torch.cuda.current_stream(device_id).cuda_stream

    def to_numpy(self, x):
        if x.requires_grad:
            self.check_gradients(x)  # (detached below only where gradients are off)
        x = x.detach().resolve_conj().resolve_neg()
        if x.dtype == self._torch.complex32:  # (NumPy has none: single precision)
            x = x.to(self._torch.complex64)
        return x.cpu().numpy()

    def from_numpy(self, a, like):
        tensor = self._torch.from_numpy(a)
        return tensor if like is None else tensor.to(like.device)

    def to_device(self, a):
        """Copy NumPy array ``a`` to the current GPU."""
        return self._torch.from_numpy(a).cuda()

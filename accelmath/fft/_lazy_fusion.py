"""The fusion layer (:mod:`accelmath.fusion`: tracing, code generation, kernels), loaded where
a call first takes a prologue, an epilogue or a fused product, so that ``import
accelmath.fft`` does not pay for it (about 30 ms)."""

__all__ = ["fused_call", "multiply", "product"]


_fused_call = []


def fused_call(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args):
    """:func:`accelmath.fft._fused_call.fused_call` (imported with the first call)."""
    if not _fused_call:
        from accelmath.fft._fused_call import fused_call as run

        _fused_call.append(run)
    return _fused_call[0](call, x, out, stream, prologue, prologue_args, epilogue,
                          epilogue_args)


_product = []


def product(a, b):
    """``a * b``, broadcast, as one fused pass on any kind of array."""
    if not _product:
        from accelmath.fusion import elementwise

        _product.append(elementwise(multiply))
    return _product[0](a, b)


def multiply(a, b):
    """``a * b``: a spectrum product, as a prologue or a fused function traces it."""
    return a * b

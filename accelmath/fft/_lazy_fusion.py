"""The fusion layer (:mod:`accelmath.fusion`: tracing, code generation, kernels), loaded where
a call first takes a prologue, an epilogue or a fused product, so that ``import
accelmath.fft`` does not pay for it (about 30 ms)."""

__all__ = ["fused_call", "multiply", "product"]


def fused_call(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args):
    """:func:`accelmath.fft._fused_call.fused_call`."""
    from accelmath.fft._fused_call import fused_call as run

    return run(call, x, out, stream, prologue, prologue_args, epilogue, epilogue_args)


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

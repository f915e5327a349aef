"""Fuzz tests of the matrix products of :mod:`accelmath.linalg` on the CPU (``matmul`` and
the ``Matmul`` plan's ``execute``) against NumPy: operands of mostly fitting shapes (vectors,
broadcast batches, empty ones too) and dtypes (float16, integers, bool, big-endian, object,
two dtypes at once), NaN and infinities, ``alpha``, ``beta``, ``c``, the epilogues NumPy
can compute (ReLU, GELU, a bias) and ``out=`` of the wrong shape or dtype, read-only, or
sharing an operand's memory. The oracle is :func:`fuzz_oracle.agree` (see
``test_fuzz.py``)."""

import math

import numpy as np
from fuzz_oracle import (FUZZ, NOT_GIVEN, OUT, agree, arrays, drawn, make_out, mostly,
                         reference, refuses)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accelmath import linalg
from accelmath.errors import StateError

EXECUTION = mostly(st.sampled_from([NOT_GIVEN, NOT_GIVEN, "auto", "cpu"]), st.just("GPU"))
PRODUCT_DTYPES = ("float32", "float64", "complex64", "complex128")
EPILOGUES = mostly(st.sampled_from([NOT_GIVEN, NOT_GIVEN, None, "relu", "bias", "relu_bias",
                                    "gelu", "gelu_bias"]), st.just("bogus"))
SCALARS = mostly(st.sampled_from([NOT_GIVEN, NOT_GIVEN, 1, 0, 2.5, -1, np.float32(0.5)]),
                 st.sampled_from([1j, "x", math.nan, True]))


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _product_reference(a, b, c=None, *, alpha=1, beta=None, epilogue=None, bias=None, out=None,
                       **ours_only):
    """``epilogue(alpha * a @ b + beta * c)`` as NumPy computes it (in a's and b's dtype), a c
    given without a beta refused. Object arrays are not given to NumPy: its matmul of object
    arrays corrupted memory in these runs (a segfault later in the process); accelmath must
    refuse them all the same."""
    if any(np.asarray(x).dtype == object for x in (a, b, c) if x is not None):
        raise TypeError("object arrays: not multiplied by the reference")
    if beta is None:
        if c is not None:
            raise ValueError("c without beta")
        beta = 0
    d = np.matmul(a, b)
    dtype = d.dtype
    d = alpha * d
    if beta != 0:
        d = d + beta * c
    if epilogue is not None and epilogue not in ("relu", "bias", "relu_bias", "gelu",
                                                 "gelu_bias"):
        raise ValueError(f"epilogue {epilogue!r}")
    if epilogue is not None and "bias" in epilogue:
        # (the product of two vectors is a 1 x 1 matrix to its epilogue: its bias is (1,))
        d = d + bias if d.ndim else (d + bias).reshape(())
    if epilogue is not None and "relu" in epilogue:
        d = np.maximum(d, 0)
    if epilogue is not None and "gelu" in epilogue:
        d = _gelu(d)
    result = np.asarray(d).astype(dtype)
    if out is not None:
        out[...] = result
        return out
    return result[()] if result.ndim == 0 else result


@st.composite
def products(draw):
    """Operands of a product: mostly a and b of one float dtype and shapes that fit
    (vectors and broadcast batches too); now and then of other dtypes (float16, integers,
    bool, big-endian, object) or two, or shapes that do not fit."""
    dtype = draw(mostly(st.sampled_from(PRODUCT_DTYPES),
                        st.sampled_from(["float16", ">f8", "int8", "bool", "object"])))
    m, k, n = (draw(mostly(st.integers(1, 4), st.just(0))) for _ in range(3))
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    a_shape = draw(mostly(st.sampled_from([batch + (m, k), (m, k), (k,)]),
                          st.just(batch + (m, k + 1))))
    b_shape = draw(st.sampled_from([batch + (k, n), (k, n), (k,), batch[-1:] + (k, n)]))
    b_dtype = draw(mostly(st.just(dtype), st.sampled_from(PRODUCT_DTYPES)))
    return draw(arrays((dtype,), shape=a_shape)), draw(arrays((b_dtype,), shape=b_shape))


def _drawn_product(data):
    """``(a, b, kwargs, value, error)``: operands and keywords of a product drawn, and what
    the reference makes of a @ b (its value, or the exception it raised)."""
    a, b = data.draw(products(), "a, b")
    kwargs = drawn(alpha=data.draw(SCALARS, "alpha"), beta=data.draw(SCALARS, "beta"),
                   epilogue=data.draw(EPILOGUES, "epilogue"),
                   execution=data.draw(EXECUTION, "execution"))
    value, error, _ = reference(_product_reference, (a, b), {})
    return a, b, kwargs, value, error


@FUZZ
@given(st.data())
def test_matmul(data):
    a, b, kwargs, value, error = _drawn_product(data)
    shape = value.shape if error is None else (2,)
    if kwargs.get("beta", 0) != 0 or data.draw(mostly(st.just(False), st.just(True)), "c"):
        kwargs["c"] = data.draw(arrays((a.dtype.str,), shape=data.draw(
            mostly(st.just(shape), st.sampled_from([shape[1:], (1,) + shape])), "c shape")),
            "c")
    if "bias" in str(kwargs.get("epilogue")) or data.draw(mostly(st.just(False), st.just(True)),
                                                          "bias"):
        n = shape[-1] if shape else 1
        kwargs["bias"] = data.draw(arrays((a.dtype.str,), shape=data.draw(
            mostly(st.just((n,)), st.sampled_from([(n + 1,), (1, n)])), "bias shape")), "bias")
    kind = data.draw(OUT, "out kind")
    if kind is not None and error is None:
        out = make_out(kind, value.shape, value.dtype, a)
        if kind == "alias":
            a, out = out
        kwargs["out"] = out
    agree(linalg.matmul, _product_reference, (a, b), kwargs, ())


@FUZZ
@given(st.data())
def test_matmul_plan(data):
    a, b, kwargs, value, error = _drawn_product(data)
    if "bias" in str(kwargs.get("epilogue")) and error is None:
        kwargs["bias"] = np.ones(value.shape[-1:] or (1,), a.dtype)
    if kwargs.get("beta", 0) != 0 and error is None:
        kwargs["c"] = np.ones(value.shape, a.dtype)
    plan = agree(linalg.Matmul, lambda a, b, **kwargs: None, (a, b), kwargs, (),
                 compare=lambda got, expected: None)
    if plan is None:
        return
    with plan:
        operands = data.draw(mostly(st.sampled_from(["bound", "new"]), st.just("other")),
                             "execute on")
        if operands == "bound":
            args = ()
        elif operands == "new":
            args = (a[::-1].copy() if a.ndim else a, b)
        else:
            args = data.draw(products(), "other a, b")
        call = {}
        kind = data.draw(OUT, "out kind")
        if kind is not None:
            call["out"] = make_out(kind, plan.shape, plan.dtype, None)
            if kind == "alias":
                call["out"] = call["out"][1]
        ref_kwargs = {k: v for k, v in kwargs.items() if k != "execution"}

        def theirs(a=a, b=b, out=None):
            return _product_reference(a, b, out=out, **ref_kwargs)

        agree(plan.execute, theirs, args, call, ("a", "b"))
    refuses(plan.execute, args, {}, ("a",), StateError)

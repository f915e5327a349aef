"""Fuzz tests of the public CPU API of :mod:`accelmath.fft` against ``numpy.fft`` and
``scipy.fft``: random shapes (empty ones too), dtypes (bool, integers, float16, long double,
big-endian, object, strings), what is not an array, NaN and infinities, sizes and axes
negative, huge or not integers, ``out=`` of the wrong shape or dtype, read-only, or sharing
the input's memory. The oracle is :func:`fuzz_oracle.agree`: NumPy's (or SciPy's) result, or
an accelmath error that names an argument, and no input changed."""

import numpy as np
import scipy.fft
from fuzz_oracle import (FUZZ, NOT_GIVEN, OUT, UNCHECKED, agree, array_or_junk, arrays, drawn,
                         flags, make_out, mostly, operands, reference, refuses, sizes)
from hypothesis import given
from hypothesis import strategies as st

import accelmath.fft as afft
from accelmath.errors import StateError

ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
SEVERAL_AXES = ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
                "hfft2", "ihfft2", "hfftn", "ihfftn")  # (the h*2 and h*n ones: scipy.fft's)

MAYBE = st.just(NOT_GIVEN)
NORMS = mostly(st.sampled_from([NOT_GIVEN, None, "backward", "ortho", "forward"]),
               st.sampled_from(["Ortho", 1, ""]))
WORKERS = mostly(st.sampled_from([NOT_GIVEN, NOT_GIVEN, None, 1, 2, -1]),
                 st.sampled_from([0, -1000, "2", 1.5]))
LENGTHS = mostly(st.one_of(MAYBE, st.none(), st.integers(1, 9)), sizes())


def _ndim(x):
    return x.ndim if isinstance(x, np.ndarray) else 1


def _axes(ndim, repeats=False):
    """Axes of an array of ``ndim`` dimensions, mostly valid (distinct, or given twice where
    ``repeats``), as a tuple, a list, None or left out; now and then anything."""
    axis = st.integers(-max(ndim, 1), max(ndim, 1) - 1)
    many = st.lists(axis, min_size=1, max_size=3, unique=not repeats)
    valid = st.one_of(MAYBE, st.none(), many.map(tuple), many.map(tuple), many)
    hostile = st.one_of(st.lists(sizes(-4, 3), max_size=3).map(tuple), sizes(-4, 3),
                        st.just(()))
    return mostly(valid, hostile)


def _lengths(axes):
    """An ``s`` for ``axes``: mostly left out, or one length per axis (-1: the input's);
    now and then anything."""
    count = len(axes) if isinstance(axes, (tuple, list)) else 1
    valid = st.one_of(MAYBE, st.lists(st.one_of(st.integers(1, 8), st.just(-1)),
                                      min_size=count, max_size=count).map(tuple))
    hostile = st.one_of(st.none(), sizes(-2, 7), st.lists(sizes(-2, 7), max_size=3).map(tuple),
                        st.lists(sizes(-2, 7), max_size=3))
    return mostly(valid, hostile)


def _repeats(axes, ndim):
    """Whether a sequence of integer ``axes`` names an axis twice (-1 and ndim - 1 too)."""
    if not isinstance(axes, (tuple, list)) or not ndim or not all(map(_integer, axes)):
        return False
    return len({axis % ndim for axis in axes}) < len(axes)


def _integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _reference(name):
    """The function of ``name`` in numpy.fft (without workers), else in scipy.fft (without
    out, which it does not take). accelmath takes scipy.fft's integer ``s`` and ``axes``
    where numpy.fft takes sequences only (its scipy_backend routes scipy.fft's calls to the
    same functions): such calls are scipy.fft's."""
    def scipy_fft(a, out=None, **kwargs):
        axes = kwargs.get("axes")
        if _repeats(axes, np.ndim(a)):
            # accelmath transforms an axis given twice twice, as numpy.fft does (documented);
            # scipy.fft refuses that: not compared
            return UNCHECKED
        return getattr(scipy.fft, name)(a, **kwargs)

    if not hasattr(np.fft, name):
        return scipy_fft

    def numpy_fft(a, workers=None, **kwargs):
        if _integer(kwargs.get("s")) or _integer(kwargs.get("axes")):
            return scipy_fft(a, workers=workers, **kwargs)
        out = kwargs.pop("out", None)
        result = getattr(np.fft, name)(a, **kwargs)
        if isinstance(a, np.ndarray) and not a.size and result.size:
            # NumPy's c2r transforms of an empty input zero-padded (n, s) give whatever their
            # memory held (2.4): the transform of zeros is zeros
            result = np.zeros_like(result)
        if result.dtype == np.float16:
            # NumPy 2.4's c2r transforms of float16 input give float16; accelmath computes
            # half precision in single and gives float32, as scipy.fft does
            result = result.astype(np.float32)
        if out is None:
            return result
        # NumPy writes into out= as it computes: over several axes it writes each axis's
        # step there, and refuses (or gets wrong) an out= of the result's shape where a
        # step's differs (s, an axis given twice); over no axes (axes=(), a 0-d array) it
        # gives the input back and ignores out=. accelmath writes the result into out=.
        if np.shape(out) != np.shape(result):
            raise ValueError("output array has wrong shape")
        np.copyto(out, result, casting="same_kind")
        return out

    return numpy_fft


def _with_out(data, x, kwargs, theirs):
    """Maybe an ``out=`` of a kind drawn, for the result that ``theirs`` gives: ``(x,
    kwargs)``, x replaced by a copy sharing out's memory for an out that aliases it."""
    kind = data.draw(OUT, "out kind")
    if kind is None:
        return x, kwargs
    value, _, _ = reference(theirs, (x,), kwargs)
    shape, dtype = ((value.shape, value.dtype) if isinstance(value, np.ndarray)
                    else ((3,), np.complex128))
    out = make_out(kind, shape, dtype, x)
    if kind == "alias":
        x, out = out
    return x, dict(kwargs, out=out)


def _half(x):
    """How much wider than its result's tolerance a transform of ``x`` is compared: float16
    input's, to half precision's (NumPy computes part of it in half precision, accelmath in
    single, as scipy.fft)."""
    return 150.0 if isinstance(x, np.ndarray) and x.dtype == np.float16 else 1.0


def _check_function(data, name, x, kwargs):
    theirs = _reference(name)
    x, kwargs = _with_out(data, x, kwargs, theirs)
    agree(getattr(afft, name), theirs, (x,), kwargs, ("a",) + tuple(kwargs), scale=_half(x))


@FUZZ
@given(st.data(), st.sampled_from(ONE_AXIS))
def test_one_axis_functions(data, name):
    x = data.draw(operands(), "a")
    kwargs = drawn(n=data.draw(LENGTHS, "n"),
                   axis=data.draw(mostly(st.sampled_from([NOT_GIVEN, -1, 0]), sizes(-4, 3)),
                                  "axis"),
                   norm=data.draw(NORMS, "norm"), workers=data.draw(WORKERS, "workers"))
    _check_function(data, name, x, kwargs)


@FUZZ
@given(st.data(), st.sampled_from(SEVERAL_AXES))
def test_functions_of_several_axes(data, name):
    x = data.draw(operands(), "a")
    axes = data.draw(_axes(_ndim(x), repeats=True), "axes")
    kwargs = drawn(s=data.draw(_lengths(axes), "s"), axes=axes,
                   norm=data.draw(NORMS, "norm"), workers=data.draw(WORKERS, "workers"))
    _check_function(data, name, x, kwargs)


@FUZZ
@given(st.data(), st.sampled_from(("fftfreq", "rfftfreq")))
def test_frequencies(data, name):
    n = data.draw(mostly(st.integers(1, 9), sizes()), "n")
    spacing = mostly(st.one_of(MAYBE, st.sampled_from([1.0, 0.5, 2, -1.0, np.float32(0.25),
                                                       np.array(2.0), float("nan")])),
                     st.sampled_from([0, float("inf"), 1j, None, "x", np.zeros(2)]))
    kwargs = drawn(d=data.draw(spacing, "d"),
                   device=data.draw(mostly(st.sampled_from([NOT_GIVEN, None, "cpu"]),
                                           st.just("cuda")), "device"))

    def theirs(n, **kwargs):
        return getattr(np.fft, name)(n, **kwargs)

    agree(getattr(afft, name), theirs, (n,), kwargs, ("n",) + tuple(kwargs))


def _shift_reference(name):
    """numpy.fft's shift ``name``, but of a 0-d array: the array (NumPy's fails inside
    numpy.roll, "not enough values to unpack"; there is nothing to shift)."""
    def theirs(x, **kwargs):
        if isinstance(x, (np.ndarray, float)) and np.ndim(x) == 0:
            return np.array(x)
        return getattr(np.fft, name)(x, **kwargs)

    return theirs


@FUZZ
@given(st.data(), st.sampled_from(("fftshift", "ifftshift")))
def test_shifts(data, name):
    x = data.draw(operands(), "x")
    kwargs = drawn(axes=data.draw(_axes(_ndim(x), repeats=True), "axes"))
    agree(getattr(afft, name), _shift_reference(name), (x,), kwargs, ("x",) + tuple(kwargs))


def _plan_reference(plan, direction):
    """What NumPy computes for a plan's transform, ``direction`` as :meth:`FFT.execute`
    takes it."""
    axes, norm = plan.axes, plan.norm

    def theirs(x, out=None, direction=direction):
        if plan.kind == "c2c":
            if direction not in (None, "forward", "inverse"):
                raise ValueError(f"direction {direction!r}")
            fft = np.fft.ifftn if direction == "inverse" else np.fft.fftn
            return fft(x, axes=axes, norm=norm)
        if direction not in (None, "forward" if plan.kind == "r2c" else "inverse"):
            raise ValueError(f"direction {direction!r} of a {plan.kind} plan")
        if plan.kind == "r2c":
            y = np.fft.rfftn(x, axes=axes, norm=norm)
            return np.conj(y) if plan.conjugate else y
        s = [plan.out_shape[a] for a in axes]
        return np.fft.irfftn(np.conj(x) if plan.conjugate else x, s=s, axes=axes, norm=norm)

    return theirs


def _kinds(x):
    """Plan kinds for operand ``x``: mostly left out (the default) or the one that fits its
    dtype; now and then another, or one that is none."""
    complex_ = isinstance(x, np.ndarray) and x.dtype.kind == "c"
    fits = ["c2c", "c2r"] if complex_ else ["r2c"]
    return mostly(st.sampled_from([NOT_GIVEN] + fits),
                  st.sampled_from(["c2c", "r2c", "c2r", "C2C", None, 2]))


@FUZZ
@given(st.data())
def test_fft_plan(data):
    x = data.draw(operands(max_side=4), "operand")
    kind = data.draw(_kinds(x), "kind")
    real = kind in ("r2c", "c2r") or kind is NOT_GIVEN and not (
        isinstance(x, np.ndarray) and x.dtype.kind == "c")
    kwargs = drawn(axes=data.draw(_axes(_ndim(x)), "axes"), kind=kind,
                   norm=data.draw(NORMS, "norm"),
                   last_axis_size=data.draw(mostly(
                       st.one_of(MAYBE, st.integers(1, 8)) if kind == "c2r" else MAYBE,
                       sizes()), "last_axis_size"),
                   conjugate=data.draw(mostly(
                       st.one_of(MAYBE, flags()) if real else MAYBE, flags()), "conjugate"),
                   execution=data.draw(mostly(st.sampled_from([NOT_GIVEN, "auto", "cpu"]),
                                              st.just("gpu")), "execution"),
                   workers=data.draw(WORKERS, "workers"))
    plan = agree(afft.FFT, lambda x, **kwargs: None, (x,), kwargs,
                 ("operand",) + tuple(kwargs), compare=lambda got, expected: None)
    if plan is None:  # (refused, naming an argument)
        return
    operand = data.draw(mostly(st.sampled_from(["template", "new"]), st.just("other")),
                        "execute on")
    direction = data.draw(mostly(st.sampled_from([NOT_GIVEN, None, "forward", "inverse"]),
                                 st.just("sideways")), "direction")
    call = drawn(direction=direction)
    if operand == "template":
        y, args = x, ()
    else:
        y = (np.roll(x, 1) if operand == "new" else
             data.draw(array_or_junk(arrays(max_side=4)), "x"))
        args = (y,)
    kind = data.draw(OUT, "out kind")
    if kind is not None:
        out = make_out(kind, plan.out_shape, plan.out_dtype, y)
        if kind == "alias":  # (y's values in out's memory; the template's stay where they are)
            moved, out = out
            args = (moved,) if args else ()
        call["out"] = out
    theirs = _plan_reference(plan, None if direction is NOT_GIVEN else direction)

    def reference_of(*args, **kwargs):  # (execute() and execute(None): the template's)
        return theirs(args[0] if args and args[0] is not None else x, **kwargs)

    agree(plan.execute, reference_of, args, call, ("operand",) + tuple(call),
          scale=_half(args[0] if args else x))
    plan.free()
    refuses(plan.execute, args, {}, ("x",), StateError)

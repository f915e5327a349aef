"""Tracing: each construct's dtype is NumPy's, the graph is canonical (commutative arguments
ordered, common subexpressions shared, constants folded), scalars are inputs and not baked in,
and every construct that cannot be fused is refused, named, at trace time."""

import numpy as np
import pytest
from fusion_constructs import CONSTRUCTS, cases, draw

from accelmath.errors import InvalidArgumentError, TraceError, UnsupportedDTypeError
from accelmath.fusion import frequency, index, relu, trace
from accelmath.fusion._elementwise import Traced


@pytest.mark.parametrize("name, dtype", cases())
def test_each_construct_has_numpys_dtype(name, dtype):
    fn = CONSTRUCTS[name][0]
    rng = np.random.default_rng()
    x, y = draw(rng, dtype, 3), draw(rng, dtype, 3)
    with np.errstate(all="ignore"):
        expected = np.asarray(fn(x, y, 0.5)).dtype
    assert trace(fn, dtype, dtype, 0.5).dtype == expected


def test_commutative_arguments_and_common_subexpressions():
    a = trace(lambda x, y: (x + 1.0) * (y + 1.0), np.float32, np.float32)
    b = trace(lambda x, y: (1.0 + y) * (x + 1.0), np.float32, np.float32)
    assert a.key == b.key
    shared = trace(lambda x: np.exp(x) + np.exp(x), np.float64)
    assert [n.op for n in shared.nodes].count("exp") == 1
    assert trace(lambda x, y: x - y, np.float32, np.float32).key != \
        trace(lambda x, y: y - x, np.float32, np.float32).key


def test_keys_tell_dtypes_and_scalar_kinds_apart():
    fn = lambda x, s: x * s  # noqa: E731
    keys = {trace(fn, np.float32, 2.0).key, trace(fn, np.float64, 2.0).key,
            trace(fn, np.float32, 2).key, trace(fn, np.float32, np.float32(2)).key,
            trace(fn, np.float32, np.float32).key}
    assert len(keys) == 5
    assert trace(fn, np.float32, 2.0).key == trace(fn, np.float32, 7.5).key


def test_constants_fold_with_numpys_types():
    e = trace(lambda x: x * (2.0 * 3.0) + np.float32(2) * np.exp(1.0), np.float32)
    constants = [n for n in e.nodes if n.op == "constant"]
    assert [(n.attr, n.weak) for n in constants] == [(6.0, True), (2 * np.exp(1.0), False)]
    assert e.dtype == np.float64  # (numpy.exp of a Python float is a strong float64)
    assert trace(lambda x: x * 6.0, np.float32).dtype == np.float32


def test_unused_nodes_and_dead_branches_leave_the_graph():
    def fn(x, y):
        np.exp(y)  # computed and dropped
        return x + 1.0

    assert [n.op for n in trace(fn, np.float64, np.float64).nodes] == \
        [n.op for n in trace(lambda x, y: x + 1.0, np.float64, np.float64).nodes]


def test_new_scalar_values_are_not_new_traces():
    calls = []

    def fn(x, s):
        calls.append(1)
        return x * s

    traced = Traced(fn)
    for value in (1.0, 2.0, 3.5):
        traced.expression([np.dtype("float32"), value])
    assert len(calls) == 1
    traced.expression([np.dtype("float32"), 2])
    assert len(calls) == 2


@pytest.mark.parametrize("fn, words", [
    (lambda x: x if x > 0 else -x, "no truth value"),
    (lambda x: x > 0 and x < 1, "no truth value"),
    (lambda x: 0 < x < 1, "no truth value"),
    (lambda x: np.arctan2(x, x), "numpy.arctan2 is not supported"),
    (lambda x: np.add(x, 1, dtype=np.float64), "plain ufunc calls"),
    (lambda x: np.add.reduce(x), "plain ufunc calls"),
    (lambda x: np.sum(x), "numpy.sum is not supported"),
    (lambda x: x[0], "indexing"),
    (lambda x: float(x), r"float\(\) .* cast it with x\.astype"),
    (lambda x: np.float64(x), r"numpy\.float64\(x\)\) of a traced value .* x\.astype"),
    (lambda x: np.asarray(x), r"numpy\.asarray\(x\)"),
    (lambda x: len(x), r"len\(\)"),
    (lambda x: x.sum(), r"\.sum of a traced value"),
    (lambda x: (x, x), "returns one value"),
    (lambda x: x + "a", "str"),
    (lambda x: x + np.ones(3), "pass arrays as arguments"),
    (lambda x: x.astype("U3"), r"\.astype"),
])
def test_constructs_that_cannot_be_fused_are_named(fn, words):
    with pytest.raises(TraceError, match=words):
        trace(fn, np.float64)


@pytest.mark.parametrize("fn, dtype, words", [
    (lambda x: np.maximum(x, 1.0), np.complex64, "maximum is not defined for complex"),
    (lambda x: x < 1.0, np.complex128, "< is not defined for complex"),
    (lambda x: relu(x), np.complex64, "relu is not defined for complex"),
    (lambda x: np.where(x, x, 0.0), np.float32, "boolean condition"),
    (lambda x: x.astype(np.float32), np.complex64, "imaginary part"),
    (lambda x: (x > 0) & x, np.float32, "boolean values"),
    (lambda x: x ** 2, np.int32, "of integers"),
    (lambda x: -(x > 0), np.float32, "unary -"),
])
def test_dtype_mismatches_are_refused_at_trace_time(fn, dtype, words):
    with pytest.raises(UnsupportedDTypeError, match=words):
        trace(fn, dtype)


def test_arguments_of_other_dtypes_and_kinds_are_refused():
    with pytest.raises(TraceError, match="argument 1 is uint8"):
        trace(lambda x, y: x + y, np.float32, np.uint8)
    with pytest.raises(TraceError, match="argument 0 is a list"):
        trace(lambda x: x, [1.0])
    with pytest.raises(InvalidArgumentError, match="not callable"):
        trace(3, np.float32)
    with pytest.raises(InvalidArgumentError, match="the element's dtype"):
        trace(lambda: 1)


def test_index_and_frequency_live_inside_a_trace():
    with pytest.raises(TraceError, match="only defined inside a traced function"):
        index(0)
    with pytest.raises(TraceError, match="only defined inside a traced function"):
        frequency(0)
    with pytest.raises(InvalidArgumentError, match="axis must be an integer"):
        trace(lambda x: x * index(1.0), np.float32)
    single = trace(lambda x: x * frequency(0), np.complex64)
    assert single.dtype == np.complex64 and single.axes() == [0]
    assert trace(lambda x: x * frequency(-1), np.float64).dtype == np.float64


def test_a_trace_that_raises_leaves_no_trace_running():
    with pytest.raises(ZeroDivisionError):
        trace(lambda x: 1 / 0, np.float32)
    with pytest.raises(TraceError, match="only defined inside"):
        index(0)


def test_tracing_is_fast_enough_to_do_on_a_first_call():
    """Not a timing assertion: the trace of a 20-node expression completes and is cached."""
    traced = Traced(lambda x, b, s: np.where(x > s, np.exp(x) * b, np.log(abs(x)) - b) ** 2)
    first = traced.expression([np.dtype("float32"), np.dtype("float32"), 0.5])
    assert traced.expression([np.dtype("float32"), np.dtype("float32"), 1.5]) is first


def test_a_lambda_written_in_a_loop_is_traced_once_per_distinct_value():
    from accelmath.fusion import _elementwise
    from accelmath.fusion._evaluate import evaluate

    made, results = [], []
    for k in (1.0, 2.0, 1.0, 2.0):  # (traced in the call that looks it up, as the library does)
        made.append(_elementwise.traced(lambda y: y * k, "epilogue"))
        results.append(evaluate(made[-1].expression([np.dtype("float64")]), [np.arange(3.0)]))
    assert made[0] is made[2] and made[1] is made[3] and made[0] is not made[1]
    assert [r.tolist() for r in results] == [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]] * 2
    weights = np.ones(3)  # (an unhashable value read: the function object itself is the key)
    first = _elementwise.traced(lambda y: y + weights.sum(), "epilogue")
    assert _elementwise.traced(lambda y: y + weights.sum(), "epilogue") is not first


# -- what a function reads, and which calls share its trace ---------------------------------

GAIN = 2.0


def test_a_global_read_inside_a_comprehension_is_read_each_call():
    # (a global a function reads is a constant of its trace, found again by its value: also
    # where the code that reads it is nested in the function's own, a comprehension's)
    global GAIN
    import accelmath.fft as F

    x = np.arange(8.0) + 0j
    try:
        for gain in (2.0, 3.0):
            GAIN = gain
            got = F.fft(x, epilogue=lambda y: [y * GAIN for _ in (0,)][0])
            np.testing.assert_allclose(got, np.fft.fft(x) * gain)
    finally:
        GAIN = 2.0


def test_bound_methods_of_two_objects_do_not_share_a_trace():
    import accelmath.fft as F

    class Gain:
        def __init__(self, k):
            self.k = k

        def apply(self, y):
            return y * self.k

    x = np.arange(8.0) + 0j
    for k in (2.0, 3.0):
        np.testing.assert_allclose(F.fft(x, epilogue=Gain(k).apply), np.fft.fft(x) * k)


def test_a_value_whose_type_cannot_be_hashed_is_read_as_the_function_itself():
    from accelmath.fusion._elementwise import function_key

    class Meta(type):
        def __eq__(cls, other):  # (and so no __hash__: its classes are unhashable)
            return cls is other

    class Odd(metaclass=Meta):
        k = 2.0

    odd = Odd()
    fn = lambda y: y * odd.k  # noqa: E731
    assert function_key(fn) is fn
    from accelmath.fusion import elementwise

    np.testing.assert_array_equal(elementwise(fn)(np.arange(3.0)), np.arange(3.0) * 2.0)


@pytest.mark.parametrize("construct, fn", [
    ("//", lambda y: y // 2), ("//", lambda y: 2 // y), ("%", lambda y: y % 2),
    ("@", lambda y: y @ y), ("<<", lambda y: y << 1), (">>", lambda y: 1 >> y),
    ("\\^", lambda y: y ^ y), ("divmod", lambda y: divmod(y, 2)), ("round", lambda y: round(y)),
    ("floor", lambda y: __import__("math").floor(y)), ("hashing", lambda y: {y: 1}),
    ("numpy.where takes 3 arguments", lambda y: np.where(y > 1)),
])
def test_unsupported_operators_are_trace_errors_naming_them(construct, fn):
    with pytest.raises(TraceError, match=construct):
        trace(fn, np.float64)


def test_a_python_int_argument_beyond_64_bits_is_refused_naming_it():
    import accelmath.fft as F
    from accelmath.fusion import elementwise
    from accelmath.fusion._cuda import scalar_argument

    with pytest.raises(InvalidArgumentError, match="argument 1 = 9223372036854775808"):
        elementwise(lambda a, s: a + s)(np.arange(4), 2 ** 63)
    with pytest.raises(InvalidArgumentError, match=r"epilogue_args\[0\]"):
        F.fft(np.ones(8), epilogue=lambda y, s: y * s, epilogue_args=(2 ** 70,))
    with pytest.raises(InvalidArgumentError, match="integer type"):  # (NumPy's own bound)
        F.fft(np.arange(8, dtype=np.int32), prologue=lambda v, s: v + s,
              prologue_args=(2 ** 40,))
    # a remembered device call passes its scalars straight to the kernel: never wrapped
    spec = trace(lambda y, s: y * s, np.float64, 1).inputs[1]
    with pytest.raises(InvalidArgumentError, match="64-bit"):
        scalar_argument(2 ** 64 + 3, spec)
    assert scalar_argument(-2 ** 63, spec).value == -2 ** 63


def test_a_read_only_out_is_refused():
    import accelmath.fft as F
    from accelmath.fusion import elementwise

    with pytest.raises(InvalidArgumentError, match="read-only"):
        elementwise(lambda a: a * 2)(np.ones(4), out=np.broadcast_to(np.zeros(4), (4,)))
    frozen = np.zeros(8, complex)
    frozen.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        F.fft(np.ones(8) + 0j, epilogue=lambda y: y * 2, out=frozen)


def test_messages_name_what_the_caller_gave():
    import accelmath.fft as F

    with pytest.raises(InvalidArgumentError, match=r"args\[0\] has shape \(7,\)"):
        F.spectral_filter(np.ones((6, 8)), lambda s, k: s * k, (np.ones(7),))
    with pytest.raises(InvalidArgumentError, match="the prologue returns complex values"):
        F.rfft(np.ones(8), prologue=lambda v: v * 1j)

"""matmul's bad input: clear accelmath errors naming the operand, NumPy's words for shapes;
and the pure rules (layouts, batches, dtypes)."""

import numpy as np
import pytest

from accelmath import linalg
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._matmul import rules
from accelmath.linalg._matmul.epilogue import EPILOGUES


def test_zero_dimensional():
    with pytest.raises(ValueError, match="Input operand 0 .* does not have enough dimensions"):
        linalg.matmul(np.float64(2.0), np.ones(3))
    with pytest.raises(ValueError, match="Input operand 1 .* does not have enough dimensions"):
        linalg.matmul(np.ones(3), np.array(2.0))


def test_shapes():
    with pytest.raises(ValueError, match=r"mismatch in its core dimension 0.*size 4 is "
                                         r"different from 3"):
        linalg.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="could not be broadcast"):
        linalg.matmul(np.ones((2, 3, 4)), np.ones((5, 4, 2)))
    with pytest.raises(InvalidArgumentError, match="c has shape"):
        linalg.matmul(np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 2)), beta=1)
    with pytest.raises(InvalidArgumentError,
                       match="out has shape .*; it must have the result's shape"):
        linalg.matmul(np.ones((2, 3)), np.ones((3, 4)), out=np.empty((2, 5)))
    with pytest.raises(UnsupportedDTypeError, match="Cannot cast ufunc 'matmul' output"):
        linalg.matmul(np.ones((2, 3)), np.ones((3, 4)), out=np.empty((2, 4), np.int32))


def test_dtypes():
    with pytest.raises(UnsupportedDTypeError, match=r"b has dtype float32 but a has dtype "
                                                    r"float64.*astype"):
        linalg.matmul(np.ones((2, 2)), np.ones((2, 2), np.float32))
    with pytest.raises(UnsupportedDTypeError, match="int64"):
        linalg.matmul(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64))
    with pytest.raises(UnsupportedDTypeError, match="relu"):
        linalg.matmul(np.ones((2, 2), complex), np.ones((2, 2), complex), epilogue="relu")
    for epilogue, bias in (("bias", np.ones(2, np.complex64)), ("bgrada", None), ("bgradb", None)):
        # (cuBLASLt has no epilogue for complex products: refused on every path)
        with pytest.raises(UnsupportedDTypeError, match=f"epilogue '{epilogue}' takes real "
                                                        "operands; the operands are complex64"):
            linalg.matmul(np.ones((2, 2), np.complex64), np.ones((2, 2), np.complex64),
                          epilogue=epilogue, bias=bias)
    with pytest.raises(InvalidArgumentError, match="allow_tf32"):
        linalg.matmul(np.ones((2, 2)), np.ones((2, 2)), allow_tf32=True)
    with pytest.raises(InvalidArgumentError, match="complex"):
        linalg.matmul(np.ones((2, 2)), np.ones((2, 2)), alpha=1j)
    # (a dtype accelmath reads nowhere, named: found by the fuzz)
    for name in ("a", "b", "c", "bias"):
        operands = dict(a=np.ones((2, 2)), b=np.ones((2, 2)), c=np.ones((2, 2)), beta=1,
                        bias=np.ones(2), epilogue="bias")
        operands[name] = np.ones(operands[name].shape, object)
        with pytest.raises(UnsupportedDTypeError, match=f"^{name}: unsupported dtype 'object'"):
            linalg.matmul(**operands)


def test_epilogue_inputs():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    with pytest.raises(InvalidArgumentError, match="Invalid epilogue 'relux'"):
        linalg.matmul(a, b, epilogue="relux")
    with pytest.raises(InvalidArgumentError, match="pass bias="):
        linalg.matmul(a, b, epilogue="bias")
    with pytest.raises(InvalidArgumentError, match=r"bias has shape \(3,\).*\(4,\)"):
        linalg.matmul(a, b, epilogue="bias", bias=np.ones(3))
    with pytest.raises(InvalidArgumentError, match="adds no bias"):
        linalg.matmul(a, b, bias=np.ones(4))
    with pytest.raises(InvalidArgumentError, match="pass aux="):
        linalg.matmul(a, b, epilogue="dgelu")
    with pytest.raises(InvalidArgumentError, match="execution"):
        linalg.matmul(a, b, execution="gpu")
    with pytest.raises(InvalidArgumentError, match="reads no auxiliary input"):
        linalg.matmul(a, b, aux=np.ones((2, 4)))
    with pytest.raises(InvalidArgumentError, match=r"beta=1\.0 scales c, and no c is given"):
        linalg.matmul(a, b, beta=1.0)
    # a c without a beta: refused, where the default beta (0) would leave it unread
    c = np.ones((2, 4))
    for make in (linalg.matmul, linalg.Matmul):
        with pytest.raises(InvalidArgumentError, match="c is given without beta"):
            make(a, b, c)
        with pytest.raises(InvalidArgumentError, match="c is given without beta"):
            make(a, b, c=c, alpha=2.0)
    with pytest.raises(InvalidArgumentError, match="c is given without beta"):
        linalg.Matmul(a_shape=(2, 3), b_shape=(3, 4), c_shape=(2, 4), dtype="float64")
    np.testing.assert_array_equal(linalg.matmul(a, b, c, beta=0), a @ b)
    np.testing.assert_array_equal(linalg.matmul(a, b, c, beta=1), a @ b + c)
    # the ReLU mask: relu_aux's packed shape, on every path
    for mask in (np.zeros((2, 1), np.uint8), np.zeros((4, 16), np.uint8),
                 np.zeros((2, 32), np.uint8)):
        with pytest.raises(InvalidArgumentError, match=r"aux has shape .*packed mask.*\(2, 16\)"):
            linalg.matmul(a, b, epilogue="drelu", aux=mask)


def test_plan_names_the_operand_that_does_not_match():
    torch = pytest.importorskip("torch")
    plan = linalg.Matmul(np.ones((5, 7)), np.ones((7, 3)), np.ones((5, 3)), beta=1.0)
    for given, name in [({"a": np.ones((6, 7))}, "a"), ({"b": np.ones((7, 4))}, "b"),
                        ({"b": np.ones((7, 3), np.float32)}, "b"),
                        ({"a": torch.ones(5, 7, dtype=torch.float64)}, "a"),  # another package
                        ({"c": np.ones((3, 5)).T}, "c")]:
        with pytest.raises(InvalidArgumentError,
                           match=f"^{name} does not match the matrix product plan: .*package numpy"):
            plan.execute(**given)
    layout = linalg.Matmul(a_shape=(5, 7), b_shape=(7, 3), dtype="float64")
    with pytest.raises(InvalidArgumentError, match="takes no bias"):
        layout.execute(np.ones((5, 7)), np.ones((7, 3)), bias=np.ones(3))


def test_every_epilogue_has_a_cublaslt_enumerator():
    from accelmath.bindings import cublaslt

    for record in EPILOGUES.values():
        assert record.cublaslt in cublaslt.EPILOGUE


def test_stored_layouts():
    assert rules.stored(5, 3, 1, 5) == rules.Stored("N", 5, 3, 5)
    assert rules.stored(5, 3, 3, 1) == rules.Stored("T", 3, 5, 3)
    assert rules.stored(5, 3, 3, 1, conj=True).op == "C"
    assert rules.stored(5, 3, 2, 10) is None  # strided rows: copied
    assert rules.stored(5, 3, -1, 5) is None
    assert rules.stored(1, 3, 0, 1) == rules.Stored("N", 1, 3, 1)
    assert rules.stored(5, 3, 3, 1, transposable=False) is None


def test_batches():
    # a C-ordered batch collapses into one strided batch; a broadcast operand has stride 0
    assert rules.batches((2, 3), [(60, 20), (0, 0)]) == rules.Batches(6, (20, 0), ((0, 0),))
    # a batch that does not collapse loops over its outer axis
    looped = rules.batches((2, 3), [(100, 20), (3, 1)])
    assert looped.count == 3 and looped.strides == (20, 1)
    assert looped.offsets == ((0, 0), (100, 3))


def test_precisions():
    assert rules.precision("float32", False).compute == "32F"
    assert rules.precision("float32", True).compute == "32F_FAST_TF32"
    assert rules.precision("complex128", False) == rules.Precision("64F", "complex128")

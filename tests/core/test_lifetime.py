"""One lifetime for every object that holds device resources: plans, factor objects, the
subtractor and kernels are Resources, freed once, with one message on use after free."""

import numpy as np
import pytest

import accelmath
from accelmath import fft, linalg
from accelmath._core.lifetime import Resource
from accelmath.errors import StateError
from accelmath.fusion import RawKernel
from accelmath.subtraction import Subtractor

_SOURCE = 'extern "C" __global__ void k(double *x) { x[0] = 1.0; }'


def _objects():
    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    return [
        (fft.FFT(np.ones(8, np.complex128)), lambda o: o.execute()),
        (linalg.Matmul(a, a), lambda o: o.execute()),
        (linalg.Cholesky(a), lambda o: o.solve(np.ones(2))),
        (linalg.LU(a), lambda o: o.solve(np.ones(2))),
        (linalg.QR(a), lambda o: o.solve(np.ones(2))),
        (Subtractor((32, 32), half_width=2), lambda o: o.subtract(np.ones((32, 32)),
                                                                  np.ones((32, 32)))),
        (RawKernel(_SOURCE, "k"), lambda o: o.compile()),
    ]


def test_the_public_base_is_the_core_one():
    assert accelmath.Resource is Resource
    assert "Resource" in accelmath.__all__


@pytest.mark.parametrize("index", range(7))
def test_every_holder_is_a_resource_freed_once_with_one_message(index):
    obj, use = _objects()[index]
    assert isinstance(obj, Resource) and not obj.freed
    with obj as same:
        assert same is obj
    assert obj.freed
    obj.free()  # (idempotent)
    with pytest.raises(StateError, match=f"^this {obj.what} was freed; create a new one$"):
        use(obj)


def test_release_runs_once_and_a_failed_release_is_not_retried():
    released = []

    class Held(Resource):
        what = "held thing"

        def __init__(self):
            super().__init__()

        def _release(self):
            released.append(1)
            raise RuntimeError("release failed")

    held = Held()
    with pytest.raises(RuntimeError):
        held.free()
    held.free()
    assert released == [1] and held.freed


def test_an_object_whose_making_failed_holds_nothing_to_free():
    class Unmade(Resource):
        def _release(self):
            raise AssertionError("nothing was made")

    Unmade.__new__(Unmade).free()  # (no __init__ ran: nothing to release)


def test_a_resource_is_neither_copied_nor_pickled():
    # (a copy shared what the original frees: after free() it failed with an obscure error)
    import copy
    import pickle

    import numpy as np

    import accelmath.fft as F

    plan = F.FFT(np.ones((4, 4)) + 0j)
    for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="FFT plan holds device resources .* cannot be copied"):
            duplicate(plan)
    plan.free()

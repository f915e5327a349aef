"""The plan base (accelmath._core.plan): layouts, out= checks, the one execute path, lifetime.

The device path runs here on a fake array package (pointers are ints, the library call a
recorder), so its logic is checked without a GPU; tests/fft runs it on real GPUs.
"""

import contextlib
import operator

import numpy as np
import pytest

from accelmath._core import plan as plan_module
from accelmath._core.operand import Operand
from accelmath._core.plan import Call, Plan, check_out, template_operand
from accelmath.errors import (InvalidArgumentError, StateError, UnsupportedDTypeError,
                              UnsupportedOperandError)


# --- template_operand ---------------------------------------------------------------------

def test_template_of_a_layout_on_the_host():
    a = template_operand((3, 4), "complex64", (1, 3), None, None)
    assert isinstance(a, np.ndarray) and a.dtype == np.complex64
    assert a.shape == (3, 4) and a.strides == (8, 24)


@pytest.mark.parametrize("args, error, match", [
    ((None, "float32", None, None, None), InvalidArgumentError, "needs an operand"),
    (((3, -1), "float32", None, None, None), InvalidArgumentError, "negative extent"),
    (((3, 2.5), "float32", None, None, None), InvalidArgumentError, "shape must be an integer"),
    (((3, 4), "object", None, None, None), UnsupportedDTypeError, "unsupported dtype 'object'"),
    (((3, 4), "float32", (8, 1), None, None), InvalidArgumentError, "do not lay out"),
    (((3, 4), "float32", None, "jax", None), InvalidArgumentError, 'package must be "numpy"'),
    (((3, 4), "float32", None, "numpy", 0), InvalidArgumentError, "leave device out"),
])
def test_template_refuses_bad_layouts(args, error, match):
    with pytest.raises(error, match=match):
        template_operand(*args)


# --- check_out ----------------------------------------------------------------------------

def test_check_out_names_what_is_wrong():
    like = Operand(None, 0, (4, 6), (6, 1), "complex128", None, None)
    good = np.empty((4, 6), np.complex128)
    assert check_out(good, like, (4, 6), "complex128", (6, 1)).obj is good
    with pytest.raises(InvalidArgumentError, match=r"out has wrong shape \(4, 5\)"):
        check_out(np.empty((4, 5), np.complex128), like, (4, 6), "complex128")
    with pytest.raises(InvalidArgumentError, match=r"expected shape \(4, 6\) and strides \(1, 4\)"):
        check_out(good, like, (4, 6), "complex128", (1, 4))
    with pytest.raises(UnsupportedDTypeError, match="out has dtype complex64, expected complex128"):
        check_out(np.empty((4, 6), np.complex64), like, (4, 6), "complex128")
    with pytest.raises(UnsupportedOperandError):
        check_out(object(), like, (4, 6), "complex128")


# --- the execute path, on a fake device package -------------------------------------------

class FakeArray:
    def __init__(self, shape, ptr):
        self.shape, self.ptr = shape, ptr


class FakeAdapter:
    """A device package: arrays are FakeArray, its current stream is 7 outside a
    :meth:`stream_scope`; each allocation records the current stream it was made on."""

    package = "fake"
    immutable = False

    def __init__(self):
        self.allocated = []
        self.scopes = []
        self.current = 7
        self.allocated_on = []

    def allocation(self, shape, strides, dtype, device_id):
        def make():
            out = FakeArray(shape, 5000 + len(self.allocated))
            self.allocated.append(out)
            self.allocated_on.append(self.current)
            return out
        return make, operator.attrgetter("ptr")

    def stream_getter(self, device_id):
        return lambda: 7

    def layout_key(self, x):
        return x.shape

    def reader(self, key, keyed=False):
        return lambda x: x.ptr if x.shape == key else None

    @contextlib.contextmanager
    def stream_scope(self, handle, device_id):
        self.scopes.append(handle)
        self.current = handle
        try:
            yield
        finally:
            self.current = 7


class FakePlan(Plan):
    what = "fake plan"

    def __init__(self, adapter, template):
        op = Operand(template, template.ptr, template.shape, (1,), "float32", 0, adapter)
        self._bind(op, template, template.shape, (1,), "float32", True, False)
        self.calls = []
        self.call = Call(lambda *args: self.calls.append(args), None, None)
        self.released = 0

    def execute(self, x=None, *, out=None, stream=None):
        return self.run(x, out, stream, self.call)

    def _release(self):
        self.released += 1


@pytest.fixture
def fake(monkeypatch):
    adapter = FakeAdapter()

    def wrap(x):
        if isinstance(x, FakeArray):
            return Operand(x, x.ptr, x.shape, (1,), "float32", 0, adapter)
        raise UnsupportedOperandError(f"not a fake array: {x!r}")

    monkeypatch.setattr(plan_module, "wrap_operand", wrap)
    monkeypatch.setattr(plan_module, "check_mutable", lambda out, name="out": None)
    return adapter, FakePlan(adapter, FakeArray((8,), 1000))


def test_an_operand_of_the_layout_runs_on_the_current_stream_into_a_new_result(fake):
    adapter, plan = fake
    out = plan.execute(FakeArray((8,), 1234))
    assert out is adapter.allocated[0]
    assert plan.calls == [(1234, out.ptr, 7)]
    assert plan.execute().ptr == adapter.allocated[1].ptr  # the bound operand
    assert plan.calls[-1][0] == 1000


def test_an_explicit_stream_allocates_in_its_order(fake):
    adapter, plan = fake
    plan.execute(FakeArray((8,), 1), stream=9)
    assert plan.calls[-1][2] == 9 and adapter.scopes == [9] and adapter.allocated_on == [9]
    plan.execute(FakeArray((8,), 1), stream=7)  # the current one: no scope needed
    assert adapter.scopes == [9] and adapter.allocated_on == [9, 7]


def test_out_is_checked_once_per_type_then_read(fake, monkeypatch):
    adapter, plan = fake
    checks = []
    real = plan_module.check_out
    monkeypatch.setattr(plan_module, "check_out",
                        lambda *args, **kw: checks.append(1) or real(*args, **kw))
    out = FakeArray((8,), 77)
    assert plan.execute(FakeArray((8,), 1), out=out) is out
    assert plan.execute(FakeArray((8,), 2), out=out) is out
    assert plan.calls == [(1, 77, 7), (2, 77, 7)] and checks == [1]
    with pytest.raises(InvalidArgumentError, match="out has wrong shape"):
        plan.execute(FakeArray((8,), 1), out=FakeArray((9,), 78))


def test_an_operand_of_another_layout_is_refused(fake):
    _, plan = fake
    with pytest.raises(InvalidArgumentError, match="does not match the"):
        plan.execute(FakeArray((9,), 1))
    with pytest.raises(InvalidArgumentError, match="does not match the"):
        plan.execute(np.zeros(8, np.float32))


def test_a_checked_operand_record_of_the_layout_is_taken(fake):
    adapter, plan = fake
    plan.execute(Operand(None, 4321, (8,), (1,), "float32", 0, adapter))
    assert plan.calls[-1][0] == 4321


def test_free_is_idempotent_and_later_use_raises(fake):
    _, plan = fake
    with plan:
        plan.execute(FakeArray((8,), 1))
    plan.free()
    assert plan.released == 1
    with pytest.raises(StateError, match="this fake plan was freed"):
        plan.execute(FakeArray((8,), 1))


class HostPlan(Plan):
    def __init__(self, template, layout_only=False):
        op = Operand(template, 0, template.shape, (1,), "float64", None, _numpy_adapter())
        self._bind(op, template, template.shape, (1,), "float64", False, layout_only)

    def execute(self, x=None, *, out=None, stream=None):
        return self.run(x, out, stream, Call(None, None, "option"))

    def _run_host(self, x, out, call):
        a, op = self._host_input(x)
        target = None if out is None else self._host_output(out, op)
        return ("host", a, op, target, call.option)


def _numpy_adapter():
    from accelmath._core.operand import adapter_named

    return adapter_named("numpy")


def test_host_operands_of_the_layout_are_taken_as_they_are():
    x = np.arange(3.0)
    plan = HostPlan(x)
    _, a, op, target, option = plan.execute()
    assert a is x and op.obj is x and target is None and option == "option"
    y = np.ones(3)
    _, a, op, _, _ = plan.execute(y)
    assert a is y and op is None  # the fast path: no operand made
    out = np.empty(3)
    assert plan.execute(y, out=out)[3] is out
    with pytest.raises(InvalidArgumentError, match="out has wrong shape"):
        plan.execute(y, out=np.empty(4))
    readonly = np.empty(3)
    readonly.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="out is read-only"):
        plan.execute(y, out=readonly)
    with pytest.raises(InvalidArgumentError, match="does not match the"):
        plan.execute(np.ones(4))
    plan.free()
    with pytest.raises(StateError, match="freed"):
        plan.execute(y)


def test_a_host_plan_made_for_a_layout_needs_its_operand():
    x = np.arange(3.0)
    with pytest.raises(InvalidArgumentError, match="made for a layout"):
        HostPlan(x, layout_only=True).execute()
    y = np.ones(3)
    assert HostPlan(x, layout_only=True).execute(y)[1] is y


def test_the_shim_s_execute_keeps_its_plan_alive_and_the_collector_frees_both(fake):
    """execute(x, out=) may be made in C (the call shim); every other call goes on to the
    Python execute, which must reach the plan even when nothing else holds it."""
    import gc
    import threading
    import weakref

    from accelmath._core import hostcall

    adapter, _ = fake

    class ShimPlan(FakePlan):
        def __init__(self, adapter, template):
            super().__init__(adapter, template)
            fail = lambda status: None  # noqa: E731
            self.call = Call(self.call.run, hostcall.BoundCall(None, fail, ("in", "out")), None)
            self._install_shim(self.call.direct, threading.local(), 0)

    out = ShimPlan(adapter, FakeArray((8,), 1000)).execute(FakeArray((8,), 1234))
    assert out is adapter.allocated[-1]  # a temporary plan's execute ran
    plan = ShimPlan(adapter, FakeArray((8,), 1000))
    if hostcall._extension() is not None:  # the execute made in C holds the plan
        assert type(plan.execute).__name__ == "Launch"
    alive = weakref.ref(plan)
    del plan
    gc.collect()
    assert alive() is None


def test_an_unbound_plan_keeps_its_layout_and_reader_but_not_its_array(fake):
    import gc
    import weakref

    adapter, _ = fake
    template = FakeArray((8,), 1000)
    alive = weakref.ref(template)
    plan = FakePlan(adapter, template)
    plan._unbind()
    del template
    gc.collect()
    assert alive() is None
    plan.execute(FakeArray((8,), 5))  # the fast reader stays
    assert plan.calls[-1][0] == 5
    with pytest.raises(InvalidArgumentError, match="made for a layout"):
        plan.execute()

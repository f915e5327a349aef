"""SciPy's check_finite on the device (accelmath.linalg._device.finite): which operands go to the
kernel and which through their package, in the order given (CPU, with stand-ins for the
device); the kernel and its read back are covered by the GPU tests of test_finite_gpu.py and
test_kernels.py."""

import pytest

from accelmath.linalg._device import finite as _finite

class _Op:
    def __init__(self, shape, strides, name, dtype="float64"):
        self.shape, self.strides, self.dtype, self.name = shape, strides, dtype, name
        self.size = 1
        for extent in shape:
            self.size *= extent


def _package_checks(monkeypatch, bad=()):
    """Record the operands checked through their package; those named in ``bad`` raise."""
    seen = []

    def check(op, core, name):
        seen.append(name)
        if name in bad:
            raise ValueError(name)

    monkeypatch.setattr(_finite, "check_with_package", check)
    monkeypatch.setattr(_finite._kernels, "flag_nonfinite",
                        lambda *args: pytest.fail("kernel launched"))
    return seen


def test_another_layout_sends_every_operand_through_its_package_in_order(monkeypatch):
    seen = _package_checks(monkeypatch, bad=("c", "b"))
    c = _Op((3, 4, 4), (16, 4, 1), "c")  # dense: the kernel's, were it alone
    b = _Op((3, 4, 2), (16, 4, 2), "b")  # every other column: the package's
    with pytest.raises(ValueError, match="^c$"):  # the first bad operand is named
        _finite.enqueue(None, (c, b), ("c", "b"))
    assert seen == ["c"]


def test_matrices_in_either_order_go_to_the_kernel(monkeypatch):
    launched = []
    monkeypatch.setattr(_finite._kernels, "flag_nonfinite",
                        lambda ptr, count, batch, *rest: launched.append((ptr, count, batch)))
    monkeypatch.setattr(_finite, "read_back_later", lambda *args: "later")
    monkeypatch.setattr(_finite, "check_with_package", lambda *args: pytest.fail("package"))

    class Context:
        stream = device_id = 0

        def empty(self, shape, dtype):
            return None, 1000

    c = _Op((3, 4, 4), (16, 1, 4), "c")  # column-major matrices, one after another
    b = _Op((3, 4, 2), (8, 2, 1), "b")  # C order
    c.ptr, b.ptr = 10, 20
    pending = _finite.enqueue(Context(), (c, b), ("c", "b"))
    assert launched == []  # (on the call's stream: launched once the call's work is queued)
    pending.join()
    assert launched == [(10, 16, 3), (20, 8, 3)] and pending.later == "later"


class _Context:
    """A call's context: its stream 7; new arrays at 1000."""

    stream, device_id = 7, 0

    def empty(self, shape, dtype):
        return None, 1000


def _launches(monkeypatch):
    """Record the flag kernel's launches: (data, elements, matrices, flags, stream)."""
    launched = []
    monkeypatch.setattr(
        _finite._kernels, "flag_nonfinite",
        lambda ptr, count, batch, dtype, flags, stream, device: launched.append(
            (ptr, count, batch, flags, stream)))
    monkeypatch.setattr(_finite, "read_back_later", lambda ptr, count, dtype, stream: stream)
    return launched


def test_a_plan_checks_the_operands_at_the_addresses_given(monkeypatch):
    launched = _launches(monkeypatch)
    monkeypatch.setattr(_finite, "fork", lambda *args: pytest.fail("forked"))
    lu = _Op((2, 4, 4), (16, 1, 4), "lu")
    piv = _Op((2, 4), (4, 1), "piv", "int32")
    b = _Op((2, 4, 3), (12, 3, 1), "b")
    plan = _finite.prepare((lu, piv, b), ("lu", None, "b"))
    assert not plan.beside and plan.total == 4  # one flag a matrix, two matrices each
    pending = plan.enqueue(_Context(), (10, 20, 30))  # a remembered call's operands
    assert launched == []
    pending.join()
    pending.join()  # (once)
    assert launched == [(10, 16, 2, 1000, 7), (30, 12, 2, 1008, 7)]
    assert pending.later == 7 and [e[0] for e in pending.entries] == ["lu", "b"]
    assert _finite.enqueue_at(_Context(), None, (10, 20, 30)) is None


class _Side:
    stream = 99

    def __init__(self):
        self.joined = []

    def join(self, stream):
        self.joined.append(stream)


def test_a_large_check_runs_beside_the_call_and_its_stream_waits_for_it(monkeypatch):
    launched = _launches(monkeypatch)
    side = _Side()
    forks = []
    monkeypatch.setattr(_finite, "fork", lambda stream, device: forks.append(stream) or side)
    n = 1024  # 8 MiB of float64: as much as BESIDE_BYTES
    assert n * n * 8 == _finite.BESIDE_BYTES
    a = _Op((n, n), (n, 1), "a")
    pending = _finite.prepare((a,), ("a",)).enqueue(_Context(), (10,))
    # forked before the call's work, launched once that is enqueued (on the side stream)
    assert forks == [7] and launched == [] and side.joined == []
    pending.join()
    assert launched[0][-1] == 99 and pending.later == 99 and side.joined == [7]
    pending.later = _Read(__import__("numpy").zeros(1024, "int32"))
    pending.check()
    pending.check()
    assert side.joined == [7]  # once, before the flags are read
    # a check never waited for (an error in between) joins as it goes
    pending = _finite.prepare((a,), ("a",)).enqueue(_Context(), (10,))
    del pending
    assert side.joined == [7, 7]
    # below the bound: on the call's stream
    small = _Op((n - 1, n), (n, 1), "a")
    assert not _finite.prepare((small,), ("a",)).beside


def test_unnamed_and_empty_operands_are_not_checked(monkeypatch):
    seen = _package_checks(monkeypatch)
    lu = _Op((4, 4), (1, 4), "lu")
    piv = _Op((4,), (1,), "piv", "int32")
    b = _Op((0, 4), (1, 1), "b")
    assert _finite.enqueue(None, (lu, piv, b), (None, None, "b")) is None
    assert _finite.enqueue(None, (lu, piv, b), None) is None
    assert seen == []


class _Read:
    """A read back already done: its values."""

    def __init__(self, values):
        self.values = values

    def result(self):
        return self.values


def _read(values, entries):
    """A Pending check whose flags were read back already: ``values``."""
    pending = _finite.Pending(_finite.Plan(tuple(entries), (), len(values), False), None, ())
    pending._launched, pending.later = True, _Read(values)
    return pending


def test_pending_check_names_the_first_operand_and_matrix_flagged():
    import numpy as np

    from accelmath.errors import LinAlgError

    # c: a batch (2, 3) of matrices, 2 flags each; b: a batch (2,), 1 flag each
    entries = [("c", (2, 3), 2, 0), ("b", (2,), 1, 12)]
    flags = np.zeros(14, np.int32)
    _read(flags, entries).check()  # all finite
    flags[13] = 1  # b's second matrix
    with pytest.raises(LinAlgError, match=r"^b: .* \(batch index \(1,\)\)"):
        _read(flags, entries).check()
    flags[2 * 4 + 1] = 1  # c's matrix (1, 1), its second block: c comes first
    with pytest.raises(LinAlgError, match=r"^c: .* \(batch index \(1, 1\)\)"):
        _read(flags, entries).check()
    with pytest.raises(LinAlgError, match=r"^a: .* \(batch index \(\)\)"):
        _read(np.array([0, 1], np.int32), [("a", (), 2, 0)]).check()

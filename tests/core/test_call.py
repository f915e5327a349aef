"""The one stream rule and a call's context (accelmath._core.call)."""

from types import SimpleNamespace

import pytest

from accelmath._core.call import Context, stream_of
from accelmath.errors import UnsupportedOperandError


class _Stream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return 0, self.handle


@pytest.mark.parametrize("stream, expected", [
    (None, (5, False)),          # the package's current stream
    (5, (5, False)),             # named, but the current one: nothing to scope
    (_Stream(5), (5, False)),
    (9, (9, True)),              # another stream: explicit
    (_Stream(9), (9, True)),
    (0, (0, True)),              # the legacy default stream is a stream like any other
])
def test_stream_of(stream, expected):
    assert stream_of(stream, lambda: 5) == expected


def test_stream_of_refuses_what_is_no_stream():
    with pytest.raises(UnsupportedOperandError, match="stream must be"):
        stream_of("s", lambda: 5)


class _Adapter:
    immutable = False

    def __init__(self):
        self.scopes, self.made = [], []

    def current_stream(self, device_id):
        return 5

    def stream_scope(self, stream, device_id):
        adapter = self

        class Scope:
            def __enter__(self):
                adapter.scopes.append(stream)

            def __exit__(self, *exc):
                adapter.scopes.append(None)

        return Scope()

    def empty_strided(self, shape, strides, dtype, device_id):
        self.made.append((shape, strides, dtype))
        return "array", 1234


def _operand(adapter, waits):
    return SimpleNamespace(adapter=adapter, device_id=0, dtype="float64",
                           wait_ready=waits.append)


@pytest.mark.parametrize("stream, scoped", [(None, False), (5, False), (9, True)])
def test_a_context_allocates_in_the_order_of_an_explicit_stream_only(stream, scoped):
    adapter, waits = _Adapter(), []
    ctx = Context(_operand(adapter, waits), stream)
    assert waits == [ctx.stream] and ctx.explicit is scoped
    assert ctx.empty((2, 3)) == ("array", 1234)
    assert adapter.made == [((2, 3), (3, 1), "float64")]
    assert adapter.scopes == ([ctx.stream, None] if scoped else [])
    assert ctx.allocate(lambda: ("x", 1), lambda: ("y", 2)) == [("x", 1), ("y", 2)]

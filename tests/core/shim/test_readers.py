"""The readers of array pointers (hostcall.reader: the call shim's Reader and the same in
Python) and the stream getters made from a package's C function (hostcall.capsule_stream)."""

import ctypes

import pytest

from accelmath._core import hostcall

try:
    from accelmath._core import _hostcall
except ImportError:
    _hostcall = None
needs_shim = pytest.mark.skipif(_hostcall is None, reason="the call shim is not built here")


# the checks of a "layout" of slices: read by their start and stop (member descriptors of a C
# type) and a method
_CHECKS = [(slice.start, 0), (slice.stop, 8), (slice.__reduce__, (slice, (0, 8, None)))]


def _readers(monkeypatch):
    """The reader of ``_CHECKS`` made by the call shim (where built) and in Python."""
    made = [hostcall.reader(_CHECKS, pointer=lambda s: 0x1000 + s.stop)]
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    made.append(hostcall.reader(_CHECKS, pointer=lambda s: 0x1000 + s.stop))
    monkeypatch.delenv("ACCELMATH_HOSTCALL")
    assert (type(made[0]).__name__ == "Reader") == (_hostcall is not None)
    return made


def test_readers_check_in_order_and_read_the_pointer(monkeypatch):
    for read in _readers(monkeypatch):
        assert read(slice(0, 8)) == 0x1008
        assert read(slice(0, 8, None)) == 0x1008
        for other in (slice(1, 8), slice(0, 9), slice(0, 8, 2)):
            assert read(other) is None
        with pytest.raises(TypeError):  # what a check raises propagates
            read(3)


def test_readers_stop_at_the_first_failing_check(monkeypatch):
    def refuse(x):
        raise AssertionError("read after a failing check")

    checks = [(slice.start, 0), (refuse, None)]
    made = [hostcall.reader(checks, pointer=id)]
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    made.append(hostcall.reader(checks, pointer=id))
    for read in made:
        assert read(slice(1, 8)) is None
        with pytest.raises(AssertionError):
            read(slice(0, 8))


@needs_shim
def test_a_c_reader_refuses_bad_checks_and_calls():
    with pytest.raises(TypeError, match="should be"):
        _hostcall.Reader(((slice.start,),), id)
    with pytest.raises(TypeError, match="neither callable nor a descriptor"):
        _hostcall.Reader((), 3)
    with pytest.raises(TypeError):
        _hostcall.Reader([(slice.start, 0)], id)  # a tuple is needed
    read = _hostcall.Reader(tuple(_CHECKS), id)
    with pytest.raises(TypeError, match="one argument"):
        read(slice(0, 8), slice(0, 8))
    with pytest.raises(TypeError, match="one argument"):
        read(x=slice(0, 8))
    assert "C reader" in repr(read)


def test_readers_read_the_pointer_of_a_held_object(monkeypatch):
    # x = slice(0, h): the "memory" h = x.stop, checked (its start), then its address (stop)
    held = (slice.stop, [(slice.start, 3)])
    made = [hostcall.reader([(slice.start, 0)], slice.stop, held=held)]
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    made.append(hostcall.reader([(slice.start, 0)], slice.stop, held=held))
    monkeypatch.delenv("ACCELMATH_HOSTCALL")
    assert (type(made[0]).__name__ == "Reader") == (_hostcall is not None)
    for read in made:
        assert read(slice(0, slice(3, 0x2000))) == 0x2000
        assert read(slice(1, slice(3, 0x2000))) is None  # the array's check
        assert read(slice(0, slice(4, 0x2000))) is None  # the held object's check
        with pytest.raises(TypeError):  # a held object of another type: raised, as a get's
            read(slice(0, 7))
    if _hostcall is not None:
        assert "C reader" in repr(made[0]) and "slice" in repr(made[0])


def test_readers_read_the_held_object_once(monkeypatch):
    calls = []

    def hold(x):
        calls.append(x)
        return x.stop

    made = [hostcall.reader([], slice.stop, held=(hold, [(slice.start, 3)]))]
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    made.append(hostcall.reader([], slice.stop, held=(hold, [(slice.start, 3)])))
    for read in made:
        calls.clear()
        assert read(slice(0, slice(3, 9))) == 9 and len(calls) == 1


def test_readers_refuse_a_held_that_is_no_pair(monkeypatch):
    for shim in ("1", "0"):
        monkeypatch.setenv("ACCELMATH_HOSTCALL", shim)
        for held in ((slice.stop,), slice.stop, (slice.stop, (), ())):
            with pytest.raises(TypeError, match="held"):
                hostcall.reader([], slice.stop, held=held)


def test_python_readers_refuse_what_the_c_reader_refuses(monkeypatch):
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    for pointer, held in ((3, None), (slice.stop, (None, [(slice.start, 3)]))):
        with pytest.raises(TypeError, match="neither callable nor a descriptor"):
            hostcall.reader([], pointer, held=held)


@needs_shim
def test_a_c_reader_refuses_a_malformed_held_pair():
    for held in ((slice.stop,), (3, ()), (slice.stop, [(slice.start, 3)]),
                 (slice.stop, ((slice.start,),))):
        with pytest.raises(TypeError, match="held|should be"):
            _hostcall.Reader((), slice.stop, held)


def _capsule(function, name):
    """A capsule of the C function ``function`` (a ctypes callback) named by the string at
    address ``name``."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p] * 3
    return new(ctypes.cast(function, ctypes.c_void_p), name, None)


@needs_shim
def test_a_capsule_stream_calls_its_c_function_with_the_device():
    function = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_int)(lambda device: 0x7000 + device)
    name = ctypes.create_string_buffer(b"intptr_t (int)")  # (outlives the capsule)
    current = hostcall.capsule_stream(_capsule(function, ctypes.addressof(name)), 3)
    assert type(current).__name__ == "CapsuleStream" and current() == 0x7003
    with pytest.raises(TypeError, match="no arguments"):
        current(1)
    # another signature, another object, another type of device: none is made
    other = ctypes.create_string_buffer(b"intptr_t (int __pyx_skip_dispatch)")
    assert hostcall.capsule_stream(_capsule(function, ctypes.addressof(other)), 3) is None
    assert hostcall.capsule_stream(None, 3) is None
    assert hostcall.capsule_stream(_capsule(function, ctypes.addressof(name)), "0") is None
    assert hostcall.capsule_stream(_capsule(function, ctypes.addressof(name)), 2**40) is None


@needs_shim
def test_a_capsule_stream_raises_what_its_c_function_raises():
    # PyErr_BadArgument: a C function that sets TypeError (int (void), its int ignored: the
    # error alone says the call failed)
    raising = ctypes.cast(ctypes.pythonapi.PyErr_BadArgument, ctypes.c_void_p).value
    name = ctypes.create_string_buffer(b"intptr_t (int)")
    current = hostcall.capsule_stream(_capsule(raising, ctypes.addressof(name)), 0)
    with pytest.raises(TypeError, match="bad argument type"):
        current()


def test_no_capsule_stream_without_the_shim(monkeypatch):
    monkeypatch.setenv("ACCELMATH_HOSTCALL", "0")
    assert hostcall.capsule_stream(object(), 0) is None

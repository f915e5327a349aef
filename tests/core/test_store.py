"""The on-disk store: round trips, damaged entries ignored and replaced, unusable directories
that warn once and never raise, the switch, concurrent writers, size and clear, fingerprints."""

import errno
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from accelmath._core import store
from accelmath.errors import InvalidArgumentError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(store_root, monkeypatch):
    """An empty store directory (not created yet), the store on, no problem reported yet."""
    monkeypatch.setattr(store, "_warned", set())
    return store_root


def _entry(root, namespace, key):
    return root / namespace / (hashlib.sha256(key.encode()).hexdigest() + ".entry")


def _store_warnings(caplog):
    return [r for r in caplog.records
            if r.name == "accelmath.store" and r.levelno == logging.WARNING]


# -- round trips -----------------------------------------------------------------------------

@pytest.mark.parametrize("payload", [b"", b"\n\n\x00binary\nwith newlines", os.urandom(1 << 20)])
def test_bytes_round_trip(root, payload):
    key = "sm_90 | -DN=4 | ünïcode\nand a newline"
    assert store.load("nvrtc", key) is None
    store.save("nvrtc", key, payload)
    assert store.load("nvrtc", key) == payload
    assert _entry(root, "nvrtc", key).is_file()


def test_namespaces_and_keys_are_independent(root):
    store.save("a", "key", b"in a")
    store.save("b", "key", b"in b")
    store.save("a", "key2", b"other key")
    assert store.load("a", "key") == b"in a"
    assert store.load("b", "key") == b"in b"
    assert store.load("a", "key2") == b"other key"


def test_save_replaces(root):
    store.save("ns", "k", b"first")
    store.save("ns", "k", bytearray(b"second"))
    store.save("ns", "k", memoryview(b"third"))
    assert store.load("ns", "k") == b"third"
    assert sorted(p.name for p in (root / "ns").iterdir()) == [_entry(root, "ns", "k").name]


def test_json_round_trip(root):
    value = {"choice": "columns", "ms": [0.25, 1.5], "workspace": None, "ok": True}
    store.save_json("timing", "problem", value)
    assert store.load_json("timing", "problem") == value
    assert store.load_json("timing", "another problem") is None


def test_json_that_cannot_be_kept(root):
    with pytest.raises(InvalidArgumentError, match="cannot be kept as JSON"):
        store.save_json("timing", "k", {"a": object()})
    with pytest.raises(InvalidArgumentError, match="cannot be kept as JSON"):
        store.save_json("timing", "k", float("nan"))
    assert store.load_json("timing", "k") is None


def test_json_of_bytes_that_are_not_json(root, caplog):
    store.save("timing", "k", b"\xff not json")
    assert store.load_json("timing", "k") is None
    assert "not JSON" in _store_warnings(caplog)[0].getMessage()


def test_hits_and_misses_are_logged(root, caplog):
    caplog.set_level(logging.DEBUG, logger="accelmath.store")
    store.load("ns", "k")
    store.save("ns", "k", b"v")
    store.load("ns", "k")
    messages = [r.getMessage() for r in caplog.records if r.name == "accelmath.store"]
    assert messages[0].startswith("store miss: ns 'k'")
    assert messages[1].startswith("store save: ns 'k'")
    assert messages[2].startswith("store hit: ns 'k'")
    assert all(r.levelno == logging.DEBUG for r in caplog.records)


@pytest.mark.parametrize("namespace", ["", "../escape", "a/b", ".hidden", "-x", 3, None])
def test_namespace_must_be_a_plain_name(root, namespace):
    with pytest.raises(InvalidArgumentError, match="is not a plain name"):
        store.load(namespace, "k")
    with pytest.raises(InvalidArgumentError, match="is not a plain name"):
        store.save(namespace, "k", b"v")


def test_key_and_data_types(root):
    with pytest.raises(InvalidArgumentError, match="key must be a str, got bytes"):
        store.load("ns", b"k")
    with pytest.raises(InvalidArgumentError, match="data must be bytes, .* got str"):
        store.save("ns", "k", "text")
    with pytest.raises(InvalidArgumentError, match="got int"):
        store.save("ns", "k", 5)  # bytes(5) would be five zero bytes: refused


# -- damaged entries: ignored, logged, replaced -----------------------------------------------

def _truncate_payload(blob):
    return blob[:-10]


def _truncate_header(blob):
    return blob[:len(b"accelmath-store\n") + 12]


def _truncate_magic(blob):
    return blob[:5]


def _flip_a_payload_byte(blob):
    return blob[:-1] + bytes([blob[-1] ^ 0xFF])


def _garble_header(blob):
    magic = b"accelmath-store\n"
    return magic + b"{not json" + blob[blob.index(b"\n", len(magic)):]


def _foreign_key(blob):
    # What a hash collision, or a file copied from another key, looks like.
    magic = b"accelmath-store\n"
    end = blob.index(b"\n", len(magic))
    header = json.loads(blob[len(magic):end])
    header["key"] = "some other key"
    return magic + json.dumps(header).encode() + blob[end:]


def _other_file(blob):
    return b"\x7fELF not an entry of the store"


def _stale_format(blob):
    magic = b"accelmath-store\n"
    end = blob.index(b"\n", len(magic))
    header = json.loads(blob[len(magic):end])
    header["format"] = store.FORMAT + 1
    return magic + json.dumps(header).encode() + blob[end:]


@pytest.mark.parametrize("damage, reason", [
    (_truncate_payload, "truncated: 90 of 100 bytes"),
    (_truncate_header, "truncated in its header"),
    (_truncate_magic, "truncated: 5 bytes"),
    (_flip_a_payload_byte, "corrupted: its checksum does not match"),
    (_garble_header, "corrupted header"),
    (_foreign_key, "holds another entry (ns 'some other key')"),
    (_other_file, "not an accelmath store entry"),
    (_stale_format, f"stale: format {store.FORMAT + 1}"),
])
def test_a_damaged_entry_is_ignored_logged_and_replaced(root, caplog, damage, reason):
    payload = bytes(range(100))
    store.save("ns", "the key", payload)
    path = _entry(root, "ns", "the key")
    path.write_bytes(damage(path.read_bytes()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a damaged entry is logged, not a Python warning
        assert store.load("ns", "the key") is None
    logged = _store_warnings(caplog)
    assert len(logged) == 1
    message = logged[0].getMessage()
    assert reason in message and str(path) in message and "'the key'" in message
    store.save("ns", "the key", payload)
    assert store.load("ns", "the key") == payload


# -- directories that cannot be used ---------------------------------------------------------

def _assert_unusable(root, caplog, recwarn, reason):
    """The store works as a store that keeps nothing, and says why exactly once."""
    for _ in range(3):
        assert store.load("ns", "k") is None
        store.save("ns", "k", b"v")
        assert store.load("ns", "k") is None
        assert store.location() is None
    ours = [w for w in recwarn if "on-disk store is not used" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert reason in str(ours[0].message) and "ACCELMATH_CACHE_DIR" in str(ours[0].message)
    assert issubclass(ours[0].category, RuntimeWarning)
    assert ours[0].filename == __file__  # (the first caller outside accelmath)
    assert len(_store_warnings(caplog)) == 1
    assert store.size() == (0, 0)
    assert store.clear() == (0, 0)
    assert reason in store.problem()


def test_a_directory_under_a_regular_file(tmp_path, root, caplog, recwarn, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(blocker / "store"))
    _assert_unusable(root, caplog, recwarn, "Not a directory")
    assert blocker.read_text() == "not a directory"


def test_a_file_in_place_of_the_directory(tmp_path, root, caplog, recwarn, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(blocker))
    _assert_unusable(root, caplog, recwarn, f"'{blocker}'")
    assert store.problem() == f"'{blocker}' is not a directory"
    assert blocker.read_text() == "not a directory"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_directory_that_cannot_be_created(root, caplog, recwarn, monkeypatch):
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", "/proc/accelmath-store")
    _assert_unusable(root, caplog, recwarn, "/proc/accelmath-store")


def test_no_home_directory(root, caplog, recwarn, monkeypatch):
    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("ACCELMATH_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    _assert_unusable(root, caplog, recwarn, "Could not determine home directory")


def test_a_read_only_directory_is_read_but_not_written(root, caplog, recwarn, monkeypatch):
    store.save("ns", "kept", b"saved before")

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    # As root, chmod stops nothing: the file system's refusal is simulated at its source.
    monkeypatch.setattr(store.tempfile, "mkstemp", read_only)
    for _ in range(3):
        store.save("ns", "kept", b"changed")
        store.save("ns", "new", b"v")
    assert store.load("ns", "kept") == b"saved before"
    assert store.load("ns", "new") is None
    ours = [w for w in recwarn if "on-disk store is not used" in str(w.message)]
    assert len(ours) == 1
    assert f"cannot write in '{root}': Read-only file system" in str(ours[0].message)
    assert store.location() is None
    assert store.problem() == f"cannot write in '{root}': Read-only file system"
    assert store.size().entries == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="permissions do not stop root")
def test_a_directory_without_write_permission(root, recwarn):
    store.save("ns", "kept", b"saved before")
    root.chmod(0o500)
    (root / "ns").chmod(0o500)
    try:
        store.save("ns", "kept", b"changed")
        store.save("ns", "new", b"v")
        assert store.load("ns", "kept") == b"saved before"
        assert store.problem().startswith(f"cannot write in '{root}'")
    finally:
        (root / "ns").chmod(0o700)
        root.chmod(0o700)
    assert len([w for w in recwarn if "on-disk store is not used" in str(w.message)]) == 1


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_switched_off(root, recwarn, monkeypatch, value):
    monkeypatch.setenv("ACCELMATH_CACHE", value)
    store.save("ns", "k", b"v")
    assert store.load("ns", "k") is None
    assert not root.exists()
    assert not store.enabled()
    assert store.location() is None and store.problem() is None
    assert store.size() == (0, 0)
    assert not [w for w in recwarn if "store" in str(w.message)]


def test_the_environment_is_read_at_each_call(tmp_path, root, monkeypatch):
    store.save("ns", "k", b"first directory")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path / "second"))
    assert store.load("ns", "k") is None
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    assert store.load("ns", "k") is None
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(root))
    monkeypatch.delenv("ACCELMATH_CACHE")
    assert store.load("ns", "k") == b"first directory"
    assert store.location() == root


def test_default_location(tmp_path, root, monkeypatch):
    monkeypatch.delenv("ACCELMATH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert store.cache_dir() == tmp_path / "xdg" / "accelmath"
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as XDG says
        assert store.cache_dir() == Path.home() / ".cache" / "accelmath"


# -- concurrent writers -----------------------------------------------------------------------

_WRITER = """
import sys
from accelmath._core import store
which = int(sys.argv[1])
for round in range(int(sys.argv[2])):
    # distinct payloads, large enough that a write is not one system call's worth
    store.save("race", "the same key", bytes([which]) * (200_000 + 1000 * which + round))
"""

_READER = """
import sys
from accelmath._core import store
seen, bad = 0, 0
for _ in range(int(sys.argv[1])):
    payload = store.load("race", "the same key")
    if payload is None:
        bad += seen > 0  # once written, an entry must stay readable: never half replaced
        continue
    seen += 1
    bad += len(set(payload)) != 1 or not 200_000 <= len(payload) < 220_000
print(seen, bad)
"""


def _python(code, *args, root):
    environment = {**os.environ, "ACCELMATH_CACHE_DIR": str(root),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                               os.environ.get("PYTHONPATH")]))}
    environment.pop("ACCELMATH_CACHE", None)
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=REPO,
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)


def test_processes_racing_on_one_key(root):
    store.save("race", "the same key", bytes([9]) * 200_000)
    writers = [_python(_WRITER, which, 40, root=root) for which in range(4)]
    reader = _python(_READER, 3000, root=root)
    for process in [*writers, reader]:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert "warning" not in err.lower(), err
    seen, bad = map(int, out.split())
    assert seen > 0 and bad == 0, (seen, bad)
    final = store.load("race", "the same key")
    assert final is not None and len(set(final)) == 1 and final[0] in range(4)
    assert [p.name for p in (root / "race").iterdir()] == [_entry(root, "race", "the same key").name]


def test_threads_racing_on_one_key(root, caplog):
    payloads = [bytes([i]) * (50_000 + i) for i in range(8)]

    def write(payload):
        for _ in range(20):
            store.save("race", "k", payload)
            assert store.load("race", "k") in payloads

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.load("race", "k") in payloads
    assert not _store_warnings(caplog)


# -- size and clear ---------------------------------------------------------------------------

def test_size_and_clear(root):
    assert store.size() == (0, 0)
    store.save("nvrtc", "a", b"x" * 1000)
    store.save("nvrtc", "b", b"y" * 10)
    store.save_json("timing", "c", {"choice": 1})
    entries, nbytes = store.size()
    assert entries == 3
    assert nbytes == sum(p.stat().st_size for p in root.rglob("*.entry")) and nbytes > 1010
    # what is not an entry is kept; an old temporary file (an interrupted write) is removed,
    # a recent one (a write in progress elsewhere) is not
    (root / "hostcall").mkdir()
    (root / "hostcall" / "shim.so").write_bytes(b"not ours")
    (root / "README").write_text("not ours")
    old, recent = root / "nvrtc" / "x.123.tmp", root / "nvrtc" / "y.456.tmp"
    old.write_bytes(b"partial")
    recent.write_bytes(b"partial")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert store.clear() == (entries, nbytes)
    assert store.size() == (0, 0)
    assert store.load("nvrtc", "a") is None
    assert not old.exists() and recent.exists()
    assert (root / "hostcall" / "shim.so").exists() and (root / "README").exists()
    assert store.clear() == (0, 0)


def test_size_of_a_store_never_written(root):
    assert store.size() == (0, 0) and store.clear() == (0, 0)
    assert not root.exists()


# -- fingerprints -----------------------------------------------------------------------------

def test_fingerprint_without_a_gpu(monkeypatch):
    from accelmath._core import device

    if device.gpu_available():
        pytest.skip("a GPU is present")
    monkeypatch.setattr(store, "_fingerprints", {})
    text = store.fingerprint(0, ("nvrtc", "no-such-library"))
    assert text.startswith("gpu=none; sm=none; driver=")
    assert text.endswith("; no-such-library=unknown")
    nvrtc = device.library_info()["nvrtc"]["version"]
    if nvrtc is not None:
        assert "; nvrtc={}.{};".format(*nvrtc) in text


def test_fingerprint_names_the_gpu_driver_and_versions(monkeypatch):
    from accelmath._core import device

    monkeypatch.setattr(store, "_fingerprints", {})
    monkeypatch.setattr(device, "devices", lambda: [
        {"index": 0, "name": "GPU A", "compute_capability": (8, 0)},
        {"index": 1, "name": "GPU B", "compute_capability": (9, 0)}])
    monkeypatch.setattr(device, "driver_version", lambda: (12, 4))
    monkeypatch.setattr("accelmath.bindings.cufft.version", lambda: 11401)
    assert store.fingerprint(1, ["cufft"]) == "gpu=GPU B; sm=9.0; driver=12.4; cufft=11401"
    assert store.fingerprint(0) == "gpu=GPU A; sm=8.0; driver=12.4"


def test_fingerprint_is_computed_once_and_never_raises(monkeypatch):
    from accelmath._core import device

    calls = []

    def broken():
        calls.append(1)
        raise RuntimeError("a broken driver")

    def failing_version():
        raise OSError("cannot load")

    monkeypatch.setattr(store, "_fingerprints", {})
    monkeypatch.setattr(device, "devices", broken)
    monkeypatch.setattr(device, "driver_version", lambda: None)
    monkeypatch.setattr("accelmath.bindings.cufft.version", failing_version)
    first = store.fingerprint(0, ("cufft",))
    assert first == "gpu=none; sm=none; driver=none; cufft=unavailable"
    assert store.fingerprint(0, ("cufft",)) is first and len(calls) == 1

"""The on-disk store: round trips, damaged entries ignored and replaced, unusable directories
that warn once and never raise, the switch, concurrent writers, size and clear."""

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

from accelmath._core.disk import private_files, store, store_format, upkeep
from accelmath.errors import InvalidArgumentError, StateError

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def root(store_root, monkeypatch):
    """An empty store directory (not created yet), the store on, no problem reported yet."""
    monkeypatch.setattr(store, "_warned", {})
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
    store.save("layouts", "key", b"in a")
    store.save("algorithms", "key", b"in b")
    store.save("layouts", "key2", b"other key")
    assert store.load("layouts", "key") == b"in a"
    assert store.load("algorithms", "key") == b"in b"
    assert store.load("layouts", "key2") == b"other key"


def test_save_replaces(root):
    store.save("timing", "k", b"first")
    store.save("timing", "k", bytearray(b"second"))
    store.save("timing", "k", memoryview(b"third"))
    assert store.load("timing", "k") == b"third"
    assert sorted(p.name for p in (root / "timing").iterdir()) == [_entry(root, "timing", "k").name]


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
    store.load("timing", "k")
    store.save("timing", "k", b"v")
    store.load("timing", "k")
    messages = [r.getMessage() for r in caplog.records if r.name == "accelmath.store"]
    assert messages[0].startswith("store miss: timing 'k'")
    assert messages[1].startswith("store save: timing 'k'")
    assert messages[2].startswith("store hit: timing 'k'")
    assert all(r.levelno == logging.DEBUG for r in caplog.records)


@pytest.mark.parametrize("namespace", ["", "../escape", "a/b", ".hidden", "-x", "other", 3,
                                       None])
def test_namespace_must_be_one_of_the_stores(root, namespace):
    with pytest.raises(InvalidArgumentError, match="is not one of the store's: expected one of "
                                                   "'library-paths', 'nvrtc'"):
        store.load(namespace, "k")
    with pytest.raises(InvalidArgumentError, match="is not one of the store's"):
        store.save(namespace, "k", b"v")
    assert not root.exists()


def test_key_and_data_types(root):
    with pytest.raises(InvalidArgumentError, match="key must be a str, got bytes"):
        store.load("timing", b"k")
    with pytest.raises(InvalidArgumentError, match="data must be bytes, .* got str"):
        store.save("timing", "k", "text")
    with pytest.raises(InvalidArgumentError, match="got int"):
        store.save("timing", "k", 5)  # bytes(5) would be five zero bytes: refused


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
    (_foreign_key, "holds another entry ('timing' 'some other key')"),
    (_other_file, "not an accelmath store entry"),
    (_stale_format, f"stale: format {store.FORMAT + 1}"),
])
def test_a_damaged_entry_is_ignored_logged_and_replaced(root, caplog, damage, reason):
    payload = bytes(range(100))
    store.save("timing", "the key", payload)
    path = _entry(root, "timing", "the key")
    path.write_bytes(damage(path.read_bytes()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a damaged entry is logged, not a Python warning
        assert store.load("timing", "the key") is None
    logged = _store_warnings(caplog)
    assert len(logged) == 1
    message = logged[0].getMessage()
    assert reason in message and str(path) in message and "'the key'" in message
    store.save("timing", "the key", payload)
    assert store.load("timing", "the key") == payload


# -- directories that cannot be used ---------------------------------------------------------

def _assert_unusable(root, caplog, recwarn, reason):
    """The store works as a store that keeps nothing, and says why exactly once."""
    for _ in range(3):
        assert store.load("timing", "k") is None
        store.save("timing", "k", b"v")
        assert store.load("timing", "k") is None
        assert store.location() is None
    ours = [w for w in recwarn if "on-disk store is not used" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert reason in str(ours[0].message) and "ACCELMATH_CACHE_DIR" in str(ours[0].message)
    assert issubclass(ours[0].category, RuntimeWarning)
    assert ours[0].filename == __file__  # (the first caller outside accelmath)
    assert len(_store_warnings(caplog)) == 1
    assert upkeep.size() == (0, 0)
    assert upkeep.clear()[:2] == (0, 0)
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
    store.save("timing", "kept", b"saved before")

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    # As root, chmod stops nothing: the file system's refusal is simulated at its source.
    monkeypatch.setattr(private_files.tempfile, "mkstemp", read_only)
    for _ in range(3):
        store.save("timing", "kept", b"changed")
        store.save("timing", "new", b"v")
    assert store.load("timing", "kept") == b"saved before"
    assert store.load("timing", "new") is None
    ours = [w for w in recwarn if "on-disk store is not used" in str(w.message)]
    assert len(ours) == 1
    assert f"cannot write in '{root}': Read-only file system" in str(ours[0].message)
    assert store.location() is None
    assert store.problem() == f"cannot write in '{root}': Read-only file system"
    assert upkeep.size().entries == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="permissions do not stop root")
def test_a_directory_without_write_permission(root, recwarn):
    store.save("timing", "kept", b"saved before")
    root.chmod(0o500)
    (root / "timing").chmod(0o500)
    try:
        store.save("timing", "kept", b"changed")
        store.save("timing", "new", b"v")
        assert store.load("timing", "kept") == b"saved before"
        assert store.problem().startswith(f"cannot write in '{root}'")
    finally:
        (root / "timing").chmod(0o700)
        root.chmod(0o700)
    assert len([w for w in recwarn if "on-disk store is not used" in str(w.message)]) == 1


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_switched_off(root, recwarn, monkeypatch, value):
    monkeypatch.setenv("ACCELMATH_CACHE", value)
    store.save("timing", "k", b"v")
    assert store.load("timing", "k") is None
    assert not root.exists()
    assert not store.enabled()
    assert store.location() is None and store.problem() is None
    assert upkeep.size() == (0, 0)
    assert not [w for w in recwarn if "store" in str(w.message)]


def test_the_environment_is_read_at_each_call(tmp_path, root, monkeypatch):
    store.save("timing", "k", b"first directory")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path / "second"))
    assert store.load("timing", "k") is None
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    assert store.load("timing", "k") is None
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(root))
    monkeypatch.delenv("ACCELMATH_CACHE")
    assert store.load("timing", "k") == b"first directory"
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
from accelmath._core.disk import private_files
from accelmath._core.disk import store, upkeep
from accelmath._core.disk import store_format
which = int(sys.argv[1])
for round in range(int(sys.argv[2])):
    # distinct payloads, large enough that a write is not one system call's worth
    store.save("nvjitlink", "the same key", bytes([which]) * (200_000 + 1000 * which + round))
"""

_READER = """
import sys
from accelmath._core.disk import private_files
from accelmath._core.disk import store, upkeep
from accelmath._core.disk import store_format
seen, bad = 0, 0
for _ in range(int(sys.argv[1])):
    payload = store.load("nvjitlink", "the same key")
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
    store.save("nvjitlink", "the same key", bytes([9]) * 200_000)
    writers = [_python(_WRITER, which, 40, root=root) for which in range(4)]
    reader = _python(_READER, 3000, root=root)
    for process in [*writers, reader]:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert "warning" not in err.lower(), err
    seen, bad = map(int, out.split())
    assert seen > 0 and bad == 0, (seen, bad)
    final = store.load("nvjitlink", "the same key")
    assert final is not None and len(set(final)) == 1 and final[0] in range(4)
    assert [p.name for p in (root / "nvjitlink").iterdir()] == [_entry(root, "nvjitlink", "the same key").name]


def test_threads_racing_on_one_key(root, caplog):
    payloads = [bytes([i]) * (50_000 + i) for i in range(8)]

    def write(payload):
        for _ in range(20):
            store.save("nvjitlink", "k", payload)
            assert store.load("nvjitlink", "k") in payloads

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.load("nvjitlink", "k") in payloads
    assert not _store_warnings(caplog)


# -- size and clear ---------------------------------------------------------------------------

def test_size_and_clear(root):
    assert upkeep.size() == (0, 0)
    store.save("nvrtc", "a", b"x" * 1000)
    store.save("nvrtc", "b", b"y" * 10)
    store.save_json("timing", "c", {"choice": 1})
    entries, nbytes = upkeep.size()
    assert entries == 3
    assert nbytes == sum(p.stat().st_size for p in root.rglob("*.entry")) and nbytes > 1010
    # what is not an entry is kept; an old temporary file (an interrupted write) is removed,
    # a recent one (a write in progress elsewhere) is not
    (root / "hostcall").mkdir()
    (root / "hostcall" / "shim.so").write_bytes(b"not ours")
    (root / "README").write_text("not ours")
    stem = hashlib.sha256(b"a").hexdigest()
    old, recent = root / "nvrtc" / f"{stem}.x1y2z3_4.tmp", root / "nvrtc" / f"{stem}.abcdefgh.tmp"
    old.write_bytes(b"accelmath-st")
    recent.write_bytes(b"accelmath-st")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    cleared = upkeep.clear()
    assert cleared[:2] == (entries, nbytes)
    assert sorted(cleared.files) == sorted([*root.glob("*/*.entry.gone"), old,
                                            *[_entry(root, n, k) for n, k in
                                              [("nvrtc", "a"), ("nvrtc", "b"), ("timing", "c")]]])
    assert upkeep.size() == (0, 0)
    assert store.load("nvrtc", "a") is None
    assert not old.exists() and recent.exists()
    assert (root / "hostcall" / "shim.so").exists() and (root / "README").exists()
    assert upkeep.clear()[:2] == (0, 0)


def test_size_of_a_store_never_written(root):
    assert upkeep.size() == (0, 0) and upkeep.clear()[:2] == (0, 0)
    assert not root.exists()


# -- trust: only a private store is used ------------------------------------------------------

def _warnings_about(recwarn, text):
    return [str(w.message) for w in recwarn if text in str(w.message)]


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("umask", [0o000, 0o002, 0o022, 0o077])
def test_directories_0700_and_entries_0600_whatever_the_umask(root, umask):
    previous = os.umask(umask)
    try:
        store.save("nvrtc", "k", b"v")
    finally:
        os.umask(previous)
    for path in [root.parent / "store", root / "nvrtc"]:
        assert path.stat().st_mode & 0o777 == 0o700, oct(path.stat().st_mode)
    for path in [_entry(root, "nvrtc", "k"), root / store.MARKER]:
        assert path.stat().st_mode & 0o777 == 0o600, oct(path.stat().st_mode)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_missing_parents_are_made_private(tmp_path, root, monkeypatch):
    previous = os.umask(0)
    try:
        monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(tmp_path / "a" / "b" / "store"))
        store.save("nvrtc", "k", b"v")
    finally:
        os.umask(previous)
    for path in [tmp_path / "a", tmp_path / "a" / "b"]:
        assert path.stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777, 0o720])
def test_a_root_that_others_can_write_is_neither_read_nor_written(root, recwarn, caplog, mode):
    store.save("nvrtc", "planted", b"code someone else could have put there")
    root.chmod(mode)
    for _ in range(3):
        assert store.load("nvrtc", "planted") is None
        store.save("nvrtc", "new", b"v")
    root.chmod(0o700)
    assert store.load("nvrtc", "new") is None  # nothing was written meanwhile
    root.chmod(mode)
    [message] = _warnings_about(recwarn, "on-disk store is not used")
    assert f"'{root}' can be written by its group or by others (mode {mode:04o})" in message
    assert "chmod 700" in message and "ACCELMATH_CACHE_DIR" in message
    assert upkeep.size() == (0, 0)
    assert store.problem().startswith(f"'{root}' can be written by its group or by others")


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_a_namespace_that_others_can_write_is_neither_read_nor_written(root, recwarn):
    store.save("nvrtc", "planted", b"cubin")
    store.save("timing", "kept", b"{}")
    (root / "nvrtc").chmod(0o775)
    assert store.load("nvrtc", "planted") is None
    store.save("nvrtc", "new", b"v")
    assert store.load("timing", "kept") == b"{}"  # another namespace is still used
    [message] = _warnings_about(recwarn, "on-disk store is not used")
    assert f"'{root / 'nvrtc'}' can be written by its group or by others" in message
    assert upkeep.size().entries == 1
    assert upkeep.clear().entries == 1 and _entry(root, "nvrtc", "planted").exists()


def test_a_namespace_that_is_a_link_is_not_followed(root, tmp_path, recwarn):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    store.save("timing", "k", b"v")
    (elsewhere / _entry(root, "timing", "k").name).write_bytes(_entry(root, "timing", "k")
                                                               .read_bytes())
    (root / "nvrtc").symlink_to(elsewhere)
    (elsewhere / (hashlib.sha256(b"x").hexdigest() + ".entry")).write_bytes(b"their file")
    assert store.load("nvrtc", "x") is None
    store.save("nvrtc", "y", b"v")
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(
        [_entry(root, "timing", "k").name, hashlib.sha256(b"x").hexdigest() + ".entry"])
    assert upkeep.clear().entries == 1  # the timing entry; nothing through the link
    assert len(list(elsewhere.iterdir())) == 2
    assert _warnings_about(recwarn, f"'{root / 'nvrtc'}' is a symbolic link")


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0,
                    reason="a second owner needs root's chown")
def test_another_users_store_namespace_or_entry_is_not_read(root, recwarn, caplog):
    store.save("nvrtc", "k", b"v")
    store.save("timing", "k", b"{}")
    os.chown(_entry(root, "timing", "k"), 4321, 4321)
    assert store.load("timing", "k") is None
    assert "belongs to another user (uid 4321" in caplog.text
    assert str(_entry(root, "timing", "k")) in caplog.text
    os.chown(root / "nvrtc", 4321, 4321)
    assert store.load("nvrtc", "k") is None
    assert _warnings_about(recwarn, f"'{root / 'nvrtc'}' belongs to another user")
    os.chown(root, 4321, 4321)
    assert store.problem().startswith(f"'{root}' belongs to another user (uid 4321")


@pytest.mark.skipif(not hasattr(os, "lchown") or os.geteuid() != 0,
                    reason="a second owner needs root's chown")
def test_a_store_reached_through_another_users_link_is_not_used(root, tmp_path, monkeypatch,
                                                                recwarn):
    # (the link's owner could point it at any directory of ours)
    store.save("nvrtc", "k", b"v")
    link = tmp_path / "through-a-link"
    link.symlink_to(root)
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(link))
    assert store.load("nvrtc", "k") == b"v"  # (our own link: followed)
    os.lchown(link, 4321, 4321)
    assert store.problem().startswith(f"'{link}' is a symbolic link that another user owns "
                                      "(uid 4321)")
    assert store.load("nvrtc", "k") is None
    assert _warnings_about(recwarn, "is a symbolic link that another user owns")


# -- reading an entry never blocks, never reads without bound, never raises -------------------

def _load_in_time(namespace, key, seconds=10):
    result = []
    thread = threading.Thread(target=lambda: result.append(store.load(namespace, key)),
                              daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "store.load blocked"
    return result[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX's")
def test_a_fifo_in_place_of_an_entry_does_not_block(root, caplog):
    store.save("library-paths", "k", b"{}")
    path = _entry(root, "library-paths", "k")
    path.unlink()
    os.mkfifo(path, 0o600)
    assert _load_in_time("library-paths", "k") is None
    assert f"ignoring the store entry {path}" in caplog.text
    assert "not a regular file" in caplog.text
    assert upkeep.size() == (0, 0) and upkeep.clear().entries == 0 and path.exists()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_link_to_a_device_is_not_read(root, caplog):
    store.save("nvrtc", "k", b"v")
    path = _entry(root, "nvrtc", "k")
    path.unlink()
    path.symlink_to("/dev/zero")
    assert _load_in_time("nvrtc", "k") is None
    assert "a symbolic link" in caplog.text and str(path) in caplog.text


def test_a_link_to_another_entry_is_not_followed(root, caplog):
    store.save("nvrtc", "real", b"v")
    path = _entry(root, "nvrtc", "alias")
    path.symlink_to(_entry(root, "nvrtc", "real"))
    assert store.load("nvrtc", "alias") is None
    assert upkeep.clear().entries == 1 and path.is_symlink()


def test_an_entry_past_the_size_limit_is_not_read(root, caplog, monkeypatch):
    store.save("nvrtc", "k", b"x" * 1000)
    monkeypatch.setattr(store, "_ENTRY_LIMIT", 500)
    assert store.load("nvrtc", "k") is None
    assert "more than the 500 an entry may hold" in caplog.text
    store.save("nvrtc", "big", b"y" * 1000)  # not kept either
    monkeypatch.setattr(store, "_ENTRY_LIMIT", 1 << 20)
    assert store.load("nvrtc", "big") is None


@pytest.mark.parametrize("text", [b"[" * 100_000 + b"]" * 100_000,
                                  b'{"a": ' * 40 + b"1" + b"}" * 40,
                                  b'"' + b"x" * (2 << 20) + b'"'])
def test_deep_or_huge_json_is_not_parsed(root, caplog, text):
    store.save("timing", "k", text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.load_json("timing", "k") is None
    [line] = _store_warnings(caplog)
    assert "'k'" in line.getMessage()


def test_shallow_json_with_brackets_in_strings_is_read(root):
    value = {"a": "[[[[" * 50, "b": [[[1]]], "c": '\\"[', "d": "\\"}
    store.save_json("timing", "k", value)
    assert store.load_json("timing", "k") == value


@pytest.mark.parametrize("text", [b'"' + b'\\"' * 400_000, b'"\\' + b"[" * 50,
                                  b'["' + b"\\" * 3])
def test_a_string_left_open_is_read_in_one_pass(root, caplog, text):
    # (an opening quote that no quote closes: its text is one string, not looked through
    # again from each quote inside it; not JSON, so not read)
    store.save("timing", "k", text)
    assert _load_in_time("timing", "k") == text
    result = []
    thread = threading.Thread(target=lambda: result.append(store.load_json("timing", "k")),
                              daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and result == [None]


# -- clear: only what the store wrote ---------------------------------------------------------

def test_clear_refuses_a_directory_without_the_marker(tmp_path, root, monkeypatch):
    home = tmp_path / "home"
    (home / "timing").mkdir(parents=True, mode=0o700)
    theirs = home / "timing" / (hashlib.sha256(b"k").hexdigest() + ".entry")
    theirs.write_bytes(b"a user's results")
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(home))
    with pytest.raises(StateError, match=f"'{home}' does not carry accelmath's store marker "
                                         r"\(.accelmath-store\).*nothing was removed"):
        upkeep.clear()
    assert theirs.read_bytes() == b"a user's results"
    assert store.problem() is None and not (home / store.MARKER).exists()


def test_clear_keeps_files_of_other_programs(tmp_path, root, monkeypatch):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", str(home))
    store.save("timing", "ours", b"{}")
    stem = hashlib.sha256(b"theirs").hexdigest()
    an_hour_ago = time.time() - 3600
    theirs = {home / "session.tmp": b"x", home / "results.entry": b"x",
              home / "timing" / "session.tmp": b"x", home / "timing" / "results.entry": b"x",
              home / "timing" / f"{stem}.entry": b"someone else's file, our kind of name",
              home / "timing" / f"{stem}.abcdefgh.tmp": b"not our header either",
              home / "nvrtc" / f"{stem}.entry": store_format.encode("timing", "theirs", b"")}
    (home / "nvrtc").mkdir(mode=0o700)
    for path, content in theirs.items():
        path.write_bytes(content)
        os.utime(path, (an_hour_ago, an_hour_ago))
    cleared = upkeep.clear()
    assert cleared.files == (_entry(home, "timing", "ours"),)
    assert all(path.read_bytes() == content for path, content in theirs.items())


# -- the directory's name ---------------------------------------------------------------------

def test_a_relative_directory_is_taken_at_import(tmp_path):
    (tmp_path / "first").mkdir()
    code = ("import os; from accelmath._core.disk import store; os.chdir('..'); "
            "print(store.cache_dir()); print(store.relative_origin())")
    process = _python(code, root="relative/store")
    process.wait(timeout=120)
    out, err = process.communicate()
    assert out.split("\n")[:2] == [str(REPO / "relative" / "store"), "relative/store"], err


def test_problem_creates_nothing(root):
    assert store.problem() is None
    assert not root.exists() and not root.parent.joinpath("store").exists()


def test_a_directory_in_an_entrys_place_stops_that_entry_alone(root, caplog):
    # (it was taken for the store's folder being unusable: no later save of the process wrote)
    store.save("nvrtc", "first", b"1")
    blocked = _entry(root, "nvrtc", "blocked")
    blocked.mkdir(mode=0o700)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "store not used" warning)
        store.save("nvrtc", "blocked", b"2")
        store.save("nvrtc", "after", b"3")
    assert blocked.is_dir() and store.load("nvrtc", "after") == b"3"
    assert any("a directory is in its place" in r.getMessage() for r in _store_warnings(caplog))


@pytest.mark.parametrize("value", ["   ", " \t"])
def test_a_blank_directory_setting_is_no_setting(value, monkeypatch):
    """Blanks alone name no folder (one named "   " would be made in the working
    directory); blanks around a path are taken off."""
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", value)
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg-cache-test")
    assert str(store.cache_dir()) == "/tmp/xdg-cache-test/accelmath"
    monkeypatch.setenv("ACCELMATH_CACHE_DIR", f"{value}/tmp/am-cache{value}")
    assert str(store.cache_dir()) == "/tmp/am-cache"


def test_a_directory_that_cannot_be_made_leaves_no_parents_behind(tmp_path):
    # (a 5,000-character ACCELMATH_CACHE_DIR failed cleanly but left the folders it had made)
    deep = tmp_path / "a" / "b" / ("x" * 300) / "store"  # (a name longer than NAME_MAX)
    with pytest.raises(OSError):
        private_files.make_directory(deep)
    assert list(tmp_path.iterdir()) == []
    private_files.make_directory(tmp_path / "c" / "d")  # (and a possible one is made)
    assert (tmp_path / "c" / "d").is_dir() and (tmp_path / "c").stat().st_mode & 0o777 == 0o700


def test_a_relative_directory_is_made_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    private_files.make_directory("rel/store")  # (its last parent, "", is no directory to make)
    assert (tmp_path / "rel" / "store").is_dir()

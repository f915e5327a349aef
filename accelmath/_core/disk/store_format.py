"""The format of the store's files: each entry's file is a magic line, a header line (format
version, namespace, the whole key, payload length and SHA-256) and the payload; checked whole
on every read, so that a file cut short, corrupted, of another format or holding another key
is recognized, and so that ``accelmath cache clear`` removes only files the store wrote.

Pure functions of bytes: no file is opened here.

Examples
--------
>>> from accelmath._core.disk import store_format
>>> blob = store_format.encode("timing", "a key", b'{"choice": 1}')
>>> store_format.decode(blob, "timing", "a key")
b'{"choice": 1}'
>>> store_format.decode_json(b'{"choice": 1}')
{'choice': 1}
"""

import dataclasses
import hashlib
import json
import re

__all__ = ["FORMAT", "BadEntry", "decode", "decode_json", "encode", "file_stem",
           "written_by_store"]

FORMAT = 1  # the entry format; an entry of another format is stale and is not read
_MAGIC = b"accelmath-store\n"
JSON_LIMIT = 1 << 20  # bytes of a JSON value
JSON_DEPTH = 32  # nesting of a JSON value
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
# a JSON string, or one left open to the end (a lone backslash last): every opening quote
# matches, so that no text makes the search start again at each quote (quadratic time)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)


class BadEntry(Exception):
    """An entry's file that cannot be trusted; the message says why, in a phrase."""


@dataclasses.dataclass(frozen=True)
class _Header:
    """The header line at the start of each entry's file, after the magic line."""

    format: int
    namespace: str
    key: str
    length: int
    sha256: str


def file_stem(key):
    """The stem of the file names of ``key``'s entry: its SHA-256, in hexadecimal."""
    return hashlib.sha256(key.encode(errors="surrogatepass")).hexdigest()


def encode(namespace, key, payload):
    """The bytes of the file of an entry of ``namespace`` that keeps ``payload`` under
    ``key``."""
    header = _Header(FORMAT, namespace, key, len(payload), hashlib.sha256(payload).hexdigest())
    return _MAGIC + json.dumps(dataclasses.asdict(header)).encode() + b"\n" + payload


def decode(blob, namespace, key):
    """The payload of an entry's file, checked against its header.

    Raises
    ------
    BadEntry
        Where the file is not whole, not of this format, or holds another entry.
    """
    if not blob.startswith(_MAGIC):
        if _MAGIC.startswith(blob):
            raise BadEntry(f"truncated: {len(blob)} bytes, not even a header")
        raise BadEntry("not an accelmath store entry")
    fields, end = _header_fields(blob)
    if fields is None:
        raise BadEntry("truncated in its header" if end < 0 else "corrupted header")
    if fields.get("format") != FORMAT:
        raise BadEntry(f"stale: format {fields.get('format')!r}, this accelmath reads "
                       f"format {FORMAT}")
    try:
        header = _Header(**fields)
    except TypeError:
        raise BadEntry("corrupted header") from None
    if (header.namespace, header.key) != (namespace, key):
        raise BadEntry(f"holds another entry ({header.namespace!r} {header.key!r})")
    payload = blob[end + 1:]
    if len(payload) != header.length:
        raise BadEntry(f"truncated: {len(payload)} of {header.length} bytes")
    if hashlib.sha256(payload).hexdigest() != header.sha256:
        raise BadEntry("corrupted: its checksum does not match")
    return payload


def decode_json(payload):
    """The JSON value of an entry's payload.

    Raises
    ------
    BadEntry
        Where it is not JSON, or is larger than ``JSON_LIMIT`` bytes or nested deeper than
        ``JSON_DEPTH``.
    """
    if len(payload) > JSON_LIMIT:
        raise BadEntry(f"{len(payload)} bytes of JSON, more than {JSON_LIMIT}")
    if _nesting(payload) > JSON_DEPTH:
        raise BadEntry(f"JSON nested more than {JSON_DEPTH} deep")
    try:
        return json.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise BadEntry(f"not JSON ({exc})") from None


def written_by_store(head, namespace, name, temporary):
    """Whether a file named ``name`` in ``namespace``'s directory, whose first bytes are
    ``head``, was written by the store: its header names that namespace and a key whose hash
    is the name's stem; a ``temporary`` file (an interrupted write) may also hold no more
    than a part of the magic line."""
    if temporary and len(head) <= len(_MAGIC) and _MAGIC.startswith(head):
        return True
    if not head.startswith(_MAGIC):
        return False
    fields, _ = _header_fields(head)
    if fields is None:
        return False
    key = fields.get("key")
    return (fields.get("namespace") == namespace and isinstance(key, str)
            and name.startswith(file_stem(key) + "."))


def _header_fields(blob):
    """``(fields, end)``: the header's fields (None where it is not a JSON object) and the
    offset of its line's end (-1 where there is none)."""
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        return None, end
    try:
        fields = json.loads(blob[len(_MAGIC):end])
    except (ValueError, RecursionError):
        return None, end
    return (fields if isinstance(fields, dict) else None), end


def _nesting(payload):
    """How deep the brackets of a JSON text nest (those inside strings not counted)."""
    depth = deepest = 0
    for bracket in _STRING.sub(b'""', payload).translate(None, _NOT_BRACKETS):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest

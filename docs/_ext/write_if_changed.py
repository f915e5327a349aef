"""Writing generated sources only when they change, so that an incremental build reads
again only what did."""

from pathlib import Path


def write_if_changed(path, content):
    """Write ``content`` (str or bytes) to ``path`` unless it holds that already."""
    path = Path(path)
    data = content.encode() if isinstance(content, str) else content
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True

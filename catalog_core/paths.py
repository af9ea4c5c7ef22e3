"""Paths and the storage key layout.

A key is the depth (2 bytes, big endian) followed by the path's segments joined by
NUL. NUL cannot occur in an id, so the children of one object are exactly the keys
that start with `depth+1 || parent segments || NUL`: one contiguous range, sorted by
the child's id bytes (UTF-8 byte order equals code-point order).
"""

from __future__ import annotations

from functools import lru_cache

from .errors import InvalidPathError

__all__ = [
    "ROOT",
    "split",
    "join",
    "parent_of",
    "obj_id_of",
    "depth_of",
    "validate",
    "key_of",
    "path_of_key",
    "children_prefix",
    "child_key",
    "successor",
]

ROOT = "/"
SEP = b"\x00"
_FORBIDDEN = ("\x00", "/")


@lru_cache(maxsize=65536)
def split(path: str) -> tuple[str, ...]:
    validate(path)
    return () if path == ROOT else tuple(path[1:].split("/"))


def join(parts: tuple[str, ...] | list[str]) -> str:
    return "/" + "/".join(parts)


def parent_of(path: str) -> str:
    parts = split(path)
    if not parts:
        raise InvalidPathError("the root '/' has no parent", path=path)
    return join(parts[:-1])


def obj_id_of(path: str) -> str:
    parts = split(path)
    return parts[-1] if parts else ""


def depth_of(path: str) -> int:
    return len(split(path))


def validate(path: str) -> None:
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidPathError(f"path {path!r} must be a string starting with '/', e.g. '/wh/sales/orders'",
                               path=str(path))
    if path == ROOT:
        return
    if path.endswith("/"):
        raise InvalidPathError(f"path {path!r} ends with '/'; drop the trailing slash", path=path)
    for seg in path[1:].split("/"):
        if seg == "":
            raise InvalidPathError(f"path {path!r} has an empty segment ('//'); every id must be non-empty",
                                   path=path)
        if seg in (".", ".."):
            raise InvalidPathError(f"path {path!r} uses {seg!r}; relative segments are not allowed", path=path)
        if "\x00" in seg:
            raise InvalidPathError(f"path {path!r} contains a NUL character, which ids may not contain",
                                   path=path)
    if len(path.encode()) > 4096:
        raise InvalidPathError("path is longer than 4096 bytes; use shorter ids", path=path[:64] + "...")


def _encode(parts: tuple[str, ...]) -> bytes:
    return len(parts).to_bytes(2, "big") + SEP.join(p.encode() for p in parts)


@lru_cache(maxsize=262144)
def key_of(path: str) -> bytes:
    return _encode(split(path))


def path_of_key(key: bytes) -> str:
    if len(key) == 2:
        return ROOT
    return "/" + "/".join(s.decode() for s in key[2:].split(SEP))


@lru_cache(maxsize=65536)
def children_prefix(parent: str) -> bytes:
    """Key prefix shared by every child of `parent` (and nothing else)."""
    parts = split(parent)
    head = (len(parts) + 1).to_bytes(2, "big")
    return head + b"".join(p.encode() + SEP for p in parts)


def child_key(prefix: bytes, obj_id: str) -> bytes:
    return prefix + obj_id.encode()


def successor(prefix: bytes) -> bytes:
    """Smallest byte string greater than every string that starts with `prefix`."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\xff" * (len(prefix) + 1)
    return stripped[:-1] + bytes([stripped[-1] + 1])

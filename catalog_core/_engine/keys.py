"""The storage key layout (paper §5.3).

A key is the depth (2 bytes, big endian) followed by the path's segments joined by
NUL. NUL cannot occur in an id, so the children of one object are exactly the keys
that start with `depth+1 || parent segments || NUL`: one contiguous range, sorted by
the child's id bytes (UTF-8 byte order equals code-point order).
"""

from __future__ import annotations

from functools import lru_cache

from catalog_core.paths import ROOT, split, successor

__all__ = ["SEP", "key_of", "key_of_valid", "parent_of_valid", "path_of_key", "children_prefix", "parent_of_prefix", "child_key", "successor", "ROOT"]

SEP = b"\x00"


def _encode(parts: tuple[str, ...]) -> bytes:
    return len(parts).to_bytes(2, "big") + SEP.join(p.encode() for p in parts)


@lru_cache(maxsize=262144)
def key_of(path: str) -> bytes:
    return _encode(split(path))


def key_of_valid(path: str) -> bytes:
    """`key_of` for a path already validated (a recorded write's): no validation, no cache, for
    the commit path, which sees each of a bulk load's paths once."""
    if path == ROOT:
        return b"\x00\x00"
    return path.count("/").to_bytes(2, "big") + path[1:].encode().replace(b"/", SEP)


def parent_of_valid(path: str) -> str:
    """`paths.parent_of` for a validated path other than the root."""
    return path[:path.rfind("/")] or ROOT


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


def parent_of_prefix(prefix: bytes) -> str:
    """The parent path whose `children_prefix` is `prefix`."""
    body = prefix[2:]
    return "/" + "/".join(s.decode() for s in body[:-1].split(SEP)) if body else ROOT


def child_key(prefix: bytes, obj_id: str) -> bytes:
    return prefix + obj_id.encode()



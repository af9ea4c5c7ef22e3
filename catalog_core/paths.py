"""Object paths: `/a/b/c`, validated and split into ids (pure; the storage key layout built
on them is `catalog_core._engine.keys`)."""

from __future__ import annotations

from functools import lru_cache

from catalog_core.errors import InvalidPathError

__all__ = ["ROOT", "split", "join", "parent_of", "obj_id_of", "depth_of", "validate", "successor"]

ROOT = "/"
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
    if (isinstance(path, str) and path[:1] == "/" and path[-1:] != "/" and path.isascii() and len(path) <= 4096
            and "//" not in path and "/." not in path and "\x00" not in path):
        return  # the common case, decided without splitting: each check below passes
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
    try:
        size = len(path.encode())
    except UnicodeEncodeError:
        raise InvalidPathError(f"path {path!r} holds a lone surrogate, which is not a character; ids must be "
                               "valid Unicode text", path=path.encode("utf-8", "backslashreplace").decode()) from None
    if size > 4096:
        raise InvalidPathError("path is longer than 4096 bytes; use shorter ids", path=path[:64] + "...")


def successor(prefix: bytes) -> bytes:
    """Smallest byte string greater than every string that starts with `prefix`."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\xff" * (len(prefix) + 1)
    return stripped[:-1] + bytes([stripped[-1] + 1])

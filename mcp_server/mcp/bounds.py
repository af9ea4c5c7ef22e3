"""Bounded outputs: opaque cursors, pages, and text cut with a marker that says how to get the rest.

A cursor is base64url JSON `{"t": tool, "v": vid, "o": offset, "k": key}`: it carries the snapshot
the first page read, so later pages read the same snapshot even when the caller does not pass one,
and a key of the call's other arguments, so a cursor handed to a different call is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["Cursor", "Page", "args_key", "decode_cursor", "encode_cursor", "page", "cut", "cut_value", "MARK"]

T = TypeVar("T")
MARK = "…[cut"


@dataclass(frozen=True)
class Cursor:
    tool: str
    vid: int
    offset: int
    key: str


def args_key(**args: Any) -> str:
    """A short stable digest of a call's arguments (other than snapshot, limit and cursor)."""
    text = json.dumps(args, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def encode_cursor(c: Cursor) -> str:
    raw = json.dumps({"t": c.tool, "v": c.vid, "o": c.offset, "k": c.key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, tool: str, key: str) -> Cursor:
    """The cursor `text` for a call of `tool` with argument key `key`; ToolError if it is not one."""
    bad = ToolError(f"cursor {text[:40]!r} is not a cursor of this {tool} call; pass the next_cursor of the "
                    "previous page unchanged, with the same other arguments, or omit cursor to start over")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        d = json.loads(raw)
        c = Cursor(str(d["t"]), int(d["v"]), int(d["o"]), str(d["k"]))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise bad from None
    if c.tool != tool or c.key != key or c.offset < 0 or c.vid < 0:
        raise bad
    return c


@dataclass
class Page(Generic[T]):
    items: list[T]
    total: int
    next_cursor: str | None

    @property
    def truncated(self) -> bool:
        return self.next_cursor is not None


def page(items: Sequence[T], limit: int, offset: int, tool: str, vid: int, key: str) -> Page[T]:
    """`items[offset:offset+limit]` with a cursor for the rest (None at the end)."""
    chunk = list(items[offset:offset + limit])
    end = offset + len(chunk)
    nxt = encode_cursor(Cursor(tool, vid, end, key)) if end < len(items) else None
    return Page(chunk, len(items), nxt)


def cut(text: Any, limit: int, how: str = "") -> str:
    """`text` cut to about `limit` characters, ending in a marker that counts what was left out
    and (`how`) says how to get all of it."""
    s = text if isinstance(text, str) else str(text)
    if len(s) <= limit:
        return s
    rest = f" {how}" if how else ""
    return f"{s[:limit]}{MARK} {len(s) - limit} more chars{rest}]"


def cut_value(value: Any, limit: int, how: str = "") -> tuple[Any, bool]:
    """A JSON value bounded to about `limit` characters: nested entries that are too long become
    cut JSON text. Returns (value, whether anything was cut)."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    if len(text) <= limit:
        return value, False
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        used, share = 0, max(limit // max(len(value), 1), 80)
        for k, v in value.items():
            sub = json.dumps(v, default=str, ensure_ascii=False)
            if used + len(sub) > limit or len(sub) > share:
                out[k] = cut(sub, min(share, max(limit - used, 40)), how)
            else:
                out[k] = v
            used += len(json.dumps(out[k], default=str, ensure_ascii=False))
        return out, True
    return cut(text, limit, how), True

"""Bounded outputs: opaque cursors, pages, text cut with a marker that says how to get the rest,
and a token budget per response.

A page is bounded twice: by count (`limit`) and by size. `fit` cuts a response's list to the
longest prefix whose whole response stays within the token budget (o200k tokens, `bpe-openai`'s
bundled vocabulary), sets `truncated` and a `next_cursor` that resumes at the first item left
out; it keeps at least one item, so paging always progresses (single items are bounded by their
own character limits).

What is sent, and so what is counted: a tool result carries its payload twice, once as the
structured content (compact JSON, for clients that read it) and once inside the text content
(`render`: the one-line summary, a newline, the same compact JSON), because many MCP clients
forward only the text to the model and the model must see every warning and the snapshot. The
budget bounds the sum, `response_tokens(structured, text)`: tokens of the compact JSON plus tokens
of the text, which is what a client receives; so the payload of a full page is about half the
budget. A response within budget is recognised cheaply first (tokens <= UTF-8 bytes).

A cursor is base64url JSON `{"t": tool, "v": vid, "o": offset, "k": key}`: it carries the snapshot
the first page read, so later pages read the same snapshot even when the caller does not pass one,
and a key of the call's other arguments, so a cursor handed to a different call is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar

import cachetools
from pydantic import BaseModel

from catalog_core.model import JSONValue
from mcp_server.mcp.sdk_errors import ToolError

__all__ = ["Cursor", "Page", "args_key", "decode_cursor", "encode_cursor", "page", "cut", "cut_value", "MARK",
           "TOKEN_BUDGET", "count_tokens", "fit", "render", "compact", "response_tokens"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
MARK = "…[cut"
TOKEN_BUDGET = 8000  # o200k tokens per tool response (structured content + text content), a server option


@dataclass(frozen=True)
class Cursor:
    tool: str
    vid: int
    offset: int
    key: str


def args_key(**args: object) -> str:
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


def cut(text: object, limit: int, how: str = "") -> str:
    """`text` cut to about `limit` characters, ending in a marker that counts what was left out
    and (`how`) says how to get all of it."""
    s = text if isinstance(text, str) else str(text)
    if len(s) <= limit:
        return s
    rest = f" {how}" if how else ""
    return f"{s[:limit]}{MARK} {len(s) - limit} more chars{rest}]"


def cut_value(value: JSONValue, limit: int, how: str = "") -> tuple[JSONValue, bool]:
    """A JSON value bounded to about `limit` characters: nested entries that are too long become
    cut JSON text. Returns (value, whether anything was cut)."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    if len(text) <= limit:
        return value, False
    if isinstance(value, dict):
        out: dict[str, JSONValue] = {}
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


@lru_cache(maxsize=1)
def _encoding() -> Any:
    from bpe_openai import get_encoding

    return get_encoding("o200k_base")


_COUNTS_MAX = 256  # texts whose token count is kept ...
_COUNTS_CHARS = 100_000  # ... of at most this many characters (at most ~25 MB held)
_counts: cachetools.LRUCache[str, int] = cachetools.LRUCache(maxsize=_COUNTS_MAX)
_counts_lock = threading.Lock()


def count_tokens(text: str) -> int:
    """o200k tokens of `text` (never more than its UTF-8 bytes). Memoized by the text itself (a
    count is a function of the text alone) for the last `_COUNTS_MAX` texts: a repeated answer
    (the same statement at the same snapshot, or `fit` measuring the same page twice) is counted
    once; tokenizing a full page costs milliseconds."""
    with _counts_lock:
        got = _counts.get(text)  # a hit counts as a use
        if got is not None:
            return got
    n = len(_encoding().encode(text))
    if len(text) > _COUNTS_CHARS:
        return n
    with _counts_lock:
        _counts[text] = n  # the least recently used text makes way
    return n


def compact(structured: object) -> str:
    """The compact JSON of a structured content (separators (",", ":"), UTF-8 kept)."""
    return json.dumps(structured, separators=(",", ":"), ensure_ascii=False, default=str)


def render(summary: str, structured: object) -> str:
    """The text content of a tool result: the one-line summary, a newline, then the compact JSON
    of the structured content, so a client that shows only text still shows every field. The
    summary is kept to one line (line breaks in it become spaces); the JSON has none."""
    return f"{' '.join(summary.splitlines())}\n{compact(structured)}"


def response_tokens(structured: object, text: str) -> int:
    """o200k tokens a client receives: the structured content's compact JSON plus the text."""
    return count_tokens(compact(structured)) + count_tokens(text)


def _size(model: BaseModel, summary: str) -> int:
    data = model.model_dump(mode="json", exclude_none=True)
    return response_tokens(data, render(summary, data))


def fit(model: M, summary: str, field: str, resume: Callable[[int], str], budget: int) -> tuple[M, str]:
    """`model` with its list `field` cut to the longest prefix (at least one item) whose response
    (structured content plus `render`ed text, see the module docstring) fits `budget` tokens;
    `resume(k)` is the cursor of the page that starts at the k-th item shown. A response within
    budget is returned unchanged (checked cheaply: tokens <= UTF-8 bytes)."""
    raw = compact(model.model_dump(mode="json", exclude_none=True))
    if 2 * len(raw.encode("utf-8")) + len(summary.encode("utf-8")) + 1 <= budget or _size(model, summary) <= budget:
        return model, summary
    items = list(getattr(model, field))
    if len(items) <= 1:
        return model, summary
    def trial(k: int) -> M:
        return model.model_copy(update={field: items[:k], "truncated": True, "next_cursor": resume(k)})

    def said(k: int) -> str:
        return f"{summary}; showing {k} of them (cut by the response token budget: pass next_cursor for the rest)"

    lo, hi = 1, len(items) - 1  # the largest k in [lo, hi] that fits (lo is kept even if it does not)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _size(trial(mid), said(mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return trial(lo), said(lo)

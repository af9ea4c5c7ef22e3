"""Compact binary encoding of stored values (msgpack).

Everything a commit stores from its caller (values, merge deltas, the commit record's author,
message and meta) is encoded here once, when it is recorded, and refused with an
InvalidValueError naming what is wrong and where: integers outside 64 bits, NaN and ±Infinity
(JSON, which clients read, has no such numbers), lone surrogates (not Unicode). A group commit
then only assembles bytes that are known to encode."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import msgpack
import orjson

from catalog_core.errors import InvalidValueError

__all__ = ["pack", "unpack", "pack_value", "pack_leaf", "unpack_leaf", "check_stored", "pack_commit_fields", "maybe_non_finite",
           "pack_commit_record", "vid_bytes", "inv_vid_bytes", "FILE_JSON", "INT_MIN", "INT_MAX"]

# How pack_leaf's JSON for a file object begins: planning recognizes files without decoding them.
FILE_JSON = b'{"obj_type":"file"'

_MAX = (1 << 64) - 1
INT_MIN, INT_MAX = -(1 << 63), _MAX  # what msgpack and orjson both hold exactly
_packb: Callable[..., bytes] = msgpack.packb
_NULL_TOKEN = NULL_TOKEN = re.compile(rb"null[,\]}]").search


def _default(obj: Any) -> Any:
    raise TypeError(type(obj).__name__)


def pack(obj: object) -> bytes:
    try:
        packed: bytes = msgpack.packb(obj, use_bin_type=True, default=_default)
        return packed
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidValueError(
            f"value cannot be stored ({exc}); use JSON-like data: dict, list, str, int, float, bool, None, bytes"
        ) from None


# ------------------------------------------------------------------ refusing what cannot be stored
def _where(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _at(parts: list[str | int]) -> str:
    return f" at {_where(parts)!r}" if parts else ""


def _safe(text: str) -> str:
    # error details travel as JSON: no lone surrogates in them
    return text.encode("utf-8", "backslashreplace").decode()


def _problem(value: object, what: str, finite_only: bool = False) -> InvalidValueError | None:
    """The first thing in `value` that cannot be stored, as the error to raise (None: nothing).
    A walk with an explicit stack: only called when encoding failed or a quick scan of the
    encoded bytes saw what may be a non-finite float."""
    stack: list[tuple[object, list[str | int]]] = [(value, [])]
    while stack:
        node, parts = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                tok = "NaN" if math.isnan(node) else ("Infinity" if node > 0 else "-Infinity")
                return InvalidValueError(
                    f"{what} holds {tok}{_at(parts)}; NaN and ±Infinity cannot be stored (JSON, which clients "
                    "read, has no such numbers): store null or a string instead", where=_safe(_where(parts)))
        elif finite_only:
            pass
        elif isinstance(node, bool):
            continue
        elif isinstance(node, int):
            if not INT_MIN <= node <= INT_MAX:
                shown = node if node.bit_length() <= 256 else f"of {node.bit_length()} bits"
                return InvalidValueError(
                    f"{what} holds the integer {shown}{_at(parts)}, which does not fit in 64 bits (integers run "
                    "from -2**63 to 2**64-1): store it as a string", where=_safe(_where(parts)))
            continue
        elif isinstance(node, str):
            try:
                node.encode()
            except UnicodeEncodeError:
                return InvalidValueError(
                    f"{what} holds a string with a lone surrogate{_at(parts)} ({node[:80]!r}); text must be "
                    "valid Unicode (a \\ud800-\\udfff escape on its own is not a character)", where=_safe(_where(parts)))
            continue
        if isinstance(node, dict):
            items = list(node.items())
            for key, child in reversed(items):
                stack.append((child, parts + [key]))
                if not finite_only:
                    stack.append((key, parts + [key]))
        elif isinstance(node, (list, tuple)):
            stack.extend((child, parts + [i]) for i, child in reversed(list(enumerate(node))))
    return None


def maybe_non_finite(packed: bytes) -> bool:
    # msgpack writes every float as 0xcb + 8 bytes; ±Infinity and NaN start 0x7ff / 0xfff.
    return b"\xcb\x7f" in packed or b"\xcb\xff" in packed


def check_stored(value: object, what: str = "value") -> None:
    """Raise InvalidValueError if `value` holds anything that cannot be stored exactly."""
    err = _problem(value, what)
    if err is not None:
        raise err


def pack_value(value: object, what: str = "value") -> bytes:
    """msgpack for a caller's value; refuses, naming where, what would not be stored exactly."""
    try:
        out = _packb(value, use_bin_type=True, default=_default)
    except (TypeError, ValueError, OverflowError) as exc:
        err = _problem(value, what)
        if err is not None:
            raise err from None
        raise InvalidValueError(
            f"{what} cannot be stored ({exc}); use JSON-like data: dict, list, str, int, float, bool, None, bytes"
        ) from None
    if maybe_non_finite(out):
        err = _problem(value, what, finite_only=True)
        if err is not None:
            raise err
    return out


def pack_commit_fields(author: object, message: object, meta: object) -> bytes:
    """The caller's part of a commit record (author, message, meta) as encoded map pairs,
    refused if it cannot be stored: checked before the commit joins a group."""
    try:
        out = _packb({"author": author, "message": message, "meta": meta}, use_bin_type=True, default=_default)
        if not maybe_non_finite(out):
            return out[1:]  # drop the fixmap header: the pairs go into the record's map
    except (TypeError, ValueError, OverflowError):
        pass
    # refuse, naming the field and where (or, after a false alarm of the scan, encode it all the same)
    pack_value(author, "commit author")
    pack_value(message, "commit message")
    pack_value(meta, "commit meta")
    return _packb({"author": author, "message": message, "meta": meta}, use_bin_type=True, default=_default)[1:]


def pack_commit_record(time: float, paths: list[str], fields: bytes) -> bytes:
    """{time, paths, author, message, meta}: paths are validated, so this cannot fail."""
    return b"\x85" + _packb({"time": time, "paths": paths})[1:] + fields


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)


def pack_leaf(value: dict[str, Any], what: str = "value") -> bytes:
    """Leaf values (file objects, by the hundred thousand) are stored as JSON: orjson decodes them
    ~2.5x faster than msgpack, which dominates plan_files. Values JSON cannot hold exactly
    (bytes, non-string keys) keep msgpack; what neither holds is refused (see pack_value).
    `obj_type` goes first, so that planning tells a file (FILE_JSON) from the first bytes
    without decoding it."""
    if "obj_type" in value and next(iter(value)) != "obj_type":
        value = {"obj_type": value["obj_type"], **value}
    try:
        out = orjson.dumps(value)
    except TypeError:
        return pack_value(value, what)
    # orjson writes NaN and ±Infinity as null: look closer only at values holding a null (a null
    # token is always followed by , ] or }: one regex scan with a literal prefix, ~4x faster than
    # three substring scans; a string holding such text is a false alarm the closer look clears).
    if _NULL_TOKEN(out) is not None and maybe_non_finite(_packb(value, default=_default)):
        err = _problem(value, what, finite_only=True)
        if err is not None:
            raise err
    # A right-sized copy: orjson's result keeps its ~1 KB output buffer, and a bulk load holds one
    # per leaf until commit (~8 us per leaf here in allocation and page faults, against ~1.6 us for
    # encode and copy; see bench_engine --profile-bulk).
    return bytes(memoryview(out))


def unpack_leaf(data: bytes) -> Any:
    # A JSON object starts with '{'; a msgpack map never does (0x80-0x8f, 0xde, 0xdf).
    return orjson.loads(data) if data[:1] == b"{" else unpack(data)


def vid_bytes(vid: int) -> bytes:
    return vid.to_bytes(8, "big")


def inv_vid_bytes(vid: int) -> bytes:
    """Descending order: newer vids sort first."""
    return (_MAX - vid).to_bytes(8, "big")

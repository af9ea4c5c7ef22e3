"""Compact binary encoding of stored values (msgpack)."""

from __future__ import annotations

from typing import Any

import msgpack

from .errors import InvalidValueError

__all__ = ["pack", "unpack", "vid_bytes", "inv_vid_bytes"]

_MAX = (1 << 64) - 1


def _default(obj: Any) -> Any:
    raise TypeError(type(obj).__name__)


def pack(obj: Any) -> bytes:
    try:
        return msgpack.packb(obj, use_bin_type=True, default=_default)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidValueError(
            f"value cannot be stored ({exc}); use JSON-like data: dict, list, str, int, float, bool, None, bytes"
        ) from None


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)


def vid_bytes(vid: int) -> bytes:
    return vid.to_bytes(8, "big")


def inv_vid_bytes(vid: int) -> bytes:
    """Descending order: newer vids sort first."""
    return (_MAX - vid).to_bytes(8, "big")

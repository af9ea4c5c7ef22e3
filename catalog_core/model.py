"""The public value types: objects, versions, commits, snapshots."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple, TypeAlias

import orjson

from catalog_core.codec import FILE_JSON, unpack_leaf

# a stored file value whose path is its second key, and a URI scheme (`s3:`, `file:`): see FileObj.raw
_FILE_PATH = FILE_JSON + b',"path":"'
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:").match
_SCHEME_B = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:").match

__all__ = ["JSONScalar", "JSONValue", "JSONObject", "TimeArg", "Obj", "FileObj", "Version", "Commit", "Snapshot", "Change", "Branch", "QueryStats", "to_datetime",
           "iso_time", "parse_time"]


# A value as JSON holds it: what object values, annotation values and tool payloads are made of
# where their shape is genuinely open (a typed model is used wherever the shape is known).
JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]
# A point in time as callers give it (`parse_time` reads it): seconds since the epoch, ISO-8601 text or a
# datetime (naive: UTC); None: now.
TimeArg: TypeAlias = float | str | datetime | None


def to_datetime(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def iso_time(ts: float) -> str:
    """`2025-03-10T13:00:00.000000Z` for seconds since the epoch."""
    return to_datetime(ts).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch for a number, a datetime (naive: UTC) or ISO-8601 text; None when
    `value` is none of these (text that is not an ISO time)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp()
    return None


class Obj(NamedTuple):
    """One object as seen at some vid. `vid` is the vid that wrote this version.
    (A NamedTuple: scans build one per object, and this is the cheapest immutable record.)"""

    path: str
    value: dict[str, Any]
    vid: int
    leaf: bool = False

    @property
    def obj_id(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def obj_type(self) -> str | None:
        return self.value.get("obj_type")

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "value": self.value, "vid": self.vid, "leaf": self.leaf}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Obj":
        return cls(d["path"], d["value"], d["vid"], d.get("leaf", False))


class FileObj:
    """A file leaf returned by plan_files, whose value is decoded on first access.

    Planning returns tens of thousands of files and its callers mostly read a few fields of some
    of them; decoding every file's column statistics up front was two thirds of planning time
    (Iceberg keeps its column bounds serialized for the same reason). Each FileObj decodes into
    its own dict, so a caller may change it without affecting anyone else. It reads like an Obj:
    the same attributes, unpacks as (path, value, vid, leaf), compares equal to the same Obj."""

    __slots__ = ("path", "vid", "_raw", "_value", "_base")
    leaf = True

    def __init__(self, path: str, raw: bytes, vid: int, value: dict[str, Any] | None = None,
                 base: str | None = None) -> None:
        self.path, self._raw, self.vid, self._value, self._base = path, raw, vid, value, base

    @property
    def value(self) -> dict[str, Any]:
        if self._value is None:
            value = unpack_leaf(self._raw)
            if self._base is not None:  # a stored-relative file path, made absolute (catalog_core._engine.relocate)
                p = value.get("path")
                if isinstance(p, str) and p and p[0] != "/" and _SCHEME(p) is None:  # `../`: in the lake root
                    value["path"] = self._base + "/" + p if p[0] != "." else os.path.normpath(self._base + "/" + p)
            self._value = value
        return self._value

    @property
    def raw(self) -> bytes:
        """The encoding of the value as stored (JSON when it starts with '{', else msgpack), with a
        stored-relative path made absolute as `value` does (in the bytes when `path` is the second key,
        as every writer lays it out; else encoded again from `value`)."""
        raw = self._raw
        if self._base is None:
            return raw
        head = len(_FILE_PATH)
        if raw.startswith(_FILE_PATH):
            if raw[head:head + 1] == b"/" or _SCHEME_B(raw, head) is not None:
                return raw
            if raw[head:head + 1] != b".":
                return _FILE_PATH + orjson.dumps(self._base)[1:-1] + b"/" + raw[head:]
        p = self.value.get("path")
        if raw[:1] == b"{" and isinstance(p, str) and p.startswith("/") and orjson.dumps(p)[1:-1] not in raw:
            return orjson.dumps(self.value)
        return raw

    obj_id = Obj.obj_id
    obj_type = Obj.obj_type
    to_dict = Obj.to_dict

    def __iter__(self) -> Iterator[Any]:
        return iter((self.path, self.value, self.vid, True))

    def __getitem__(self, i: int) -> Any:
        return tuple(self)[i]

    def __len__(self) -> int:
        return 4

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Obj, FileObj)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like Obj, whose value is a dict

    def __repr__(self) -> str:
        return f"FileObj(path={self.path!r}, vid={self.vid})"


@dataclass(frozen=True, slots=True)
class Version:
    """One committed state of an object: `value` held from `vid` until `end_vid` (None: still
    current). `value is None` records a removal at `vid`."""

    path: str
    vid: int
    end_vid: int | None
    value: dict[str, Any] | None

    @property
    def removed(self) -> bool:
        return self.value is None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "vid": self.vid, "end_vid": self.end_vid, "value": self.value}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Version":
        return cls(d["path"], d["vid"], d.get("end_vid"), d.get("value"))


@dataclass(frozen=True, slots=True)
class Commit:
    vid: int
    time: float  # seconds since the epoch, UTC; strictly increasing with vid
    author: str
    message: str
    paths: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def datetime(self) -> datetime:
        return to_datetime(self.time)

    def to_dict(self) -> dict[str, Any]:
        return {"vid": self.vid, "time": self.time, "author": self.author, "message": self.message,
                "paths": list(self.paths), "meta": self.meta}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Commit":
        return cls(d["vid"], d["time"], d.get("author", ""), d.get("message", ""),
                   tuple(d.get("paths", ())), d.get("meta") or {})


@dataclass(frozen=True, slots=True)
class Snapshot:
    name: str
    vid: int
    time: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "vid": self.vid, "time": self.time}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Snapshot":
        return cls(d["name"], d["vid"], d["time"])


@dataclass(frozen=True, slots=True)
class Change:
    """One object that differs between two snapshots (`cat.diff`). `kind`: added | removed |
    updated; `before` / `after`: its value at the first / second snapshot (None when absent);
    `vid`: the last commit in the range that wrote it; `leaf`: it is a leaf (at `after`, or at
    `before` when removed)."""

    path: str
    kind: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    vid: int
    leaf: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "before": self.before, "after": self.after,
                "vid": self.vid, "leaf": self.leaf}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Change":
        return cls(d["path"], d["kind"], d.get("before"), d.get("after"), d["vid"], d.get("leaf", False))


@dataclass(frozen=True, slots=True)
class Branch:
    """A branch made by `cat.clone(source, path)` (write-audit-publish). Its changes are those
    made under `path` after `since_vid`; they publish onto `source`, whose state at `fork_vid`
    is the merge base. Publishing with keep moves both: `fork_vid` to the publish commit,
    `since_vid` to the branch state that publish read."""

    path: str
    source: str
    fork_vid: int
    since_vid: int
    created_vid: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "source": self.source, "fork_vid": self.fork_vid,
                "since_vid": self.since_vid, "created_vid": self.created_vid}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Branch":
        return cls(d["path"], d["source"], d["fork_vid"], d["since_vid"], d.get("created_vid", d["since_vid"]))


@dataclass(slots=True)
class QueryStats:
    """Work one query did: `scanned` objects read from storage, `seeks` range scans opened,
    `matched` objects returned by the last step, and per-step counts."""

    scanned: int = 0
    seeks: int = 0
    matched: int = 0
    per_step: list[dict[str, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"scanned": self.scanned, "seeks": self.seeks, "matched": self.matched,
                "per_step": self.per_step}

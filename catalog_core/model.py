"""The public value types: objects, versions, commits, snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

__all__ = ["Obj", "Version", "Commit", "Snapshot", "QueryStats", "to_datetime"]


def to_datetime(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


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

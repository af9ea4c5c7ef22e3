"""Request bodies of the HTTP API. Unknown fields are rejected (extra="forbid") so a typo in a
client is a 400 naming the field, not a silently ignored option; types are strict (a bool is not
an int, a number is not a string). `ErrorBody` is the shape of every error response."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ErrorBody", "Ref", "WireOp", "BeginBody", "QueryBody", "TxnQueryBody", "ExplainBody", "CommitBody",
           "TxnCommitBody", "CloneBody", "TxnCloneBody", "SnapshotBody", "PlanFilesBody", "DiffBody",
           "PublishBody", "DropBranchBody"]

# A vid, a snapshot name or an ISO-8601 time; None = latest.
Ref = int | str | None

MAX_BATCH = 100_000


class _Body(BaseModel):
    # strict: no coercion, so `"vid": true` or `"batch_size": "5"` is a 400, not vid 1 or 5.
    model_config = ConfigDict(extra="forbid", strict=True)


class WireOp(_Body):
    """One write of a write set (`clone` has its own endpoint)."""

    kind: Literal["add", "update", "remove", "merge"]
    path: str
    value: dict[str, Any] | None = None
    leaf: bool = False


class BeginBody(_Body):
    author: str = ""
    message: str = ""
    meta: dict[str, Any] | None = None
    time: float | str | None = None  # backdated commit time: epoch seconds or ISO-8601


class QueryBody(_Body):
    query: str
    vid: Ref = None
    batch_size: int = Field(1000, ge=1, le=MAX_BATCH)


class TxnQueryBody(_Body):
    query: str
    batch_size: int = Field(1000, ge=1, le=MAX_BATCH)


class ExplainBody(_Body):
    query: str
    vid: Ref = None


class CommitBody(_Body):
    """A whole write set in one request: a transaction that read nothing (blind writes)."""

    author: str = ""
    message: str = ""
    meta: dict[str, Any] | None = None
    time: float | str | None = None
    ops: list[WireOp]


class TxnCommitBody(_Body):
    ops: list[WireOp] = []


class TxnWritesBody(_Body):
    ops: list[WireOp]


class CloneBody(_Body):
    src: str
    dst: str
    vid: Ref = None
    author: str = ""
    message: str = ""


class TxnCloneBody(_Body):
    src: str
    dst: str
    vid: int | None = None
    ops: list[WireOp] = []  # writes the client buffered before the clone, kept in order


class SnapshotBody(_Body):
    name: str
    vid: Ref = None


class PlanFilesBody(_Body):
    table: str
    where: str | None = None
    vid: Ref = None


class DiffBody(_Body):
    """`cat.diff(from_ref, to_ref, prefix)`: changes stream back as NDJSON batches."""

    from_ref: Ref
    to_ref: Ref = None
    prefix: str | None = None
    batch_size: int = Field(1000, ge=1, le=MAX_BATCH)


class PublishBody(_Body):
    branch: str
    onto: str
    author: str = ""
    message: str = ""
    keep: bool = True


class DropBranchBody(_Body):
    branch: str
    author: str = ""
    message: str = ""


class ErrorBody(BaseModel):
    """Every error response: the error class name, a message saying what was wrong and what to
    do, and details (e.g. `path`, `vid`, `position`, or `errors` for a malformed request)."""

    error: str
    message: str
    details: dict[str, Any]

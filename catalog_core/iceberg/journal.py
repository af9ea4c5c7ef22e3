"""The persisted materializer state of a table: an append-only journal of JSON lines (no pyiceberg
here: the commit hook reads and starts journals without importing it).

`<root>/_journal/<digest of the table path>.jsonl`, one record a line:

- `{"k": "base", "tpath", "created", "uuid", "from": -1, "to": done, ...state}`: a whole state (a
  new table, or a state the first load built by walking the history); replay starts over from it;
- `{"k": "step", "from": done before, "to": done after, ...delta}`: what processing the commits
  `from + 1 .. to` changed (new snapshots, manifests made and dropped, new file entries, the files
  written with their sizes); applied only when the replayed state is at `from` (a chain: a record
  two processes both wrote, or one that lost a race, is skipped; the rest comes from the history);
- `{"k": "durable", "to": done}`: every file of the records up to `to` was made durable.

Every record carries `view`: the digest of the paths it was written with (`view_of`: the
materializer's root, where manifests live, and the catalog's warehouse, against which stored-relative
data file paths are made absolute). Manifests name absolute paths as the writing process spells them,
so a record is replayed only by a process with the same view: a copied or moved lake (its catalogs
store paths relative, docs/engine.md, Relocatable catalogs) or a catalog opened through another
spelling of its directory (a symlink) does not take the original's manifests, which name the
original's files; its first load walks the history instead. A record without `view` (written
before it existed) is never replayed.

A line that does not parse (a crash mid-append) is skipped. Writers append one line with one
`write(2)` of an `O_APPEND` descriptor and never fsync: a lost record costs a walk of the history
at the next load, never a wrong answer (the materializer checks every file a record names).
"""

from __future__ import annotations

import base64
import decimal
import hashlib
import json
import os
import uuid
from typing import Any

import orjson

__all__ = ["journal_path", "view_of", "append", "read_from", "table_uuid", "enc_value", "dec_value", "b64", "unb64"]

JOURNAL_DIR = "_journal"


def journal_path(root: str, tpath: str) -> str:
    return os.path.join(root, JOURNAL_DIR, hashlib.sha256(tpath.encode()).hexdigest()[:32] + ".jsonl")


def view_of(root: str, warehouse: str | None) -> str:
    """The view of a journal's writer (see the module's docstring): a digest of the materializer's
    root and the catalog's warehouse, both absolute as that process spells them."""
    text = os.path.abspath(root) + "\0" + (warehouse if isinstance(warehouse, str) else "")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def table_uuid(value: dict[str, Any], tpath: str, created: int) -> str:
    """The Iceberg table uuid of a catalog table: its stored one, else derived from path and creation vid."""
    ice = ((value.get("properties") or {}).get("iceberg")) or {}
    u = ice.get("uuid") if isinstance(ice, dict) else None
    return str(u) if u else str(uuid.uuid5(uuid.NAMESPACE_URL, f"semcat:{tpath}@{created}"))


def append(path: str, record: dict[str, Any]) -> tuple[int, int]:
    """Append one record as one line (one write of an O_APPEND descriptor, not fsynced); the
    offsets where the line starts and ends."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        end = os.lseek(fd, 0, os.SEEK_CUR)
        return end - len(line), end
    finally:
        os.close(fd)


def read_from(path: str, offset: int) -> tuple[list[dict[str, Any]], int, int]:
    """The records after byte `offset` (complete lines only; unparsable ones skipped), the offset
    after the last complete line, and the offset of the end of the file."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset, 0
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset, offset + len(data)
    out: list[dict[str, Any]] = []
    for line in data[:end].split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except ValueError:   # orjson.JSONDecodeError is one
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out, offset + end + 1, offset + len(data)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def enc_value(v: Any) -> Any:
    """A partition value (Iceberg's internal representation) as JSON; ValueError for other types."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, decimal.Decimal):
        return {"d": str(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"b": b64(bytes(v))}
    if isinstance(v, uuid.UUID):
        return {"u": str(v)}
    raise ValueError(f"cannot journal a partition value of type {type(v).__name__}")


def dec_value(v: Any) -> Any:
    if isinstance(v, dict):
        if "d" in v:
            return decimal.Decimal(v["d"])
        if "b" in v:
            return unb64(v["b"])
        if "u" in v:
            return uuid.UUID(v["u"])
    return v

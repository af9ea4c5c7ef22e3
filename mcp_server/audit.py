"""The audit log (issue 48 item 3): every data read and write by a principal, one JSON line each, in
`DATA_DIR/audit/` beside the catalog. Append-only (O_APPEND writes of whole lines) and bounded: the
current file rolls over at `max_bytes` to `audit.1.jsonl`, `audit.2.jsonl`, ... and the oldest beyond
`keep` files is deleted, so the log holds at most about `max_bytes * (keep + 1)`.

    log = audit_log(cat)            # None for a catalog without a data directory (a remote one)
    log.record(principal="bob", surface="mcp", action="run_sql", statement="SELECT ...",
               tables=["acme.core.orders"], vid=42, rows=10)
    log.read(principal="bob", table="acme.core.orders", since=time.time() - 3600, limit=100)

An entry: `time` (epoch seconds), `principal`, `surface` (mcp | v1 | ui | iceberg), `action` (the
tool or route), `statement` (SQL, cut to 2,000 characters), `tables`, `vid`, `rows` (returned),
`ok` and `error` (the error class). Never a token, a header or a cookie: the principal is a name.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

__all__ = ["AuditLog", "audit_log", "DEFAULT_MAX_BYTES", "DEFAULT_KEEP"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_KEEP = 8
STATEMENT_CHARS = 2000
NAME = "audit.jsonl"


class AuditLog:
    """An append-only, rolled-over JSON-lines log in `directory` (see the module docstring)."""

    def __init__(self, directory: str, max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP) -> None:
        self.directory, self.max_bytes, self.keep = directory, max_bytes, keep
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0

    @property
    def path(self) -> str:
        return os.path.join(self.directory, NAME)

    def _open(self) -> int:
        if self._fd is None:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._size = os.fstat(self._fd).st_size
        return self._fd

    def _roll(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        oldest = os.path.join(self.directory, f"audit.{self.keep}.jsonl")
        if os.path.exists(oldest):
            os.remove(oldest)
        for n in range(self.keep - 1, 0, -1):
            src = os.path.join(self.directory, f"audit.{n}.jsonl")
            if os.path.exists(src):
                os.replace(src, os.path.join(self.directory, f"audit.{n + 1}.jsonl"))
        if os.path.exists(self.path):
            os.replace(self.path, os.path.join(self.directory, "audit.1.jsonl"))

    def record(self, *, principal: str, surface: str, action: str, statement: str | None = None,
               tables: Iterable[str] = (), vid: int | None = None, rows: int | None = None, ok: bool = True,
               error: str | None = None) -> None:
        """Append one entry; a failure to write it is logged by the caller's logger, never raised into a read."""
        entry: dict[str, Any] = {"time": round(time.time(), 3), "principal": principal, "surface": surface,
                                 "action": action}
        if statement is not None:
            entry["statement"] = statement[:STATEMENT_CHARS]
        entry["tables"] = list(tables)
        if vid is not None:
            entry["vid"] = vid
        if rows is not None:
            entry["rows"] = rows
        entry["ok"] = ok
        if error is not None:
            entry["error"] = error
        line = orjson.dumps(entry) + b"\n"
        with self._lock:
            fd = self._open()
            if self._size and self._size + len(line) > self.max_bytes:
                self._roll()
                fd = self._open()
            os.write(fd, line)
            self._size += len(line)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _files(self) -> list[str]:
        """Oldest first."""
        older = [os.path.join(self.directory, f"audit.{n}.jsonl") for n in range(self.keep, 0, -1)]
        return [p for p in [*older, self.path] if os.path.exists(p)]

    def entries(self) -> Iterator[dict[str, Any]]:
        for path in self._files():
            with open(path, "rb") as f:
                for line in f:
                    try:
                        entry = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue  # a line cut by a crash mid-write
                    if isinstance(entry, dict):
                        yield entry

    def read(self, principal: str | None = None, table: str | None = None, since: float | None = None,
             limit: int = 100) -> tuple[list[dict[str, Any]], bool]:
        """The newest `limit` entries matching, oldest first, and whether more matched."""
        found: list[dict[str, Any]] = []
        for e in self.entries():
            if principal is not None and e.get("principal") != principal:
                continue
            if table is not None and table not in (e.get("tables") or ()):
                continue
            if since is not None and float(e.get("time") or 0) < since:
                continue
            found.append(e)
        return found[-limit:], len(found) > limit


_LOGS: dict[str, AuditLog] = {}
_LOGS_LOCK = threading.Lock()


def audit_log(cat: Any) -> AuditLog | None:
    """The audit log of an embedded catalog (one per data directory in this process); None without one."""
    data_dir = getattr(cat, "data_dir", None)
    if not isinstance(data_dir, str) or not data_dir:
        return None
    directory = os.path.join(data_dir, "audit")
    with _LOGS_LOCK:
        log = _LOGS.get(directory)
        if log is None:
            log = _LOGS[directory] = AuditLog(directory)
        return log

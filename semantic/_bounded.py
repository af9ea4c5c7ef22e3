"""Every statement the semantic layer runs is bounded like an agent's `run_sql` (issue 35, item 3).

The data checks of staleness, the join checks and profiling build SQL from the catalog and from
annotation values (a relationship `condition`, enum and sample values); whatever wrote those values,
the statement runs through `catalog_core.run_sql`: checked by the sandbox, then run in a SQL worker
process held to a time limit and a memory limit (`catalog_core.sql.worker`), never on a connection
of this process. A statement that goes past a limit raises `LimitExceededError`; callers turn it into
a finding or a result that says so, never a hang.

    rows = query(cat, vid, f'SELECT count(*) FROM "acme"."core"."t" WHERE x IN ({literals(["a", "b"])})')

Values go into the text as SQL literals (`literals`; run_sql takes one statement of text). Rows
come back JSON-friendly (dates as ISO text, decimals as floats), as `run_sql` returns them.
"""

from __future__ import annotations

from typing import Any

import catalog_core as cc
from catalog_core.api import CatalogAPI
from catalog_core.errors import SqlError, SqlRefusedError, SqlTimeoutError
from catalog_core.sql.types import sql_literal

__all__ = ["query", "LimitExceededError", "CHECK_TIMEOUT_S", "CHECK_MEMORY_LIMIT", "MAX_ROWS", "is_limit", "literals", "Connection", "expression"]

CHECK_TIMEOUT_S = 10.0          # seconds per statement (run_sql's default, as an agent's statement gets)
CHECK_MEMORY_LIMIT = 1 << 30    # bytes per statement (the sandbox's default)
MAX_ROWS = 100_000


class LimitExceededError(SqlError):
    """A statement the semantic layer ran went past its time or memory limit and was stopped;
    `details`: `limit` ("time" or "memory"), `timeout_s`, `memory_limit`."""


def is_limit(exc: BaseException) -> bool:
    """Did `exc` (from run_sql) stop a statement at its time or memory limit?"""
    if isinstance(exc, SqlTimeoutError):
        return True
    return isinstance(exc, SqlRefusedError) and exc.details.get("rule") == "memory_limit"


def literals(values: list[Any]) -> str:
    """`v1, v2, ...` as SQL literals (JSON scalars; anything else as its text), for an IN list."""
    return ", ".join(sql_literal(v if v is None or isinstance(v, (str, int, float, bool)) else str(v))
                     for v in values)


def query(cat: CatalogAPI, vid: int, text: str, *, limit: int = MAX_ROWS,
          timeout_s: float = CHECK_TIMEOUT_S, memory_limit: int = CHECK_MEMORY_LIMIT) -> list[list[Any]]:
    """The rows of one read-only statement at `vid`, run like `run_sql` (sandbox, worker, limits).
    Raises `LimitExceededError` past the time or memory limit, the sandbox's and DuckDB's errors as
    `run_sql` raises them otherwise."""
    try:
        res = cc.run_sql(cat, text, snapshot=vid, limit=limit, timeout_s=timeout_s,
                         memory_limit=memory_limit)
    except (SqlTimeoutError, SqlRefusedError) as e:
        if not is_limit(e):
            raise
        which = "time" if isinstance(e, SqlTimeoutError) else "memory"
        bound = f"{timeout_s:g} s" if which == "time" else f"{memory_limit:,} bytes"
        raise LimitExceededError(f"it went past its {which} limit ({bound}) and was stopped ({e.message})",
                                 limit=which, timeout_s=timeout_s, memory_limit=memory_limit) from None
    return res.rows


class _Result:
    def __init__(self, rows: list[list[Any]]) -> None:
        self.rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return tuple(self.rows[0]) if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.rows]


class Connection:
    """What profiling used a DuckDB connection for (`execute(text).fetchone()` / `.fetchall()`),
    each statement bounded through `query` at `vid`."""

    def __init__(self, cat: CatalogAPI, vid: int, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.cat, self.vid, self.timeout_s = cat, vid, timeout_s

    def execute(self, text: str) -> _Result:
        return _Result(query(self.cat, self.vid, text, timeout_s=self.timeout_s))

    def close(self) -> None:
        pass


def expression(text: str, what: str) -> None:
    """`text` is one SQL expression the sandbox accepts (`semantic._sql.parse_fragment`), checked
    before a check pastes it into a statement; the sandbox's `memory_limit` refusal (a builder
    whose constant arguments alone ask for more than the limit) is a `LimitExceededError`, as
    when the statement itself is stopped at its limit."""
    from semantic._sql import parse_fragment
    from semantic.errors import InvalidExpressionError

    try:
        parse_fragment(text, what)
    except InvalidExpressionError as e:
        if e.details.get("rule") != "memory_limit":
            raise
        raise LimitExceededError(f"it would go past its memory limit ({CHECK_MEMORY_LIMIT:,} bytes), so it was not "
                                 f"run ({e.message})", limit="memory", timeout_s=CHECK_TIMEOUT_S,
                                 memory_limit=CHECK_MEMORY_LIMIT) from None

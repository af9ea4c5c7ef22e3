"""`semcat sql "SELECT …" --data DIR|URL --snapshot S [--format table|csv|json]`: one guarded
statement, printed as a table (for people: it does not wrap into narrow columns when piped, it
takes the width it needs), CSV (a header row, NULL as an empty field) or JSON (one document:
columns, rows, row_count, truncated, snapshot). Errors follow the CLI's one style (docs/cli.md):
`Error: ...` on stderr, exit 2 for a wrong command line (a --snapshot that names nothing), exit 1 for a
statement or catalog that fails; never a traceback. An unknown table answers with the closest table
names of the lake, not DuckDB's guesses."""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["run_cli", "open_catalog", "FORMATS"]

FORMATS = ("table", "csv", "json")


class CliError(Exception):
    pass


def open_catalog(data_dir: str, token: str | None = None) -> Any:
    """An embedded catalog for an existing catalog directory, a client for an http(s) URL."""
    import catalog_core as cc

    try:
        return cc.open(data_dir, token=token, offer_create=False)
    except cc.CatalogError:
        raise
    except Exception as e:  # RocksDB lock held by a running server, permissions, ...
        raise CliError(f"cannot open the catalog in {data_dir!r}: {e}. If `semcat serve` owns it, "
                        "pass its URL: --data http://127.0.0.1:8765") from None


def _cell(value: Any) -> Any:
    from rich.text import Text

    return Text("NULL", style="dim") if value is None else Text(str(value))


def _csv(result: Any) -> None:
    import csv

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow([c.name for c in result.columns])
    for row in result.rows:
        out.writerow(["" if v is None else v if isinstance(v, (str, int, float)) else json.dumps(v) for v in row])


def _json(result: Any) -> None:
    print(json.dumps({"columns": [{"name": c.name, "type": c.type} for c in result.columns], "rows": result.rows,
                      "row_count": result.row_count, "truncated": result.truncated, "snapshot": result.snapshot},
                     ensure_ascii=False))


def _print(result: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False)
    for col in result.columns:
        table.add_column(f"{col.name}\n{col.type}", overflow="fold")
    for row in result.rows:
        table.add_row(*(_cell(v) for v in row))
    note = f"{result.row_count} row{'s' if result.row_count != 1 else ''} at snapshot {result.snapshot}"
    if result.truncated:
        note += f" (truncated at the limit of {result.row_count}; raise --limit to see more)"
    table.caption = note
    # On a terminal the table fits the screen; piped, it takes the width it needs instead of rich's
    # default 80 columns, which folds every value into a few characters.
    console = Console() if sys.stdout.isatty() else Console(width=100_000, soft_wrap=True)
    console.print(table)


def run_cli(sql: str, data_dir: str, snapshot: str | None = None, limit: int = 1000, timeout_s: float = 10.0,
            token: str | None = None, fmt: str = "table") -> None:
    import click

    import catalog_core as cc
    from catalog_core.errors import SnapshotNotFoundError

    cat = None
    try:
        cat = open_catalog(data_dir, token)
        from mcp_server.cli.clock import say_clock

        if data_dir.startswith(("http://", "https://")):  # one clock (issue 47): which clock now() reads
            say_clock(data_dir, "the statement reads the snapshot's files; now(), current_date and the like in it "
                                "read the server machine's clock, not its --now")
        result = cc.run_sql(cat, sql, snapshot=snapshot, limit=limit, timeout_s=timeout_s)
    except SnapshotNotFoundError as e:
        raise click.BadParameter(_snapshot_hint(cat, e.message), param_hint="'--snapshot'") from None
    except cc.NotFoundError as e:
        if cat is None:  # --data names no catalog
            raise click.BadParameter(e.message, param_hint="'--data'") from None
        raise click.ClickException(_unknown_tables(cat, sql, snapshot) or e.message) from None
    except (cc.CatalogError, CliError) as e:
        raise click.ClickException(getattr(e, "message", str(e))) from None
    except Exception as e:  # e.g. the server is unreachable
        raise click.ClickException(f"{type(e).__name__}: {e}") from None
    finally:
        if cat is not None and hasattr(cat, "close"):
            cat.close()
    {"table": _print, "csv": _csv, "json": _json}[fmt](result)


def _snapshot_hint(cat: Any, message: str) -> str:
    """The engine's message about a --snapshot that names nothing, with what --snapshot takes and the
    catalog's snapshot names (the engine's own hint names a Python call)."""
    head = message.split("; list snapshots", 1)[0]
    try:
        names = [s.name for s in cat.snapshots()][-10:] if cat is not None else []
        latest = cat.latest_vid if cat is not None else None
    except Exception:  # the message stays useful without them
        names, latest = [], None
    takes = "give --snapshot a vid" + (f" (0 to {latest})" if latest is not None else "")
    takes += ", a snapshot name or an ISO-8601 time such as 2025-03-10T13:00:00Z"
    return f"{head}; {takes}" + (f"; the snapshot names: {', '.join(names)}" if names else "; no snapshot is named")


def _unknown_tables(cat: Any, sql: str, snapshot: str | None) -> str | None:
    """`no table 'acme.core.ordrs'; did you mean 'acme.core.orders'? (...)` for every table the statement
    reads that is not a table of the lake at `snapshot`; None when they all exist (the error is another one)."""
    import sqlglot
    from sqlglot import exp

    from catalog_core import lake
    from mcp_server.cli.names import unknown

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
        tables = sorted(lake.name_of(o.path) for o in cat.query(lake.tables_query(), vid=snapshot))
    except Exception:
        return None
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    out = []
    for t in tree.find_all(exp.Table):
        parts = [p.name for p in (t.args.get("catalog"), t.args.get("db"), t.this) if p is not None]
        name = ".".join(parts)
        if not name or (len(parts) == 1 and name in ctes) or name in tables:
            continue
        if len(parts) < 3 and any(x.endswith("." + name) for x in tables):
            continue  # a shorter name DuckDB resolves itself
        msg = unknown("table", name, tables, hint='list them with: semcat sql "SHOW ALL TABLES" --data DIR')
        if msg not in out:
            out.append(msg)
    return "; ".join(out) if out else None

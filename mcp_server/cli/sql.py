"""`semcat sql "SELECT …" --data DIR|URL --snapshot S [--format table|csv|json]`: one guarded
statement, printed as a table (for people: it does not wrap into narrow columns when piped, it
takes the width it needs), CSV (a header row, NULL as an empty field) or JSON (one document:
columns, rows, row_count, truncated, snapshot). Errors print their message and exit with status
2, never a traceback."""

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
    import catalog_core as cc

    cat = None
    try:
        cat = open_catalog(data_dir, token)
        result = cc.run_sql(cat, sql, snapshot=snapshot, limit=limit, timeout_s=timeout_s)
    except (cc.CatalogError, CliError) as e:
        print(f"error: {getattr(e, 'message', str(e))}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # e.g. the server is unreachable
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        if cat is not None and hasattr(cat, "close"):
            cat.close()
    {"table": _print, "csv": _csv, "json": _json}[fmt](result)

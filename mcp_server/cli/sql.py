"""`semcat sql "SELECT …" --data DIR|URL --snapshot S`: one guarded statement, printed as a table.
Errors print their message and exit with status 2, never a traceback."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["run_cli", "open_catalog"]


class _CliError(Exception):
    pass


def open_catalog(data_dir: str, token: str | None = None) -> Any:
    """An embedded catalog for an existing catalog directory, a client for an http(s) URL."""
    import catalog_core as cc

    if data_dir.startswith(("http://", "https://")):
        return cc.connect(data_dir, token=token)
    try:
        return cc.open_catalog(data_dir, offer_create=False)
    except cc.CatalogError:
        raise
    except Exception as e:  # RocksDB lock held by a running server, permissions, ...
        raise _CliError(f"cannot open the catalog in {data_dir!r}: {e}. If `semcat serve` owns it, "
                        "pass its URL: --data http://127.0.0.1:8765") from None


def _cell(value: Any) -> Any:
    from rich.text import Text

    return Text("NULL", style="dim") if value is None else Text(str(value))


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
    Console().print(table)


def run_cli(sql: str, data_dir: str, snapshot: str | None = None, limit: int = 1000, timeout_s: float = 10.0,
            token: str | None = None) -> None:
    import catalog_core as cc

    cat = None
    try:
        cat = open_catalog(data_dir, token)
        result = cc.run_sql(cat, sql, snapshot=snapshot, limit=limit, timeout_s=timeout_s)
    except (cc.CatalogError, _CliError) as e:
        print(f"error: {getattr(e, 'message', str(e))}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # e.g. the server is unreachable
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        if cat is not None and hasattr(cat, "close"):
            cat.close()
    _print(result)

"""Options and checks the `semcat` CLI shares with the commands other packages register (eval/cli.py):
the optional dependencies a command needs, and --sql-cache."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["EXTRAS", "missing", "needs", "sql_cache", "open_or_exit", "run_on", "who"]

# optional dependency -> (the extra that installs it, its name)
EXTRAS = {"pyspark": ("spark", "PySpark"), "matplotlib": ("eval", "matplotlib")}


def missing(module: str) -> click.ClickException:
    extra, name = EXTRAS[module]
    return click.ClickException(f"this command needs {name}, which is not installed: pip install 'semcat[{extra}]'")


def needs(*modules: str) -> None:
    """Refuse, before any work, a command whose optional dependencies (keys of EXTRAS) are not installed."""
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise missing(module)


def _parse_sql_cache(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """--sql-cache BYTES: the same setting as SEMCAT_SQL_CACHE_BYTES, set here and for the SQL workers."""
    if value is None:  # before any import: `semcat mcp` imports no engine on its way to `initialize`
        return None
    import os

    import catalog_core as cc
    from catalog_core.errors import CatalogError
    from catalog_core.sql.snapcache import parse_bytes

    try:
        n = parse_bytes(value, "a cache size")
        cc.set_sql_cache_budget(n)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    except CatalogError as exc:  # beyond 1 TiB
        raise click.BadParameter(exc.message) from None
    os.environ["SEMCAT_SQL_CACHE_BYTES"] = str(n)  # the SQL workers this process starts read it too
    return n


sql_cache = click.option("--sql-cache", "sql_cache", default=None, metavar="BYTES", callback=_parse_sql_cache,
                          expose_value=False,
                          help="bytes of decoded tables each SQL worker keeps for run_sql (e.g. 512M, 2G; 0 turns "
                               "the snapshot cache off)  [default: SEMCAT_SQL_CACHE_BYTES, else 1/8 of RAM up to 4G]")


def open_or_exit(data_dir: str, url: str | None, token: str | None) -> Any:
    """The catalog a CLI command acts on: the server at `url` (with `token`), else the directory `data_dir`;
    a catalog that cannot be opened is one `Error: ...` line."""
    from mcp_server.cli.sql import CliError, open_catalog

    try:
        return open_catalog(url or data_dir, token)
    except CliError as e:
        raise click.ClickException(str(e)) from None


def run_on(data_dir: str, url: str | None, token: str | None, fn: Callable[[Any], Any]) -> Any:
    """`fn(catalog)` on the catalog `open_or_exit` opens, closed afterwards; a CatalogError is one
    `Error: ...` line with its message."""
    import catalog_core as cc

    cat = open_or_exit(data_dir, url, token)
    try:
        return fn(cat)
    except cc.CatalogError as exc:
        raise click.ClickException(exc.message) from None
    finally:
        cat.close()


def who(author: str | None) -> str:
    """The author a CLI decision is recorded under: --author, else SEMCAT_AUTHOR, else the login name."""
    import getpass
    import os

    return author or os.environ.get("SEMCAT_AUTHOR") or getpass.getuser()

"""Options and checks the `semcat` CLI shares with the commands other packages register (eval/cli.py):
the optional dependencies a command needs, and --sql-cache."""

from __future__ import annotations

import click

__all__ = ["EXTRAS", "missing", "needs", "sql_cache"]

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
    import os

    import catalog_core as cc
    from catalog_core.errors import CatalogError
    from catalog_core.sql.snapcache import parse_bytes

    if value is None:
        return None
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

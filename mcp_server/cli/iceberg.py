"""`semcat import iceberg`: import or sync one Iceberg table, with a progress bar."""

from __future__ import annotations

import os
from typing import Any

import click

__all__ = ["run_import"]


def _sqlite_file(uri: str) -> str | None:
    """The database file a sqlite:// URI names (None for an in-memory database or a non-sqlite URI)."""
    try:
        from sqlalchemy.engine import make_url

        url = make_url(uri)
    except Exception:  # not an SQLAlchemy URL: pyiceberg says what is wrong with it
        return None
    db = url.database
    if url.get_backend_name() != "sqlite" or not db or db == ":memory:" or db.startswith("file:"):
        return None
    return db


def _source_catalog(uri: str, warehouse: str | None, name: str) -> Any:
    from pyiceberg.catalog import load_catalog

    db = _sqlite_file(uri)
    if db is not None and not os.path.isfile(db):
        # SQLAlchemy would create an empty database there, and the import would find no table in it.
        where = "does not exist" if not os.path.exists(db) else "is not a file"
        raise click.ClickException(f"no Iceberg catalog at {uri!r}: the SQLite database {db!r} {where}; pass "
                                   "--catalog-uri with the sqlite:/// path of an existing Iceberg SQL catalog "
                                   "(sqlite:////abs/path.db for an absolute path)")
    props: dict[str, str] = {"uri": uri}
    if warehouse:
        props["warehouse"] = warehouse
    kind = "rest" if uri.startswith(("http://", "https://")) else "sql"
    try:
        return load_catalog(name, type=kind, **props)
    except Exception as exc:  # a bad URI, an unreachable REST catalog, ...
        raise click.ClickException(f"cannot open the Iceberg catalog at {uri!r}: {exc}") from None


def _target_catalog(data: str, token: str | None, create: bool) -> Any:
    import catalog_core as cc

    if create and data.startswith(("http://", "https://")):
        raise click.UsageError("--create makes a catalog in a --data directory; a server's catalog exists")
    try:
        return cc.open(data, token=token, create=create)
    except cc.CatalogError as exc:  # no catalog in --data (and no --create), open in another process, ...
        raise click.ClickException(exc.message) from None


def run_import(data: str, uri: str, warehouse: str | None, table: str, into: str, token: str | None,
               catalog_name: str = "default", create: bool = False) -> None:
    """`create`: make a new empty catalog in `data` if it holds none (otherwise that is refused)."""
    import catalog_core as cc
    from catalog_core.iceberg import import_table

    ice = _source_catalog(uri, warehouse, catalog_name)  # first: a bad source leaves no new empty catalog
    cat = _target_catalog(data, token, create)
    from mcp_server.cli.progress import progress_bar

    try:
        with progress_bar(transient=True) as bar:  # one line per step when stderr is not a terminal
            tasks: dict[str, Any] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    label = "reading manifests" if stage == "read" else "committing files"
                    tasks[stage] = bar.add_task(label, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            res = import_table(cat, ice, table, into=into, progress=progress)
    except cc.CatalogError as exc:
        raise click.ClickException(exc.message) from None
    finally:
        cat.close()
    if res.up_to_date:
        click.echo(f"{into} is up to date with Iceberg table {table} (snapshot {res.snapshot_id}); nothing written")
        return
    first, last = res.commits[0][1], res.commits[-1][1]
    click.echo(f"imported {table} into {into}: {len(res.commits)} commits (vids {first}..{last}), "
               f"+{res.files_added} -{res.files_removed} files, synced to snapshot {res.snapshot_id}"
               + (f"; {res.clamped} commits later than their snapshot (the catalog had later commits)"
                  if res.clamped else ""))

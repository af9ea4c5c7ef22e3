"""`semcat import iceberg`: import or sync one Iceberg table, with a progress bar."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["run_import"]


def _source_catalog(uri: str, warehouse: str | None, name: str) -> Any:
    from pyiceberg.catalog import load_catalog

    props: dict[str, str] = {"uri": uri}
    if warehouse:
        props["warehouse"] = warehouse
    kind = "rest" if uri.startswith(("http://", "https://")) else "sql"
    try:
        return load_catalog(name, type=kind, **props)
    except Exception as exc:  # a bad URI, an unreachable REST catalog, ...
        raise click.ClickException(f"cannot open the Iceberg catalog at {uri!r}: {exc}") from None


def run_import(data: str, uri: str, warehouse: str | None, table: str, into: str, token: str | None,
               catalog_name: str = "default") -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    import catalog_core as cc
    from catalog_core.iceberg import import_table

    ice = _source_catalog(uri, warehouse, catalog_name)
    cat: Any = cc.connect(data, token=token) if data.startswith(("http://", "https://")) else cc.Catalog.open(data)
    console = Console(stderr=True)
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as bar:
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

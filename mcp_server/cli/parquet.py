"""`semcat import parquet DIR`: a Hive-partitioned Parquet tree as catalog tables (files, partitions,
footer statistics); a re-run picks up added, removed and rewritten files (catalog_core.parquet_import)."""

from __future__ import annotations

from collections.abc import Callable

import click

__all__ = ["register"]


def register(import_group: click.Group, create_option: Callable[[Callable[..., None]], Callable[..., None]]) -> None:
    @import_group.command("parquet")
    @click.argument("directory", type=click.Path(file_okay=False))
    @click.option("--data", "data_dir", default="data", show_default=True,
                  help="catalog data directory or http(s) URL")
    @click.option("--into", required=True, help="a namespace (acme.raw: each sub-directory of DIRECTORY is a "
                  "table) or a table (acme.raw.orders: DIRECTORY is the table)")
    @click.option("--token", default=None, envvar="SEMCAT_TOKEN")
    @create_option
    def import_parquet_cmd(directory, data_dir, into, token, create) -> None:
        """Register a directory tree of Parquet files (key=value partition directories) as tables."""
        import catalog_core as cc
        from catalog_core.parquet_import import import_parquet
        from mcp_server.cli.iceberg import target_catalog
        from mcp_server.cli.progress import progress_bar

        cat = target_catalog(data_dir, token, create)
        try:
            with progress_bar(transient=True) as bar:
                tasks: dict[str, int] = {}

                def progress(table: str, done: int, total: int) -> None:
                    if table not in tasks:
                        tasks[table] = bar.add_task(f"reading footers of {table}", total=total)
                    bar.update(tasks[table], completed=done, total=total)

                results = import_parquet(cat, directory, into, progress=progress)
        except cc.CatalogError as exc:
            raise click.ClickException(exc.message) from None
        finally:
            cat.close()
        for r in results:
            if r.up_to_date:
                click.echo(f"{r.table} is up to date; nothing written")
                continue
            cols = f"; new columns {', '.join(r.columns_added)}" if r.columns_added else ""
            click.echo(f"{r.table}: +{r.files_added} -{r.files_removed} files at vid {r.vid}{cols}")

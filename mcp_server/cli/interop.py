"""`semcat import dbt|osi|cortex ...` and `semcat export osi ...`: the semantic imports on the command
line, with a progress line on stderr and a summary (written, unchanged, unmapped with reasons)."""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["register"]

_data = click.option("--data", "data_dir", default="data", show_default=True,
                     help="catalog data directory or http(s) URL")
_token = click.option("--token", default=None, envvar="SEMCAT_TOKEN")
_catalog = click.option("--catalog", default=None, help="the catalog the input's tables are in, e.g. acme")
_mapping = click.option("--map", "mapping", multiple=True, metavar="NAME=CATALOG.NS.TABLE",
                        help="map an input model/dataset/table name to a catalog table (repeatable)")
_author = click.option("--author", default=None, help="provenance author (default: import:<format>)")
_dry = click.option("--dry-run", is_flag=True, help="check and report, write nothing")
_overwrite = click.option("--overwrite", is_flag=True,
                          help="also replace human annotations of certified tables (left alone by default)")


def _mapping_of(pairs: tuple[str, ...]) -> dict[str, str] | None:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise click.BadParameter(f"{p!r} is not NAME=CATALOG.NS.TABLE", param_hint="--map")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out or None


def _run(fmt: str, path: str, data_dir: str, token: str | None, catalog: str | None, mapping: tuple[str, ...],
         author: str | None, dry_run: bool, as_json: bool, overwrite: bool = False) -> None:
    import catalog_core as cc
    import semantic as sm
    from mcp_server.cli.progress import progress_bar
    from mcp_server.cli.sql import open_catalog

    fn = {"dbt": sm.import_dbt, "osi": sm.import_osi, "cortex": sm.import_cortex}[fmt]
    cat: Any = open_catalog(data_dir, token)
    tasks: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    try:
        with progress_bar(transient=True) as bar:
            res = fn(cat, path, catalog=catalog, mapping=_mapping_of(mapping), author=author or f"import:{fmt}",
                     progress=progress, dry_run=dry_run, overwrite=overwrite)
    except cc.CatalogError as exc:
        raise click.ClickException(exc.message) from None
    finally:
        cat.close()
    if as_json:
        click.echo(json.dumps(res.model_dump(), indent=2))
        return
    what = "would write" if dry_run else "wrote"
    click.echo(f"{fmt} {res.file} (sha256 {res.sha256[:12]}): {what} {len(res.written)} annotations"
               + (f" in vid {res.vid}" if res.vid is not None else "") + f", {res.unchanged} unchanged, "
               f"{len(res.tables)} tables mapped, {len(res.unmapped)} unmapped")
    for r in res.replaced:
        click.echo(f"  {'would replace' if dry_run else 'replaced'} {r}")
    for k in res.kept:
        click.echo(f"  kept {k}: the table is certified; --overwrite replaces it")
    for u in res.unmapped:
        click.echo(f"  unmapped {u.item} ({u.place}): {for_cli(u.reason)}")


# what the importers tell Python callers to pass, and the flags of this CLI that do the same
_FOR_CLI = (("pass catalog= or mapping=", "pass --catalog CATALOG or --map NAME=CATALOG.NS.TABLE"),
            ("pass mapping={name: 'catalog.namespace.table'}", "pass --map NAME=CATALOG.NS.TABLE"),
            ("pass catalog=", "pass --catalog CATALOG"))


def for_cli(reason: str) -> str:
    """An importer's reason with its Python argument hints rewritten as this command's flags."""
    for python, flag in _FOR_CLI:
        reason = reason.replace(python, flag)
    return reason


def register(main: click.Group, import_group: click.Group) -> None:
    """Add the semantic imports to `semcat import` and the `semcat export` group to `main`."""
    for fmt, doc in (("dbt", "a dbt manifest.json or project directory (schema.yml files)"),
                     ("osi", "an Open Semantic Interchange YAML file"),
                     ("cortex", "a Snowflake Cortex Analyst semantic model YAML file")):
        def make(fmt: str = fmt, doc: str = doc) -> click.Command:
            @click.command(fmt, help=f"Import {doc} as annotations (idempotent; one commit).")
            @click.argument("path", type=click.Path(exists=True))
            @_data
            @_token
            @_catalog
            @_mapping
            @_author
            @_dry
            @_overwrite
            @click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
            def cmd(path, data_dir, token, catalog, mapping, author, dry_run, overwrite, as_json) -> None:
                _run(fmt, path, data_dir, token, catalog, mapping, author, dry_run, as_json, overwrite)
            return cmd
        import_group.add_command(make())

    @main.group("export")
    def export_() -> None:
        """Write the catalog's annotations in another tool's format."""

    @export_.command("osi")
    @click.argument("out", type=click.Path())
    @click.option("--catalog", required=True, help="the catalog to export, e.g. acme")
    @click.option("--snapshot", default=None, help="vid, snapshot name or ISO time (default: latest)")
    @_data
    @_token
    def export_osi(out, catalog, snapshot, data_dir, token) -> None:
        """Export a catalog's annotations as one OSI semantic model (YAML)."""
        import catalog_core as cc
        import semantic as sm
        from mcp_server.cli.names import check_catalog
        from mcp_server.cli.sql import open_catalog

        cat: Any = open_catalog(data_dir, token)
        try:
            check_catalog(cat, catalog, cat.resolve(snapshot))
            doc = sm.export_osi(cat, out, catalog=catalog, snapshot=snapshot)
        except cc.CatalogError as exc:
            raise click.ClickException(exc.message) from None
        finally:
            cat.close()
        m = doc["semantic_model"][0]
        click.echo(f"wrote {out}: {len(m['datasets'])} datasets, {len(m.get('relationships', []))} relationships, "
                   f"{len(m.get('metrics', []))} metrics")

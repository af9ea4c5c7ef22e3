"""`semcat lineage TABLE [--downstream] [--depth N]`: what a table was built from (or what was built
from it), the vid each build read, and the findings that flow downstream (semantic.lineage), on a
catalog directory (`--data`) or a running `semcat serve` (`--url`). Bounded (`--limit`, `--cursor`)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import click

__all__ = ["register"]


def _when(t: float | None) -> str:
    return "" if t is None else datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def render(g: dict[str, Any]) -> list[str]:
    """The graph as lines for people: one per table, indented by depth, with what its build read."""
    lines = [f"{g['direction']} lineage of {g['table']} at vid {g['snapshot']['vid']} "
             f"({g['total']} tables within {g['depth']} hops)"]
    for n in g["nodes"]:
        pad = "  " * n["depth"]
        built = n["built"]
        head = f"{pad}{n['table']}" + ("" if n["exists"] else "  (not in this snapshot)")
        if built:
            head += f"  built at vid {built['vid']} ({_when(built['time'])})"
        lines.append(head)
        if n["inputs"]:
            lines.append(f"{pad}  read: " + ", ".join(f"{i['table']}@{i['vid']}" for i in n["inputs"]))
        for f in n.get("findings", []):
            lines.append(f"{pad}  ! [{f['reason']}] {f['message']}")
    if g["truncated"]:
        lines.append(f"... more tables: --cursor {g['next_cursor']}")
    return lines


def register(main: click.Group) -> None:
    """Add `semcat lineage` to `main`."""

    @main.command("lineage")
    @click.argument("table")
    @click.option("--downstream", is_flag=True, help="what was built from TABLE (default: what TABLE was built from)")
    @click.option("--depth", default=3, show_default=True, type=click.IntRange(1, 10), help="hops to follow")
    @click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 200), help="tables per page")
    @click.option("--cursor", default=None, help="the next page (printed at the end of a page)")
    @click.option("--snapshot", default=None, help="vid, snapshot name or ISO time (default: latest)")
    @click.option("--data", "data_dir", default="data", show_default=True, help="catalog data directory")
    @click.option("--url", default=None, help="a semcat serve URL instead of --data")
    @click.option("--token", default=None, envvar="SEMCAT_TOKEN", help="bearer token for --url")
    @click.option("--json", "as_json", is_flag=True, help="print JSON for programs")
    def lineage_cmd(table, downstream, depth, limit, cursor, snapshot, data_dir, url, token, as_json) -> None:
        """What TABLE was built from (or, with --downstream, what was built from it): the vid each
        build read, and upstream changes or partial days that make a table suspect."""
        import catalog_core as cc
        from mcp_server.cli.sql import CliError, open_catalog
        from semantic.lineage import lineage

        try:
            cat = open_catalog(url or data_dir, token)
        except CliError as e:
            raise click.ClickException(str(e)) from None
        from mcp_server.cli.clock import say_clock

        # one clock (issue 47): lineage and its findings are judged at the snapshot, never at a clock
        say_clock(url, "lineage and its findings are judged at the snapshot (its vid and commit time), not at a clock")
        try:
            g = lineage(cat, table, direction="downstream" if downstream else "upstream", depth=depth, limit=limit,
                        cursor=cursor, snapshot=snapshot)
        except cc.CatalogError as exc:
            raise click.ClickException(exc.message) from None
        finally:
            cat.close()
        click.echo(json.dumps(g, default=str) if as_json else "\n".join(render(g)))

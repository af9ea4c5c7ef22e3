"""`semcat relocate --data DIR [--from OLD --to NEW]`: re-point a catalog's files (docs/engine.md,
Relocatable catalogs). Locations and file paths inside DIR/warehouse are stored relative to it, so a copied
or moved data directory needs nothing; this command is for the rest: a catalog written before relative
paths (plain `semcat relocate --data DIR` stores them relative), a data directory moved since
(`--from OLD_DIR --to DIR`), and lakes imported from outside the warehouse that moved (`--from /old/lake
--to /new/lake`). Every stored version is rewritten; the history (vids, commits) stays as it is."""

from __future__ import annotations

import click

__all__ = ["register"]


def register(main: click.Group) -> None:
    @main.command()
    @click.option("--data", "data_dir", required=True, help="catalog data directory")
    @click.option("--from", "old", default=None, metavar="OLD",
                  help="the directory the files were at (a moved data directory, or an imported lake)")
    @click.option("--to", "new", default=None, metavar="NEW", help="the directory they are at now")
    def relocate(data_dir: str, old: str | None, new: str | None) -> None:
        """Re-point table locations and file paths: those under --from move under --to, and those inside
        the data directory's warehouse are stored relative to it (so copies and moves need no command)."""
        import os

        import catalog_core as cc

        if (old is None) != (new is None):
            raise click.UsageError("give --from and --to together (or neither, to store the paths inside the "
                                   "warehouse relative to it)")
        if old is not None and new is not None:
            old, new = os.path.abspath(old), os.path.abspath(new)
        cat = cc.open_catalog(data_dir, offer_create=False)
        try:
            n = cat.relocate(old, new)
        finally:
            cat.close()
        what = f" from {old} to {new}" if old else ""
        click.echo(f"re-pointed {n} stored location(s) and file path(s){what} in {data_dir}")

"""`semcat relocate --data DIR [--from OLD --to NEW]`: re-point a catalog's files (docs/engine.md,
Relocatable catalogs). Locations and file paths inside DIR/warehouse are stored relative to it, so a copied
or moved data directory needs nothing; this command is for the rest: a catalog written before relative
paths (plain `semcat relocate --data DIR` stores them relative), a data directory moved since
(`--from OLD_DIR --to DIR`), and lakes imported from outside the warehouse that moved (`--from /old/lake
--to /new/lake`). Every stored version is rewritten; the history (vids, commits) stays as it is.

`semcat relocate --lake LAKE [--from OLD --to NEW]`: the same for every catalog directly inside a lake
directory whose catalogs share files beside them (an eval lake: LAKE/enriched, LAKE/stale, LAKE/warehouse),
after marking LAKE as a lake root: paths inside LAKE are then stored relative, so a copy or a move of LAKE
is a working, independent lake. Lakes built before lake roots are migrated by it."""

from __future__ import annotations

import click

__all__ = ["register"]


def register(main: click.Group) -> None:
    @main.command()
    @click.option("--data", "data_dir", default=None, help="catalog data directory")
    @click.option("--lake", "lake", default=None, metavar="LAKE",
                  help="a lake directory: mark it as a lake root and relocate every catalog directly inside it")
    @click.option("--from", "old", default=None, metavar="OLD",
                  help="the directory the files were at (a moved data directory, or an imported lake)")
    @click.option("--to", "new", default=None, metavar="NEW", help="the directory they are at now")
    def relocate(data_dir: str | None, lake: str | None, old: str | None, new: str | None) -> None:
        """Re-point table locations and file paths: those under --from move under --to, and those inside
        the data directory's warehouse (or the --lake directory) are stored relative to it (so copies and
        moves need no command)."""
        import os

        import catalog_core as cc

        if (data_dir is None) == (lake is None):
            raise click.UsageError("give --data DIR (one catalog) or --lake LAKE (every catalog inside a lake "
                                   "directory), not both")
        if (old is None) != (new is None):
            raise click.UsageError("give --from and --to together (or neither, to store the paths inside the "
                                   "warehouse relative to it)")
        if old is not None and new is not None:
            old, new = os.path.abspath(old), os.path.abspath(new)
        what = f" from {old} to {new}" if old else ""
        if lake is not None:
            if not os.path.isdir(lake):
                raise click.UsageError(f"--lake {lake}: no such directory")
            dirs = cc.catalogs_below(lake, depth=1)
            if not dirs:
                raise click.UsageError(f"--lake {lake}: no catalog directory inside it (a lake holds catalog "
                                       "directories such as LAKE/enriched; for one catalog use --data DIR)")
            cc.mark_lake_root(os.path.abspath(lake))
        else:
            dirs = [str(data_dir)]
        for d in dirs:
            cat = cc.open_catalog(d, offer_create=False)
            try:
                n = cat.relocate(old, new)
            finally:
                cat.close()
            click.echo(f"re-pointed {n} stored location(s) and file path(s){what} in {d}")

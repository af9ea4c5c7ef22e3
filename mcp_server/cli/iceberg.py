"""`semcat import iceberg`: import or sync one Iceberg table, a namespace or a whole Iceberg catalog
(SQL or REST), with progress; `--watch SECONDS` keeps syncing until stopped."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

__all__ = ["run_import", "run_import_many", "register", "target_catalog"]


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


def target_catalog(data: str, token: str | None, create: bool) -> Any:
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
    cat = target_catalog(data, token, create)
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


class _Stop:
    """A stop request a signal handler can make: `set` takes no lock and `wait` wakes through a pipe.

    A handler runs in the main thread between two bytecodes, whatever lock that thread holds; a
    `threading.Event.set` from a handler needs the lock of the Event's condition, which the main
    thread holds inside `Event.wait`, and would wait for itself forever."""

    def __init__(self) -> None:
        self._set = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)

    def set(self) -> None:
        self._set = True
        try:
            os.write(self._w, b"x")
        except OSError:  # the pipe is full (a stop was asked already) or closed
            pass

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds or until `set`; True once set."""
        import select

        if not self._set:
            select.select([self._r], [], [], timeout)
        return self._set

    def close(self) -> None:
        for fd in (self._r, self._w):
            os.close(fd)


def _sync_round(cat: Any, ice: Any, idents: list[str], into: str, bar: Any, stop: _Stop | None = None
                ) -> tuple[list[Any], list[str]]:
    """One sync of every table: (results, errors). A table that fails is reported and skipped; the
    others still sync (each table's import is its own transactions). Once `stop` is set, the round
    ends after the table in hand: a stop waits for one table's import, not a whole round."""
    import catalog_core as cc
    from catalog_core.iceberg import import_table, target_name

    results, errors = [], []
    task = bar.add_task("tables", total=len(idents))
    for i, ident in enumerate(idents, 1):
        if stop is not None and stop.is_set():
            break
        try:
            results.append(import_table(cat, ice, ident, into=target_name(into, ident)))
        except cc.CatalogError as exc:
            errors.append(f"{ident}: {exc.message}")
        bar.update(task, completed=i, description=f"tables ({ident})")
    return results, errors


def run_import_many(data: str, uri: str, warehouse: str | None, namespace: str | None, into: str, token: str | None,
                    catalog_name: str = "default", create: bool = False, watch: float | None = None,
                    max_syncs: int | None = None) -> None:
    """Every table of the Iceberg catalog (or of `namespace`) into catalog `into`; with `watch`, sync
    again every `watch` seconds until interrupted (or `max_syncs` rounds)."""
    import signal

    import catalog_core as cc
    from catalog_core.iceberg import catalog_tables
    from mcp_server.cli.progress import progress_bar

    if "." in into or not into:
        raise click.UsageError(f"--into {into!r}: without --table, --into names a catalog (e.g. acme); each Iceberg "
                               "table ns.t lands in <catalog>.ns.t")
    ice = _source_catalog(uri, warehouse, catalog_name)
    cat = target_catalog(data, token, create)
    stop = _Stop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    failed, rounds = False, 0
    try:
        while True:
            rounds += 1
            try:
                idents = catalog_tables(ice, namespace)
            except cc.CatalogError as exc:
                raise click.ClickException(exc.message) from None
            with progress_bar(transient=True) as bar:
                results, errors = _sync_round(cat, ice, idents, into, bar, stop)
            changed = [r for r in results if not r.up_to_date]
            for r in changed:
                click.echo(f"{r.source} -> {r.table}: {len(r.commits)} commits, +{r.files_added} -{r.files_removed} "
                           f"files, synced to snapshot {r.snapshot_id}")
            for e in errors:
                click.echo(f"error: {e}", err=True)
            click.echo(f"sync {rounds}: {len(idents)} tables, {len(changed)} changed, {len(errors)} failed", err=True)
            failed = failed or bool(errors)
            if watch is None or (max_syncs is not None and rounds >= max_syncs) or stop.wait(watch):
                break
    finally:
        cat.close()
        stop.close()
    if failed:
        raise click.ClickException("some tables did not import (listed above); fix them and run again: the "
                                   "others are synced and a re-run skips what is up to date")


def register(import_group: click.Group, create_option: Callable[[Callable[..., None]], Callable[..., None]]) -> None:
    """`semcat import iceberg` on the `import` group."""

    @import_group.command("iceberg")
    @click.option("--data", "data_dir", default="data", show_default=True,
                  help="catalog data directory or http(s) URL")
    @click.option("--catalog-uri", required=True, help="the Iceberg catalog: sqlite:///... (SQL catalog) or a REST URL")
    @click.option("--warehouse", default=None, help="the Iceberg catalog's warehouse, e.g. file:///lake")
    @click.option("--catalog-name", default="default", show_default=True,
                  help="the Iceberg catalog's name (a SQL catalog keeps the tables of each name apart)")
    @click.option("--table", "table", default=None, help="one Iceberg table, e.g. db.orders (default: every table)")
    @click.option("--namespace", default=None, help="only the tables of this Iceberg namespace (and below it)")
    @click.option("--into", required=True, help="with --table the catalog table (acme.core.orders); without, "
                  "the catalog (acme): Iceberg table ns.t lands in acme.ns.t")
    @click.option("--watch", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
                  help="keep syncing every SECONDS until interrupted (Ctrl-C)")
    @click.option("--max-syncs", type=click.IntRange(min=1), default=None, help="with --watch, stop after N syncs")
    @click.option("--token", default=None, envvar="SEMCAT_TOKEN")
    @create_option
    def import_iceberg(data_dir, catalog_uri, warehouse, catalog_name, table, namespace, into, watch, max_syncs,
                       token, create) -> None:
        """Import Iceberg tables with their snapshot history, or sync them: only new snapshots are added.
        Idempotent: a re-run writes nothing for a table that is up to date."""
        if table is not None and (namespace is not None or watch is not None):
            raise click.UsageError("--table imports one table; --namespace and --watch go with a whole catalog "
                                   "(leave out --table)")
        if table is not None:
            run_import(data_dir, catalog_uri, warehouse, table, into, token, catalog_name=catalog_name, create=create)
            return
        run_import_many(data_dir, catalog_uri, warehouse, namespace, into, token, catalog_name=catalog_name,
                        create=create, watch=watch, max_syncs=max_syncs)

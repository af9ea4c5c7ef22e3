"""The snapshot cache of agent SQL: the decoded rows of a table's exact file set, held in memory
by the SQL worker and reused by every later statement, at any vid, that reads the same files.

What identifies the rows (`cache.Entry.data`): a digest over the table's view body (which names
every file path, the columns and their types) and each file's `lstat` (device, inode, size,
mtime, mode) when the entry was built. A later vid with one more file, one less, a file
rewritten in place (new inode, size or mtime) or a schema change has another digest, so it never
reads rows cached for different files; a vid with the very same files shares the rows.

Where they live: in each worker process (`worker`), a second DuckDB database of its own (the
"snapshot database"), created locked down with no readable files at all, holding
`__semcat_cache.main."t_<digest>"` native tables, and, per statement, views named like the
catalog's (`catalog.namespace.table`) over those tables. A statement runs there when every table
it names is held (a hit, no Parquet decoded); otherwise it runs as before, on the worker's
database of views over the files. Its tables are materialized (read through that sandboxed
database, copied in as Arrow) on their second use: when a later statement on the same worker names
them again (it waits for the copy, then reads memory), or before that database makes way for
another view set; each only while its files still have the `lstat` they had when the first
statement read them. So the first statement on a table, and the ones right after it on other
tables (a tool's warnings read the load log next), never wait for a copy: they run as without the
cache. `warm` (what `describe_table` starts in the background) copies at once, and `prepare` (what
a server starts with) copies the snapshot's tables before its first statement, up to `PRELOAD_MAX`.

What the agent sees does not change: statements that look at DuckDB's catalog (`duckdb_*()`,
`information_schema`, `pg_catalog`, SHOW, PRAGMA: `sandbox.Checked.introspect`) or name the
cache's database (`PREFIX`) always run on the views over the files, and a statement whose name
lookup fails on the snapshot database (a catalog or binder error, whose hints could name cached
tables) is run again there; the snapshot database holds only the views of the statement's own
snapshot (rebuilt when the snapshot changes), each pointing at its own digest's table.

Bounded: each worker holds at most `budget()` bytes of tables (Arrow's `nbytes` of the rows
when they were copied in; default `DEFAULT_FRACTION` of the machine's RAM up to `DEFAULT_MAX`,
`SEMCAT_SQL_CACHE_BYTES` or `set_budget` otherwise; 0 turns the cache off), least recently used
out first; a table larger than the budget is never cached. The worker's address-space limit
grows by the budget (`worker`)."""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import Any

__all__ = ["PREFIX", "PRELOAD_MAX", "budget", "set_budget", "default_budget", "names_cache", "Store", "DEFAULT_FRACTION",
           "DEFAULT_MAX"]

PREFIX = "__semcat_cache"
DEFAULT_FRACTION = 8          # a worker holds at most 1/8 of RAM ...
DEFAULT_MAX = 4 << 30         # ... and at most 4 GiB
WARM_TIMEOUT_S = 60.0         # materializing one table stops after this long (then it is not cached)
PRELOAD_MAX = 256 << 20       # `reader.prepare` copies a snapshot's tables in until a worker holds this much
_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_bytes(raw: str, what: str = "SEMCAT_SQL_CACHE_BYTES") -> int:
    """'512MiB', '2G', '1000000' -> bytes; ValueError saying what was wrong otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", raw)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise ValueError(f"{what} must be a number of bytes such as 536870912, 512MiB or 2GiB (0 turns the "
                         f"snapshot cache off), got {raw!r}")
    return int(m.group(1)) * _UNITS[unit]


def _ram() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def default_budget() -> int:
    """`SEMCAT_SQL_CACHE_BYTES` when set, else 1/`DEFAULT_FRACTION` of RAM, at most `DEFAULT_MAX`."""
    raw = os.environ.get("SEMCAT_SQL_CACHE_BYTES")
    if raw is not None:
        return parse_bytes(raw)
    return min(_ram() // DEFAULT_FRACTION, DEFAULT_MAX)


_budget = default_budget()


def budget() -> int:
    """Bytes of decoded tables each SQL worker may hold (0: the cache is off)."""
    return _budget


def set_budget(n: int) -> None:
    """Let each SQL worker hold `n` bytes of decoded tables (0 turns the cache off). Workers
    started before keep the address-space limit they got; new statements use the new budget."""
    global _budget
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 1 << 40:
        from catalog_core.errors import InvalidValueError

        raise InvalidValueError(f"the snapshot cache budget must be a number of bytes from 0 to 1 TiB, got {n!r}")
    _budget = n


def names_cache(sql: str) -> bool:
    """Does the statement's text mention the cache's database (then it runs on the file views)?"""
    return PREFIX in sql.lower()


Parts = tuple[str, str, str]


class Store:
    """The worker side: the snapshot database and its LRU of tables. Invariants: `tables` holds
    exactly the digests whose table exists in `PREFIX`, oldest use first, and `held` is the sum of
    their sizes, never above `limit`; `views` maps each catalog view now in the database to the
    digest of the table it reads, and every such digest is in `tables`; the database's settings
    are locked and it reads no file."""

    def __init__(self, timeout_s: float, memory_limit: int, limit: int) -> None:
        from catalog_core.sql import duck
        from catalog_core.sql.sandbox import lock_down

        self.settings = (float(timeout_s), memory_limit, limit)
        self.limit = limit
        self.db = duck.connect(True, timeout_s, memory_limit + limit)
        self.db.execute(f"ATTACH ':memory:' AS {PREFIX}")
        lock_down(self.db, [])
        self.tables: OrderedDict[str, int] = OrderedDict()
        self.held = 0
        self.refused: set[str] = set()   # digests that cannot be cached (too large, types differ, failed)
        self.key: str | None = None       # the view set (`Job.key`) whose views the database holds
        self.views: dict[Parts, str] = {}
        # the database's fingerprint (`use`'s `fingerprint`: the worker's attached-databases listing)
        # after its views were last changed
        self.fp: str | None = None
        self.attached: dict[str, bool] = {}
        self.home = "memory"              # the database's current database (`USE`d by `use`)

    def close(self) -> None:
        self.db.close()

    def stats(self) -> dict[str, Any]:
        return {"held": self.held, "limit": self.limit, "tables": list(self.tables)}

    def wanted(self, cache: dict[Parts, str], names: frozenset[str] | None) -> list[Parts]:
        """The tables of the view set that the statement names (every one when `names` is None)."""
        return [p for p in cache if names is None or p[2].lower() in names]

    def serves(self, cache: dict[Parts, str], names: frozenset[str] | None) -> bool:
        """Is every table the statement names held (and does it name any)?"""
        want = self.wanted(cache, names) if names is not None else []
        return bool(want) and all(cache[p] in self.tables for p in want)

    def use(self, key: str, home: str | None, cache: dict[Parts, str], names: frozenset[str] | None,
            fingerprint: Any) -> None:
        """The database ready for a statement of view set `key` naming `names`: the views of
        that set's held tables it names, nothing of another set."""
        from catalog_core.sql import duck
        from catalog_core.sql.types import quote_ident

        changed = False
        if self.key != key:
            self.db.execute("USE memory")
            self.home = "memory"
            dbs = [r[0] for r in self.db.execute(
                "SELECT database_name FROM duckdb_databases() WHERE NOT internal AND database_name NOT IN "
                f"('memory', 'system', 'temp', '{PREFIX}')").fetchall()]
            for name in dbs:
                self.db.execute(f"DETACH {quote_ident(name)}")
            for parts in [p for p in self.views if p[0].lower() == "memory"]:  # the default database's
                self.db.execute(f"DROP VIEW IF EXISTS {'.'.join(quote_ident(p) for p in parts)}")
            self.views = {}
            self.key, changed = key, True
            self.attached = {}
            if home is not None and duck.attach(self.db, home, self.attached):
                self.db.execute(f"USE {quote_ident(home)}")
                self.home = home
        for parts in self.wanted(cache, names):
            digest = cache[parts]
            if self.views.get(parts) == digest or digest not in self.tables:
                continue
            if not duck.attach(self.db, parts[0], self.attached):
                continue
            cat_, ns, tbl = (quote_ident(p) for p in parts)
            self.db.execute(f"CREATE SCHEMA IF NOT EXISTS {cat_}.{ns}")
            self.db.execute(f"CREATE OR REPLACE VIEW {cat_}.{ns}.{tbl} AS SELECT * FROM {self.table(digest)}")
            self.views[parts] = digest
            changed = True
        for parts in self.wanted(cache, names):
            self.touch(cache[parts])
        if changed or self.fp is None:
            self.fp = fingerprint(self.db)

    @staticmethod
    def table(digest: str) -> str:
        return f'{PREFIX}.main."t_{digest}"'

    def touch(self, digest: str) -> None:
        if digest in self.tables:
            self.tables.move_to_end(digest)

    def evict(self, digest: str) -> None:
        from catalog_core.sql.types import quote_ident

        size = self.tables.pop(digest)
        self.held -= size
        for parts, d in list(self.views.items()):
            if d == digest:
                self.db.execute(f"DROP VIEW IF EXISTS {'.'.join(quote_ident(p) for p in parts)}")
                del self.views[parts]
                self.fp = None
        self.db.execute(f"DROP TABLE IF EXISTS {self.table(digest)}")

    def add(self, plain: Any, parts: Parts, digest: str, timeout_s: float = WARM_TIMEOUT_S) -> bool:
        """Copy the rows of view `parts` of database `plain` (the sandboxed views over the
        statement's files) in as `digest`'s table, evicting the least recently used tables to stay
        within the budget; whether it is held now. The read stops after `timeout_s` (then the
        table is not cached)."""
        import threading

        from catalog_core.sql import duck
        from catalog_core.sql.types import quote_ident

        if digest in self.tables:
            self.touch(digest)
            return True
        if digest in self.refused:
            return False
        target = ".".join(quote_ident(p) for p in parts)
        cur = plain.cursor()
        timer = threading.Timer(max(0.1, min(timeout_s, WARM_TIMEOUT_S)), duck.interrupter(cur))
        timer.daemon = True
        timer.start()
        try:
            rel = cur.sql(f"SELECT * FROM {target}")
            want_types = [str(t) for t in rel.types]
            rows = rel.to_arrow_table()
        except Exception:
            self.refused.add(digest)
            return False
        finally:
            timer.cancel()
            cur.close()
        size = int(rows.nbytes)
        if size > self.limit:
            self.refused.add(digest)
            return False
        while self.tables and self.held + size > self.limit:
            self.evict(next(iter(self.tables)))
        cur = self.db.cursor()
        try:
            cur.register("__semcat_rows", rows)
            cur.execute(f"CREATE TABLE {self.table(digest)} AS SELECT * FROM __semcat_rows")
            got = [str(t) for t in cur.sql(f"SELECT * FROM {self.table(digest)} LIMIT 0").types]
        except Exception:
            self.refused.add(digest)
            self.db.execute(f"DROP TABLE IF EXISTS {self.table(digest)}")
            return False
        finally:
            cur.close()
            del rows
        if got != want_types:  # a type Arrow does not carry back as it was: read from the files instead
            self.db.execute(f"DROP TABLE {self.table(digest)}")
            self.refused.add(digest)
            return False
        self.tables[digest] = size
        self.held += size
        return True

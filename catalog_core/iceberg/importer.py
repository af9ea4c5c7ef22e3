"""Replay an Iceberg table's snapshot history into the catalog, one backdated commit per snapshot.

Planning reads everything first (manifest lists, the manifests each new snapshot wrote, schemas)
and checks every feature it needs, so bad input raises before anything is written. Then each step
is one catalog transaction that also records the Iceberg snapshot it reached on the table
(`properties.iceberg.snapshot_id`): an import stopped half way resumes where it stopped.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, TransactionAPI
from catalog_core.errors import AlreadyExistsError, InvalidValueError, NoSuchTableError, PreconditionError
from catalog_core.iceberg import convert
from catalog_core.iceberg import stats as st
from catalog_core.model import JSONScalar
from catalog_core.paths import parent_of

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog as IcebergCatalog
    from pyiceberg.manifest import DataFile, ManifestFile
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["AUTHOR", "ImportResult", "Progress", "import_table", "sync_table", "catalog_tables", "target_name"]

AUTHOR = "import:iceberg"
Progress = Callable[[str, int, int], None]   # (stage, done, total): stage "read" (manifests) or "commit" (files)


@dataclass
class ImportResult:
    table: str                                     # catalog.namespace.table
    source: str                                    # the Iceberg identifier
    snapshot_id: int | None                        # the Iceberg snapshot the table is synced to
    commits: list[tuple[int | None, int]] = field(default_factory=list)  # (snapshot id or None, catalog vid)
    files_added: int = 0
    files_removed: int = 0
    clamped: int = 0                               # commits later than their snapshot (catalog history)

    @property
    def up_to_date(self) -> bool:
        """True when nothing had to be written."""
        return not self.commits


_Chain = tuple[tuple[str, JSONScalar], ...]   # a file's partition values, level by level: ((column, value), ...)
_Rekey = tuple[dict[str, int], dict[int, str]]   # a rename's (old name -> id, id -> new name)


@dataclass
class _Step:
    snapshot_id: int | None          # None: a schema-only step
    time_ms: int
    operation: str
    schema: dict[str, Any]
    added: list[tuple[_Chain, dict[str, Any]]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)   # (partition path, file path)
    sequence_number: int | None = None


def _noop(stage: str, done: int, total: int) -> None:
    return None


class _Source:
    """What the importer reads from one pyiceberg table."""

    def __init__(self, iceberg_catalog: IcebergCatalog, identifier: str) -> None:
        from pyiceberg.exceptions import NoSuchNamespaceError
        from pyiceberg.exceptions import NoSuchTableError as IceNoSuchTable

        if not isinstance(identifier, str) or not identifier.strip():
            raise InvalidValueError(f"the Iceberg table identifier must be text like 'db.table', got {identifier!r}")
        if not hasattr(iceberg_catalog, "load_table"):
            raise InvalidValueError(f"iceberg_catalog must be a pyiceberg catalog (pyiceberg.catalog.load_catalog(...)), "
                                    f"got {type(iceberg_catalog).__name__}")
        try:
            self.table = iceberg_catalog.load_table(identifier)
        except (IceNoSuchTable, NoSuchNamespaceError, ValueError) as exc:
            raise NoSuchTableError(f"Iceberg table {identifier!r} was not found in catalog "
                                   f"{getattr(iceberg_catalog, 'name', '?')!r} ({exc}); list its tables with "
                                   "iceberg_catalog.list_tables('<namespace>')", name=identifier) from None
        self.identifier = identifier
        self.md = self.table.metadata
        self.io = self.table.io
        self.uuid = str(self.md.table_uuid)
        self.location = self.table.metadata_location
        self.schemas = {s.schema_id: s for s in self.md.schemas}

    def sha256(self) -> str | None:
        try:
            with self.io.new_input(self.location).open() as fh:
                return hashlib.sha256(fh.read()).hexdigest()
        except Exception:  # the hash is provenance, not a precondition
            return None

    def schema_of(self, snap: Snapshot) -> IcebergSchema:
        sid = getattr(snap, "schema_id", None)
        return self.schemas.get(sid, self.md.schema()) if sid is not None else self.md.schema()

    def ancestry(self) -> list[Snapshot]:
        """The main branch's snapshots, oldest first."""
        out, sid = [], self.md.current_snapshot_id
        seen: set[int] = set()
        while sid is not None and sid not in seen:
            snap = self.md.snapshot_by_id(sid)
            if snap is None:
                break
            seen.add(sid)
            out.append(snap)
            sid = snap.parent_snapshot_id
        return out[::-1]

    def check_table(self) -> None:
        name = self.identifier
        if self.md.format_version > 2:
            raise convert.unsupported(f"format version {self.md.format_version} is not supported (1 and 2 are)", name)
        specs = self.md.partition_specs
        if len(specs) > 1:
            raise convert.unsupported(f"the table has {len(specs)} partition specs (partition evolution); semcat "
                                       "imports tables with one spec", name, spec_ids=[s.spec_id for s in specs])
        mode = (self.md.properties or {}).get("write.delete.mode", "copy-on-write")
        if mode == "merge-on-read":
            raise convert.unsupported("write.delete.mode is merge-on-read (row-level delete files)", name)

    def manifests(self, snap: Snapshot) -> list[ManifestFile]:
        from pyiceberg.manifest import ManifestContent

        out: list[ManifestFile] = snap.manifests(self.io)
        for m in out:
            if m.content != ManifestContent.DATA:
                raise convert.unsupported(f"snapshot {snap.snapshot_id} has delete files (position or equality "
                                           "deletes, merge-on-read)", self.identifier, snapshot_id=snap.snapshot_id)
        return out

    def _data(self, df: DataFile, snap: Snapshot) -> DataFile:
        from pyiceberg.manifest import DataFileContent, FileFormat

        if df.content != DataFileContent.DATA:
            raise convert.unsupported(f"snapshot {snap.snapshot_id} has delete files", self.identifier,
                                       snapshot_id=snap.snapshot_id)
        if df.file_format != FileFormat.PARQUET:
            raise convert.unsupported(f"data file {df.file_path} is {df.file_format.value}, not Parquet",
                                       self.identifier, path=df.file_path)
        return df

    def changes(self, snap: Snapshot, manifests: list[ManifestFile], progress: Progress,
                counter: list[int]) -> tuple[list[DataFile], list[DataFile]]:
        """(added, removed) data files of `snap`: the entries its own manifests mark ADDED or DELETED."""
        from pyiceberg.manifest import ManifestEntryStatus

        added, removed = [], []
        for m in manifests:
            if m.added_snapshot_id != snap.snapshot_id:
                continue
            for e in m.fetch_manifest_entry(self.io, discard_deleted=False):
                if e.snapshot_id != snap.snapshot_id:
                    continue
                if e.status == ManifestEntryStatus.ADDED:
                    added.append(self._data(e.data_file, snap))
                elif e.status == ManifestEntryStatus.DELETED:
                    removed.append(self._data(e.data_file, snap))
            counter[0] += 1
            progress("read", counter[0], counter[1])
        return added, removed

    def live(self, snap: Snapshot, manifests: list[ManifestFile], progress: Progress, counter: list[int]) -> list[DataFile]:
        """Every data file of `snap`."""
        out = []
        for m in manifests:
            out += [self._data(e.data_file, snap) for e in m.fetch_manifest_entry(self.io, discard_deleted=True)]
            counter[0] += 1
            progress("read", counter[0], counter[1])
        return out


def _op_name(snap: Snapshot) -> str:
    op = getattr(getattr(snap, "summary", None), "operation", None)
    return str(getattr(op, "value", op or "unknown"))


class _Importer:
    def __init__(self, cat: CatalogAPI, src: _Source, into: str, progress: Progress | None) -> None:
        self.cat, self.src, self.into = cat, src, into
        self.progress = progress or _noop
        self.tpath = lake.table_path(into)
        src.check_table()
        self.levels = convert.partition_by(src.md.spec(), src.md.schema(), src.identifier)
        self.known_parts: set[str] = set()
        self.stored_schema: dict[str, Any] | None = None
        self.synced: int | None = None
        self.exists = False
        self.result = ImportResult(into, src.identifier, None)

    # ---------------------------------------------------------------- the target table
    def load_target(self, must_exist: bool) -> None:
        obj = self.cat.get(self.tpath)
        if obj is None:
            if must_exist:
                raise NoSuchTableError(f"{self.into} does not exist, so there is nothing to sync; import it first "
                                       f"with catalog_core.iceberg.import_table(cat, iceberg_catalog, "
                                       f"{self.src.identifier!r}, into={self.into!r})", name=self.into)
            for anc in (parent_of(parent_of(self.tpath)), parent_of(self.tpath)):
                found = self.cat.get(anc)
                if found is not None and found.value.get("obj_type") not in ("catalog", "namespace"):
                    raise AlreadyExistsError(f"{anc} exists and is a {found.value.get('obj_type')!r}, not a catalog "
                                             f"or namespace; choose another `into`", path=anc)
            return
        value = obj.value
        if not lake.is_table(value):
            raise AlreadyExistsError(f"{self.tpath} exists and is a {value.get('obj_type')!r}, not a table; choose "
                                     "another `into`", path=self.tpath)
        table = lake.TableValue.from_raw(value)
        ice = ((table.properties or {}).get("iceberg")) or {}
        if ice.get("uuid") != self.src.uuid:
            what = (f"was imported from Iceberg table {ice.get('table')!r} (uuid {ice.get('uuid')})" if ice
                    else "was not imported from Iceberg")
            raise AlreadyExistsError(f"{self.into} already exists and {what}, not from {self.src.identifier!r} "
                                     f"(uuid {self.src.uuid}); import into a new table name", name=self.into)
        want = [lv.spec for lv in self.levels]
        have = [p.to_raw() for p in table.partition_by]
        if have != want:
            raise PreconditionError(f"{self.into} is partitioned by {have if table.has_partition_by else None}, the Iceberg table "
                                    f"{self.src.identifier!r} now by {want}; import it into a new table name",
                                    name=self.into)
        self.exists = True
        self.synced = ice.get("snapshot_id")
        self.result.snapshot_id = self.synced
        self.stored_schema = table.schema.to_raw() if table.has_schema else None  # compared with the raw schemas it writes
        steps = lake.exact_query(self.tpath)
        for _ in self.levels:
            steps += '/[obj_type = "partition"]'
            self.known_parts.update(o.path for o in self.cat.query(steps))

    # ---------------------------------------------------------------- planning
    def _chain(self, df: DataFile) -> _Chain:
        part = df.partition
        return tuple((lv.name, lv.value(part[i])) for i, lv in enumerate(self.levels))

    def _ppath(self, chain: _Chain) -> str:
        cur = self.tpath
        for col, v in chain:
            seg = lake.partition_id(col, v)
            if "/" in seg or "\x00" in seg:
                raise convert.unsupported(f"partition value {v!r} of {col!r} holds '/' or NUL and cannot name a "
                                           "catalog partition", self.src.identifier, partition_field=col)
            cur = f"{cur}/{seg}"
        return cur

    def _step(self, snap: Snapshot, added: list[DataFile], removed: list[DataFile]) -> _Step:
        schema = self.src.schema_of(snap)
        cschema = convert.catalog_schema(schema, self.src.identifier)
        step = _Step(snap.snapshot_id, int(snap.timestamp_ms), _op_name(snap), cschema,
                     sequence_number=getattr(snap, "sequence_number", None))
        decoder = convert.FileDecoder(schema)
        checked: set[_Chain] = set()
        for df in added:
            chain = self._chain(df)
            if chain not in checked:
                self._ppath(chain)
                checked.add(chain)
            step.added.append((chain, decoder.value(df)))
        step.removed = [(self._ppath(self._chain(df)), df.file_path) for df in removed]
        return step

    def plan(self) -> list[_Step]:
        src = self.src
        chain = src.ancestry()
        ids = [s.snapshot_id for s in chain]
        reset = False
        if self.synced is None:                  # a first import (or one of a table that had no snapshot)
            todo, full_first = chain, True
        elif self.synced in ids:
            todo, full_first = chain[ids.index(self.synced) + 1:], False
        else:  # the history was rewritten (rollback, expiry, a replaced branch): one step to the current state
            todo, full_first, reset = chain[-1:], True, True
        lists = [src.manifests(s) for s in todo]    # checks every new snapshot for delete files first
        counter = [0, sum(len(ms) if (i == 0 and full_first) else
                          sum(1 for m in ms if m.added_snapshot_id == s.snapshot_id)
                          for i, (s, ms) in enumerate(zip(todo, lists, strict=False)))]
        steps: list[_Step] = []
        for i, (snap, ms) in enumerate(zip(todo, lists, strict=False)):
            if i == 0 and full_first:
                step = self._step(snap, src.live(snap, ms, self.progress, counter), [])
                if self.exists:   # diff against the files the table holds
                    step = self._reset(step, reset)
            else:
                step = self._step(snap, *src.changes(snap, ms, self.progress, counter))
            steps.append(step)
        current = convert.catalog_schema(src.md.schema(), src.identifier)
        last = steps[-1].schema if steps else self.stored_schema
        if last != current or (not steps and not self.exists):
            steps.append(_Step(None, int(src.md.last_updated_ms), "schema", current))
        return steps

    def _reset(self, step: _Step, rewritten: bool) -> _Step:
        have = {str(f.value.get("path")): parent_of(f.path) for f in self.cat.plan_files(self.into)}
        want = {v["path"] for _c, v in step.added}
        step.added = [(c, v) for c, v in step.added if v["path"] not in have]
        step.removed = [(pp, p) for p, pp in have.items() if p not in want]
        if rewritten:
            step.operation = f"reset to {step.operation}"
        return step

    # ---------------------------------------------------------------- committing
    def _time(self, step: _Step) -> tuple[float, bool]:
        t = step.time_ms / 1000.0
        latest = self.cat.latest_vid
        if latest > 0:
            last = self.cat.commits(since=latest)
            if last and last[-1].time > t:
                return last[-1].time, True
        return t, False

    def _meta(self, step: _Step, sha: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"provenance": "import", "source": "iceberg", "iceberg_table": self.src.identifier,
                                "iceberg_table_uuid": self.src.uuid, "iceberg_snapshot_id": step.snapshot_id,
                                "iceberg_operation": step.operation, "iceberg_timestamp_ms": step.time_ms,
                                "source_file": self.src.location}
        if sha:
            meta["source_sha256"] = sha
        if step.sequence_number is not None:
            meta["iceberg_sequence_number"] = step.sequence_number
        return meta

    def _table_value(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {"obj_type": "table", "location": self.src.md.location, "format": "parquet", "schema": schema,
                "partition_by": [lv.spec for lv in self.levels], "stats": st.empty(),
                "properties": {"iceberg": self._props(None)}}

    def _props(self, snapshot_id: int | None) -> dict[str, Any]:
        return {"table": self.src.identifier, "uuid": self.src.uuid, "snapshot_id": snapshot_id,
                "format_version": int(self.src.md.format_version), "metadata_location": self.src.location}

    def run(self, steps: list[_Step]) -> ImportResult:
        total = sum(len(s.added) + len(s.removed) for s in steps)
        done = 0
        self.progress("commit", 0, total)
        sha = self.src.sha256() if steps else None
        for step in steps:
            t, clamped = self._time(step)
            what = f"snapshot {step.snapshot_id} ({step.operation})" if step.snapshot_id is not None else (
                f"schema {step.schema.get('schema_id')}")
            msg = f"iceberg {self.src.identifier} {what}: +{len(step.added)} -{len(step.removed)} files"
            with self.cat.transaction(author=AUTHOR, message=msg, meta=self._meta(step, sha), time=t) as txn:
                self._apply(txn, step)
            assert txn.vid is not None
            self.result.commits.append((step.snapshot_id, txn.vid))
            self.result.files_added += len(step.added)
            self.result.files_removed += len(step.removed)
            self.result.clamped += int(clamped)
            if step.snapshot_id is not None:
                self.result.snapshot_id = self.synced = step.snapshot_id
            done += len(step.added) + len(step.removed)
            self.progress("commit", done, total)
        return self.result

    def _apply(self, txn: TransactionAPI, step: _Step) -> None:
        tpath = self.tpath
        rekey: tuple[dict[str, int], dict[int, str]] | None = None
        if not self.exists:
            for anc, kind in ((parent_of(parent_of(tpath)), "catalog"), (parent_of(tpath), "namespace")):
                if self.cat.get(anc) is None:
                    txn.add(anc, {"obj_type": kind, "properties": {}})
            txn.add(tpath, self._table_value(step.schema))
            self.exists = True
        elif step.schema != self.stored_schema:
            txn.merge(tpath, {"schema": {"op": "set", "val": step.schema}})
            old = {c.name: c.id for c in lake.Schema.from_raw(self.stored_schema).columns if c.id is not None}
            new = {c["id"]: c["name"] for c in step.schema["columns"]}
            if any(new.get(i) != n for n, i in old.items()):
                rekey = (old, new)
                self._rekey_all(txn, rekey)
        self.stored_schema = step.schema
        names = {c["id"]: c["name"] for c in step.schema["columns"]}
        self._files(txn, step, names, rekey)
        ice: dict[str, Any] = {"metadata_location": self.src.location}
        if step.snapshot_id is not None:
            ice["snapshot_id"] = step.snapshot_id
        txn.merge(tpath, {"properties": {"iceberg": ice}})

    def _rekey_all(self, txn: TransactionAPI, rk: _Rekey) -> None:
        """A rename: table and partition stats follow the column ids to the new names."""
        objs = [self.cat.get(self.tpath)]
        steps = lake.exact_query(self.tpath)
        for _ in self.levels:
            steps += '/[obj_type = "partition"]'
            objs += txn.query(steps)
        for o in objs:
            cols = ((o.value.get("stats") or {}).get("columns")) if o is not None else None
            if o is not None and cols:
                txn.merge(o.path, {"stats": {"columns": {"op": "set", "val": st.rekey(cols, *rk)}}})

    def _files(self, txn: TransactionAPI, step: _Step, names: dict[int, str], rk: _Rekey | None) -> None:
        """A step's added and removed files into the tree, then every touched level's stats, bottom-up:
        a level that only gained files merges what was added; one that lost files (and its
        ancestors) is recomputed from its files or children."""
        added, by_leaf, chains = self._add_files(txn, step)
        for paths in chains.values():   # roll each deepest partition's additions up to its ancestors
            for p in paths[:-1]:
                st.add(added[p], added[paths[-1]])
        post, dirty = self._remove_files(txn, step, names, by_leaf)
        for level in range(len(self.levels), -1, -1):
            level_paths = {p for p in added.keys() | dirty if p.count("/") - self.tpath.count("/") == level}
            for p in sorted(level_paths):
                if p not in dirty:
                    txn.merge(p, st.append_delta(added[p]))
                    continue
                if p not in post:   # an ancestor: combine its children's stats after this step
                    post[p] = self._children_stats(txn, p, added, dirty, post, rk)
                txn.merge(p, st.set_delta(post[p]))

    def _add_files(self, txn: TransactionAPI, step: _Step) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]],
                                                                    dict[_Chain, list[str]]]:
        """Add the step's files (and partitions not yet known): the stats added per deepest path,
        the file values per deepest path, and each partition chain's paths from the table down."""
        tpath = self.tpath
        added: dict[str, dict[str, Any]] = defaultdict(st.empty)     # path (partition or table) -> added stats
        by_leaf: dict[str, list[dict[str, Any]]] = defaultdict(list)  # deepest path -> added file values
        chains: dict[_Chain, list[str]] = {}
        for chain, value in step.added:
            paths = chains.get(chain)
            if paths is None:
                cur, values = tpath, {}
                paths = [tpath]
                for col, v in chain:
                    cur = f"{cur}/{lake.partition_id(col, v)}"
                    values[col] = v
                    paths.append(cur)
                    if cur not in self.known_parts:
                        txn.add(cur, {"obj_type": "partition", **values, "stats": st.empty()})
                        self.known_parts.add(cur)
                chains[chain] = paths
            txn.add(f"{paths[-1]}/{convert.leaf_id(value['path'])}", value, leaf=True)
            by_leaf[paths[-1]].append(value)
            st.add(added[paths[-1]], st.of_file(value))
        return added, by_leaf, chains

    def _remove_files(self, txn: TransactionAPI, step: _Step, names: dict[int, str],
                      by_leaf: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, dict[str, Any]], set[str]]:
        """Remove the step's removed files: the recomputed stats of each partition that lost files,
        and the paths (those partitions and their ancestors) whose stats must be recomputed."""
        tpath = self.tpath
        removed: dict[str, set[str]] = defaultdict(set)
        for ppath, fpath in step.removed:
            removed[ppath].add(fpath)
        post: dict[str, dict[str, Any]] = {}
        dirty: set[str] = set()
        for ppath, gone in removed.items():
            current = {o.value.get("path"): o for o in txn.query(lake.exact_query(ppath, '[obj_type = "file"]'))}
            missing = sorted(gone - set(current))
            if missing:
                raise PreconditionError(f"{self.into} is out of sync with Iceberg table {self.src.identifier!r}: "
                                        f"snapshot {step.snapshot_id} removes {missing[0]}, which the catalog does "
                                        "not hold under " + ppath + "; re-import into a new table name",
                                        path=ppath, file=missing[0])
            keep = []
            for p, o in current.items():
                if p in gone:
                    txn.remove(o.path)
                else:
                    keep.append(st.of_file(o.value, names))
            post[ppath] = st.combine(keep + [st.of_file(v) for v in by_leaf.get(ppath, [])])
            cur = ppath
            while cur != tpath:
                dirty.add(cur)
                cur = parent_of(cur)
            dirty.add(tpath)
        return post, dirty

    def _children_stats(self, txn: TransactionAPI, p: str, added: dict[str, dict[str, Any]], dirty: set[str],
                        post: dict[str, dict[str, Any]], rk: _Rekey | None) -> dict[str, Any]:
        """The stats of `p` after this step, combined from its child partitions' (stored, rekeyed
        by `rk` after a rename, plus what was added; or recomputed this step)."""
        kids = {}
        for o in txn.query(lake.exact_query(p, '[obj_type = "partition"]')):
            cols = (o.value.get("stats") or {})
            if rk is not None:
                cols = {**cols, "columns": st.rekey(cols.get("columns") or {}, *rk)}
            kids[o.path] = st.add(st.from_stats(cols), added.get(o.path, st.empty()))
        for kid in [k for k in added.keys() | dirty if parent_of(k) == p]:
            kids[kid] = post[kid] if kid in post else kids.get(kid, added[kid])
        return st.combine(list(kids.values()))


def _into(into: object) -> str:
    if not isinstance(into, str):
        raise InvalidValueError(f"into must be a table name 'catalog.namespace.table', got {into!r}")
    try:
        lake.table_path(into)
    except InvalidValueError as exc:
        raise InvalidValueError(f"into: {exc.message}", into=into) from None
    return into


def import_table(cat: CatalogAPI, iceberg_catalog: IcebergCatalog, identifier: str, into: str,
                 progress: Progress | None = None) -> ImportResult:
    """Import Iceberg table `identifier` (e.g. "db.t") from a pyiceberg catalog into table `into`
    (`catalog.namespace.table`), replaying its snapshot history as backdated commits. Into a table
    this function imported before, only new snapshots are imported (as `sync_table`)."""
    imp = _Importer(cat, _Source(iceberg_catalog, identifier), _into(into), progress)
    imp.load_target(must_exist=False)
    return imp.run(imp.plan())


def sync_table(cat: CatalogAPI, iceberg_catalog: IcebergCatalog, identifier: str, into: str,
               progress: Progress | None = None) -> ImportResult:
    """Bring `into`, imported earlier from Iceberg table `identifier`, up to the table's current
    snapshot: one commit per new snapshot, plus one for a schema change made after the last one."""
    imp = _Importer(cat, _Source(iceberg_catalog, identifier), _into(into), progress)
    imp.load_target(must_exist=True)
    return imp.run(imp.plan())


def catalog_tables(iceberg_catalog: IcebergCatalog, namespace: str | None = None) -> list[str]:
    """The identifiers (`ns.table`, nested namespaces dotted) of every table of an Iceberg catalog, or
    of one namespace and the namespaces below it, in name order."""
    todo: list[tuple[str, ...]] = []
    if namespace:
        todo.append(tuple(namespace.split(".")))
    else:
        todo.extend(tuple(ns) for ns in iceberg_catalog.list_namespaces())
    out: list[str] = []
    seen: set[tuple[str, ...]] = set()
    while todo:
        ns = todo.pop()
        if ns in seen:
            continue
        seen.add(ns)
        try:
            out.extend(".".join(tuple(t)) for t in iceberg_catalog.list_tables(ns))
            todo.extend(tuple(child) for child in iceberg_catalog.list_namespaces(ns) if tuple(child) != ns)
        except Exception as exc:  # pyiceberg's NoSuchNamespaceError and what a REST catalog answers
            if namespace and ns == tuple(namespace.split(".")):
                raise NoSuchTableError(f"Iceberg namespace {namespace!r} was not found ({exc}); list the "
                                       "catalog's namespaces or import the whole catalog", name=namespace) from None
            raise
    return sorted(set(out))


def target_name(into_catalog: str, identifier: str) -> str:
    """The catalog table an Iceberg table lands in: `<into_catalog>.<namespace>.<table>`, a nested
    namespace's levels joined by '_' (semcat has one namespace level)."""
    *ns, table = identifier.split(".")
    return f"{into_catalog}.{'_'.join(ns)}.{table}"


# The pieces the Iceberg REST commits (catalog_core.iceberg.rest) reuse: one file and stats
# bookkeeping for imports and REST commits.
Importer = _Importer
Step = _Step
Source = _Source
noop = _noop

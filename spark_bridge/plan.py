"""Turn staged writes into one catalog transaction's operations.

Appends are blind: existence and schema are read at the transaction's read vid *outside* the
transaction (unrecorded), so the write set is adds of new leaves and partitions plus commutative
stats merges, and concurrent appends to one table never conflict. A partition that was missing
at the read vid is added; if another writer created it meanwhile the commit fails with
AlreadyExistsError and the bridge re-plans. Overwrites read the replaced partitions inside the
transaction (recorded, so a concurrent change there aborts them) and `set` recomputed stats.
A schema change `set`s the schema guarded by a precision-locked read of `schema.schema_id`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from catalog_core.lake import (
    TableValue,
    exact_query,
    lineage_deltas,
    partition_columns,
    partition_id,
    quote,
    table_path,
)
from catalog_core.paths import parent_of
from catalog_core.sql.tables import names_at
from spark_bridge import stats as st
from spark_bridge.errors import BridgeError, SchemaEvolutionError
from spark_bridge.schema import evolve, replace

__all__ = ["StagedFile", "StagedWrite", "TableWrite", "CommitResult", "Planner", "query_of", "parent_path"]


@dataclass
class StagedFile:
    path: str                                   # final location, as stored in the file leaf
    file_id: str                                # the leaf's obj_id
    partition: tuple[tuple[str, Any], ...]      # ((column, value), ...) in partition_by order
    value: dict[str, Any]                       # the file leaf's value


@dataclass
class StagedWrite:
    table: str
    mode: str                                   # append | overwrite | compact
    partition_by: list[str]
    columns: list[dict[str, Any]]               # the written columns: name, type, nullable
    location: str
    write_id: str
    staging: str
    files: list[StagedFile]
    replaces: dict[str, list[str]] = field(default_factory=dict)  # compact: partition path -> old leaves
    schema_mode: str = "evolve"                 # evolve | replace (a full overwrite with the DataFrame's schema)
    # what the job read to produce this write: {dotted table: vid read, or None = "as this commit
    # leaves it" if the commit writes that table, else the vid the commit is planned against};
    # None: nothing known (the table's recorded lineage is left as it was)
    inputs: dict[str, int | None] | None = None
    job: str | None = None

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


@dataclass
class TableWrite:
    """What one write changed, as committed."""

    table: str
    mode: str
    write_id: str
    files_added: int = 0
    files_removed: int = 0
    rows_added: int = 0
    bytes_added: int = 0
    partitions: int = 0
    schema_id: int = 0
    schema_changed: bool = False
    dropped_files: list[str] = field(default_factory=list)  # compact: new files not committed


query_of = exact_query  # a path query matching exactly one path (obj_id seeks at every level)
parent_path = parent_of


def _partition_seg(col: str, value: Any) -> str:
    seg = partition_id(col, value)
    if "/" in seg or "\x00" in seg or seg.startswith("_"):
        raise BridgeError(f"partition value {value!r} of column {col!r} cannot be part of a catalog path "
                          "(it contains '/' or NUL, or the column starts with '_'); partition by a column "
                          "without such values", column=col)
    return seg


def chain(tpath: str, partition: tuple[tuple[str, Any], ...]) -> list[str]:
    """Partition paths from the first level down to the deepest."""
    out, cur = [], tpath
    for col, value in partition:
        cur = f"{cur}/{_partition_seg(col, value)}"
        out.append(cur)
    return out



@dataclass(frozen=True)
class CommitResult:
    """One catalog commit made by the bridge (vid None: nothing needed committing)."""

    vid: int | None
    attempts: int
    tables: tuple[TableWrite, ...]

    @property
    def files_added(self) -> int:
        return sum(t.files_added for t in self.tables)

    @property
    def rows_added(self) -> int:
        return sum(t.rows_added for t in self.tables)


class Planner:
    """Plans staged writes into `txn`; reads at txn.read_vid."""

    def __init__(self, cat: Any, txn: Any, hint: dict[str, Any]) -> None:
        self.cat, self.txn, self.vid, self.hint = cat, txn, txn.read_vid, hint
        self.known: dict[str, dict | None] = {}    # path -> value at read vid, plus our own adds
        self.at_read: dict[str, dict] = {}         # tables that existed at the read vid -> value then
        self.guarded: set[str] = set()             # tables whose schema_id this transaction checks
        self.summaries: list[TableWrite] = []
        self.written: set[str] = set()             # tables this transaction writes (set by the caller)

    # ------------------------------------------------------------ reads (unrecorded)
    def _get(self, path: str) -> dict | None:
        if path not in self.known:
            obj = self.cat.get(path, vid=self.vid)
            self.known[path] = None if obj is None else obj.value
        return self.known[path]

    def _ensure(self, path: str, value: dict[str, Any]) -> None:
        if self._get(path) is None:
            self.txn.add(path, value)
            self.known[path] = value

    def _prefetch(self, tpath: str, chains: list[list[str]]) -> None:
        """Learn which partitions exist with one query per partition level."""
        depth = max((len(c) for c in chains), default=0)
        for level in range(depth):
            wanted = {c[level] for c in chains} - set(self.known)
            if not wanted:
                continue
            steps = query_of(tpath)
            for lv in range(level + 1):
                ids = sorted({c[lv].rsplit("/", 1)[1] for c in chains})
                steps += "/[obj_id in (" + ", ".join(quote(i) for i in ids) + ")]"
            found = {o.path: o.value for o in self.cat.query(steps, vid=self.vid)}
            for p in wanted:
                self.known[p] = found.get(p)

    # ------------------------------------------------------------ tables
    def _table(self, w: StagedWrite, summary: TableWrite) -> str:
        tpath = table_path(w.table)
        c_path, ns_path = parent_path(parent_path(tpath)), parent_path(tpath)
        self._ensure(c_path, {"obj_type": "catalog", "properties": {}})
        self._ensure(ns_path, {"obj_type": "namespace", "properties": {}})
        if tpath not in self.known and (found := self._get(tpath)) is not None:
            self.at_read[tpath] = found  # (a table added earlier in this plan is not at_read)
        table = self._get(tpath)
        if table is None:
            evo = evolve(None, w.columns, w.table)
            value = {"obj_type": "table", "location": w.location, "format": "parquet", "schema": evo.schema,
                     "partition_by": list(w.partition_by), "stats": st.initial(), "properties": {}}
            self.txn.add(tpath, value)
            self.known[tpath] = value
            summary.schema_id, summary.schema_changed = 0, True
            return tpath
        if table.get("obj_type") != "table":
            raise BridgeError(f"{tpath} exists but is a {table.get('obj_type')!r}, not a table; pick another name")
        have = partition_columns(table)
        if [c.lower() for c in have] != [c.lower() for c in w.partition_by]:
            raise SchemaEvolutionError(f"{w.table} is partitioned by {have}, the write by {w.partition_by}; "
                                       "partitioning cannot change; write with the table's partition_by")
        if w.schema_mode == "replace":
            evo = replace(TableValue.from_raw(table).schema, w.columns, w.table)
        else:
            evo = evolve(TableValue.from_raw(table).schema, w.columns, w.table)
        if evo.changed:
            self._guard_schema(tpath)
            self.txn.merge(tpath, {"schema": {"op": "set", "val": evo.schema}})
            self.known[tpath] = {**table, "schema": evo.schema}
        summary.schema_id, summary.schema_changed = int(evo.schema.get("schema_id", 0)), evo.changed
        return tpath

    def _guard_schema(self, tpath: str) -> None:
        """Abort if another commit changes the table's schema before ours. A precision-locked
        scan: it conflicts with writes whose before- or after-image has another schema_id, so
        concurrent stats merges (same schema_id) pass."""
        if tpath not in self.at_read or tpath in self.guarded:
            return
        sid = TableValue.from_raw(self.at_read[tpath]).schema.id
        name = quote(tpath.rsplit("/", 1)[1])
        self.txn.query(f"{query_of(parent_path(tpath))}/[obj_id = {name} and schema.schema_id != {sid}]")
        self.guarded.add(tpath)

    # ------------------------------------------------------------ writes
    def apply(self, w: StagedWrite) -> TableWrite:
        summary = TableWrite(w.table, w.mode, w.write_id)
        tpath = self._table(w, summary)
        if w.mode == "compact":
            self._compact(w, tpath, summary)
        elif w.schema_mode == "replace" and tpath in self.at_read:
            self._replace(w, tpath, summary)
        elif w.mode == "overwrite" and tpath in self.at_read:
            self._overwrite(w, tpath, summary)
        else:
            self._append(w, tpath, summary)
        self._lineage(w, tpath)
        self.summaries.append(summary)
        return summary

    def _lineage(self, w: StagedWrite, tpath: str) -> None:
        """Record what the job read on the table it wrote (catalog_core.lake.lineage_deltas), in
        this commit. A compaction moves no rows and keeps the lineage; a table is not its own input."""
        if w.inputs is None or w.mode == "compact":
            return
        written = self.written | {w.table}
        inputs = {name: (vid if vid is not None else None if name in written else self.vid)
                  for name, vid in w.inputs.items() if name != w.table}
        for delta in lineage_deltas(inputs, job=w.job, source="spark"):
            self.txn.merge(tpath, delta)

    def _add_files(self, tpath: str, files: list[StagedFile], summary: TableWrite) -> dict[str, dict]:
        """Add the leaves (and missing partitions); returns per-path aggregates of what was added,
        for every partition level and the table."""
        chains = [chain(tpath, f.partition) for f in files]
        self._prefetch(tpath, chains)
        aggs: dict[str, dict] = defaultdict(st.empty)
        sid = self.schema_id(tpath)
        for f, ch in zip(files, chains, strict=False):
            values: dict[str, Any] = {}
            for (col, value), ppath in zip(f.partition, ch, strict=False):
                values[col] = value
                self._ensure(ppath, {"obj_type": "partition", **values, "stats": st.initial()})
            self.txn.add(f"{ch[-1] if ch else tpath}/{f.file_id}", {**f.value, "schema_id": sid}, leaf=True)
            contribution = st.of_file(f.value, dict(f.partition))
            for p in [tpath, *ch]:
                st.add(aggs[p], contribution)
            summary.files_added += 1
            summary.rows_added += contribution["row_count"]
            summary.bytes_added += contribution["size_bytes"]
        summary.partitions = len({ch[-1] for ch in chains if ch})
        return aggs

    def _append(self, w: StagedWrite, tpath: str, summary: TableWrite) -> None:
        aggs = self._add_files(tpath, w.files, summary)
        for path, agg in aggs.items():
            self.txn.merge(path, st.append_delta(agg, self.hint))
        if tpath not in aggs:  # an empty write still marks the table as written
            self.txn.merge(tpath, st.append_delta(st.empty(), self.hint))

    def _current_names(self, tpath: str, fv: dict[str, Any]) -> dict[str, Any]:
        """A file's value with its column statistics under the columns' current names: a file written
        before a rename records the name then (its `schema_id`; `names_at`), and the table's stats, which
        a removal subtracts it from, are kept under the current name. A column dropped since is left out
        (the table's stats no longer hold it)."""
        sid = fv.get("schema_id")
        schema = TableValue.from_raw(self._get(tpath)).schema
        names = names_at(schema, sid) if isinstance(sid, int) and not isinstance(sid, bool) else None
        if not names:
            return fv
        back = {old.lower(): cur for cur, old in names.items() if old is not None}
        return {**fv, "columns": {back[c.lower()]: s for c, s in (fv.get("columns") or {}).items()
                                  if c.lower() in back}}

    def schema_id(self, tpath: str) -> int:
        """The schema id the table has as this transaction leaves it (files record it: a reader
        maps their column names through renames made since)."""
        return TableValue.from_raw(self._get(tpath)).schema.id

    def _replace(self, w: StagedWrite, tpath: str, summary: TableWrite) -> None:
        """A full overwrite: every file of the table goes, and every partition the write does not
        fill again; stats are set from the new files alone. The reads are recorded, so a
        concurrent change to the table's partitions or files aborts the commit."""
        chains = [chain(tpath, f.partition) for f in w.files]
        keep = {p for ch in chains for p in ch}
        level = [tpath]
        for _ in w.partition_by:
            nxt = []
            for par in level:
                for obj in self.txn.query(query_of(par) + '/[obj_type = "partition"]'):
                    if obj.path in keep:
                        nxt.append(obj.path)
                    else:
                        self.txn.remove(obj.path)  # the whole subtree: its partitions and files
                        summary.files_removed += int(((obj.value.get("stats") or {}).get("file_count")) or 0)
                        self.known[obj.path] = None
            level = nxt
        for par in level:
            for old in self._files_of(par):
                self.txn.remove(old.path)
                summary.files_removed += 1
        aggs = self._add_files(tpath, w.files, summary)
        for path in [tpath, *sorted(keep)]:
            self.txn.merge(path, st.set_delta(aggs.get(path, st.empty()), self.hint))

    def _files_of(self, path: str) -> list[Any]:
        return self.txn.query(query_of(path) + '/[obj_type = "file"]')

    def _overwrite(self, w: StagedWrite, tpath: str, summary: TableWrite) -> None:
        if not w.partition_by:
            for old in self._files_of(tpath):
                self.txn.remove(old.path)
                summary.files_removed += 1
            aggs = self._add_files(tpath, w.files, summary)
            self.txn.merge(tpath, st.set_delta(aggs.get(tpath, st.empty()), self.hint))
            return
        deepest = {chain(tpath, f.partition)[-1] for f in w.files}
        for ppath in sorted(deepest):  # recorded reads: a concurrent change to these partitions aborts us
            for old in self._files_of(ppath):
                self.txn.remove(old.path)
                summary.files_removed += 1
        aggs = self._add_files(tpath, w.files, summary)
        fresh = {p: aggs[p] for p in deepest}
        levels = len(w.partition_by)
        for depth in range(levels - 1, -1, -1):  # recompute each ancestor from its children's stats
            below = [p for p in fresh if p.count("/") - tpath.count("/") == depth + 1]
            for par in sorted({parent_path(p) for p in below}):
                children = {o.path: st.from_stats(o.value.get("stats"))
                            for o in self.txn.query(query_of(par) + '/[obj_type = "partition"]')}
                children.update({p: fresh[p] for p in below if parent_path(p) == par})
                fresh[par] = st.combine(list(children.values()))
        for path, agg in fresh.items():
            self.txn.merge(path, st.set_delta(agg, self.hint))

    def _compact(self, w: StagedWrite, tpath: str, summary: TableWrite) -> None:
        by_part: dict[str, list[StagedFile]] = defaultdict(list)
        for f in w.files:
            by_part[chain(tpath, f.partition)[-1] if f.partition else tpath].append(f)
        added: dict[str, dict] = defaultdict(st.empty)
        removed: dict[str, dict] = defaultdict(st.empty)
        keep: list[StagedFile] = []
        for ppath, old_paths in w.replaces.items():
            new = by_part.get(ppath, [])
            current = {o.path: o.value for o in self.cat.query(query_of(ppath) + '/[obj_type = "file"]',
                                                               vid=self.vid)}
            if any(p not in current for p in old_paths):  # someone replaced these files meanwhile
                summary.dropped_files += [f.path for f in new]
                continue
            part = dict(new[0].partition) if new else {}
            levels = [ppath]
            while levels[-1] != tpath:
                levels.append(parent_path(levels[-1]))
            for p in old_paths:
                self.txn.remove(p)
                for lv in levels:
                    st.add(removed[lv], st.of_file(self._current_names(tpath, current[p]), part))
            for f in new:
                for lv in levels:
                    st.add(added[lv], st.of_file(f.value, part))
            summary.files_removed += len(old_paths)
            summary.partitions += 1
            keep += new
        sid = self.schema_id(tpath)
        for f in keep:
            parent = chain(tpath, f.partition)[-1] if f.partition else tpath
            self.txn.add(f"{parent}/{f.file_id}", {**f.value, "schema_id": sid}, leaf=True)
            summary.files_added += 1
            summary.bytes_added += int(f.value.get("size_bytes", 0))
        for path in added.keys() | removed.keys():
            self.txn.merge(path, st.replace_delta(added[path], removed[path], None))

"""Iceberg metadata of a catalog table, materialized from its commit history (DESIGN.md, Iceberg REST).

    m = Materializer(cat, root="/data/warehouse/_iceberg")
    view = m.load("acme.core.orders")            # TableView: .metadata (pyiceberg), .location, .table_vid
    view = m.load("acme.core.orders", vid=42)    # as of a vid (the commit path's base)

Which commits are Iceberg snapshots: every commit that added or removed a file leaf of the table,
and every commit whose meta names an Iceberg snapshot of it (REST commits, imports). A snapshot's
id is the one its meta names (the client's, or the imported table's), else the vid itself; its
sequence number is the vid, so both are stable per vid and increase with it. A file's manifest
entry carries the snapshot and sequence number of the commit that added it. Named catalog
snapshots (`cat.snapshot(name)`) are tags on the table's snapshot as of their vid; tags set through
REST live in the table's `properties.iceberg.refs`.

Files: under `<root>/<table uuid>/metadata/`, one manifest per group of files added by one
commit (rewritten, with the survivors as EXISTING entries, by a commit that removes some of them),
one manifest list per snapshot and one metadata JSON per table state. Names hash what the file
describes, so a file is written once and reused by every later snapshot and by a restarted
server; a state is cached in memory and later loads only process the commits after it. The
first load of a table with H commits and F files costs O(F + H).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import NoSuchTableError
from catalog_core.iceberg import export
from catalog_core.model import Version
from catalog_core.paths import split

__all__ = ["Materializer", "TableView", "PropertiesFn", "RESERVED_PREFIX", "snapshot_id_of"]

RESERVED_PREFIX = "semcat."
PropertiesFn = Callable[[str, int], dict[str, str]]   # (table name, vid) -> semcat.* properties (and comment)
_IO = PyArrowFileIO()
PROPERTIES_TTL_S = 30.0   # semcat.* properties (freshness against the clock) are recomputed at most this often


def snapshot_id_of(meta: dict[str, Any], tpath: str, table_uuid: str) -> int | None:
    """The Iceberg snapshot id a commit's meta names for the table at `tpath`."""
    rest = (meta.get("iceberg_rest") or {}).get(tpath) if isinstance(meta.get("iceberg_rest"), dict) else None
    if isinstance(rest, dict) and isinstance(rest.get("snapshot_id"), int):
        return int(rest["snapshot_id"])
    sid = meta.get("iceberg_snapshot_id")
    if isinstance(sid, int) and meta.get("iceberg_table_uuid") == table_uuid:
        return sid
    return None


def _operation_of(meta: dict[str, Any], tpath: str) -> str | None:
    rest = (meta.get("iceberg_rest") or {}).get(tpath) if isinstance(meta.get("iceberg_rest"), dict) else None
    op = rest.get("operation") if isinstance(rest, dict) else meta.get("iceberg_operation")
    return op if op in ("append", "overwrite", "delete", "replace") else None


@dataclass
class _Snap:
    vid: int
    snapshot_id: int
    parent_id: int | None
    time_ms: int
    schema_id: int
    manifest_list: str
    summary: dict[str, str]


@dataclass
class _Group:
    """The live files one commit added: one manifest."""
    vid: int
    entries: dict[str, ManifestEntry]
    manifest: ManifestFile | None = None
    path: str = ""


@dataclass
class _State:
    tpath: str
    created: int
    uuid: str
    done: int = 0                       # commits processed through this vid
    table_vid: int = 0                  # the last commit that touched the table (<= done)
    last_time_ms: int = 0
    snaps: list[_Snap] = field(default_factory=list)
    snap_ids: set[int] = field(default_factory=set)
    groups: dict[int, _Group] = field(default_factory=dict)
    file_group: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=lambda: {"records": 0, "files": 0, "size": 0})
    commit_times: dict[int, int] = field(default_factory=dict)   # vid -> ms of every commit touching the table
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class TableView:
    """One table's Iceberg metadata as of `vid` (`table_vid`: the last commit that touched it)."""
    name: str
    vid: int
    table_vid: int
    metadata: TableMetadata
    metadata_location: str
    value: dict[str, Any]
    text: str = ""                 # the metadata as JSON (what the metadata file holds)
    _answers: dict[str, bytes] = field(default_factory=dict)

    def load_result(self, snapshots: str | None = None) -> bytes:
        """LoadTableResult as JSON bytes (built once per view and `snapshots` mode)."""
        mode = "refs" if snapshots == "refs" else "all"
        out = self._answers.get(mode)
        if out is None:
            md = self.text
            if mode == "refs":
                d = json.loads(self.text)
                keep = {r["snapshot-id"] for r in d.get("refs", {}).values()}
                d["snapshots"] = [s for s in d.get("snapshots", []) if s["snapshot-id"] in keep]
                md = json.dumps(d)
            out = ('{"metadata-location":' + json.dumps(self.metadata_location) + ',"metadata":' + md +
                   ',"config":{}}').encode()
            self._answers[mode] = out
        return out


def table_uuid(value: dict[str, Any], tpath: str, created: int) -> str:
    ice = ((value.get("properties") or {}).get("iceberg")) or {}
    u = ice.get("uuid") if isinstance(ice, dict) else None
    return str(u) if u else str(uuid.uuid5(uuid.NAMESPACE_URL, f"semcat:{tpath}@{created}"))


def _iceberg_props(value: dict[str, Any]) -> dict[str, Any]:
    ice = ((value.get("properties") or {}).get("iceberg")) or {}
    return ice if isinstance(ice, dict) else {}


class Materializer:
    """Builds and caches the Iceberg view of catalog tables (thread-safe; one per server)."""

    def __init__(self, cat: CatalogAPI, root: str, properties: PropertiesFn | None = None) -> None:
        self.cat, self.root, self.properties_fn = cat, os.path.abspath(root), properties
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()
        self._views: dict[tuple[Any, ...], tuple[float, TableView]] = {}

    # ---------------------------------------------------------------- public
    def load(self, name: str, vid: int | None = None) -> TableView:
        """The table's metadata as of `vid` (default: latest). NoSuchTableError if it does not exist.
        When no commit touched the table since the last load, the cached view is answered without
        reading the table's history."""
        tpath = lake.table_path(name)
        at = self.cat.latest_vid if vid is None else vid
        fast = self._cached(tpath, at)
        if fast is not None:
            return fast
        versions = self.cat.history(tpath)
        live = [v for v in versions if v.vid <= at and (v.end_vid is None or v.end_vid > at)]
        if not live or live[-1].value is None or not lake.is_table(live[-1].value):
            raise NoSuchTableError(f"table {name!r} does not exist; list tables with GET /v1/{{prefix}}/namespaces/"
                                   f"{{namespace}}/tables", name=name, iceberg_type="NoSuchTableException")
        created = self._created(versions, at)
        value = live[-1].value
        state = self._state(tpath, created, value)
        with state.lock:
            if state.done < at:
                self._advance(state, versions, at)
            key, named = self._key(state, at)
            hit = self._views.get(key)
            now = time.monotonic()
            if hit is not None and (self.properties_fn is None or now - hit[0] < PROPERTIES_TTL_S):
                return hit[1]
            view = self._view(name, tpath, state, versions, at, key[1], value, named)
            if len(self._views) > 4096:
                self._views.clear()
            self._views[key] = (now, view)
            return view

    def _key(self, st: _State, at: int) -> tuple[tuple[Any, ...], tuple[tuple[str, int], ...]]:
        table_vid = max([v for v in st.commit_times if v <= at] or [st.created])
        named = tuple((s.name, s.vid) for s in self.cat.snapshots() if st.created <= s.vid <= at)
        return (st.tpath, table_vid, named), named

    def _cached(self, tpath: str, at: int) -> TableView | None:
        """The cached view when the table's state covers `at` and no commit touched it since."""
        with self._lock:
            st = self._states.get(tpath)
        if st is None or at < st.created:
            return None
        with st.lock:
            if st.done < at and self.cat.commits(since=st.done + 1, until=at, prefix=tpath):
                return None
            st.done = max(st.done, at)
            key, _named = self._key(st, at)
            hit = self._views.get(key)
            if hit is not None and (self.properties_fn is None or time.monotonic() - hit[0] < PROPERTIES_TTL_S):
                return hit[1]
        return None

    def metadata_dir(self, table_uuid_: str) -> str:
        return os.path.join(self.root, table_uuid_, "metadata")

    # ---------------------------------------------------------------- history
    @staticmethod
    def _created(versions: list[Version], at: int) -> int:
        created = versions[0].vid
        for prev, cur in zip(versions, versions[1:], strict=False):
            if cur.vid > at:
                break
            if prev.value is None and cur.value is not None:
                created = cur.vid
        return created

    def _state(self, tpath: str, created: int, value: dict[str, Any]) -> _State:
        u = table_uuid(value, tpath, created)
        with self._lock:
            st = self._states.get(tpath)
            if st is None or st.created != created or st.uuid != u:
                st = _State(tpath, created, u, done=created - 1)
                self._states[tpath] = st
            return st

    @staticmethod
    def _value_at(versions: list[Version], vid: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for v in versions:
            if v.vid > vid:
                break
            out = v.value or {}
        return out

    def _advance(self, st: _State, versions: list[Version], at: int) -> None:
        commits = self.cat.commits(since=st.done + 1, until=at, prefix=st.tpath)
        for c in commits:
            st.commit_times[c.vid] = int(c.time * 1000)
            st.table_vid = c.vid
            self._commit(st, versions, c.vid, int(c.time * 1000), c.meta or {})
        st.done = at

    def _commit(self, st: _State, versions: list[Version], vid: int, time_ms: int, meta: dict[str, Any]) -> None:
        added: list[tuple[str, dict[str, Any]]] = []
        removed: list[str] = []
        for ch in self.cat.diff(vid - 1, vid, prefix=st.tpath):
            if not ch.leaf:
                continue
            val = ch.after if ch.kind == "added" else ch.before
            if not isinstance(val, dict) or val.get("obj_type") != "file":
                continue
            if ch.kind == "added":
                added.append((ch.path, val))
            elif ch.kind == "removed":
                removed.append(ch.path)
        sid = snapshot_id_of(meta, st.tpath, st.uuid)
        if not added and not removed and sid is None:
            return
        if sid is None or sid in st.snap_ids:
            sid = vid
        value = self._value_at(versions, vid)
        schema = export.iceberg_schema(value.get("schema"))
        spec = export.partition_spec(value.get("partition_by"), schema)
        names = {c.name: c.id for c in lake.Schema.from_raw(value.get("schema") or {}).columns if c.id is not None}
        summary = {"added-data-files": 0, "deleted-data-files": 0, "added-records": 0, "deleted-records": 0,
                   "added-files-size": 0, "removed-files-size": 0}
        dirty: set[int] = set()
        for path in removed:
            g = st.file_group.pop(path, None)
            if g is None:
                continue
            e = st.groups[g].entries.pop(path)
            summary["deleted-data-files"] += 1
            summary["deleted-records"] += e.data_file.record_count
            summary["removed-files-size"] += e.data_file.file_size_in_bytes
            dirty.add(g)
        if added:
            group = _Group(vid, {})
            depth = len(split(st.tpath))
            for path, val in added:
                chain = [lake.parse_partition_id(seg)[1] for seg in split(path)[depth:-1]]
                df = export.data_file(val, schema, spec, chain, names)
                group.entries[path] = ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=sid, sequence_number=vid,
                    file_sequence_number=vid, data_file=df)
                st.file_group[path] = vid
                summary["added-data-files"] += 1
                summary["added-records"] += df.record_count
                summary["added-files-size"] += df.file_size_in_bytes
            st.groups[vid] = group
        for g in dirty:
            grp = st.groups[g]
            if not grp.entries:
                del st.groups[g]
                continue
            grp.entries = {p: ManifestEntry.from_args(
                status=ManifestEntryStatus.EXISTING, snapshot_id=e.snapshot_id, sequence_number=e.sequence_number,
                file_sequence_number=e.file_sequence_number, data_file=e.data_file) for p, e in grp.entries.items()}
            grp.manifest, grp.path = None, ""
        t = st.totals
        t["records"] += summary["added-records"] - summary["deleted-records"]
        t["files"] += summary["added-data-files"] - summary["deleted-data-files"]
        t["size"] += summary["added-files-size"] - summary["removed-files-size"]
        op = _operation_of(meta, st.tpath) or ("append" if not removed else "delete" if not added else "overwrite")
        out = {"operation": op, **{k: str(v) for k, v in summary.items()},
               "total-records": str(t["records"]), "total-data-files": str(t["files"]),
               "total-files-size": str(t["size"]), "total-delete-files": "0", "total-position-deletes": "0",
               "total-equality-deletes": "0", "semcat.vid": str(vid)}
        parent = st.snaps[-1].snapshot_id if st.snaps else None
        mlist = self._write(st, sid, parent, vid, schema, spec, dirty | ({vid} if added else set()))
        st.snaps.append(_Snap(vid, sid, parent, time_ms, schema.schema_id, mlist, out))
        st.snap_ids.add(sid)

    # ---------------------------------------------------------------- files
    def _write(self, st: _State, sid: int, parent: int | None, vid: int, schema: IcebergSchema,
               spec: PartitionSpec, fresh: set[int]) -> str:
        """The manifest list of snapshot `sid` (manifests of `fresh` groups get this snapshot as
        their adder); files that exist are read back, not written again."""
        mdir = self.metadata_dir(st.uuid)
        os.makedirs(mdir, exist_ok=True)
        order = sorted(st.groups, reverse=True)
        for g in order:
            grp = st.groups[g]
            if grp.path:
                continue
            adder = sid if g in fresh else grp.vid
            desc = [spec.spec_id, adder, sorted((p, int(e.status), e.snapshot_id, e.sequence_number)
                                                for p, e in grp.entries.items())]
            grp.path = os.path.join(mdir, "m-" + _digest(desc)[:40] + ".avro")
            grp.manifest = None
        list_desc = [sid, parent, vid, [st.groups[g].path for g in order]]
        lpath = os.path.join(mdir, f"snap-{sid}-{_digest(list_desc)[:16]}.avro")
        if os.path.exists(lpath):
            by_path = {m.manifest_path: m for m in read_manifest_list(_IO.new_input(lpath))}
            for g in order:
                st.groups[g].manifest = by_path.get(st.groups[g].path, st.groups[g].manifest)
            if all(st.groups[g].manifest is not None for g in order):
                return lpath
        for g in order:
            grp = st.groups[g]
            if grp.manifest is None:
                grp.manifest = self._write_manifest(grp, sid if g in fresh else grp.vid, vid, schema, spec)
        tmp = f"{lpath}.{uuid.uuid4().hex[:8]}.tmp"
        with write_manifest_list(format_version=2, output_file=_IO.new_output(tmp), snapshot_id=sid,
                                 parent_snapshot_id=parent, sequence_number=vid, avro_compression="null") as w:
            w.add_manifests([m for m in (st.groups[g].manifest for g in order) if m is not None])
        os.replace(tmp, lpath)
        return lpath

    @staticmethod
    def _write_manifest(grp: _Group, adder: int, seq: int, schema: IcebergSchema, spec: PartitionSpec) -> ManifestFile:
        # Written in place: a manifest is trusted only through a manifest list, which is renamed
        # into place after its manifests, so a torn manifest is rewritten by the next materialization.
        with write_manifest(format_version=2, spec=spec, schema=schema, output_file=_IO.new_output(grp.path),
                            snapshot_id=adder, avro_compression="null") as w:
            for e in grp.entries.values():
                w.add_entry(e)
        mf = w.to_manifest_file()
        mf.sequence_number = seq   # the snapshot that wrote it; every entry carries its own explicitly
        return mf

    # ---------------------------------------------------------------- the metadata
    def _view(self, name: str, tpath: str, st: _State, versions: list[Version], at: int, table_vid: int,
              value: dict[str, Any], named: tuple[tuple[str, int], ...]) -> TableView:
        ice = _iceberg_props(value)
        hidden = set(ice.get("removed_snapshots") or ())
        snaps = [s for s in st.snaps if s.vid <= at]
        schemas: dict[int, IcebergSchema] = {}
        for v in versions:
            if st.created <= v.vid <= at and v.value is not None and lake.is_table(v.value):
                s = export.iceberg_schema(v.value.get("schema"))
                schemas[s.schema_id] = s
        current = export.iceberg_schema(value.get("schema"))
        schemas[current.schema_id] = current
        spec = export.partition_spec(value.get("partition_by"), current)
        last_col = max([_max_id(s) for s in schemas.values()] or [0])
        props = {str(k): str(v) for k, v in (ice.get("properties") or {}).items()}
        props.setdefault("schema.name-mapping.default", json.dumps(export.name_mapping(current)))
        props = {k: v for k, v in props.items() if not k.startswith(RESERVED_PREFIX)}
        if self.properties_fn is not None:
            props.update(self.properties_fn(name, at))
        props[RESERVED_PREFIX + "vid"] = str(table_vid)
        main = snaps[-1].snapshot_id if snaps else None
        refs: dict[str, Any] = {}
        if main is not None:
            refs["main"] = {"snapshot-id": main, "type": "branch"}
            for sname, svid in named:
                older = [s for s in snaps if s.vid <= svid]
                if older and sname != "main":
                    refs[sname] = {"snapshot-id": older[-1].snapshot_id, "type": "tag"}
        known = {s.snapshot_id for s in snaps}
        for rname, ref in (ice.get("refs") or {}).items():
            if isinstance(ref, dict) and ref.get("snapshot-id") in known and rname != "main":
                refs[rname] = ref
        shown = [s for s in snaps if s.snapshot_id not in hidden or s.snapshot_id == main]
        md: dict[str, Any] = {
            "format-version": 2, "table-uuid": st.uuid, "location": str(value.get("location") or ""),
            "last-sequence-number": snaps[-1].vid if snaps else 0,
            "last-updated-ms": st.commit_times.get(table_vid, snaps[-1].time_ms if snaps else 0),
            "last-column-id": last_col,
            "schemas": [json.loads(s.model_dump_json(by_alias=True)) for _, s in sorted(schemas.items())],
            "current-schema-id": current.schema_id,
            "partition-specs": [json.loads(spec.model_dump_json(by_alias=True))], "default-spec-id": spec.spec_id,
            "last-partition-id": max([f.field_id for f in spec.fields] or [export.PARTITION_FIELD_BASE - 1]),
            "properties": props, "current-snapshot-id": main,
            "snapshots": [{"snapshot-id": s.snapshot_id, **({"parent-snapshot-id": s.parent_id} if s.parent_id else {}),
                           "sequence-number": s.vid, "timestamp-ms": s.time_ms, "manifest-list": s.manifest_list,
                           "summary": s.summary, "schema-id": s.schema_id} for s in shown],
            "snapshot-log": [{"snapshot-id": s.snapshot_id, "timestamp-ms": s.time_ms} for s in shown],
            "metadata-log": [],
            "sort-orders": ice.get("sort_orders") or [{"order-id": 0, "fields": []}],
            "default-sort-order-id": int(ice.get("default_sort_order_id") or 0),
            "refs": refs,
        }
        metadata = TableMetadataUtil.parse_obj(md)
        text = metadata.model_dump_json(by_alias=True, exclude_none=True)
        mdir = self.metadata_dir(st.uuid)
        os.makedirs(mdir, exist_ok=True)
        loc = os.path.join(mdir, f"{table_vid:010d}-{_digest(text)[:12]}.metadata.json")
        if not os.path.exists(loc):
            tmp = f"{loc}.{uuid.uuid4().hex[:8]}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, loc)
        return TableView(name, at, table_vid, metadata, loc, value, text)


def _max_id(schema: IcebergSchema) -> int:
    return max([f.field_id for f in schema._lazy_id_to_field.values()] or [0])


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, default=str, sort_keys=True).encode()).hexdigest()

"""The Iceberg REST catalog protocol over a catalog (DESIGN.md, Iceberg REST catalog): what the
`/iceberg` routes of `semcat serve` call. Requests and answers are the specification's JSON
shapes (dicts); errors are catalog errors whose `details["iceberg_type"]` names the
specification's error type (NoSuchTableException, CommitFailedException, ...).

    rest = IcebergRest(cat, root=<dir for metadata files>, location_root=<default table locations>)
    rest.config("acme"); rest.list_namespaces("acme"); rest.load_table("acme", ["core"], "orders")
    rest.commit_table("acme", ["core"], "orders", body, author="iceberg:alice")

Mapping: the `prefix` (the config's `warehouse`) is a catalog, namespaces are its one level of
namespaces, tables map one to one. A commit checks its requirements against the metadata
materialized at the transaction's read vid (reading the table object through the transaction, so a
concurrent commit to the table aborts it), applies the updates with pyiceberg's own
`update_table_metadata`, and records what changed as one catalog commit: new snapshots on `main`
become file leaves with statistics (their manifests read with pyiceberg), the schema, partition
spec (only while the table has no files), location, properties, tags and removed snapshots are
stored on the table (`properties.iceberg`). A failed requirement or a concurrency conflict is
`CommitFailedException` (409, retry); anything else after the commit started is
`CommitStateUnknownException` (500), never 409.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

from pydantic import ValidationError
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1, new_table_metadata
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    AssertCreate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    UpgradeFormatVersionUpdate,
    update_table_metadata,
)

from catalog_core import lake
from catalog_core.api import CatalogAPI, TransactionAPI
from catalog_core.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    InvalidValueError,
    NotFoundError,
    PreconditionError,
    ShuttingDownError,
)
from catalog_core.iceberg import convert, importer, safety
from catalog_core.iceberg import stats as st
from catalog_core.iceberg.materialize import RENAMED_META, RESERVED_PREFIX, Materializer, PropertiesFn, TableView
from catalog_core.iceberg.names import from_id, to_id
from catalog_core.paths import parent_of

__all__ = ["IcebergRest", "ENDPOINTS", "CommitStateUnknown", "iceberg_error_type"]

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}", "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties", "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/tables/rename", "POST /v1/{prefix}/transactions/commit",
]

IDEMPOTENCY_WINDOW = 10_000   # recent commits searched for an Idempotency-Key the process does not remember
_UNSUPPORTED_HINT = ("semcat keeps one partition spec per table, main as the only branch, and its full "
                     "history (snapshots are hidden, not expired)")


LOCATIONS_LOCK = "iceberg-locations.lock"   # in the catalog's data directory


class PlacingLock:
    """One lock over checking a table location and committing it, for every thread of this process
    and every process on the catalog's data directory (an flock on `lock_path`; reentrant within a
    thread). Taking it first catches up with other processes' commits (`cat.refresh()`), so the
    check sees every table committed before the lock was taken, wherever it was committed."""

    def __init__(self, cat: CatalogAPI, lock_path: str | None) -> None:
        self._cat, self._path = cat, lock_path
        self._local = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> PlacingLock:
        self._local.acquire()
        try:
            if self._depth == 0 and self._path is not None:
                import fcntl

                fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
                refresh = getattr(self._cat, "refresh", None)
                if callable(refresh):
                    refresh()
            self._depth += 1
        except BaseException:
            self._release_fd()
            self._local.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._release_fd()
        self._local.release()

    def _release_fd(self) -> None:
        if self._fd is not None:
            import fcntl

            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


class CommitStateUnknown(CatalogError):
    """The commit broke after it started; it may or may not have landed (500: never retried blindly)."""

    http_status = 500


def iceberg_error_type(err: CatalogError) -> str:
    """The specification's error type for a catalog error."""
    t = err.details.get("iceberg_type")
    if isinstance(t, str):
        return t
    if isinstance(err, CommitStateUnknown):
        return "CommitStateUnknownException"
    if isinstance(err, ConflictError):
        return "CommitFailedException"
    if isinstance(err, AlreadyExistsError):
        return "AlreadyExistsException"
    if isinstance(err, NotFoundError):
        return "NoSuchTableException"
    if isinstance(err, ShuttingDownError):
        return "ServiceUnavailableException"
    return {401: "NotAuthorizedException", 403: "ForbiddenException", 409: "CommitFailedException",
            412: "CommitFailedException"}.get(err.http_status, "BadRequestException")


def _bad(msg: str, **details: Any) -> InvalidValueError:
    return InvalidValueError(msg, iceberg_type="BadRequestException", **details)


def _no_namespace(prefix: str, ns: str) -> NotFoundError:
    return NotFoundError(f"namespace {ns!r} does not exist in warehouse {prefix!r}; list namespaces with "
                         f"GET /v1/{prefix}/namespaces or create it with POST /v1/{prefix}/namespaces",
                         iceberg_type="NoSuchNamespaceException", namespace=ns)


def _no_table(name: str) -> NotFoundError:
    prefix, ns, _t = name.split(".")
    return NotFoundError(f"table {name!r} does not exist; list tables with GET /v1/{prefix}/namespaces/"
                         f"{from_id(ns)}/tables", iceberg_type="NoSuchTableException", table=name)


def _str_props(props: Any) -> dict[str, str]:
    if not isinstance(props, dict):
        return {}
    return {str(k): (v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in props.items() if isinstance(v, (str, int, float, bool))}


def _reject_reserved(keys: Any, what: str) -> None:
    bad = sorted(k for k in keys if isinstance(k, str) and k.startswith(RESERVED_PREFIX))
    if bad:
        raise InvalidValueError(
            f"{what} {bad[0]!r}: properties under {RESERVED_PREFIX!r} are semcat's annotations, read-only over "
            "Iceberg REST; change them with semcat (`semcat annotate`, the MCP tool annotate, or /v1 annotations)",
            iceberg_type="ForbiddenException", status_hint=403, keys=bad)


class _Source(importer.Source):
    """The importer's view of the metadata a commit produces (its manifests read with pyiceberg)."""

    def __init__(self, identifier: str, md: TableMetadata) -> None:  # noqa: D107 - no table to load
        self.identifier, self.md = identifier, md
        self.io = PyArrowFileIO()
        self.uuid = str(md.table_uuid)
        self.location = ""
        self.schemas = {s.schema_id: s for s in md.schemas}


def with_history(stored: dict[str, Any] | None, schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (a REST commit's, by Iceberg field ids) with the names its columns had: a column whose id
    the stored schema names otherwise records that name (`previous_names`: [{name, until}], `until` the
    new schema id) after the ones it recorded, and a column of the stored schema that `schema` lacks goes
    to `dropped` after the ones dropped before. Files written by name under earlier schemas (the Spark
    bridge's: a `schema_id` on each file, no field ids) are then still read right (`sql.tables.names_at`):
    a column renamed over Iceberg REST keeps its values, a dropped column's name taken again reads NULL
    in them. Without this the stored schema lost every earlier name, and a renamed column read NULL in
    every file written before the rename."""
    old = lake.Schema.from_raw(stored or {})
    if not old.columns:
        return schema
    sid = int(schema.get("schema_id") or 0)
    had = {c.id: c for c in old.columns if c.id is not None}
    cols = []
    for c in schema.get("columns") or []:
        prev = had.get(c.get("id"))
        names = list(prev.extra.get("previous_names") or []) if prev is not None else []  # type: ignore[arg-type]
        if prev is not None and prev.name != c.get("name"):
            names.append({"name": prev.name, "until": sid})
        cols.append({**c, "previous_names": names} if names else c)
    now = {c.get("id") for c in cols}
    dropped = list(old.dropped or [])
    for c in old.columns:
        if c.id is not None and c.id not in now:
            raw = c.to_raw()
            gone = {"id": c.id, "name": c.name, "type": c.type, "until": sid}
            if raw.get("previous_names"):
                gone["previous_names"] = raw["previous_names"]
            dropped.append(gone)
    out = {**schema, "columns": cols}
    if dropped:
        out["dropped"] = dropped
    return out


class _Writer(importer.Importer):
    """The importer's file and stats bookkeeping, applied inside a REST commit's transaction."""

    def __init__(self, cat: CatalogAPI, txn: TransactionAPI, src: _Source, into: str,
                 stored_schema: dict[str, Any] | None, places: safety.Places | None = None) -> None:  # noqa: D107
        self.cat, self.src, self.into, self.places = cat, src, into, places
        self.progress = importer.noop
        self.tpath = lake.table_path(into)
        self.levels = convert.partition_by(src.md.spec(), src.md.schema(), src.identifier)
        self.known_parts: set[str] = set()
        self.stored_schema = stored_schema
        self.synced = None
        self.exists = True
        self.result = importer.ImportResult(into, src.identifier, None)
        steps = lake.exact_query(self.tpath)
        for _ in self.levels:
            steps += '/[obj_type = "partition"]'
            self.known_parts.update(o.path for o in txn.query(steps))

    def apply_schema(self, txn: TransactionAPI, schema: dict[str, Any]) -> None:
        schema = with_history(self.stored_schema, schema)
        if self.stored_schema == schema:
            return
        txn.merge(self.tpath, {"schema": {"op": "set", "val": schema}})
        old = {c.name: c.id for c in lake.Schema.from_raw(self.stored_schema or {}).columns if c.id is not None}
        new = {c["id"]: c["name"] for c in schema["columns"]}
        if any(new.get(i) != n for n, i in old.items()):
            self._rekey_all(txn, (old, new))
        self.stored_schema = schema

    def apply_snapshot(self, txn: TransactionAPI, snap: Any) -> importer.Step:
        counter = [0, 0]
        added, removed = self.src.changes(snap, self.src.manifests(snap), importer.noop, counter)
        if self.places is not None:
            for df in added:
                path = safety.local_path(df.file_path)
                if path is None or not self.places.inside(os.path.realpath(path)):
                    raise _bad(f"snapshot {snap.snapshot_id} adds data file {str(df.file_path)[:200]!r}, which is not "
                               f"inside a storage root ({self.places.describe()}): write data files under the table's "
                               "location (nothing was written)", snapshot_id=snap.snapshot_id)
        step = self._step(snap, added, removed)
        names = {c["id"]: c["name"] for c in (self.stored_schema or {}).get("columns", [])}
        self._files(txn, step, names, None)
        return step


class IcebergRest:
    """The protocol's operations over one catalog (thread-safe)."""

    def __init__(self, cat: CatalogAPI, root: str, location_root: str | None = None,
                 properties: PropertiesFn | None = None, roots: tuple[str, ...] | list[str] = ()) -> None:
        self.cat = cat
        self.materializer = Materializer(cat, root, properties, shared=True)   # shares the commit hook's states
        self.location_root = os.path.abspath(location_root or os.path.join(root, "tables"))
        data_dir = getattr(cat, "data_dir", None)
        # where table locations may go (catalog_core.iceberg.safety): the warehouse and the operator's roots
        self.places = safety.Places([self.location_root, *roots],
                                    reserved=[self.materializer.root, *([data_dir] if isinstance(data_dir, str) else [])],
                                    allowed=[self.location_root])
        # Idempotency-Key -> (vid, tables, digest of the request body) of commits made here
        self._keys: dict[str, tuple[int, list[str], str | None]] = {}
        self._keys_lock = threading.Lock()
        self._keys_before: dict[str, tuple[int, list[str], str | None]] | None = None
        self._started_vid = cat.latest_vid
        # held while a location is checked against the catalog's tables and committed (create, a
        # commit that creates a table or sets a location, register): two creates racing for one
        # directory would each see it free (the check reads the latest commit, not a transaction).
        # Across processes on one data directory too: a lock file of the catalog directory
        self._placing = PlacingLock(cat, os.path.join(data_dir, LOCATIONS_LOCK) if isinstance(data_dir, str) else None)

    # ---------------------------------------------------------------- config
    def config(self, warehouse: str | None) -> dict[str, Any]:
        if not warehouse:
            cats = sorted(o.obj_id for o in self.cat.children("/") if o.value.get("obj_type") == "catalog")
            if len(cats) != 1:
                raise _bad("pass the semcat catalog to serve as the warehouse, e.g. load_catalog(..., "
                           f"warehouse='acme'); catalogs here: {', '.join(cats[:20]) or 'none yet'}")
            warehouse = cats[0]
        lake.object_path(warehouse, levels=(1,))
        return {"defaults": {}, "overrides": {"prefix": warehouse}, "endpoints": list(ENDPOINTS)}

    # ---------------------------------------------------------------- namespaces
    @staticmethod
    def _ns(prefix: str, namespace: list[str]) -> str:
        """The path of a (one-level) namespace; a dot of its name is stored as `%2E` (names.to_id)."""
        if len(namespace) != 1:
            raise _bad(f"namespace {namespace!r}: semcat namespaces are one level below the warehouse {prefix!r} "
                       "(catalog.namespace.table); use a single-level namespace (a name may hold dots: "
                       "[\"new.db\"])", namespace=namespace)
        return lake.object_path(f"{prefix}.{to_id(namespace[0])}", levels=(2,))

    def _ns_obj(self, prefix: str, namespace: list[str], vid: int | None = None) -> dict[str, Any]:
        path = self._ns(prefix, namespace)
        obj = self.cat.get(path, vid=vid)
        if obj is None or obj.value.get("obj_type") != "namespace":
            raise _no_namespace(prefix, namespace[0])
        return obj.value

    def list_namespaces(self, prefix: str, parent: list[str] | None = None, page_token: str | None = None,
                        page_size: int | None = None) -> dict[str, Any]:
        if parent:
            self._ns_obj(prefix, parent)
            return {"namespaces": [], "next-page-token": None}
        cpath = lake.object_path(prefix, levels=(1,))
        names = sorted(o.obj_id for o in self.cat.children(cpath) if o.value.get("obj_type") == "namespace")
        page, token = _page(names, page_token, page_size)
        return {"namespaces": [[from_id(n)] for n in page], "next-page-token": token}

    def create_namespace(self, prefix: str, namespace: list[str], properties: dict[str, Any], author: str) -> dict[str, Any]:
        path = self._ns(prefix, namespace)
        props = _str_props(properties)
        safety.check_properties(props, "namespace property")
        safety.check_namespace_size(props)
        cpath = parent_of(path)
        with self.cat.transaction(author=author, message=f"iceberg: create namespace {prefix}.{namespace[0]}") as txn:
            if txn.get(path) is not None:
                raise AlreadyExistsError(f"namespace {namespace[0]!r} already exists in warehouse {prefix!r}",
                                         iceberg_type="AlreadyExistsException", namespace=namespace)
            cobj = txn.get(cpath)
            if cobj is None:
                txn.add(cpath, {"obj_type": "catalog", "properties": {}})
            elif cobj.value.get("obj_type") != "catalog":
                raise _bad(f"{cpath} is not a catalog; choose another warehouse")
            txn.add(path, {"obj_type": "namespace", "properties": props})
        return {"namespace": list(namespace), "properties": props}

    def load_namespace(self, prefix: str, namespace: list[str]) -> dict[str, Any]:
        value = self._ns_obj(prefix, namespace)
        return {"namespace": list(namespace), "properties": _str_props(value.get("properties"))}

    def update_namespace_properties(self, prefix: str, namespace: list[str], removals: list[str],
                                    updates: dict[str, Any], author: str) -> dict[str, Any]:
        overlap = set(removals) & set(updates)
        if overlap:
            raise InvalidValueError(f"properties {sorted(overlap)} are both updated and removed; send each once",
                                    iceberg_type="UnprocessableEntityException", status_hint=422)
        path = self._ns(prefix, namespace)
        with self.cat.transaction(author=author, message=f"iceberg: namespace properties {prefix}.{namespace[0]}") as txn:
            obj = txn.get(path)
            if obj is None or obj.value.get("obj_type") != "namespace":
                raise _no_namespace(prefix, namespace[0])
            props = dict(obj.value.get("properties") or {})
            missing = [k for k in removals if k not in props]
            for k in removals:
                props.pop(k, None)
            props.update(_str_props(updates))
            safety.check_properties(props, "namespace property")
            safety.check_namespace_size(props)
            txn.merge(path, {"properties": {"op": "set", "val": props}})
        return {"updated": sorted(updates), "removed": [k for k in removals if k not in missing], "missing": missing}

    def drop_namespace(self, prefix: str, namespace: list[str], author: str) -> None:
        path = self._ns(prefix, namespace)
        with self.cat.transaction(author=author, message=f"iceberg: drop namespace {prefix}.{namespace[0]}") as txn:
            obj = txn.get(path)
            if obj is None or obj.value.get("obj_type") != "namespace":
                raise _no_namespace(prefix, namespace[0])
            tables = txn.query(lake.exact_query(path, '[obj_type = "table"]'))
            if tables:
                raise AlreadyExistsError(f"namespace {prefix}.{namespace[0]} is not empty: it holds "
                                         f"{len(tables)} table(s), e.g. {tables[0].obj_id!r}; drop them first",
                                         iceberg_type="NamespaceNotEmptyException", namespace=namespace)
            txn.remove(path)

    # ---------------------------------------------------------------- tables
    def list_tables(self, prefix: str, namespace: list[str], page_token: str | None = None,
                    page_size: int | None = None) -> dict[str, Any]:
        self._ns_obj(prefix, namespace)
        path = self._ns(prefix, namespace)
        names = sorted(o.obj_id for o in self.cat.query(lake.exact_query(path, '[obj_type = "table"]')))
        page, token = _page(names, page_token, page_size)
        return {"identifiers": [{"namespace": list(namespace), "name": from_id(n)} for n in page],
                "next-page-token": token}

    def _name(self, prefix: str, namespace: list[str], table: str) -> str:
        """The semcat name of an Iceberg table (dots of its namespace and name stored as `%2E`)."""
        self._ns(prefix, namespace)
        name = f"{prefix}.{to_id(namespace[0])}.{to_id(table)}"
        lake.table_path(name)
        return name

    def load_table(self, prefix: str, namespace: list[str], table: str, snapshots: str | None = None) -> bytes:
        """LoadTableResult, as JSON bytes."""
        return self.load_table_tagged(prefix, namespace, table, snapshots)[0]

    def load_table_tagged(self, prefix: str, namespace: list[str], table: str,
                          snapshots: str | None = None) -> tuple[bytes, str]:
        """LoadTableResult as JSON bytes, and its ETag (both made once per cached view)."""
        name = self._name(prefix, namespace, table)
        try:
            view = self.materializer.load(name)
        except NotFoundError:
            raise _no_table(name) from None
        return view.load_result(snapshots), view.etag(snapshots)

    def table_view(self, prefix: str, namespace: list[str], table: str) -> TableView:
        name = self._name(prefix, namespace, table)
        try:
            return self.materializer.load(name)
        except NotFoundError:
            raise _no_table(name) from None

    @staticmethod
    def _result(view: TableView, config: bool = True) -> bytes:
        """LoadTableResult (`config`) or CommitTableResponse as JSON bytes (the view's, made once)."""
        return view.load_result(None if config else "commit")

    def table_exists(self, prefix: str, namespace: list[str], table: str) -> bool:
        name = self._name(prefix, namespace, table)
        obj = self.cat.get(lake.table_path(name))
        return obj is not None and lake.is_table(obj.value)

    def _tables(self, reader: Any) -> list[tuple[str, str]]:
        """(name, location) of every table of the store, read through `reader` (the catalog at its
        latest commit, not a transaction: a scan of every table in a transaction would conflict with
        any concurrent append anywhere; two creates racing for one directory are not caught)."""
        warehouse = getattr(self.cat, "warehouse", None) or self.location_root
        out = []
        for o in reader.query(lake.tables_query()):
            loc = o.value.get("location")
            out.append((lake.name_of(o.path), loc if isinstance(loc, str) and loc
                        else os.path.join(warehouse, *o.path.strip("/").split("/"))))
        return out

    def _default_location(self, prefix: str, ns: str, table: str) -> str:
        """`<warehouse>/<catalog>/<namespace>/<table>`, or with a suffix when another table uses it."""
        import uuid

        loc = os.path.join(self.location_root, prefix, ns, table)
        name = f"{prefix}.{to_id(ns)}.{to_id(table)}"
        try:
            self.places.check(loc, self._tables(self.cat), name)
        except InvalidValueError:
            loc = f"{loc}-{uuid.uuid4().hex[:8]}"
        return loc

    def create_table(self, prefix: str, namespace: list[str], body: dict[str, Any], author: str) -> dict[str, Any] | bytes:
        try:
            from pyiceberg.catalog.rest import CreateTableRequest

            req = CreateTableRequest.model_validate({"location": None, "partition-spec": None, "write-order": None,
                                                     **(body if isinstance(body, dict) else {})})
        except ValidationError as exc:
            raise _bad(f"CreateTableRequest is invalid: {_first_error(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - pyiceberg's own parsing of the client's input (TypeError, KeyError, ...)
            raise _bad(f"CreateTableRequest is invalid: {exc}") from None
        name = self._name(prefix, namespace, req.name)
        _reject_reserved(req.properties, "property")
        safety.check_properties(req.properties, "property")
        self._ns_obj(prefix, namespace)
        with self._placing:   # the location is checked against the tables and taken in one step
            location = (req.location.rstrip("/") if req.location else None) or self._default_location(
                prefix, namespace[0], req.name)
            md = new_table_metadata(req.table_schema, req.partition_spec or PartitionSpec(),
                                    req.write_order or SortOrder(), location, dict(req.properties))
            safety.check_table_size(md, name)
            if req.stage_create:
                self.places.check(location, self._tables(self.cat), name)
                self.places.make(location)
                return {"metadata": _json(md), "config": {}}
            tpath = lake.table_path(name)
            for attempt in (1, 2):
                try:
                    with self.cat.transaction(author=author, message=f"iceberg: create table {name}") as txn:
                        if txn.get(tpath) is not None:
                            raise AlreadyExistsError(f"table {name!r} already exists; load it, or drop it first",
                                                     iceberg_type="AlreadyExistsException", table=name)
                        self._create(txn, name, md)
                    break
                except ConflictError as exc:
                    # another process committed while this one read (the engine's cross-process check, which
                    # can fire even under the lock when this process took in that commit only on becoming the
                    # writer): once more, at the commit it now sees, so a clash of locations or names is
                    # refused as what it is, never as a bare 409 a client reads as "already exists"
                    if attempt == 2 or not exc.retryable:
                        raise
        return self._result(self.materializer.load(name))

    def _create(self, txn: TransactionAPI, name: str, md: TableMetadata) -> None:
        tpath = lake.table_path(name)
        ns = txn.get(parent_of(tpath))
        if ns is None or ns.value.get("obj_type") != "namespace":
            prefix, nsid, _ = name.split(".")
            raise _no_namespace(prefix, from_id(nsid))
        self._check_format(md)
        self.places.check(md.location, self._tables(self.cat), name)
        self.places.make(md.location)   # before the commit: engines find it; one that cannot be made is refused
        levels = convert.partition_by(md.spec(), md.schema(), name)
        props = {k: v for k, v in md.properties.items()}
        ice: dict[str, Any] = {"uuid": str(md.table_uuid), "properties": props, "format_version": 2, **_specs(md)}
        if md.sort_orders and any(o.fields for o in md.sort_orders):
            ice["sort_orders"] = [_json(o) for o in md.sort_orders]
            ice["default_sort_order_id"] = md.default_sort_order_id
        txn.add(tpath, {"obj_type": "table", "location": md.location, "format": "parquet",
                        "schema": convert.catalog_schema(md.schema(), name),
                        "partition_by": [lv.spec for lv in levels], "stats": st.empty(),
                        "properties": {"iceberg": ice}})

    @staticmethod
    def _check_format(md: TableMetadata) -> None:
        if md.format_version > 2:
            raise _bad(f"format version {md.format_version} is not supported; semcat serves Iceberg format v2 "
                       "(create the table with format-version 2)")

    def register_table(self, prefix: str, namespace: list[str], body: dict[str, Any], author: str) -> bytes:
        tname, loc = body.get("name"), body.get("metadata-location")
        if not isinstance(tname, str) or not isinstance(loc, str):
            raise _bad("RegisterTableRequest needs 'name' and 'metadata-location' (text)")
        name = self._name(prefix, namespace, tname)
        self._ns_obj(prefix, namespace)
        if self.table_exists(prefix, namespace, tname) and not body.get("overwrite"):
            raise AlreadyExistsError(f"table {name!r} already exists; register under another name or pass "
                                     "overwrite", iceberg_type="AlreadyExistsException", table=name)
        from pyiceberg.table import StaticTable

        try:
            static = StaticTable.from_metadata(loc)
        except Exception as exc:  # noqa: BLE001 - any unreadable metadata file is the client's input
            raise _bad(f"cannot read Iceberg metadata at {loc!r}: {type(exc).__name__}: {exc}; pass the path of "
                       "an existing vN.metadata.json") from None
        self.places.check(static.metadata.location, self._tables(self.cat), name)
        safety.check_properties(static.metadata.properties, "property")
        safety.check_table_size(static.metadata, name)

        class _One:
            name = "register"

            def load_table(self, _identifier: str) -> Any:
                return static

        with self._placing:
            self.places.check(static.metadata.location, self._tables(self.cat), name)
            importer.import_table(self.cat, _One(), f"{prefix}.{tname}", into=name)  # type: ignore[arg-type]
        return self._result(self.materializer.load(name))

    def rename_table(self, prefix: str, body: dict[str, Any], author: str) -> None:
        try:
            src, dst = body["source"], body["destination"]
            sname = self._name(prefix, list(src["namespace"]), src["name"])
            dname = self._name(prefix, list(dst["namespace"]), dst["name"])
        except (KeyError, TypeError):
            raise _bad("RenameTableRequest needs source and destination {namespace, name}") from None
        sp, dp = lake.table_path(sname), lake.table_path(dname)
        with self.cat.transaction(author=author, message=f"iceberg: rename table {sname} to {dname}",
                                  meta={RENAMED_META: {dp: sp}}) as txn:
            obj = txn.get(sp)
            if obj is None or not lake.is_table(obj.value):
                raise _no_table(sname)
            if txn.get(dp) is not None:
                raise AlreadyExistsError(f"table {dname!r} already exists; choose another name",
                                         iceberg_type="AlreadyExistsException", table=dname)
            ns = txn.get(parent_of(dp))
            if ns is None or ns.value.get("obj_type") != "namespace":
                raise _no_namespace(prefix, from_id(dname.split(".")[1]))
            txn.clone(sp, dp)
            txn.remove(sp)

    def drop_table(self, prefix: str, namespace: list[str], table: str, purge: bool, author: str) -> None:
        name = self._name(prefix, namespace, table)
        tpath = lake.table_path(name)
        with self.cat.transaction(author=author, message=f"iceberg: drop table {name}" + (" (purge)" if purge else "")) as txn:
            obj = txn.get(tpath)
            if obj is None or not lake.is_table(obj.value):
                raise _no_table(name)
            txn.remove(tpath)
        if purge:  # the files only this table's history references, inside the storage roots (safety.purge)
            from pyiceberg.manifest import read_manifest_list

            loc = obj.value.get("location")
            io = PyArrowFileIO()
            assert txn.vid is not None
            safety.purge(self.cat, tpath, loc if isinstance(loc, str) else None, int(txn.vid), self.places,
                         read_list=lambda p: [m.manifest_path for m in read_manifest_list(io.new_input(p))])
            # and the metadata semcat materialized for it (after the data: purge reads no materialized file)
            self.materializer.purge_metadata(tpath, obj.value, int(txn.vid))

    # ---------------------------------------------------------------- commits
    def commit_table(self, prefix: str, namespace: list[str], table: str, body: dict[str, Any],
                     idempotency_key: str | None, author: str, snapshots: str | None = None,
                     time: float | None = None) -> bytes:
        """CommitTableResponse as JSON bytes. `snapshots="refs"` (the client's opt-in header
        `X-Semcat-Commit-Snapshots: refs`): its metadata holds only the snapshots refs point at, as a
        load with `snapshots=refs` does, so a client loading that way parses an answer that does not
        grow with the history; default: every snapshot (the specification's CommitTableResponse).
        `time`: the commit's time (seconds since the epoch; not earlier than the latest commit's), for a
        server whose operator lets writers backdate (`semcat serve --iceberg-commit-time`); None: the clock."""
        name = self._name(prefix, namespace, table)
        req = _commit_request(body)
        ident = req.identifier
        if ident is not None and (list(ident.namespace.root) != list(namespace) or ident.name != table):
            raise _bad(f"the body's identifier {ident.namespace.root + [ident.name]} is not the table of the "
                       f"path {[*namespace, table]}")
        vid = self._commit([(name, req)], author, idempotency_key, safety.request_digest(body), time=time)
        view = self.materializer.load(name, vid=vid)
        return view.load_result("commit-refs") if snapshots == "refs" else self._result(view, config=False)

    def commit_transaction(self, prefix: str, body: dict[str, Any], idempotency_key: str | None, author: str,
                           time: float | None = None) -> None:
        changes = body.get("table-changes") if isinstance(body, dict) else None
        if not isinstance(changes, list):
            raise _bad("CommitTransactionRequest needs 'table-changes': a list of table commits")
        if not changes:
            return None   # nothing to commit: nothing is written
        reqs: list[tuple[str, CommitTableRequest]] = []
        for ch in changes:
            req = _commit_request(ch)
            if req.identifier is None:
                raise _bad("every table change of a transaction needs its 'identifier'")
            name = self._name(prefix, list(req.identifier.namespace.root), req.identifier.name)
            if any(n == name for n, _ in reqs):
                raise _bad(f"table {name!r} appears twice in one transaction; merge its changes into one")
            reqs.append((name, req))
        self._commit(reqs, author, idempotency_key, safety.request_digest(body), time=time)

    def _landed(self, key: str, tables: list[str], digest: str | None = None) -> int | None:
        """The vid of the commit an Idempotency-Key already made with this request body: remembered
        for commits of this process, and read once from the last IDEMPOTENCY_WINDOW commits before it
        started (a retry across a restart). The key reused for another body is refused (422): the new
        change is never silently dropped."""
        with self._keys_lock:
            if self._keys_before is None:
                self._keys_before = {}
                for c in self.cat.commits(until=self._started_vid, limit=IDEMPOTENCY_WINDOW) if self._started_vid else ():
                    k = c.meta.get("idempotency_key")
                    if isinstance(k, str) and isinstance(c.meta.get("tables"), list):
                        d = c.meta.get("idempotency_digest")
                        self._keys_before.setdefault(k, (c.vid, list(c.meta["tables"]), d if isinstance(d, str) else None))
            hit = self._keys.get(key) or self._keys_before.get(key)
        if hit is None:
            return None
        if hit[1] == tables and (hit[2] is None or digest is None or hit[2] == digest):
            return hit[0]
        what = f"a commit to {', '.join(hit[1])}" if hit[1] != tables else "another request body"
        raise InvalidValueError(f"Idempotency-Key {key!r} was already used for {what} (vid {hit[0]}); a retry must "
                                "send the same body: use a new key for a new commit", iceberg_type="UnprocessableEntityException",
                                status_hint=422, vid=hit[0])

    def _commit(self, reqs: list[tuple[str, CommitTableRequest]], author: str, key: str | None = None,
                digest: str | None = None, time: float | None = None) -> int:
        tables = [n for n, _ in reqs]
        if key:
            landed = self._landed(key, tables, digest)
            if landed is not None:   # a retry of a commit whose response was lost: its result, not a second commit
                return landed
        meta = _meta(reqs, key)
        if key and digest:
            meta["idempotency_digest"] = digest
        names = ", ".join(n for n, _ in reqs)
        started = False
        placing = any(isinstance(u, SetLocationUpdate) for _, r in reqs for u in r.updates) or \
            any(isinstance(q, AssertCreate) for _, r in reqs for q in r.requirements)
        try:
            with self._placing if placing else contextlib.nullcontext(), \
                    self.cat.transaction(author=author, message=f"iceberg: commit {names}", meta=meta, time=time) as txn:
                for name, req in reqs:
                    self._apply(txn, name, req)
                started = True
            assert txn.vid is not None
            if key:
                with self._keys_lock:
                    if len(self._keys) > 10_000:
                        self._keys.clear()
                    self._keys[key] = (int(txn.vid), tables, digest)
            return int(txn.vid)
        except CommitFailedException as exc:
            raise ConflictError(f"commit to {names} failed: {exc}; reload the table and retry",
                                iceberg_type="CommitFailedException") from None
        except (ConflictError, PreconditionError) as exc:
            raise ConflictError(f"commit to {names} conflicted with a concurrent commit ({exc.message}); nothing "
                                "was written: reload the table and retry", iceberg_type="CommitFailedException") from None
        except CatalogError:
            raise
        except (ValueError, ValidationError) as exc:
            if started:
                raise CommitStateUnknown(f"commit to {names}: {exc}; its outcome is unknown: reload the table to see "
                                         "whether it landed") from None
            raise _bad(f"commit to {names} is invalid: {exc}") from None
        except Exception as exc:
            raise CommitStateUnknown(f"commit to {names} broke ({type(exc).__name__}: {exc}); its outcome is "
                                     "unknown: reload the table to see whether it landed before retrying") from exc

    def _apply(self, txn: TransactionAPI, name: str, req: CommitTableRequest) -> None:
        tpath = lake.table_path(name)
        obj = txn.get(tpath)     # read through the transaction: a concurrent commit to the table conflicts
        exists = obj is not None and lake.is_table(obj.value)
        base = _base_of(self.materializer.load(name, vid=txn.read_vid), req) if exists else None
        for r in req.requirements:
            r.validate(base)
        if base is None:
            if not any(isinstance(r, AssertCreate) for r in req.requirements):
                raise _no_table(name)
            new = update_table_metadata(TableMetadataV1.model_construct(last_column_id=-1, schema=IcebergSchema()),
                                        req.updates, enforce_validation=True)
            self._create(txn, name, new)
            obj = txn.get(tpath)
            assert obj is not None
        else:
            new = update_table_metadata(base, req.updates)
            for u in req.updates:
                if isinstance(u, SetLocationUpdate):
                    self.places.check(u.location, self._tables(self.cat), name)
        self._check_format(new)
        safety.check_table_size(new, name)
        self._check_snapshot_files(name, new, req)
        for u in req.updates:
            if isinstance(u, SetLocationUpdate):
                self.places.make(u.location)   # before the commit: a location that cannot be made is refused
        assert obj is not None
        self._store(txn, name, obj.value, base, new, req)

    @staticmethod
    def _check_snapshot_files(name: str, new: TableMetadata, req: CommitTableRequest) -> None:
        """A new snapshot's manifest list is a file inside the table's location (the client wrote it
        there); anything else is the client's error (400), found before anything is written."""
        base = safety.local_path(new.location) if new.location else None
        for u in req.updates:
            if not isinstance(u, AddSnapshotUpdate):
                continue
            lst = u.snapshot.manifest_list
            path = safety.local_path(lst) if lst else None
            if path is None or base is None or not (path == base or path.startswith(base.rstrip("/") + "/")):
                raise _bad(f"snapshot {u.snapshot.snapshot_id}'s manifest list {str(lst)[:200]!r} is not inside the "
                           f"table's location {new.location}: write the manifest list under the location (pyiceberg, "
                           "Spark and DuckDB do)", snapshot_id=u.snapshot.snapshot_id)
            if not os.path.isfile(os.path.realpath(path)):
                raise _bad(f"snapshot {u.snapshot.snapshot_id}'s manifest list {str(lst)[:200]!r} does not exist: write "
                           "the manifest list (and its manifests) before committing the snapshot",
                           snapshot_id=u.snapshot.snapshot_id)

    def _store(self, txn: TransactionAPI, name: str, value: dict[str, Any], base: TableMetadata | None,
               new: TableMetadata, req: CommitTableRequest) -> None:
        tpath = lake.table_path(name)
        ice = dict(((value.get("properties") or {}).get("iceberg")) or {})
        changed_ice = self._table_updates(txn, tpath, ice, base, new, req)
        self._spec_and_data(txn, name, value, base, new, req, changed_ice, ice)

    @staticmethod
    def _table_updates(txn: TransactionAPI, tpath: str, ice: dict[str, Any], base: TableMetadata | None,  # noqa: C901 - one branch per update type of the specification
                       new: TableMetadata, req: CommitTableRequest) -> bool:
        """Apply the updates that live on the table object to `ice` (its `properties.iceberg`) or
        the table; True when `ice` changed."""
        changed_ice = False
        for u in req.updates:
            if isinstance(u, (SetPropertiesUpdate, RemovePropertiesUpdate)) and base is not None:
                props = dict(ice.get("properties") or {})
                if isinstance(u, SetPropertiesUpdate):
                    props.update(u.updates)
                else:
                    for k in u.removals:
                        props.pop(k, None)
                ice["properties"], changed_ice = props, True
            elif isinstance(u, SetLocationUpdate) and base is not None:
                txn.merge(tpath, {"location": {"op": "set", "val": u.location}})
            elif isinstance(u, (AddSortOrderUpdate, SetDefaultSortOrderUpdate)) and base is not None:
                ice["sort_orders"] = [_json(o) for o in new.sort_orders]
                ice["default_sort_order_id"] = new.default_sort_order_id
                changed_ice = True
            elif isinstance(u, SetSnapshotRefUpdate) and u.ref_name != "main":
                if u.type != "tag" and str(u.type) != "tag":
                    raise _bad(f"branch {u.ref_name!r}: semcat tables have main as their only branch ({_UNSUPPORTED_HINT}); "
                               "use a tag, or a semcat branch (clone)")
                refs = dict(ice.get("refs") or {})
                refs[u.ref_name] = {"snapshot-id": u.snapshot_id, "type": "tag",
                                    **({"max-ref-age-ms": u.max_ref_age_ms} if u.max_ref_age_ms else {})}
                ice["refs"], changed_ice = refs, True
            elif isinstance(u, RemoveSnapshotRefUpdate):
                if u.ref_name == "main":
                    raise _bad(f"the main branch cannot be removed ({_UNSUPPORTED_HINT})")
                refs = dict(ice.get("refs") or {})
                refs.pop(u.ref_name, None)
                ice["refs"], changed_ice = refs, True
            elif isinstance(u, RemoveSnapshotsUpdate):
                if new.current_snapshot_id in u.snapshot_ids:
                    raise _bad("the current snapshot cannot be removed")
                ice["removed_snapshots"] = sorted(set(ice.get("removed_snapshots") or ()) | set(u.snapshot_ids))
                changed_ice = True
            elif isinstance(u, AssignUUIDUpdate) and base is not None and str(u.uuid) != str(base.table_uuid):
                raise _bad(f"the table's uuid is {base.table_uuid}; it cannot be reassigned")
            elif not isinstance(u, (AddSchemaUpdate, SetCurrentSchemaUpdate, AddPartitionSpecUpdate, SetDefaultSpecUpdate,
                                    AddSnapshotUpdate, SetSnapshotRefUpdate, UpgradeFormatVersionUpdate,
                                    SetPropertiesUpdate, RemovePropertiesUpdate, SetLocationUpdate, AddSortOrderUpdate,
                                    SetDefaultSortOrderUpdate, AssignUUIDUpdate)):
                raise _bad(f"update {u.action!r} is not supported by semcat ({_UNSUPPORTED_HINT})", action=u.action)
        return changed_ice

    def _spec_and_data(self, txn: TransactionAPI, name: str, value: dict[str, Any], base: TableMetadata | None,
                       new: TableMetadata, req: CommitTableRequest, changed_ice: bool, ice: dict[str, Any]) -> None:
        """The partition spec, `properties.iceberg`, the schema and the new snapshots on main."""
        tpath = lake.table_path(name)
        if base is not None and ([f.model_dump() for f in new.spec().fields] != [f.model_dump() for f in base.spec().fields]
                                 or new.default_spec_id != base.default_spec_id
                                 or len(new.partition_specs) != len(base.partition_specs)):
            count = ((value.get("stats") or {}).get("file_count")) or 0
            if count:
                raise _bad(f"table {name!r} holds {count} file(s); semcat cannot change the partitioning of a table "
                           f"with data ({_UNSUPPORTED_HINT}); write a new table with the new partitioning")
            levels = convert.partition_by(new.spec(), new.schema(), name)
            txn.merge(tpath, {"partition_by": {"op": "set", "val": [lv.spec for lv in levels]}})
            ice.update(_specs(new))
            changed_ice = True
        if changed_ice:
            txn.merge(tpath, {"properties": {"iceberg": {"op": "set", "val": ice}}})
        stored = value.get("schema") if isinstance(value.get("schema"), dict) else None
        writer = _Writer(self.cat, txn, _Source(name, new), name, stored, self.places)
        if base is None or new.current_schema_id != base.current_schema_id:
            writer.apply_schema(txn, convert.catalog_schema(new.schema(), name))
        old_main = base.current_snapshot_id if base is not None else None
        if new.current_snapshot_id == old_main:
            added = [u for u in req.updates if isinstance(u, AddSnapshotUpdate)]
            if added:
                raise _bad("add-snapshot without moving main: semcat keeps only snapshots on main; send "
                           "set-snapshot-ref main to the new snapshot in the same commit")
            return
        chain = []
        sid = new.current_snapshot_id
        known = {s.snapshot_id for s in base.snapshots} if base is not None else set()
        while sid is not None and sid != old_main:
            snap = new.snapshot_by_id(sid)
            if snap is None or sid in known:
                raise _bad(f"main can only move forward to new snapshots of this commit; snapshot {sid} is not one "
                           f"({_UNSUPPORTED_HINT}); to go back in time read with snapshot_id=... or time travel")
            chain.append(snap)
            sid = snap.parent_snapshot_id
        for snap in reversed(chain):
            try:
                writer.apply_snapshot(txn, snap)
            except CatalogError:
                raise
            except Exception as exc:  # noqa: BLE001 - the client's manifests could not be read: nothing is written yet
                raise _bad(f"snapshot {snap.snapshot_id}: its manifest list or manifests ({snap.manifest_list}) cannot "
                           f"be read ({type(exc).__name__}: {str(exc)[:300]}); write valid Iceberg manifests and "
                           "commit again (nothing was written)", snapshot_id=snap.snapshot_id) from None


def _base_of(view: TableView, req: CommitTableRequest) -> TableMetadata:
    """What a commit is checked against and applied to: for a commit that only adds new snapshots
    and points refs at them or at snapshots refs already point at (an append, an overwrite), the
    metadata without the other snapshots and the snapshot log (`TableView.commit_base`), so its cost
    does not grow with the history; otherwise the whole metadata."""
    added = {u.snapshot.snapshot_id for u in req.updates if isinstance(u, AddSnapshotUpdate)}
    if not added or added & view.snapshot_ids:
        return view.metadata   # a snapshot id the history holds: the whole metadata answers it
    light = view.commit_base
    pointed = {r.snapshot_id for r in light.refs.values()}
    for u in req.updates:
        if isinstance(u, AddSnapshotUpdate):
            continue
        if isinstance(u, SetSnapshotRefUpdate) and (u.snapshot_id in added or u.snapshot_id in pointed):
            continue
        if isinstance(u, (SetPropertiesUpdate, RemovePropertiesUpdate, AssignUUIDUpdate)):
            continue
        return view.metadata
    return light


def _meta(reqs: list[tuple[str, CommitTableRequest]], key: str | None) -> dict[str, Any]:
    """A REST commit's catalog meta: the tables, the Iceberg snapshot each moves main to (the
    materialized snapshot id of the commit's vid), and the Idempotency-Key. Refuses `semcat.*`
    property changes before anything is read."""
    meta: dict[str, Any] = {"provenance": "iceberg-rest", "iceberg_rest": {}, "tables": [n for n, _ in reqs]}
    if key:
        meta["idempotency_key"] = key
    for name, req in reqs:
        for u in req.updates:
            if isinstance(u, SetPropertiesUpdate):
                _reject_reserved(u.updates, "property")
                safety.check_properties(u.updates, "property")
            elif isinstance(u, RemovePropertiesUpdate):
                _reject_reserved(u.removals, "property")
        snaps = [u.snapshot for u in req.updates if isinstance(u, AddSnapshotUpdate)]
        main = [u for u in req.updates if isinstance(u, SetSnapshotRefUpdate) and u.ref_name == "main"]
        if snaps and main:
            last = main[-1].snapshot_id
            op = next((s.summary.operation.value for s in snaps if s.snapshot_id == last and s.summary), None)
            meta["iceberg_rest"][lake.table_path(name)] = {"snapshot_id": last, "operation": op}
        if snaps:   # what a purge may delete besides the data files (safety.purge)
            entry = meta["iceberg_rest"].setdefault(lake.table_path(name), {})
            entry["manifest_lists"] = [s.manifest_list for s in snaps if s.manifest_list]
    return meta


def _specs(md: TableMetadata) -> dict[str, Any]:
    """A table's partition specs, default spec id and last partition field id, as stored in
    `properties.iceberg` (spec evolution: the materialized metadata lists them all)."""
    return {"specs": [_json(s) for s in md.partition_specs], "default_spec_id": md.default_spec_id,
            "last_partition_id": md.last_partition_id}


def _commit_request(body: Any) -> CommitTableRequest:
    if not isinstance(body, dict):
        raise _bad("a commit body must be a JSON object with 'requirements' and 'updates'")
    try:
        return CommitTableRequest.model_validate(body)
    except ValidationError as exc:
        raise _bad(f"commit request is invalid: {_first_error(exc)} (requirement types: assert-create, "
                   "assert-table-uuid, assert-ref-snapshot-id, assert-last-assigned-field-id, assert-current-schema-id, "
                   "assert-last-assigned-partition-id, assert-default-spec-id, assert-default-sort-order-id)") from None
    except Exception as exc:  # noqa: BLE001 - pyiceberg's own parsing of the client's input (TypeError, KeyError, ...)
        raise _bad(f"commit request is invalid: {exc}") from None


def _first_error(exc: ValidationError) -> str:
    errs = exc.errors()
    if not errs:
        return str(exc)
    e = errs[0]
    loc = ".".join(str(x) for x in e.get("loc", ()))
    return f"{loc}: {e.get('msg')}" + (f" (and {len(errs) - 1} more)" if len(errs) > 1 else "")


def _json(model: Any) -> Any:
    import json

    return json.loads(model.model_dump_json(by_alias=True, exclude_none=True))


def _page(names: list[str], token: str | None, size: int | None) -> tuple[list[str], str | None]:
    start = 0
    if token:
        if not token.isdigit():
            raise _bad(f"pageToken {token!r} is not one this server issued; start over without it")
        start = int(token)
    if size is None or size <= 0:
        return names[start:], None
    end = start + size
    return names[start:end], (str(end) if end < len(names) else None)



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

Files: under `<root>/<table uuid>/metadata/`, one manifest list per snapshot and manifests shared
across snapshots: the files one commit added are one manifest (level 0); min-count manifests of a
level (`commit.manifest.min-count-to-merge`, default 8) are merged into one of the next level by
the snapshot that finds them, as Iceberg's writers merge; a commit that removes files rewrites the
manifests that held them. A list holds fewer than min-count manifests a level and each file's entry
is rewritten once a level, so H snapshots of F files write O(H + F log F) entries, not O(H x F).
Entries are encoded once (`avro_out`); names are digests of the content, so a file is written once
and a restarted server writes nothing. The files of one load are durable (`durable`: an fsync each,
or one syncfs for many) before the metadata file naming them is written, fsynced and renamed. A state is cached in memory and later loads only process
the commits after it. A view (one per table and last commit touching it) holds the metadata text
and builds each answer and its ETag once; views are kept least recently used first out within
VIEW_CACHE_BYTES (`SEMCAT_ICEBERG_CACHE_MB`) and VIEW_CACHE_ENTRIES. Metadata files are `NNNNN-<uuid>.metadata.json` (version: 0 as created, +1
per change). A table created by a REST rename starts from its source's state (same snapshots,
manifests and metadata file).

At commit time (`commit_step`, called by the engine's post-commit hook `oncommit`): the committing
process runs the same incremental step (`_advance`) for the table from its state (in memory, else
replayed from the journal, `journal.py`), writes the snapshot's files without fsync and journals
the step; a load replays the journal (checking every file it names exists whole), makes the files
durable and only assembles the metadata. Without a state to continue, the load walks the history
(and journals the state it built).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import NoSuchTableError
from catalog_core.iceberg import avro_out as avro
from catalog_core.iceberg import export
from catalog_core.iceberg import journal as jn
from catalog_core.iceberg.journal import table_uuid
from catalog_core.model import Commit, Version
from catalog_core.paths import split

__all__ = ["Materializer", "TableView", "forget_catalog", "PropertiesFn", "RESERVED_PREFIX", "RENAMED_META", "snapshot_id_of"]

RESERVED_PREFIX = "semcat."
LIVE_LISTING_FROM = 32   # commits to process from which the table's live files are listed at once
RENAMED_META = "iceberg_renamed"   # a rename commit's meta: {new table path: old table path}
PropertiesFn = Callable[[str, int], dict[str, str]]   # (table name, vid) -> semcat.* properties (and comment)
_IO = PyArrowFileIO()
# the views kept in memory (their metadata texts and answers; a 9,000-snapshot table's view is
# about 30 MB): least recently used out past either bound
VIEW_CACHE_BYTES = int(float(os.environ.get("SEMCAT_ICEBERG_CACHE_MB", "512")) * 1024 * 1024)
VIEW_CACHE_ENTRIES = 4096
PROPERTIES_TTL_S = 30.0   # semcat.* properties (freshness against the clock) are recomputed at most this often
COMMIT_STEP_MAX = 64      # commits a commit-time step processes at most (more: left to the next load)
COMMIT_SCAN_MAX = 4096    # catalog commits a commit-time step reads at most to find the table's
UNSYNCED_MAX = 200_000    # files a committing process remembers as not yet durable (the journal knows them all)
_log = logging.getLogger("semcat.iceberg")


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
    frag: str = ""                    # its `snapshots` entry as JSON (made once: a view joins them)
    log_frag: str = ""                # its `snapshot-log` entry as JSON

    def fragments(self) -> tuple[str, str]:
        if not self.frag:
            self.frag = json.dumps({"snapshot-id": self.snapshot_id,
                                    **({"parent-snapshot-id": self.parent_id} if self.parent_id else {}),
                                    "sequence-number": self.vid, "timestamp-ms": self.time_ms,
                                    "manifest-list": self.manifest_list, "summary": self.summary,
                                    "schema-id": self.schema_id}, separators=(",", ":"))
            self.log_frag = json.dumps({"snapshot-id": self.snapshot_id, "timestamp-ms": self.time_ms},
                                       separators=(",", ":"))
        return self.frag, self.log_frag


@dataclass(slots=True)
class _Ent:
    """One live data file: the snapshot and sequence number that added it and its encoded
    `data_file` struct (encoded once, reused by every manifest that holds it)."""
    sid: int
    seq: int
    rows: int
    size: int
    part: tuple[Any, ...]
    data: bytes


@dataclass(eq=False)
class _Man:
    """One manifest: written once by the snapshot `adder` (sequence number `vid`), then shared by
    every later snapshot until a commit removes one of its files (rewritten) or it is merged."""
    order: int                        # creation order (the manifest list lists the newest first)
    level: int                        # 0: the files of one commit; L + 1: a merge of min-count manifests of level L
    vid: int
    adder: int
    spec: str                         # the partition spec it was written with (only equal specs merge)
    kind: avro.ManifestKind
    entries: dict[str, _Ent]
    nbytes: int = 0
    path: str = ""
    record: bytes = b""
    kkey: str = ""                    # the key of its `_Kind` (the table value it was written with)


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
    mans: list[_Man] = field(default_factory=list)
    file_man: dict[str, _Man] = field(default_factory=dict)
    made: int = 0                       # manifests created (their `order`)
    totals: dict[str, int] = field(default_factory=lambda: {"records": 0, "files": 0, "size": 0})
    commit_times: dict[int, int] = field(default_factory=dict)   # vid -> ms of every commit touching the table
    written: dict[str, int] = field(default_factory=lambda: {"files": 0, "bytes": 0})
    pending: list[tuple[str, bytes]] = field(default_factory=list)
    inflight: list[Future[list[int]]] = field(default_factory=list)   # chunks being written
    unsynced: list[str] = field(default_factory=list)   # files not known durable (put, or replayed from the journal)
    lock: threading.Lock = field(default_factory=threading.Lock)
    puts: list[tuple[str, int]] = field(default_factory=list)   # files put by the step being journaled (path, size)
    jpos: int = 0                       # bytes of the journal replayed
    jdone: int | None = None            # the journal holds a chain replaying to this state as of this `done`
    jkinds: dict[str, int] = field(default_factory=dict)   # kind key -> its index in the journal
    jkind_list: list[str] = field(default_factory=list)
    overflow: bool = False              # more unsynced files than UNSYNCED_MAX were forgotten


@dataclass
class TableView:
    """One table's Iceberg metadata as of `vid` (`table_vid`: the last commit that touched it).
    Its answers (LoadTableResult for `snapshots=all` / `refs`, the CommitTableResponse) and their
    ETags are built once per view: a warm load neither parses nor hashes the metadata."""
    name: str
    vid: int
    table_vid: int
    metadata_location: str
    value: dict[str, Any]
    text: str = ""                 # the metadata as JSON (what the metadata file holds)
    refs_text: str = ""            # the same with only the snapshots refs point at (`snapshots=refs`)
    snapshot_ids: frozenset[int] = frozenset()   # every snapshot id of the metadata
    _answers: dict[str, bytes] = field(default_factory=dict)
    _etags: dict[str, str] = field(default_factory=dict)
    _metadata: TableMetadata | None = None
    _base: TableMetadata | None = None

    @property
    def metadata(self) -> TableMetadata:
        """The metadata as pyiceberg's model (parsed on first use: a load answers `text` as it is)."""
        if self._metadata is None:
            self._metadata = TableMetadataUtil.parse_raw(self.text)
        return self._metadata

    @property
    def commit_base(self) -> TableMetadata:
        """The metadata as pyiceberg's model with only the snapshots refs point at (`snapshots=refs`):
        what a commit that only adds snapshots and moves refs to them is checked against and
        applied to (its size does not grow with the history)."""
        if self._base is None:
            self._base = TableMetadataUtil.parse_raw(self.refs_text) if self.refs_text else self.metadata
        return self._base

    def load_result(self, snapshots: str | None = None) -> bytes:
        """LoadTableResult as JSON bytes (built once per view and `snapshots` mode); `snapshots="commit"`:
        the CommitTableResponse (no config); `"commit-refs"`: that response with only the snapshots
        refs point at (a client that loads with `snapshots=refs` and asks for it, docs/iceberg-rest.md)."""
        mode = snapshots if snapshots in ("refs", "commit", "commit-refs") else "all"
        out = self._answers.get(mode)
        if out is None:
            md = self.refs_text if mode in ("refs", "commit-refs") and self.refs_text else self.text
            out = ('{"metadata-location":' + json.dumps(self.metadata_location) + ',"metadata":' + md +
                   ("}" if mode.startswith("commit") else ',"config":{}}')).encode()
            self._answers[mode] = out
        return out

    def etag(self, snapshots: str | None = None) -> str:
        """The ETag of `load_result(snapshots)` (a digest of its bytes, computed once)."""
        mode = snapshots if snapshots in ("refs", "commit", "commit-refs") else "all"
        tag = self._etags.get(mode)
        if tag is None:
            tag = '"' + hashlib.sha256(self.load_result(mode)).hexdigest()[:32] + '"'
            self._etags[mode] = tag
        return tag

    def nbytes(self) -> int:
        """What the view holds in memory, about (its texts and the answers it will build)."""
        return 3 * len(self.text) + 3 * len(self.refs_text) + 1024


@dataclass
class _Kind:
    schema: IcebergSchema
    spec: PartitionSpec
    names: dict[str, int]
    types: dict[int, Any]
    avro: avro.ManifestKind
    spec_key: str
    key: str = ""


MIN_COUNT_TO_MERGE = 8            # `commit.manifest.min-count-to-merge` unless the table sets it (2..100)
TARGET_SIZE_BYTES = 8 << 20       # `commit.manifest.target-size-bytes` (Iceberg's default) unless set


def merge_settings(value: dict[str, Any]) -> tuple[int, int]:
    """(min-count-to-merge, target-size-bytes) of a table: its Iceberg properties, else semcat's defaults."""
    props = _iceberg_props(value).get("properties") or {}
    try:
        count = min(100, max(2, int(props.get("commit.manifest.min-count-to-merge", MIN_COUNT_TO_MERGE))))
    except (TypeError, ValueError):
        count = MIN_COUNT_TO_MERGE
    try:
        target = max(1024, int(props.get("commit.manifest.target-size-bytes", TARGET_SIZE_BYTES)))
    except (TypeError, ValueError):
        target = TARGET_SIZE_BYTES
    return count, target


def _default_spec_id(value: dict[str, Any]) -> int:
    sid = _iceberg_props(value).get("default_spec_id")
    return sid if isinstance(sid, int) else 0


def _iceberg_props(value: dict[str, Any]) -> dict[str, Any]:
    ice = ((value.get("properties") or {}).get("iceberg")) or {}
    return ice if isinstance(ice, dict) else {}


class Materializer:
    """Builds and caches the Iceberg view of catalog tables (thread-safe; one per server)."""

    def __init__(self, cat: CatalogAPI, root: str, properties: PropertiesFn | None = None,
                 shared: bool = False) -> None:
        """`shared`: the tables' states are those of every shared Materializer of this catalog and
        root in this process (the server's REST routes and the commit hook: a commit's step is not
        redone by the next load)."""
        self.cat, self.root, self.properties_fn = cat, os.path.abspath(root), properties
        # the paths this process writes into manifests (journal.view_of): journal records written
        # with another view (a copied lake's original, another spelling of the directory) name
        # other files and are never replayed here
        self.view = jn.view_of(self.root, getattr(cat, "warehouse", None))
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()
        self._left: set[str] = set()   # tables whose commits are left to the next load (no state to continue)
        if shared:
            self._states, self._lock, self._left = _shared_states(cat, self.root)
        self._views: OrderedDict[tuple[Any, ...], tuple[float, TableView]] = OrderedDict()
        self._view_bytes = 0
        self._kinds: dict[str, _Kind] = {}
        self._dirs: set[str] = set()
        self._schema_texts: dict[int, tuple[IcebergSchema, Any]] = {}
        self._pool: ThreadPoolExecutor | None = None

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
            self._catch_up(state)   # what other processes' commits journaled since
            if state.done < at:
                done0 = state.done
                try:
                    self._advance(state, versions, at)
                except BaseException:
                    self._forget(tpath, state)   # a half-processed state is never reused
                    raise
                self._journal(state, done0)
            self._left.discard(tpath)   # commits continue from this state
            key, named = self._key(state, at)
            now = time.monotonic()
            cached = self._hit(key)
            if cached is not None:
                return cached
            if state.unsynced:   # files a commit-time step (or the journal) left not durable
                self._settle(state)
                if state.jdone == state.done:
                    self._journal_write(state, {"k": "durable", "to": state.done})
            view = self._view(name, tpath, state, versions, at, key[1], value, named)
            self._keep(key, now, view)
            return view

    def _keep(self, key: tuple[Any, ...], now: float, view: TableView) -> None:
        """Cache a view, least recently used first out, within VIEW_CACHE_BYTES (about: the view's
        texts and answers) and VIEW_CACHE_ENTRIES views."""
        with self._lock:
            old = self._views.pop(key, None)
            if old is not None:
                self._view_bytes -= old[1].nbytes()
            self._views[key] = (now, view)
            self._view_bytes += view.nbytes()
            while len(self._views) > 1 and (self._view_bytes > VIEW_CACHE_BYTES or len(self._views) > VIEW_CACHE_ENTRIES):
                _k, (_t, gone) = self._views.popitem(last=False)
                self._view_bytes -= gone.nbytes()

    def _hit(self, key: tuple[Any, ...]) -> TableView | None:
        """The cached view of `key` unless its semcat.* properties are older than PROPERTIES_TTL_S."""
        with self._lock:
            hit = self._views.get(key)
            if hit is None:
                return None
            if self.properties_fn is not None and time.monotonic() - hit[0] >= PROPERTIES_TTL_S:
                return None
            self._views.move_to_end(key)
            return hit[1]

    def _key(self, st: _State, at: int) -> tuple[tuple[Any, ...], tuple[tuple[str, int], ...]]:
        if at >= st.table_vid and st.table_vid in st.commit_times:
            table_vid = st.table_vid   # the last commit that touched the table (no scan of the history)
        else:
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
            return self._hit(key)

    def purge_metadata(self, tpath: str, value: dict[str, Any], dropped_vid: int) -> str | None:
        """Delete the Iceberg metadata semcat materialized for the table at `tpath` dropped at
        `dropped_vid` (`<root>/<uuid>`: manifests, manifest lists, metadata files), unless a live
        table has the same uuid (a clone); forget its cached state. Returns the directory deleted."""
        import shutil

        versions = self.cat.history(tpath)
        u = table_uuid(value, tpath, self._created(versions, dropped_vid - 1))
        with self._lock:
            self._states.pop(tpath, None)
            with contextlib.suppress(OSError):
                os.remove(jn.journal_path(self.root, tpath))
            for key in [k for k in self._views if k[0] == tpath]:
                self._view_bytes -= self._views.pop(key)[1].nbytes()
        if any(_iceberg_props(o.value).get("uuid") == u for o in self.cat.query(lake.tables_query())):
            return None
        target = os.path.realpath(os.path.join(self.root, u))
        if os.path.dirname(target) != os.path.realpath(self.root) or not os.path.isdir(target):
            return None
        shutil.rmtree(target, ignore_errors=True)
        self._dirs.discard(os.path.join(self.root, u, "metadata"))
        return target

    # ---------------------------------------------------------------- commit time
    @classmethod
    def for_commits(cls, cat: CatalogAPI) -> Materializer | None:
        """The materializer a committing process uses (one per catalog: the default root
        `<warehouse>/_iceberg`, states shared with the server's REST routes on that root)."""
        wh = getattr(cat, "warehouse", None)
        if not isinstance(wh, str):
            return None
        try:
            m = _COMMIT_MATERIALIZERS.get(cat)
            if m is None:
                m = cls(cat, os.path.join(wh, "_iceberg"), shared=True)
                _COMMIT_MATERIALIZERS[cat] = m
        except TypeError:   # a catalog that cannot be weakly referenced
            return None
        return m

    def commit_step(self, tpath: str, vid: int) -> bool:
        """Materialize at commit time: process the table's commits through `vid` (just committed)
        from its persisted state (in memory, else the journal), as a load would, writing the new
        snapshot's manifest and manifest list (not fsynced: the load that first names them makes
        them durable) and journaling the step. Nothing is done (False) when there is no state to
        continue (a history from before the journal, a renamed or re-created table) or more than
        COMMIT_STEP_MAX commits to process: the next load walks the history, as it always did.
        Such a table is then left to the load (nothing is read at its next commits) until a load
        of it in this process; so is one whose step failed (raised here, logged by the hook)."""
        obj = self.cat.get(tpath, vid=vid)
        if obj is None or not lake.is_table(obj.value):
            return False
        created_now = vid <= 1 or self.cat.get(tpath, vid=vid - 1) is None
        if tpath in self._left and not created_now:
            return False
        try:
            done = self._commit_step(tpath, vid, obj.value, created_now)
        except BaseException:
            self._left.add(tpath)
            raise
        if not done:
            self._left.add(tpath)
        else:
            self._left.discard(tpath)
        return done

    def _commit_step(self, tpath: str, vid: int, value: dict[str, Any], created_now: bool) -> bool:
        with self._lock:
            st = self._states.get(tpath)
        if st is not None and created_now and st.created != vid:
            self._forget(tpath, st)   # dropped and created again: a new table, a new state
            st = None
        if st is None:
            st = None if created_now else self._restore(tpath, check=False)
            if st is None:
                if not created_now:
                    return False   # a history nobody journaled: the first load walks it
                made = self.cat.commits(since=vid, until=vid)
                if made and ((made[0].meta or {}).get(RENAMED_META) or {}).get(tpath):
                    return False   # a rename: the load starts from the source's state
                st = self._fresh(tpath, vid, table_uuid(value, tpath, vid))
            with self._lock:
                st = self._states.setdefault(tpath, st)
        with st.lock:
            self._catch_up(st, check=False)
            if st.done >= vid:
                return True
            if st.uuid != table_uuid(value, tpath, st.created):
                self._forget(tpath, st)
                return False
            if vid - st.done > COMMIT_SCAN_MAX:
                return False
            commits = self.cat.commits(since=st.done + 1, until=vid, prefix=tpath)
            if len(commits) > COMMIT_STEP_MAX:
                return False
            versions: list[Version] = []
            for c in commits:
                if c.vid > st.created and tpath in c.paths and self.cat.get(tpath, vid=c.vid - 1) is None:
                    self._forget(tpath, st)   # dropped and created again since: the load starts over
                    return False
                o = None if c.vid == vid else self.cat.get(tpath, vid=c.vid)
                versions.append(Version(tpath, c.vid, None, o.value if o is not None else value))
            done0 = st.done
            try:
                self._advance(st, versions, vid, commits=commits, sync=False)
            except BaseException:
                self._forget(tpath, st)
                raise
            self._journal(st, done0)
        return True

    def _fresh(self, tpath: str, created: int, u: str) -> _State:
        """A new state (nothing processed): what its journal holds so far is another table's (an
        older one at the same path) or nothing, and is not replayed into it."""
        st = _State(tpath, created, u, done=created - 1)
        with contextlib.suppress(OSError):
            st.jpos = os.path.getsize(jn.journal_path(self.root, tpath))
        return st

    def _forget(self, tpath: str, st: _State) -> None:
        with self._lock:
            if self._states.get(tpath) is st:
                del self._states[tpath]

    # ---------------------------------------------------------------- the journal
    def _journal(self, st: _State, done0: int) -> None:
        """Journal what processing the commits after `done0` did: a step extending the journal's
        chain, or the whole state (a base) when the journal does not end at `done0`. A failed
        write is logged: the journal then lags and the next load walks the rest."""
        try:
            rec = self._record(st, done0 if st.jdone == done0 else None)
            self._journal_write(st, rec)
            st.jdone = st.done
        except (OSError, ValueError, TypeError) as exc:
            _log.warning("iceberg: could not journal the state of %s at vid %d: %s", st.tpath, st.done, exc)
        finally:
            st.puts = []

    def _journal_write(self, st: _State, rec: dict[str, Any]) -> None:
        rec["view"] = self.view
        path = jn.journal_path(self.root, st.tpath)
        start, end = jn.append(path, rec)
        if start == st.jpos:   # nobody appended meanwhile: this process need not read it back
            st.jpos = end

    def _kind_index(self, st: _State, key: str, new: list[str]) -> int:
        i = st.jkinds.get(key)
        if i is None:
            i = st.jkinds[key] = len(st.jkind_list)
            st.jkind_list.append(key)
            new.append(key)
        return i

    def _record(self, st: _State, since: int | None) -> dict[str, Any]:
        """A step record (what changed after `since`) or, `since` None, a base record (the state)."""
        base = since is None
        if base:
            st.jkinds, st.jkind_list = {}, []
        new_kinds: list[str] = []
        lo = -1 if since is None else since
        mans = [m for m in sorted(st.mans, key=lambda m: m.order) if base or m.vid > lo]
        fresh_orders = {m.order for m in mans}
        ents = []
        for m in mans:
            for p, e in m.entries.items():
                if base or e.seq > lo:
                    ents.append([p, e.sid, e.seq, e.rows, e.size, [jn.enc_value(v) for v in e.part], jn.b64(e.data)])
        rec: dict[str, Any] = {
            "k": "base" if base else "step", "from": lo, "to": st.done, "table_vid": st.table_vid,
            "last_time_ms": st.last_time_ms, "made": st.made, "totals": st.totals,
            "times": [[v, st.commit_times[v]] for v in _newer(st.commit_times, lo)],
            "snaps": [[s.vid, s.snapshot_id, s.parent_id, s.time_ms, s.schema_id, s.manifest_list, s.summary]
                      for s in _newer_snaps(st.snaps, lo)],
            "mans": [[m.order, m.level, m.vid, m.adder, self._kind_index(st, m.kkey, new_kinds), m.path,
                      jn.b64(m.record), list(m.entries)] for m in mans],
            "ents": ents,
            "live": None if base else sorted(m.order for m in st.mans if m.order not in fresh_orders),
            "files": [list(x) for x in st.puts],
        }
        rec["kinds"] = new_kinds
        if base:
            rec.update(tpath=st.tpath, created=st.created, uuid=st.uuid)
        return rec

    def _restore(self, tpath: str, check: bool = True) -> _State | None:
        """The table's state replayed from its journal (None without one, or without a base)."""
        st = _State(tpath, -1, "", done=-2)
        self._catch_up(st, check)
        return st if st.created >= 0 else None

    def _catch_up(self, st: _State, check: bool = True) -> None:
        """Apply the journal's records after what `st` replayed (other processes' commit-time steps).
        `check`: every file a record names must exist whole; the first record that fails it stops
        the replay (the history re-creates the rest). A record written with another view than this
        materializer's (`journal.view_of`: its manifests name the data files as another directory
        spells them, e.g. the original of a copied lake) is skipped: it never applies."""
        path = jn.journal_path(self.root, st.tpath)
        try:
            size = os.path.getsize(path)
        except OSError:
            return
        if size <= st.jpos:
            return
        records, st.jpos, _ = jn.read_from(path, st.jpos)
        broken = False
        for rec in records:
            kind = rec.get("k")
            if rec.get("view") != self.view:
                if kind in ("base", "step"):
                    # another view's chain (a copied lake's original): what this process journals next
                    # is a base, never a step chained onto records it cannot replay
                    st.jdone = None
                continue
            try:
                if kind == "base" and rec.get("tpath") == st.tpath and (
                        st.created < 0 or int(rec.get("created", -1)) > st.created or int(rec.get("to", -1)) > st.done):
                    if check and not _files_whole(rec.get("files") or ()):
                        broken = True
                        continue
                    broken = False
                    self._apply(st, rec, base=True)
                elif kind == "step" and not broken and rec.get("from") == st.done and st.created >= 0:
                    if check and not _files_whole(rec.get("files") or ()):
                        broken = True
                        continue
                    self._apply(st, rec, base=False)
                elif kind == "durable" and rec.get("to") == st.done and st.jdone == st.done:
                    st.unsynced = []
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                _log.warning("iceberg: journal of %s: a record does not apply (%s); the history re-creates it",
                             st.tpath, exc)
                broken = True

    def _apply(self, st: _State, rec: dict[str, Any], base: bool) -> None:
        """Apply one record; everything is read and checked before `st` changes (a record that does
        not apply raises and leaves `st` as it was)."""
        kind_list = [] if base else list(st.jkind_list)
        kind_list.extend(str(k) for k in rec.get("kinds") or ())
        file_man = {} if base else st.file_man
        ents = {p: _Ent(int(sid), int(seq), int(rows), int(size), tuple(jn.dec_value(v) for v in part), jn.unb64(data))
                for p, sid, seq, rows, size, part, data in rec["ents"]}
        made: list[_Man] = []
        for order, level, mvid, adder, ki, mpath, record, files in rec["mans"]:
            kind = self._kind_of_key(kind_list[ki])
            entries = {p: ents[p] if p in ents else file_man[p].entries[p] for p in files}
            made.append(_Man(int(order), int(level), int(mvid), int(adder), kind.spec_key, kind.avro, entries,
                             sum(len(e.data) for e in entries.values()), str(mpath), jn.unb64(record), kind.key))
        times = [(int(v), int(ms)) for v, ms in rec["times"]]
        snaps = [_Snap(int(vid), int(sid), parent, int(tms), int(schema_id), str(mlist), dict(summary))
                 for vid, sid, parent, tms, schema_id, mlist, summary in rec["snaps"]]
        keep = None if base else {int(o) for o in rec["live"]}
        numbers = (int(rec["made"]), dict(rec["totals"]), int(rec["table_vid"]), int(rec["last_time_ms"]), int(rec["to"]))
        files = [str(p) for p, _n in rec.get("files") or ()]
        # ---- nothing raises below
        if base:
            st.created, st.uuid = int(rec["created"]), str(rec["uuid"])
            st.snaps, st.snap_ids, st.mans, st.file_man, st.commit_times = [], set(), [], {}, {}
            st.unsynced = []
        else:
            for m in st.mans:
                if m.order not in keep:   # type: ignore[operator]
                    for p in m.entries:
                        if st.file_man.get(p) is m:
                            del st.file_man[p]
            st.mans = [m for m in st.mans if m.order in keep]   # type: ignore[operator]
        st.jkind_list = kind_list
        st.jkinds = {k: i for i, k in enumerate(kind_list)}
        for m in made:
            st.mans.append(m)
            for p in m.entries:
                st.file_man[p] = m
        st.commit_times.update(times)
        for sn in snaps:
            st.snaps.append(sn)
            st.snap_ids.add(sn.snapshot_id)
        st.made, st.totals, st.table_vid, st.last_time_ms, st.done = numbers
        st.unsynced.extend(files)
        st.jdone = st.done

    def _kind_of_key(self, key: str) -> _Kind:
        k = self._kinds.get(key)
        if k is None:
            schema, partition_by, spec_id = json.loads(key)
            k = self._kind({"schema": schema, "partition_by": partition_by,
                            "properties": {"iceberg": {"default_spec_id": spec_id}}})
        return k

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
            if st is not None and st.created == created and st.uuid == u:
                return st
        st = self._restore(tpath)
        if st is None or st.created != created or st.uuid != u:
            st = self._renamed(tpath, created, u) or self._fresh(tpath, created, u)
            st.jpos = max(st.jpos, self._fresh(tpath, created, u).jpos)   # a renamed table: its path's journal is older
        with self._lock:
            self._states[tpath] = st
        return st

    def _renamed(self, tpath: str, created: int, u: str) -> _State | None:
        """The state of a table that a rename created: the source's as of the rename, its files
        under the new path (the rename is no Iceberg change: same snapshots, same metadata file)."""
        made = self.cat.commits(since=created, until=created)
        src = ((made[0].meta or {}).get(RENAMED_META) or {}).get(tpath) if made else None
        if not isinstance(src, str) or src == tpath:
            return None
        try:
            self.load(lake.name_of(src), vid=created - 1)
        except NoSuchTableError:
            return None
        with self._lock:
            old = self._states.get(src)
        if old is None or old.done != created - 1 or old.uuid != u:
            return None
        with old.lock:
            st = _State(tpath, created, u, done=created, table_vid=old.table_vid, last_time_ms=old.last_time_ms,
                        snaps=list(old.snaps), snap_ids=set(old.snap_ids), made=old.made, totals=dict(old.totals),
                        commit_times=dict(old.commit_times))
            n = len(src)
            for m in old.mans:
                copy = _Man(m.order, m.level, m.vid, m.adder, m.spec, m.kind,
                            {tpath + p[n:]: e for p, e in m.entries.items()}, m.nbytes, m.path, m.record, m.kkey)
                st.mans.append(copy)
                for p in copy.entries:
                    st.file_man[p] = copy
        return st

    def _advance(self, st: _State, versions: list[Version], at: int, commits: list[Commit] | None = None,
                 sync: bool = True) -> None:
        """Process the commits touching the table after `st.done` through `at` (the one code path of a
        first load's walk of the history and of a commit-time step): each snapshot's new manifests
        and its manifest list are written (durable when `sync`; a commit-time step leaves that to the
        load that first names them). `versions`: the table's values, oldest first, covering them."""
        if commits is None:
            commits = self.cat.commits(since=st.done + 1, until=at, prefix=st.tpath)
        # the files live at `at`, with the vid that wrote each: most commits' added files are found
        # here, without reading the commit's changes object by object
        live = ({o.path: o for o in self.cat.plan_files(lake.name_of(st.tpath), vid=at)}
                if len(commits) > LIVE_LISTING_FROM else {})
        vi, value, kind = -1, {}, None
        try:
            for c in commits:
                while vi + 1 < len(versions) and versions[vi + 1].vid <= c.vid:
                    vi += 1
                    value, kind = versions[vi].value or {}, None
                if kind is None:
                    kind = self._kind(value)
                st.commit_times[c.vid] = int(c.time * 1000)
                st.table_vid = c.vid
                self._commit(st, value, kind, c, live)
        finally:
            self._settle(st, sync)
        st.done = at

    def _kind(self, value: dict[str, Any]) -> _Kind:
        """The schema, spec and manifest header of a table value (cached by their JSON)."""
        key = json.dumps([value.get("schema"), value.get("partition_by"), _default_spec_id(value)], sort_keys=True,
                         default=str)
        k = self._kinds.get(key)
        if k is None:
            schema = export.iceberg_schema(value.get("schema"))
            spec = export.partition_spec(value.get("partition_by"), schema, spec_id=_default_spec_id(value))
            names = {c.name: c.id for c in lake.Schema.from_raw(value.get("schema") or {}).columns if c.id is not None}
            spec_key = json.dumps(spec.model_dump(mode="json"), sort_keys=True)
            k = _Kind(schema, spec, names, export.field_types(schema), avro.ManifestKind(schema, spec), spec_key, key)
            if len(self._kinds) > 1024:
                self._kinds.clear()
            self._kinds[key] = k
        return k

    def _commit(self, st: _State, value: dict[str, Any], kind: _Kind, c: Commit, live: dict[str, Any]) -> None:
        vid, time_ms, meta = c.vid, int(c.time * 1000), c.meta or {}
        added, removed = self._changes(st, c, live)
        sid = snapshot_id_of(meta, st.tpath, st.uuid)
        if not added and not removed and sid is None:
            return
        if sid is None or sid in st.snap_ids:
            sid = vid
        summary = {"added-data-files": 0, "deleted-data-files": 0, "added-records": 0, "deleted-records": 0,
                   "added-files-size": 0, "removed-files-size": 0}
        fresh = self._remove(st, removed, vid, sid, kind, summary)
        if added:
            fresh.append(self._add(st, added, vid, sid, kind, summary))
        for man in fresh:
            st.mans.append(man)
            for p in man.entries:
                st.file_man[p] = man
        self._merge(st, value, vid, sid, kind)
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
        mlist = self._write_list(st, sid, parent, vid)
        st.snaps.append(_Snap(vid, sid, parent, time_ms, kind.schema.schema_id, mlist, out))
        st.snap_ids.add(sid)

    def _changes(self, st: _State, c: Commit, live: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
        """The file leaves commit `c` added (with their values) and removed. `live`: the files live
        at the end of the range being processed (an added file still live there is read from it)."""
        added: list[tuple[str, dict[str, Any]]] = []
        removed: list[str] = []
        under = st.tpath + "/"
        for path in c.paths:
            if not path.startswith(under):
                continue
            if path in st.file_man:   # the commit removed or rewrote a live file
                removed.append(path)
                obj = self.cat.get(path, vid=c.vid)
            else:
                obj = live.get(path)
                if obj is None or obj.vid != c.vid:
                    obj = self.cat.get(path, vid=c.vid)
            if obj is not None and obj.leaf and obj.value.get("obj_type") == "file":
                added.append((path, obj.value))
        return added, removed

    def _remove(self, st: _State, removed: list[str], vid: int, sid: int, kind: _Kind,
                summary: dict[str, int]) -> list[_Man]:
        """Drop removed files from their manifests; the manifests that held them, rewritten by this
        snapshot without them (their level kept)."""
        dirty: dict[int, _Man] = {}
        for path in removed:
            man = st.file_man.pop(path, None)
            if man is None:
                continue
            e = man.entries.pop(path)
            man.nbytes -= len(e.data)
            summary["deleted-data-files"] += 1
            summary["deleted-records"] += e.rows
            summary["removed-files-size"] += e.size
            dirty[id(man)] = man
        fresh: list[_Man] = []
        for man in dirty.values():
            st.mans.remove(man)
            if man.entries:
                fresh.append(self._new_man(st, man.level, vid, sid, man.spec, man.kind, dict(man.entries), man.kkey))
        return fresh

    def _add(self, st: _State, added: list[tuple[str, dict[str, Any]]], vid: int, sid: int, kind: _Kind,
             summary: dict[str, int]) -> _Man:
        """The manifest of the files one commit added (level 0), each file's entry encoded once."""
        depth = len(split(st.tpath))
        entries: dict[str, _Ent] = {}
        for path, val in added:
            chain = [lake.parse_partition_id(seg)[1] for seg in split(path)[depth:-1]]
            fs = export.file_stats(val, kind.schema, kind.spec, chain, kind.names, kind.types)
            data = avro.encode_data_file(kind.avro, fs.path, fs.fmt, fs.partition, fs.rows, fs.size, fs.counts,
                                         fs.nulls, fs.lower, fs.upper)
            entries[path] = _Ent(sid, vid, fs.rows, fs.size, fs.partition, data)
            summary["added-data-files"] += 1
            summary["added-records"] += fs.rows
            summary["added-files-size"] += fs.size
        return self._new_man(st, 0, vid, sid, kind.spec_key, kind.avro, entries, kind.key)

    @staticmethod
    def _new_man(st: _State, level: int, vid: int, sid: int, spec: str, kind: avro.ManifestKind,
                 entries: dict[str, _Ent], kkey: str) -> _Man:
        st.made += 1
        return _Man(st.made, level, vid, sid, spec, kind, entries, sum(len(e.data) for e in entries.values()),
                    kkey=kkey)

    def _merge(self, st: _State, value: dict[str, Any], vid: int, sid: int, kind: _Kind) -> None:
        """Iceberg's manifest merging (`commit.manifest.min-count-to-merge`,
        `commit.manifest.target-size-bytes`), by levels: when min-count manifests of one level and
        spec below the target size exist, this snapshot merges them into one of the next level.
        Every file is rewritten once a level (log(files) times) and a manifest list holds fewer than
        min-count manifests a level, so the bytes of H snapshots grow as O(H + files), not O(H x files)."""
        count, target = merge_settings(value)
        level, top = 0, max((m.level for m in st.mans), default=0)
        while level <= top:
            same = [m for m in st.mans if m.level == level and m.spec == kind.spec_key and m.nbytes < target]
            if len(same) < count:
                break   # a level grows only by a merge of the level below
            if len(same) >= count:
                entries: dict[str, _Ent] = {}
                for m in sorted(same, key=lambda m: m.order):
                    entries.update(m.entries)
                    st.mans.remove(m)
                man = self._new_man(st, level + 1, vid, sid, kind.spec_key, kind.avro, entries, kind.key)
                st.mans.append(man)
                for p in entries:
                    st.file_man[p] = man
                top = max(top, level + 1)
            level += 1

    # ---------------------------------------------------------------- files
    def _write_list(self, st: _State, sid: int, parent: int | None, vid: int) -> str:
        """The manifest list of snapshot `sid`: its manifests written first (those not written yet:
        this snapshot's), newest first; a file whose content-addressed name exists is not rewritten."""
        mdir = self.metadata_dir(st.uuid)
        if mdir not in self._dirs:
            os.makedirs(mdir, exist_ok=True)
            self._dirs.add(mdir)
        sync = hashlib.sha256(st.uuid.encode()).digest()[:16]
        order = sorted(st.mans, key=lambda m: m.order, reverse=True)
        for m in order:
            if m.path:
                continue
            ents, min_seq = [], None
            added = [0, 0]
            existing = [0, 0]
            summ = avro.Summary(len(m.kind.types))
            for e in m.entries.values():
                mine = e.sid == m.adder and e.seq == m.vid
                ents.append(("added" if mine else "existing", e.sid, e.seq, e.seq, e.data))
                c = added if mine else existing
                c[0] += 1
                c[1] += e.rows
                min_seq = e.seq if min_seq is None or e.seq < min_seq else min_seq
                summ.add(e.part)
            blob = m.kind.manifest(ents, sync)
            m.path = os.path.join(mdir, "m-" + hashlib.sha256(blob).hexdigest()[:40] + ".avro")
            self._put(st, m.path, blob)
            m.record = avro.manifest_record(m.path, len(blob), m.kind.spec.spec_id, m.vid,
                                            min_seq if min_seq is not None else m.vid, m.adder,
                                            (added[0], added[1]), (existing[0], existing[1]), summ.encode(m.kind.types))
        blob = avro.manifest_list(sid, parent, vid, [m.record for m in order], sync)
        lpath = os.path.join(mdir, f"snap-{sid}-{hashlib.sha256(blob).hexdigest()[:16]}.avro")
        self._put(st, lpath, blob)
        return lpath

    def _put(self, st: _State, path: str, blob: bytes) -> None:
        """Queue a content-addressed file; `_flush` writes the queue, `_settle` waits for it and
        makes it durable (before any view names it)."""
        st.pending.append((path, blob))
        st.unsynced.append(path)
        st.puts.append((path, len(blob)))
        if len(st.pending) >= 256:
            self._flush(st)

    def _flush(self, st: _State) -> None:
        """Hand the queued files to the writer threads (creating a file is mostly waiting on the
        disk) and go on encoding; at most MAX_INFLIGHT chunks are outstanding."""
        todo, st.pending = st.pending, []
        if not todo:
            return
        if len(todo) <= INLINE_WRITES and not st.inflight:   # a commit's few files: no hand-off to a thread
            self._count(st, _write_files(todo))
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="iceberg-files")
        for i in range(0, len(todo), 16):
            st.inflight.append(self._pool.submit(_write_files, todo[i:i + 16]))
        while len(st.inflight) > MAX_INFLIGHT:
            self._count(st, st.inflight.pop(0).result())

    @staticmethod
    def _count(st: _State, sizes: list[int]) -> None:
        for n in sizes:
            if n:
                st.written["files"] += 1
                st.written["bytes"] += n

    def _settle(self, st: _State, sync: bool = True) -> None:
        """Write what is queued, wait for every write, then make the files durable (crash safety: a
        metadata file, written after this, never names a manifest list or manifest that a crash of
        the machine could lose): a few files are fsynced one by one; many (a first load of a long
        history) by one `syncfs` of their filesystem, then their directory. A write error is raised."""
        self._flush(st)
        inflight, st.inflight = st.inflight, []
        error: BaseException | None = None
        for fut in inflight:
            try:
                self._count(st, fut.result())
            except BaseException as exc:  # noqa: BLE001 - every write is waited for; the first error is raised
                error = error or exc
        if error is not None:
            raise error
        if not sync:   # a commit-time step: the load that first names these files makes them durable
            if len(st.unsynced) > UNSYNCED_MAX:   # a process that only commits: the next load syncs them all
                st.unsynced, st.overflow = st.unsynced[-1:], True
            return
        paths, st.unsynced = st.unsynced, []
        if st.overflow and paths:
            _sync_all(self.metadata_dir(st.uuid))
            st.overflow = False
        if paths:
            durable(paths)


    # ---------------------------------------------------------------- the metadata
    def _view(self, name: str, tpath: str, st: _State, versions: list[Version], at: int, table_vid: int,
              value: dict[str, Any], named: tuple[tuple[str, int], ...]) -> TableView:
        ice = _iceberg_props(value)
        hidden = set(ice.get("removed_snapshots") or ())
        snaps = [s for s in st.snaps if s.vid <= at]
        schemas: dict[int, IcebergSchema] = {}
        for v in versions:
            if st.created <= v.vid <= at and v.value is not None and lake.is_table(v.value):
                s = self._kind(v.value).schema
                schemas[s.schema_id] = s
        kind = self._kind(value)
        current, spec = kind.schema, kind.spec
        schemas[current.schema_id] = current
        last_col = max([_max_id(s) for s in schemas.values()] or [0])
        # the table's partition specs (REST spec evolution keeps them, with the last field id ever
        # assigned: a removed field's id is never reused), the current one built from partition_by
        current_spec = json.loads(spec.model_dump_json(by_alias=True))
        prior = [x for x in (ice.get("specs") or []) if isinstance(x, dict) and x.get("spec-id") != spec.spec_id]
        specs = sorted([*prior, current_spec], key=lambda x: int(x.get("spec-id", 0)))
        field_ids = [int(f["field-id"]) for x in specs for f in x.get("fields", []) if isinstance(f.get("field-id"), int)]
        stored_last = ice.get("last_partition_id")
        last_part = max([*field_ids, export.PARTITION_FIELD_BASE - 1,
                         *([int(stored_last)] if isinstance(stored_last, int) else [])])
        props = {str(k): str(v) for k, v in (ice.get("properties") or {}).items()}
        props.setdefault("schema.name-mapping.default", json.dumps(export.name_mapping(current, _previous_names(value))))
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
            "schemas": [self._schema_json(s) for _, s in sorted(schemas.items())],
            "current-schema-id": current.schema_id,
            "partition-specs": specs, "default-spec-id": spec.spec_id,
            "last-partition-id": last_part,
            "properties": props, "current-snapshot-id": main,
            "statistics": [], "partition-statistics": [],
            "metadata-log": [],
            "sort-orders": ice.get("sort_orders") or [{"order-id": 0, "fields": []}],
            "default-sort-order-id": int(ice.get("default_sort_order_id") or 0),
            "refs": refs,
        }
        if md["current-snapshot-id"] is None:
            del md["current-snapshot-id"]
        # the snapshots and the snapshot log (what grows with the history) are joined from each
        # snapshot's JSON, made once: a new view does not re-encode the history
        head = json.dumps(md, separators=(",", ":"))[:-1]
        frags = [s.fragments() for s in shown]
        pointed = {r["snapshot-id"] for r in refs.values()}
        kept = [fr for s, fr in zip(shown, frags, strict=True) if s.snapshot_id in pointed]
        text = (head + ',"snapshots":[' + ",".join(f for f, _ in frags) + '],"snapshot-log":['
                + ",".join(lf for _, lf in frags) + "]}")
        # snapshots=refs: the snapshots refs point at, and their snapshot-log entries (as Iceberg's
        # TableMetadata.Builder.suppressHistoricalSnapshots does): it does not grow with the history
        refs_text = (head + ',"snapshots":[' + ",".join(f for f, _ in kept) + '],"snapshot-log":['
                     + ",".join(lf for _, lf in kept) + "]}")
        metadata = TableMetadataUtil.parse_raw(text) if len(snaps) <= 100 else None   # a long history: parsed on use
        mdir = self.metadata_dir(st.uuid)
        os.makedirs(mdir, exist_ok=True)
        version = sum(1 for v in st.commit_times if v <= table_vid) - 1   # 0: as created, +1 a change
        loc = os.path.join(mdir, metadata_file_name(max(0, version), text))
        if not os.path.exists(loc):
            # after the files it names are durable (`_settle`), and durable itself before any answer
            # names it: written aside, fsynced, renamed, the directory fsynced
            tmp = f"{loc}.{uuid.uuid4().hex[:8]}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, loc)
            _fsync_path(mdir)
        return TableView(name, at, table_vid, loc, value, text, refs_text,
                         frozenset(s.snapshot_id for s in snaps), _metadata=metadata)

    def _schema_json(self, schema: IcebergSchema) -> Any:
        key = id(schema)
        hit = self._schema_texts.get(key)
        if hit is None or hit[0] is not schema:
            hit = (schema, json.loads(schema.model_dump_json(by_alias=True)))
            if len(self._schema_texts) > 4096:
                self._schema_texts.clear()
            self._schema_texts[key] = hit
        return hit[1]


_COMMIT_MATERIALIZERS: weakref.WeakKeyDictionary[Any, Materializer] = weakref.WeakKeyDictionary()
_SHARED: weakref.WeakKeyDictionary[Any, dict[str, tuple[dict[str, _State], threading.Lock, set[str]]]] = (
    weakref.WeakKeyDictionary())
_SHARED_LOCK = threading.Lock()


def _shared_states(cat: Any, root: str) -> tuple[dict[str, _State], threading.Lock, set[str]]:
    """The table states, their lock and the tables left to the load, shared by every shared
    Materializer of `cat` and `root` in this process."""
    with _SHARED_LOCK:
        try:
            roots = _SHARED.get(cat)
            if roots is None:
                roots = _SHARED[cat] = {}
        except TypeError:
            return {}, threading.Lock(), set()
        got = roots.get(root)
        if got is None:
            got = roots[root] = ({}, threading.Lock(), set())
        return got


def forget_catalog(cat: Any) -> None:
    """Forget what this process knows of `cat`'s tables (its commit materializer, the shared states):
    `Catalog.relocate` re-pointed its paths (oncommit.after_relocate), the next load walks the history."""
    with _SHARED_LOCK:
        with contextlib.suppress(TypeError):
            _COMMIT_MATERIALIZERS.pop(cat, None)
            for states, lock, left in (_SHARED.get(cat) or {}).values():
                with lock:
                    states.clear()
                    left.clear()


def _newer(vids: Any, lo: int) -> list[int]:
    """The vids above `lo` of an insertion-ordered collection of increasing vids, read from the end
    (a commit-time step does not go over the whole history)."""
    out: list[int] = []
    for v in reversed(vids):
        if v <= lo:
            break
        out.append(v)
    out.reverse()
    return out


def _newer_snaps(snaps: list[_Snap], lo: int) -> list[_Snap]:
    i = len(snaps)
    while i > 0 and snaps[i - 1].vid > lo:
        i -= 1
    return snaps[i:]


def _files_whole(files: Any) -> bool:
    """Every (path, size) exists with that size (a crash can lose or tear an unsynced file)."""
    for p, n in files:
        try:
            if os.stat(p).st_size != n:
                return False
        except OSError:
            return False
    return True


def metadata_file_name(version: int, text: str) -> str:
    """Iceberg's `NNNNN-<uuid>.metadata.json`: the version (0 as created, one more for every commit
    that changed the table since) and a UUID made of the digest of the content (a state is written
    once, under one name, by any server)."""
    return f"{version:05d}-{uuid.UUID(bytes=hashlib.sha256(text.encode()).digest()[:16], version=4)}.metadata.json"


INLINE_WRITES = 4                 # files written by the calling thread itself (a commit-time step's two)
MAX_INFLIGHT = 64                 # chunks of 16 files queued to the writer threads at most
SYNC_EACH_UP_TO = 64              # files fsynced one by one; more: one syncfs of their filesystem


def _syncfs(path: str) -> bool:
    """`syncfs(2)` of the filesystem holding `path` (Linux); False where it is not available."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        if fn(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs of {path}: {os.strerror(err)}")
    finally:
        os.close(fd)
    return True


def _sync_all(mdir: str) -> None:
    """Make every file of a metadata directory durable (one syncfs, else an fsync each)."""
    if not _syncfs(mdir):
        for name in os.listdir(mdir):
            _fsync_path(os.path.join(mdir, name))


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable(paths: list[str]) -> None:
    """Make files (and their directory entries) durable: fsync each of a few, or one syncfs for
    many; then fsync each directory that holds them."""
    dirs = sorted({os.path.dirname(p) for p in paths})
    if len(paths) > SYNC_EACH_UP_TO and _syncfs(dirs[0]):
        pass
    else:
        for p in dict.fromkeys(paths):
            _fsync_path(p)
    for d in dirs:
        _fsync_path(d)


def _write_files(items: list[tuple[str, bytes]]) -> list[int]:
    return [_write_file(item) for item in items]


def _write_file(item: tuple[str, bytes]) -> int:
    """Write a content-addressed file unless it exists whole; the bytes written. Written in place:
    the name is the digest of the content, so a torn file (a crash mid-write) has the wrong size and
    is written again by the next materialization."""
    path, blob = item
    try:
        if os.stat(path).st_size == len(blob):
            return 0
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return len(blob)


def _previous_names(value: dict[str, Any]) -> dict[int, list[str]]:
    """The names each column of the table's schema had before (`previous_names`), by column id, oldest first."""
    out: dict[int, list[str]] = {}
    for c in lake.Schema.from_raw(value.get("schema")).columns:
        prev = c.extra.get("previous_names")
        if c.id is not None and isinstance(prev, list):
            out[int(c.id)] = [str(p.get("name")) for p in prev if isinstance(p, dict) and p.get("name")]
    return out


def _max_id(schema: IcebergSchema) -> int:
    return max([f.field_id for f in schema._lazy_id_to_field.values()] or [0])

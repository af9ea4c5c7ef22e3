"""Read-write transactions: reads at `read_vid` are recorded (scan set and point reads) for
validation at commit; writes are buffered as a write set and applied at commit."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from catalog_core._engine import hooks as _hooks
from catalog_core._engine.executor import execute
from catalog_core._engine.keys import children_prefix
from catalog_core._engine.relocate import absolute, relative_delta, relative_value
from catalog_core.errors import TransactionClosedError
from catalog_core.model import Obj, QueryStats
from catalog_core.paths import split
from catalog_core.query import parse
from catalog_core.query.ast import Query
from catalog_core.writeset import WriteMethods, WriteOp, child_ops_ids, commit_fields, make_op, own_writes

if TYPE_CHECKING:
    from catalog_core._engine.catalog import Catalog

__all__ = ["Transaction"]

_path_of = itemgetter(1)  # WriteOp.path

_ids = itertools.count(1)


class Transaction(WriteMethods):
    """`with cat.transaction(author=..., message=...) as txn:` commits on exit and aborts on
    an exception. Without `with`: `txn.commit()` returns the vid, `txn.abort()` discards."""

    def __init__(self, catalog: "Catalog", author: str = "", message: str = "",
                 meta: dict[str, Any] | None = None, time: float | None = None) -> None:
        self._cat = catalog
        self._mgr = catalog._mgr
        self.id = next(_ids)
        self.author, self.message, self.meta = author, message, dict(meta or {})
        # A commit record that cannot be stored is refused now, not in a group commit.
        self._fields = commit_fields(author, message, self.meta)
        self._fields_of = (author, message, self.meta)
        self.time = time
        self.read_vid = self._mgr.begin()
        self.vid: int | None = None
        self.ops: list[WriteOp] = []
        self.scans: list[tuple[str, Any, list[Any], bool]] = []  # (parent, predicate, id ranges, values)
        self.point_reads: set[str] = set()
        # add_many's leaves: (index of the first op, children prefix, the ops' keys), in op order
        self._spans: list[tuple[int, bytes, list[bytes]]] = []
        self.state = "active"
        self._locks = self._mgr.locks  # mgl: strict 2PL locks; None under ospl and osl
        self._mgl = self._locks is not None
        self._stored = False  # reads hand out locations and file paths as stored (publish's three-way merge)
        self._finalizer = weakref.finalize(self, _release, self._mgr, self.read_vid, self.id)

    def _check_active(self) -> None:
        if self.state != "active":
            raise TransactionClosedError(f"transaction {self.id} is {self.state}; start a new one")

    # ---------------------------------------------------------------- reads
    def _read_vid(self) -> int:
        # Under strict 2PL a read happens after its lock is granted, at the latest state.
        return self._cat._store.latest_vid if self._mgl else self.read_vid

    def _on_scan(self, parent: str, expr: Any, ranges: list[Any], values: bool = True) -> int | None:
        """`values`: the scan returns the matched objects (last step). A middle step only selects
        context paths, so only a write that changes which objects match conflicts with it."""
        if self._locks is not None:
            self._locks.lock_scan(self.id, parent, ranges, values)
            return self._cat._store.latest_vid
        self.scans.append((parent, expr, ranges, values))
        return None

    def iter_query(self, expr: str | Query, stats: QueryStats | None = None) -> Iterator[Obj]:
        self._check_active()
        query = parse(expr) if isinstance(expr, str) else expr
        objs = execute(self._cat._store, query, self._read_vid(), self._on_scan, stats)
        return objs if self._stored else self._cat._absolute(objs)

    def query(self, expr: str | Query, stats: QueryStats | None = None) -> list[Obj]:
        return list(self.iter_query(expr, stats))

    def get(self, path: str) -> Obj | None:
        """The object at `read_vid`, with this transaction's own buffered writes applied."""
        self._check_active()
        split(path)
        if self._locks is not None:
            self._locks.lock_path(self.id, path, "S")
        else:
            self.point_reads.add(path)
        obj = self._cat._get_at(path, self._read_vid())
        if self._stored:
            return own_writes(self.ops, path, obj)
        if obj is not None:
            value = absolute(obj.value, self._cat.warehouse)
            if value is not obj.value:
                obj = Obj(obj.path, value, obj.vid, obj.leaf)
        got = own_writes(self.ops, path, obj)
        if got is not None and got is not obj:  # this transaction's own write, stored relative
            value = absolute(got.value, self._cat.warehouse)
            if value is not got.value:
                got = Obj(got.path, value, got.vid, got.leaf)
        return got

    # ---------------------------------------------------------------- writes
    def _record(self, op: WriteOp) -> None:
        self._check_active()
        op = self._relative(op)
        if self._locks is not None:
            self._locks.lock_path(self.id, op.path, "X")
        self.ops.append(op)

    def add_many(self, parent: str, children: Iterable[tuple[str, dict[str, Any]]], leaf: bool = False) -> None:
        """See `WriteMethods.add_many`: the ops recorded at once (under mgl each path is locked
        first, as `add` does)."""
        self._check_active()
        ops, blob = child_ops_ids(parent, children, leaf)
        ops = [self._relative(op) for op in ops]
        if self._locks is not None:
            for op in ops:
                self._locks.lock_path(self.id, op.path, "X")
        if leaf and ops:
            # their storage keys, built here from the parent's prefix (the commit would build each
            # from its path): the prefix plus the id, as keys.key_of lays them out
            prefix = children_prefix(parent)
            if blob is not None:  # the ids joined by '/', checked plain ASCII: one encode and split
                ids = blob.encode().split(b"/")
            else:  # every path joined by NUL (never in a path), each path's head dropped (an id holds
                # no '/', so the head occurs only there): C loops instead of one slice and encode per op
                head = "\x00" + ("" if parent == "/" else parent) + "/"
                ids = ("\x00" + "\x00".join(map(_path_of, ops))).replace(head, "\x00").encode().split(b"\x00")[1:]
            self._spans.append((len(self.ops), prefix, list(map(prefix.__add__, ids))))
        self.ops.extend(ops)

    def _relative(self, op: WriteOp) -> WriteOp:
        """`op` with a location or file path inside the warehouse stored relative to it (see `relocate`)."""
        if op.value is None:
            return op
        wh, root = self._cat.warehouse, self._cat.lake_root
        value = relative_delta(op.value, wh, root) if op.kind == "merge" else relative_value(op.value, wh, root)
        return op if value is op.value else make_op(op.kind, op.path, value, op.leaf, op.ref)

    def clone(self, src: str, dst: str, vid: int | None = None) -> None:
        """Copy the non-leaf subtree of `src` (at `vid`, default read_vid) to `dst`, sharing leaves."""
        self._check_active()
        for op in self._cat._clone_ops(src, dst, self.read_vid if vid is None else vid,
                                       None if vid is not None else self._on_scan):
            self._record(op)

    # ---------------------------------------------------------------- end
    def commit(self) -> int:
        """Validate and commit; returns the committed vid. A write set that changes nothing (no
        writes, an empty merge, an add then a remove of the same path, an update to the same
        value) creates no vid and returns read_vid. Raises ConflictError, a PreconditionError or
        an InvalidValueError, and then nothing was written."""
        self._check_active()
        from catalog_core._engine.mvocc import CommitRequest

        try:
            if not self.ops:
                self.vid = self.read_vid
            else:
                fields = self._fields  # encoded at begin; again if the attributes were replaced since
                if any(a is not b for a, b in zip(self._fields_of, (self.author, self.message, self.meta),
                                                  strict=True)):
                    fields = commit_fields(self.author, self.message, self.meta)
                req = CommitRequest(self.read_vid, self.ops, self.scans, self.point_reads,
                                    self.author, self.message, self.meta, self.time, fields,
                                    spans=self._spans or None)
                self.vid = self._mgr.commit(req)
            self.state = "committed"
        except BaseException:
            self.state = "aborted"
            raise
        finally:
            self._finalizer()
        if self.vid != self.read_vid and _hooks._HOOKS:
            _hooks.after_commit(self._cat, self.vid, self.ops, self.meta)   # never raises
        return self.vid

    def abort(self) -> None:
        if self.state == "active":
            self.state = "aborted"
            self._finalizer()


def _release(mgr: Any, read_vid: int, txn_id: int) -> None:
    mgr.end(read_vid)
    if mgr.locks is not None:
        mgr.locks.release_all(txn_id)

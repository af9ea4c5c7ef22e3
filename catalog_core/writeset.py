"""Write sets (paper §4.2 "Updates"): add, update, remove, merge, plus clone's leaf references.

Ops are validated for shape when they are recorded; preconditions are checked at commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from types import TracebackType
from typing import Any, NamedTuple, Self

import orjson

from catalog_core._gcpause import gc_paused
from catalog_core.codec import NULL_TOKEN, pack_commit_fields, pack_leaf, pack_value
from catalog_core.errors import InvalidPathError, InvalidValueError
from catalog_core.merge import apply_delta, validate_delta
from catalog_core.model import Obj
from catalog_core.paths import ROOT, validate

__all__ = ["WriteOp", "CommitOnExit", "WriteMethods", "make_op", "child_ops", "child_ops_ids", "op_from_dict", "own_writes",
           "commit_fields", "KINDS"]

KINDS = ("add", "update", "remove", "merge", "leafref")


class WriteOp(NamedTuple):
    """One recorded write, immutable (a NamedTuple: a bulk load records one per object)."""

    kind: str
    path: str
    value: dict[str, Any] | None = None
    leaf: bool = False
    ref: tuple[str, int] | None = None  # leafref: (primary path, primary create vid)
    packed: bytes | None = None  # the value, encoded once when recorded (leaves store these bytes)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "path": self.path}
        if self.value is not None:
            d["value"] = self.value
        if self.leaf:
            d["leaf"] = True
        if self.ref is not None:
            d["ref"] = list(self.ref)
        return d


def _check_value(value: object, path: str, leaf: bool) -> bytes:
    if not isinstance(value, dict):
        raise InvalidValueError(f"value for {path!r} must be a dict, got {type(value).__name__}", path=path)
    what = f"value for {path!r}"
    return pack_leaf(value, what) if leaf else pack_value(value, what)  # a clear error if it cannot be stored


def commit_fields(author: object, message: object, meta: object) -> bytes:
    """The commit record's author, message and meta, encoded; InvalidValueError (naming the
    field and where) for what cannot be stored: checked when a transaction begins, so that a
    commit never joins a group with a record that cannot be written."""
    if not isinstance(meta, dict):
        raise InvalidValueError(f"commit meta must be a dict, got {type(meta).__name__}")
    return pack_commit_fields(author, message, meta)


def make_op(kind: str, path: str, value: Any = None, leaf: bool = False, ref: tuple[str, int] | list[Any] | None = None) -> WriteOp:
    if leaf and kind == "add" and value.__class__ is dict and ref is None:  # the bulk case, one per object
        validate(path)
        if path != ROOT:
            return WriteOp(kind, path, value, True, None, pack_leaf(value, f"value for {path!r}"))
    if kind not in KINDS:
        raise InvalidValueError(f"unknown write kind {kind!r}; use one of add, update, remove, merge")
    validate(path)
    if path == ROOT and kind != "update":
        raise InvalidPathError(f"cannot {kind} the root '/'; it always exists", path=path)
    packed = None
    if kind in ("add", "update"):
        packed = _check_value(value, path, leaf)
    elif kind == "merge":
        validate_delta(value)
        pack_value(value, f"merge delta for {path!r}")
    elif kind == "remove" and value is not None:
        raise InvalidValueError("remove takes no value", path=path)
    if leaf and kind not in ("add", "leafref"):
        raise InvalidValueError(f"leaf=True only goes with add; leaves are immutable ({kind} on {path!r})")
    return WriteOp(kind, path, value, leaf, (ref[0], ref[1]) if ref is not None else None, packed)


def _child_path(base: str, parent: str, cid: object) -> str:
    if not isinstance(cid, str):
        raise InvalidPathError(f"child id {cid!r} under {parent!r} must be a string, got {type(cid).__name__}",
                               path=parent)
    if not cid:
        raise InvalidPathError(f"a child id under {parent!r} is empty; every id must be non-empty", path=parent)
    if "/" in cid:
        raise InvalidPathError(f"child id {cid!r} under {parent!r} contains '/'; add_many adds direct children "
                               "of its parent: call it once per parent", path=parent)
    return f"{base}/{cid}"


def _pair(item: object, parent: str) -> tuple[Any, Any]:
    if not isinstance(item, tuple | list) or len(item) != 2:
        raise InvalidValueError(f"each child of {parent!r} must be an (id, value) pair, got {item!r:.80}",
                                path=parent)
    return item[0], item[1]


def child_ops(parent: str, children: Iterable[tuple[str, dict[str, Any]]], leaf: bool = False) -> list[WriteOp]:
    """The ops of `add_many`: one add of `parent/<id>` per (id, value) of `children`, in order,
    each the op `make_op("add", ...)` makes (same path, value, packed bytes). Raises on the first
    bad id or value, naming it. Leaves are checked and encoded a whole list at a time (the bulk
    load's recording): when every id is plain ASCII text without '/', NUL or a lone '.'/'..', every
    value a dict encoded by orjson with no null token and obj_type (if any) as its first key, the
    ops are built in one pass; otherwise each child goes through `make_op`, which decides exactly
    as `add` would."""
    return child_ops_ids(parent, children, leaf)[0]


def child_ops_ids(parent: str, children: Iterable[tuple[str, dict[str, Any]]],
                  leaf: bool = False) -> tuple[list[WriteOp], str | None]:
    """`child_ops`, and the children's ids joined by '/' (plain ASCII, checked) when the leaves
    took the whole-list path (else None): the engine builds their storage keys from it."""
    validate(parent)
    base = "" if parent == ROOT else parent
    pairs = children if isinstance(children, list) else list(children)
    if leaf:
        with gc_paused():  # tens of thousands of new tuples, none cyclic
            fast = _leaf_ops(base, pairs)
        if fast is not None:
            return fast
    out: list[WriteOp] = []
    for item in pairs:
        cid, value = _pair(item, parent)
        out.append(make_op("add", _child_path(base, parent, cid), value, leaf))
    return out, None


def _leaf_ops(base: str, pairs: list[Any]) -> tuple[list[WriteOp], str | None] | None:
    """`child_ops_ids` of leaves when every child passes the whole-list checks, else None."""
    if not pairs:
        return [], None
    if not set(map(type, pairs)) <= {tuple, list}:
        return None
    try:
        ids, values = zip(*pairs, strict=True)
    except (TypeError, ValueError):
        return None
    if len(ids) != len(pairs):
        return None
    try:
        blob = "/".join(ids)  # TypeError: an id that is not a string
    except TypeError:
        return None
    if (not blob or not blob.isascii() or blob.count("/") != len(ids) - 1 or "\x00" in blob or "//" in blob
            or blob[:1] == "/" or blob[-1:] == "/" or max(map(len, ids)) > 4095 - len(base)):
        return None
    if "." in blob and ("/./" in f"/{blob}/" or "/../" in f"/{blob}/"):
        return None
    if set(map(type, values)) != {dict}:
        return None
    # every value as pack_leaf writes it: a value with an obj_type key has it first (C loops: the
    # first keys, next(it, None) for an empty value, against the values holding the key)
    firsts = list(map(next, map(iter, values), repeat(None)))
    if firsts.count("obj_type") != sum(map(dict.__contains__, values, repeat("obj_type"))):
        return None
    try:
        # one JSON array of every value, cut at the n-1 separators '},{' (when that is all the times
        # it occurs, no value holds it) and each value's braces put back: bytes as orjson.dumps(value)
        # writes them, without a call and an output buffer per value
        arr = orjson.dumps(values)
    except TypeError:
        return None
    if NULL_TOKEN(arr) is not None:  # a null token cannot span two values: each ends with '}'
        return None
    parts = arr[2:-2].split(b"},{")
    if len(parts) != len(values):
        return None
    raws = list(map(b"".join, zip(repeat(b"{"), parts, repeat(b"}"))))
    # WriteOp("add", path, value, True, None, raw) for each, built by C loops (map, zip)
    n = len(ids)
    paths = map((base + "/").__add__, ids)
    return list(map(tuple.__new__, repeat(WriteOp, n),
                    zip(repeat("add", n), paths, values, repeat(True, n), repeat(None, n), raws))), blob


_FIELDS = {"kind", "path", "value", "leaf", "ref"}


def op_from_dict(d: object) -> WriteOp:
    """Parse one op of a write set sent over the wire, naming what is wrong."""
    if not isinstance(d, dict):
        raise InvalidValueError(f"each write must be an object with kind and path, got {type(d).__name__}")
    unknown = set(d) - _FIELDS
    if unknown:
        raise InvalidValueError(f"unknown field(s) {sorted(unknown)} in write; allowed: {sorted(_FIELDS)}")
    if "kind" not in d or "path" not in d:
        raise InvalidValueError("each write needs 'kind' and 'path'")
    if d["kind"] == "leafref":
        raise InvalidValueError("leafref writes are internal to clone; use the clone endpoint")
    return make_op(d["kind"], d["path"], d.get("value"), bool(d.get("leaf", False)), d.get("ref"))


def own_writes(ops: list[WriteOp], path: str, obj: Obj | None) -> Obj | None:
    """`obj` as read, with a transaction's buffered `ops` applied (read-your-own-writes)."""
    for op in ops:
        if op.kind == "remove" and (path == op.path or path.startswith(op.path.rstrip("/") + "/")):
            obj = None
        elif op.path != path:
            continue
        elif op.kind in ("add", "update"):
            obj = Obj(path, op.value or {}, -1, op.leaf)
        elif op.kind == "merge" and obj is not None:
            obj = Obj(path, apply_delta(obj.value, op.value or {}), -1, obj.leaf)
    return obj


class CommitOnExit:
    """The context protocol of every transaction kind: `with` commits on a clean exit and
    aborts on an exception; an already ended transaction is left as it is."""

    state: str

    def commit(self) -> Any:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.state != "active":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class WriteMethods(CommitOnExit):
    """What the embedded and the remote transaction share: the context protocol and the writes,
    each validated for shape and handed to `_record`."""

    def _record(self, op: WriteOp) -> None:
        raise NotImplementedError

    def _check_active(self) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Hand buffered writes to the engine now. An embedded transaction has none buffered;
        a remote one sends them to its server session (see RemoteTransaction.flush)."""
        self._check_active()

    def add(self, path: str, value: dict[str, Any], leaf: bool = False) -> None:
        """Create `path`; at commit its parent must exist and the path must not."""
        self._record(make_op("add", path, value, leaf))

    def add_many(self, parent: str, children: Iterable[tuple[str, dict[str, Any]]], leaf: bool = False) -> None:
        """Add `parent/<id>` with its value for each (id, value) of `children`, in order: the same
        write set as one `add` each, so the same checks at commit (the parent exists, no path
        exists or repeats). Recorded all or nothing: a bad id or value raises, naming it, and
        records none. The bulk load's call: it records many leaves in one pass."""
        for op in child_ops(parent, children, leaf):
            self._record(op)

    def update(self, path: str, value: dict[str, Any]) -> None:
        """Create or replace a non-leaf object."""
        self._record(make_op("update", path, value))

    def remove(self, path: str) -> None:
        """Remove the object and all its descendants; leaves get tombstones."""
        self._record(make_op("remove", path))

    def merge(self, path: str, delta: dict[str, Any]) -> None:
        """Commit-time update, e.g. {"stats": {"row_count": {"op": "+", "val": 10}}}."""
        self._record(make_op("merge", path, delta))

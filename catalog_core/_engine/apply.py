"""Materialize write sets against the latest state: precondition checks, subtree removal,
merge evaluation, version chains. Pending (validated, not yet durable) commits of a group
live in an overlay, so many transactions can share one RocksDB batch. Each commit's part of
the batch is encoded on its own (View.encode) before it joins the group's overlay: a value
that cannot be stored fails that commit only."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, NamedTuple, cast

from msgpack import Packer
from msgpack import packb as _packb
from rocksdict import ReadOptions

from catalog_core._engine.keys import (
    SEP,
    children_prefix,
    key_of_valid,
    parent_of_prefix,
    parent_of_valid,
    path_of_key,
)
from catalog_core._engine.storage import Store
from catalog_core.codec import inv_vid_bytes, maybe_non_finite, pack, pack_value, unpack
from catalog_core.errors import (
    AlreadyExistsError,
    InvalidValueError,
    LeafImmutableError,
    MissingObjectError,
    PreconditionError,
)
from catalog_core.merge import apply_delta
from catalog_core.paths import successor
from catalog_core.writeset import WriteOp

__all__ = ["Effect", "Encoded", "View", "changes", "materialize"]

# One reusable encoder (msgpack.packb builds a Packer per call): encode runs in the group
# commit's leader only, one thread at a time.
_LEADER_PACKER = Packer(use_bin_type=True)

_FULL = [(None, None)]

_PATH, _VALUE, _PACKED = itemgetter(1), itemgetter(2), itemgetter(5)  # WriteOp.path, .value, .packed
_EFFECT_PATH = itemgetter(0)  # Effect.path

_PREFETCH_MIN = 64  # a write set of this many ops reads its leaf adds' records in one multi-get


class Effect(NamedTuple):
    """One object's change: its before- and after-image (None: absent). (A NamedTuple: a bulk
    load makes one per object.)"""

    path: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    leaf: bool


# A run of new leaves added at once (`_add_run`): (vid, {key: packed value}, the keys' children
# prefixes). Each key's lifetimes are [[vid, 0, packed, None]] unless the view's `leaf` holds the
# key (written since, from these: newer).
Fresh = tuple[int, dict[bytes, bytes], set[bytes]]

# (inner key -> bytes, leaf key -> bytes, [(delta key, bytes)], [(keys, bytes)] of fresh runs,
# the children prefixes of every leaf key written): one commit's part of a batch. Its fresh runs
# go in the batch before the leaf dicts, whose records of the same keys are newer.
Encoded = tuple[dict[bytes, bytes], dict[bytes, bytes], list[tuple[bytes, bytes]],
                list[tuple[list[bytes], list[bytes]]], set[bytes]]


class _BinHead(dict[int, bytes]):
    """msgpack's bin header of a byte string of each length (bin 8, 16, 32), made once per length."""

    def __missing__(self, n: int) -> bytes:
        head = (b"\xc4" + n.to_bytes(1, "big") if n < 256 else
                b"\xc5" + n.to_bytes(2, "big") if n < 65536 else b"\xc6" + n.to_bytes(4, "big"))
        self[n] = head
        return head


_BIN_HEAD = _BinHead()


def fresh_records(vid: int, packed: list[bytes]) -> list[bytes]:
    """pack([[vid, 0, p, None]]) of each `p` of `packed`, as msgpack writes it, built by C loops
    (one join per leaf) instead of one Packer call per leaf: a fixarray of one fixarray of four,
    the vid, 0, the bytes (a bin header and the bytes) and nil."""
    n = len(packed)
    head = b"\x91\x94" + _packb(vid) + b"\x00"
    return list(map(b"".join, zip(repeat(head, n), map(_BIN_HEAD.__getitem__, map(len, packed)), packed,
                                  repeat(b"\xc0", n))))


def _pack_record(key: bytes, record: list[Any]) -> bytes:
    try:
        out: bytes | None = pack(record)
    except InvalidValueError:
        out = None
    if out is None or maybe_non_finite(out):  # refuse, naming the object (or a false alarm: the bytes)
        return pack_value(record, f"the value of {path_of_key(key)!r}")
    return out


def _delta_bytes(start: int, end: int, value: Any, record: bytes | None) -> bytes:
    """pack([start, end, value]); from the stored record pack([start, value]) when given."""
    if record is not None and record[:1] == b"\x92":
        head: bytes = _packb(start)
        if record[1:1 + len(head)] == head:
            tail: bytes = _packb(end)
            return b"\x93" + head + tail + record[1 + len(head):]
    return pack([start, end, value])


def _multi_get(store: Store, cf: str, keys: list[bytes]) -> list[bytes | None]:
    """RocksDB's multi-get (rocksdict's `get` of a list): one value or None per key, in order."""
    return cast(list["bytes | None"], store.cf[cf].get(cast(Any, keys)))


def changes(effects: list["Effect"], view: "View | None" = None) -> bool:
    """Does a write set change anything? (An empty merge, an add then a remove of the same path,
    an update to the same value do not.) `view`: the write set's overlay (materialize's); when
    every effect is one of its Fresh runs' leaves, each adds an absent path, none twice: a change."""
    if effects and view is not None and len(effects) == sum(len(run) for _vid, run, _p in view.fresh):
        return True
    if len(set(map(_EFFECT_PATH, effects))) == len(effects):  # one effect per path: no netting
        return any(e.before != e.after for e in effects)
    net: dict[str, list[Any]] = {}
    for e in effects:
        seen = net.get(e.path)
        if seen is None:
            net[e.path] = [e.before, e.after]
        else:
            seen[1] = e.after
    return any(before != after for before, after in net.values())


class View:
    """Latest state = committed store + pending overlays (a chain: group <- transaction)."""

    def __init__(self, store: Store, parent: "View | None" = None) -> None:
        self.store = store
        self.parent = parent
        self.root: View = self if parent is None else parent.root
        self.inner: dict[bytes, list[Any]] = {}
        self.leaf: dict[bytes, list[Any]] = {}
        self.fresh: list[Fresh] = []  # runs of new leaves, in order (see Fresh): no key in two of them
        # (key, start, end, value, the stored record [start, value] as encoded | None)
        self.deltas: list[tuple[bytes, int, int, Any, bytes | None]] = []
        self.packed: dict[bytes, bytes] = {}  # inner key -> its value as encoded when recorded
        # Store reads of the root view (a group's): the store does not change while a group is
        # materialized (one leader at a time), so each key is read and decoded once per group.
        # Read-only: writes copy what they change.
        self._inner_reads: dict[bytes, tuple[list[Any] | None, bytes | None]] = {}
        self._leaf_reads: dict[bytes, list[Any] | None] = {}
        # inner objects of this view checked as existing parents since it last wrote them
        self.parents_ok: set[str] = set()

    def _stored_inner(self, key: bytes) -> tuple[list[Any] | None, bytes | None]:
        """The store's current record of an inner key, decoded, and its encoded bytes."""
        reads = self.root._inner_reads
        got = reads.get(key)
        if got is None:
            raw = self.store.cf["inner"].get(key)
            got = reads[key] = (None if raw is None else unpack(raw), raw)
        return got

    def _inner(self, key: bytes) -> list[Any] | None:
        v: View | None = self
        while v is not None:
            if key in v.inner:
                return v.inner[key]
            v = v.parent
        return self._stored_inner(key)[0]

    def prefetch(self, keys: list[bytes]) -> None:
        """Read the store's records of `keys` (inner and leaf) into the root view's read caches
        with one multi-get per column family, instead of two point gets per key later: a bulk
        load's leaf adds check that each path is absent. The store does not change while a group
        is materialized, so what is read here stays the store's state for the whole group."""
        root = self.root
        inner_reads, leaf_reads = root._inner_reads, root._leaf_reads
        todo = [k for k in keys if k not in inner_reads]
        if todo:
            for k, raw in zip(todo, _multi_get(self.store, "inner", todo), strict=True):
                inner_reads[k] = (None if raw is None else unpack(raw), raw)
        todo = [k for k in keys if k not in leaf_reads]
        if todo:
            for k, raw in zip(todo, _multi_get(self.store, "leaf", todo), strict=True):
                leaf_reads[k] = None if raw is None else unpack(raw)

    def read_children(self, prefix: bytes, cap: int) -> set[bytes] | None:
        """The store's records of every child under `prefix` (one parent), read with one range
        scan per column family into the root view's read caches, when there are at most `cap`:
        the keys that have a record (then every other key under `prefix` has none). None, having
        cached nothing, past `cap` children (a big parent: point reads of the keys cost less)."""
        found: list[dict[bytes, bytes]] = []
        for cf in ("inner", "leaf"):
            ro = ReadOptions()
            ro.set_iterate_upper_bound(successor(prefix))
            seen: dict[bytes, bytes] = {}
            for key, raw in cast(Iterator[tuple[bytes, bytes]], self.store.cf[cf].items(from_key=prefix, read_opt=ro)):
                seen[key] = raw
                if len(seen) > cap:
                    return None
            found.append(seen)
        root = self.root
        inner_reads, leaf_reads = root._inner_reads, root._leaf_reads
        inner_seen, leaf_seen = found
        for k in inner_seen.keys() | leaf_seen.keys():
            if k not in inner_reads:
                iraw = inner_seen.get(k)
                inner_reads[k] = (None, None) if iraw is None else (unpack(iraw), iraw)
            if k not in leaf_reads:
                lraw = leaf_seen.get(k)
                leaf_reads[k] = None if lraw is None else unpack(lraw)
        return inner_seen.keys() | leaf_seen.keys()

    def _leaf(self, key: bytes) -> list[Any] | None:
        v: View | None = self
        while v is not None:
            if key in v.leaf:
                return v.leaf[key]
            for vid, run, _prefixes in v.fresh:
                packed = run.get(key)
                if packed is not None:
                    return [[vid, 0, packed, None]]
            v = v.parent
        reads = self.root._leaf_reads
        if key in reads:
            return reads[key]
        got = reads[key] = self.store.leaf_lifetimes(key)
        return got

    def current(self, path: str, key: bytes | None = None) -> tuple[dict[str, Any], bool] | None:
        """(value, is_leaf) of `path` now, None if absent (`key`: its key, if known)."""
        if key is None:
            key = key_of_valid(path)
        cur = self._inner(key)
        if cur is not None and cur[1] is not None:
            return cur[1], False
        lts = self._leaf(key)
        if lts:
            last = lts[-1]
            if last[1] == 0:
                return self.store.leaf_value(last), True
        return None

    def children(self, path: str) -> list[tuple[str, bool]]:
        """(child path, is_leaf) of every current child."""
        prefix = children_prefix(path)
        keys: dict[bytes, bool] = {}
        for _id, _val, _vid, leaf, key, _p in self.store.scan_children(path, self.store.latest_vid, _FULL):
            keys[key] = leaf
        v: View | None = self
        while v is not None:
            for key in list(v.inner) + list(v.leaf):
                if key.startswith(prefix):
                    keys.setdefault(key, key in v.leaf)
            for _vid, got, prefixes in v.fresh:
                if prefix in prefixes:
                    for key in got:
                        if key.startswith(prefix):
                            keys.setdefault(key, True)
            v = v.parent
        out = []
        for key in sorted(keys):
            p = path_of_key(key)
            cur = self.current(p)
            if cur is not None:
                out.append((p, cur[1]))
        return out

    def absorb(self, child: "View") -> None:
        self.inner.update(child.inner)
        self.leaf.update(child.leaf)
        self.fresh.extend(child.fresh)
        self.deltas.extend(child.deltas)

    def encode(self) -> Encoded:
        """This overlay's writes as the bytes the store will hold; InvalidValueError if any
        cannot be stored (e.g. a merge result), and then nothing of it joins the group."""
        inner = {}
        for key, (vid, value) in self.inner.items():
            raw = self.packed.get(key) if value is not None else None
            inner[key] = b"\x92" + _packb(vid) + raw if raw is not None else _pack_record(key, [vid, value])
        pack_lts = _LEADER_PACKER.pack  # lifetimes hold ints, bytes and None: they always encode
        leaf = {key: pack_lts(lts) for key, lts in self.leaf.items()}
        fresh = [(list(got), fresh_records(vid, list(got.values()))) for vid, got, _p in self.fresh]
        prefixes = {key[:key.rfind(SEP, 2) + 1] or key[:2] for key in leaf}  # parent prefix, inlined
        for _vid, _got, some in self.fresh:
            prefixes |= some
        # past versions: values already stored (their bytes reused: [start, value] -> [start, end,
        # value]) or encoded by an earlier commit of the group
        deltas = [(key + SEP + inv_vid_bytes(start), _delta_bytes(start, end, value, raw))
                  for key, start, end, value, raw in self.deltas]
        return inner, leaf, deltas, fresh, prefixes

    # ------------------------------------------------------------ primitive writes
    def put_inner(self, path: str, value: dict[str, Any] | None, vid: int, packed: bytes | None = None) -> None:
        key = key_of_valid(path)
        self.parents_ok.discard(path)
        prev = self._inner(key)
        if prev is not None and prev[0] != vid:
            stored, raw = self._stored_inner(key)
            self.deltas.append((key, prev[0], vid, prev[1], raw if stored is prev else None))
        self.inner[key] = [vid, value]
        if packed is not None:
            self.packed[key] = packed
        else:
            self.packed.pop(key, None)

    def add_leaf(self, path: str, packed: bytes | None, ref: list[Any] | None, vid: int,
                 key: bytes | None = None) -> None:
        if key is None:
            key = key_of_valid(path)
        lts = list(self._leaf(key) or [])
        lts.append([vid, 0, packed, ref])
        self.leaf[key] = lts

    def tomb_leaf(self, path: str, vid: int) -> None:
        key = key_of_valid(path)
        lts = [list(lt) for lt in self._leaf(key) or []]
        if lts and lts[-1][1] == 0:
            if lts[-1][0] == vid:
                lts.pop()  # added and removed by the same commit: it never existed
            else:
                lts[-1][1] = vid
        self.leaf[key] = lts


def _parent_ok(view: View, path: str, op: str) -> None:
    parent = parent_of_valid(path)
    if parent in view.parents_ok:  # checked by an earlier op of this view, not written since
        return
    cur = view.current(parent)
    if cur is None:
        raise MissingObjectError(f"cannot {op} {path!r}: its parent {parent!r} does not exist; create the parent first",
                            path=path, parent=parent)
    if cur[1]:
        raise PreconditionError(f"cannot {op} {path!r}: its parent {parent!r} is a leaf and leaves have no children",
                                path=path, parent=parent)
    view.parents_ok.add(parent)


def _remove_subtree(view: View, path: str, leaf: bool, vid: int, effects: list[Effect]) -> None:
    if not leaf:
        for child, child_leaf in view.children(path):
            _remove_subtree(view, child, child_leaf, vid, effects)
    before = view.current(path)
    if before is None:
        return
    if leaf:
        view.tomb_leaf(path, vid)
    else:
        view.put_inner(path, None, vid)
    effects.append(Effect(path, before[0], None, leaf))


def _add_new_leaf(view: View, op: WriteOp, key: bytes, vid: int, effects: list[Effect]) -> None:
    """The bulk case, a leaf add: its parent exists and is not a leaf, the path is absent (no
    current inner version, no open leaf lifetime); a new lifetime is appended to the path's
    past ones. As `_apply_one` with `view.current` and `view.add_leaf` inlined: it runs once
    per object of a bulk load."""
    path = op.path
    if (path[:path.rfind("/")] or "/") not in view.parents_ok:
        _parent_ok(view, path, "add")
    cur = view._inner(key)
    lts = view._leaf(key)
    if (cur is not None and cur[1] is not None) or (lts and lts[-1][1] == 0):
        raise AlreadyExistsError(f"cannot add {path!r}: it already exists; use update to replace it", path=path)
    view.leaf[key] = [*lts, [vid, 0, op.packed, None]] if lts else [[vid, 0, op.packed, None]]
    effects.append(Effect(path, None, op.value, True))


def _apply_one(view: View, op: WriteOp, vid: int, time: float, effects: list[Effect]) -> None:
    path = op.path
    key = key_of_valid(path)
    if op.leaf and op.kind == "add":
        _add_new_leaf(view, op, key, vid, effects)
        return
    cur = view.current(path, key)
    if op.kind in ("add", "leafref"):
        _parent_ok(view, path, "add")
        if cur is not None:
            raise AlreadyExistsError(f"cannot add {path!r}: it already exists; use update to replace it",
                                     path=path)
        if op.kind == "leafref":
            assert op.ref is not None  # make_op("leafref") always has one
            pkey = key_of_valid(op.ref[0])
            view.add_leaf(path, None, [pkey, op.ref[1]], vid)
            effects.append(Effect(path, None, view.store.resolve_ref([pkey, op.ref[1]]), True))
        elif op.leaf:
            view.add_leaf(path, op.packed, None, vid, key)
            effects.append(Effect(path, None, op.value, True))
        else:
            view.put_inner(path, op.value, vid, op.packed)
            effects.append(Effect(path, None, op.value, False))
    elif op.kind == "update":
        if cur is not None and cur[1]:
            raise LeafImmutableError(f"cannot update {path!r}: it is a leaf, and leaves are immutable; "
                                     "remove it and add a new one", path=path)
        if cur is None and path != "/":
            _parent_ok(view, path, "update")
        view.put_inner(path, op.value, vid, op.packed)
        effects.append(Effect(path, cur[0] if cur else None, op.value, False))
    elif op.kind == "merge":
        if cur is None:
            raise MissingObjectError(f"cannot merge into {path!r}: it does not exist; add it first", path=path)
        if cur[1]:
            raise LeafImmutableError(f"cannot merge into {path!r}: it is a leaf, and leaves are immutable",
                                     path=path)
        after = apply_delta(cur[0], op.value or {}, commit=(vid, time))
        view.put_inner(path, after, vid)
        effects.append(Effect(path, cur[0], after, False))
    elif op.kind == "remove":
        if cur is None:
            raise MissingObjectError(f"cannot remove {path!r}: it does not exist", path=path)
        _remove_subtree(view, path, cur[1], vid, effects)
    else:  # pragma: no cover - make_op rejects unknown kinds
        raise InvalidValueError(f"unknown write kind {op.kind!r}")


def materialize(group: View, ops: list[WriteOp], vid: int, time: float = 0.0,
                spans: list[tuple[int, bytes, list[bytes]]] | None = None) -> tuple[View, list[Effect]]:
    """Apply `ops` on top of `group` in a child overlay. Raises (and leaves `group` untouched)
    if a precondition fails; the caller absorbs the child on success. `spans`: the keys of
    add_many's leaf adds, (index of the first op, children prefix, keys); used when they cover
    every op (a pure bulk load), else each key is built from its op's path."""
    view = View(group.store, group)
    effects: list[Effect] = []
    if len(ops) < _PREFETCH_MIN:
        for op in ops:
            _apply_one(view, op, vid, time, effects)
        return view, effects
    # many writes (a bulk load): the keys of leaf adds grouped by parent, their store records read
    # per parent (one range scan of a small parent, else multi-gets), then the leaf adds in runs
    by_prefix: dict[bytes, list[list[bytes]]] = {}
    if spans and sum(len(span[2]) for span in spans) == len(ops):  # spans are in op order, contiguous
        keys: list[bytes | None] = list(chain.from_iterable(some for _start, _prefix, some in spans))
        for _start, prefix, some in spans:
            by_prefix.setdefault(prefix, []).append(some)
    else:  # key_of_valid inlined: a leaf add is never the root's
        keys = [op.path.count("/").to_bytes(2, "big") + op.path[1:].encode().replace(b"/", SEP)
                if op.leaf and op.kind == "add" else None for op in ops]
        for key in keys:
            if key is not None:
                prefix = key[:key.rfind(SEP, 2) + 1] or key[:2]
                got = by_prefix.get(prefix)
                if got is None:
                    by_prefix[prefix] = [[key]]
                else:
                    got[0].append(key)
    # `maybe`: the keys that may have a store record, read into the root view's caches (those under
    # a big parent, by multi-get, and every key a small parent's range scan found); every other key
    # of a leaf add has none (its parent's scan found nothing under it)
    maybe: set[bytes] = set()
    rest: list[bytes] = []
    for prefix, lists in by_prefix.items():
        found = view.read_children(prefix, sum(map(len, lists)) + 16) if len(prefix) > 2 else None
        if found is None:
            for some in lists:
                rest.extend(some)
        else:
            maybe |= found
    maybe.update(rest)
    view.prefetch(rest)
    _add_new_leaves(view, ops, keys, vid, time, effects, maybe, set(by_prefix))
    return view, effects


def _add_new_leaves(view: View, ops: list[WriteOp], keys: list[bytes | None], vid: int, time: float,
                    effects: list[Effect], maybe: set[bytes], prefixes: set[bytes]) -> None:
    """`_add_new_leaf` of each leaf add (key given) and `_apply_one` of every other op, in order.
    A run of leaf adds is applied at once when its outcome is plain: only `view` itself holds
    writes (the group's overlay holds none: the commit is the first of its group, as a bulk
    load's is), no key of the run repeats or is written by `view` yet, the store holds no record
    of any (none outside `maybe`, whose records are in the root view's read caches) and every
    parent exists and is not a leaf (`prefixes`: the children prefixes of every key given). Any other run goes
    op by op, which raises the exact error."""
    plain = not any(v.inner or v.leaf or v.fresh for v in _above(view))
    i, n = 0, len(ops)
    while i < n:
        if keys[i] is None:
            _apply_one(view, ops[i], vid, time, effects)
            i += 1
            continue
        j = i + 1
        while j < n and keys[j] is not None:
            j += 1
        run_ops, run_keys = (ops, cast(list[bytes], keys)) if j - i == n else (ops[i:j], cast(list[bytes], keys[i:j]))
        some = prefixes if j - i == n else {key[:key.rfind(SEP, 2) + 1] or key[:2] for key in run_keys}
        if not (plain and _add_run(view, run_ops, run_keys, vid, effects, maybe, some)):
            for op, key in zip(run_ops, run_keys, strict=True):
                _add_new_leaf(view, op, key, vid, effects)
        i = j


def _add_run(view: View, ops: list[WriteOp], keys: list[bytes], vid: int, effects: list[Effect],
             maybe: set[bytes], prefixes: set[bytes]) -> bool:
    """Apply a run of new leaves if its outcome is plain (see `_add_new_leaves`; `prefixes`: the
    children prefixes of its keys) as one Fresh run of `view`; False, having changed nothing, if
    not."""
    run = dict(zip(keys, map(_PACKED, ops), strict=True))  # the Fresh run, if the outcome is plain
    distinct = run.keys()
    if (len(run) != len(keys) or not view.leaf.keys().isdisjoint(distinct) or not view.inner.keys().isdisjoint(distinct)
            or not all(got.keys().isdisjoint(distinct) for _vid, got, _p in view.fresh)):
        return False
    root = view.root
    inner_reads, leaf_reads = root._inner_reads, root._leaf_reads
    for k in [k for k in maybe if k in run] if len(maybe) < len(run) else distinct & maybe:  # each: no record
        got = inner_reads.get(k)
        if got is None or got[0] is not None or k not in leaf_reads or leaf_reads[k]:
            return False
    for prefix in prefixes:
        parent = parent_of_prefix(prefix)
        if parent not in view.parents_ok:
            cur = view.current(parent)
            if cur is None or cur[1]:
                return False
            view.parents_ok.add(parent)  # as _parent_ok records it
    # the keys' packed values, their lifetimes implied (see Fresh), and each op's
    # Effect(path, None, value, True), built by C loops (map, zip) rather than one Python step per op
    n = len(ops)
    view.fresh.append((vid, run, set(prefixes)))
    effects.extend(map(tuple.__new__, repeat(Effect, n),
                       zip(map(_PATH, ops), repeat(None, n), map(_VALUE, ops), repeat(True, n))))
    return True


def _above(view: View) -> list[View]:
    out = []
    v = view.parent
    while v is not None:
        out.append(v)
        v = v.parent
    return out

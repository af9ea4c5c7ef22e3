"""Branches (write-audit-publish): branch records and the three-way publish.

A branch is a clone. `cat.clone(src, dst)` also writes, in the same commit, a branch record at
`/_branches/<dst, percent-encoded>` (a reserved id, like `_semantic`), an ordinary versioned
object of type `branch`:

    {"obj_type": "branch", "path": dst, "source": src, "fork_vid": v, "since_vid": c, "created_vid": c}

`fork_vid` is the vid of `src` the clone copied (the merge base on the target side), `since_vid`
the vid from which changes under `dst` count (the clone commit itself). The record lives outside
the branch, so the branch root's value stays exactly the source's, and it is written, moved and
removed by the same commits as the branch, validated like any other object.

`publish(branch, onto)` is one read-write transaction. It lists the branch's changes since
`since_vid` with `diff` (cost follows the changes), reads the target's current value of each
(recorded point reads, so a commit to the same objects racing the publish aborts one of them),
merges per object against the target's value at `fork_vid`, and writes the result:

- changed only on the branch: the branch's value (field by field, so a field the target changed
  before an earlier publish of a kept branch is not reverted);
- changed on both: `stats` merge (additive counts: target + (branch - base); `min`/`max`
  combine; `last_data_commit` becomes the publish commit); any other field changed on both sides
  to different values is a conflict, and so is an object removed on one side and changed on the
  other. Conflicts raise ConflictError naming every path; nothing is written.
- leaves added on the branch are added to the target as references to the same stored leaf
  (never copied); leaves removed on the branch are removed from the target.

Invariant: additive counts always combine as target + (branch - base), even when both sides hold
equal values (two appends of the same size are two appends), whole `stats` objects included; an
object with stats that the branch added and the target holds too (a partition both sides
created) merges from an empty base. The one correction: a leaf both sides removed, or both added
with the same value, moved its ancestors' counts on each side; publish adds back (or takes off)
its contribution once, so table and partition stats stay the sums over their leaves
(tests/catalog_core/test_publish_property.py).
"""

from __future__ import annotations

import copy
import random
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from catalog_core._engine.diff import diff
from catalog_core.errors import ConflictError, InvalidValueError, NotFoundError, PreconditionError
from catalog_core.model import Branch, Obj
from catalog_core.paths import ROOT, parent_of, split
from catalog_core.query import Literal, to_text
from catalog_core.writeset import make_op

if TYPE_CHECKING:
    from catalog_core._engine.catalog import Catalog
    from catalog_core._engine.txn import Transaction

__all__ = ["BRANCHES", "record_path", "branch_ops", "list_branches", "publish", "drop", "Publishing"]

BRANCHES = "/_branches"
ADDITIVE = frozenset(("row_count", "file_count", "size_bytes", "null_count"))
_MISSING: Any = object()


def record_path(branch: str) -> str:
    return f"{BRANCHES}/{quote(branch, safe='')}"


def _from_record(value: dict[str, Any]) -> Branch:
    return Branch.from_dict(value)


def branch_ops(cat: "Catalog", src: str, dst: str, fork_vid: int) -> list[Any]:
    """The writes that make the clone `src -> dst` a branch (added to the clone's commit)."""
    ops = []
    if cat._get_at(BRANCHES, cat.latest_vid) is None:
        # a blind create-or-replace: two first clones racing both succeed
        ops.append(make_op("update", BRANCHES, {"obj_type": "branches"}))
    rec = {"obj_type": "branch", "path": dst, "source": src, "fork_vid": fork_vid,
           "since_vid": 0, "created_vid": 0}
    ops.append(make_op("update", record_path(dst), rec))
    stamp = {"op": "commit_vid", "val": 0}
    ops.append(make_op("merge", record_path(dst), {"since_vid": stamp, "created_vid": stamp}))
    return ops


def list_branches(cat: "Catalog", prefix: str | None, vid: int) -> list[Branch]:
    if prefix is not None:
        split(prefix)
    pre = None if prefix in (None, ROOT) else prefix
    out = []
    for obj in cat.children(BRANCHES, vid) if cat._get_at(BRANCHES, vid) is not None else []:
        if obj.value.get("obj_type") != "branch":
            continue
        b = _from_record(obj.value)
        if pre is None or b.path == pre or b.path.startswith(pre + "/"):
            out.append(b)
    return sorted(out, key=lambda b: b.path)


class Publishing:
    """Branches being published right now in this process: a second publish of the same branch
    while one runs is refused at once (one process owns a catalog)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    def enter(self, branch: str) -> None:
        with self._lock:
            if branch in self._busy:
                raise ConflictError(f"branch {branch!r} is being published by another call right now; nothing "
                                    "was done. Wait for it, then check cat.branches() before publishing again",
                                    path=branch, retryable=False)
            self._busy.add(branch)

    def leave(self, branch: str) -> None:
        with self._lock:
            self._busy.discard(branch)


def _require_branch(txn: "Transaction", branch: str) -> Branch:
    split(branch)
    rec = txn.get(record_path(branch)) if branch != ROOT else None
    if rec is None or rec.value.get("obj_type") != "branch":
        raise NotFoundError(f"{branch!r} is not a branch: no branch record for it. Make one with "
                            "cat.clone(source, branch) (semcat branch create); list them with cat.branches()",
                            path=branch)
    return _from_record(rec.value)


def _exact(path: str) -> str:
    return "".join(f"/[obj_id = {to_text(Literal(seg))}]" for seg in split(path))


# ------------------------------------------------------------------ three-way merge of one value
class _Merge:
    def __init__(self) -> None:
        self.conflicts: list[tuple[str, str]] = []
        self.stamp = False  # last_data_commit: set to the publish commit

    def value(self, path: str, bb: dict[str, Any], bn: dict[str, Any], tb: dict[str, Any] | None,
              tn: dict[str, Any]) -> dict[str, Any]:
        base_t = tb if tb is not None else {}
        out = dict(tn)
        for key in list(bb) + [k for k in bn if k not in bb]:
            got = self._field(path, key, False, bb.get(key, _MISSING), bn.get(key, _MISSING),
                              base_t.get(key, _MISSING), tn.get(key, _MISSING))
            if got is _MISSING:
                out.pop(key, None)
            else:
                out[key] = got
        return out

    def _field(self, path: str, where: str, in_stats: bool, vb: Any, vn: Any, tb: Any, tn: Any) -> Any:
        if vb == vn:
            return tn  # not changed on the branch
        name = where.rsplit(".", 1)[-1]
        if in_stats and name == "last_data_commit":
            self.stamp = True
            return tn if tn is not _MISSING else vn
        if in_stats and name in ADDITIVE and _num(vn) and _num(vb, True) and _num(tn, True):
            return (0 if tn is _MISSING else tn) + vn - (0 if vb is _MISSING else vb)
        if tn == tb and tb == vb:
            return vn  # changed only on the branch
        if in_stats and name in ("min", "max") and vn is not _MISSING:
            vals = [v for v in (tn, vn) if v is not _MISSING and v is not None]
            try:
                return (min if name == "min" else max)(vals) if vals else vn
            except TypeError:
                pass  # incomparable bounds: a conflict below
        if isinstance(vn, dict) and isinstance(tn, dict) and (isinstance(vb, dict) or vb is _MISSING):
            vb = vb if isinstance(vb, dict) else {}
            tbd = tb if isinstance(tb, dict) else {}
            out = dict(tn)
            for key in list(vb) + [k for k in vn if k not in vb]:
                got = self._field(path, f"{where}.{key}", in_stats or where == "stats", vb.get(key, _MISSING),
                                  vn.get(key, _MISSING), tbd.get(key, _MISSING), tn.get(key, _MISSING))
                if got is _MISSING:
                    out.pop(key, None)
                else:
                    out[key] = got
            return out
        if tn == vn:
            return tn  # the same change on both sides (never an additive count: those add up above)
        if tn == tb:
            return vn  # the target has not changed it since the last publish
        self.conflicts.append((path, f"{where} changed on both sides"))
        return tn


def _num(v: Any, missing_ok: bool = False) -> bool:
    if v is _MISSING:
        return missing_ok
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ------------------------------------------------------------------ publish
def _plan(cat: "Catalog", txn: "Transaction", branch: str, onto: str,  # noqa: C901 - one case per (base, branch, target) state of a path in the three-way publish; the rules read as one table
          keep: bool) -> tuple[int, list[tuple[str, str]]]:
    """Record the publish's writes in `txn`; returns (number of changes, conflicting paths)."""
    info = _require_branch(txn, branch)
    split(onto)
    if onto != info.source:
        raise InvalidValueError(f"branch {branch!r} was cloned from {info.source!r}, not {onto!r}; publish it "
                                f"onto its source: publish({branch!r}, onto={info.source!r})",
                                path=branch, source=info.source, onto=onto)
    if txn.get(branch) is None:
        raise PreconditionError(f"the root of branch {branch!r} was removed; nothing to publish. Drop the branch "
                                "record with drop_branch()", path=branch)
    if txn.get(onto) is None:
        raise PreconditionError(f"branch {branch!r} cannot be published: its source {onto!r} no longer exists; "
                                "nothing was changed", path=onto, branch=branch)
    store = cat._store
    r = txn.read_vid
    n = 0
    conflicts: list[tuple[str, str]] = []
    removes: list[str] = []
    writes: list[Any] = []
    removed_inner: list[str] = []
    present: dict[str, bool] = {}  # target path -> exists after this publish (for parent checks)
    merger = _Merge()
    stamps: list[str] = []
    merged_at: dict[str, tuple[int, dict[str, Any], dict[str, Any]]] = {}  # target path -> (index in writes, merged, target's)
    shifts: dict[str, list[tuple[dict[str, Any], int]]] = {}  # target path -> leaf contributions to add (+1) or take (-1)
    for ch in diff(store, info.since_vid, r, branch):
        n += 1
        tpath = onto + ch.path[len(branch):]
        bb = store.get(ch.path, info.since_vid)
        bn = store.get(ch.path, r)
        tb = store.get(tpath, info.fork_vid)
        tn_obj: Obj | None = txn.get(tpath)
        tn = None if tn_obj is None else (tn_obj.value, tn_obj.vid, tn_obj.leaf)
        t_changed = (tb is None) != (tn is None) or (tb is not None and tn is not None
                                                     and (tb[0] != tn[0] or tb[2] != tn[2]))
        if bn is None:  # removed on the branch
            if tn is None:
                present[tpath] = False
                if bb is not None and bb[2]:  # the same leaf removed on both sides (the target's maybe before the fork)
                    _compensate(shifts, onto, tpath, bb[0], +1)
                continue
            if t_changed or tpath == onto:
                conflicts.append((tpath, "removed on the branch, changed on the target"))
                continue
            removes.append(tpath)
            present[tpath] = False
            if not tn[2]:
                removed_inner.append(tpath)
            continue
        if tn is not None and tn[0] == bn[0] and tn[2] == bn[2] and (bn[2] or not _has_stats(bn[0])):
            present[tpath] = True
            if bn[2] and bb is None:  # the same leaf added on both sides: counted twice
                _compensate(shifts, onto, tpath, bn[0], -1)
            continue  # the target already holds the branch's value
        if (bb is None and tn is not None and not (bn[2] or tn[2])
                and _has_stats(bn[0]) and _has_stats(tn[0]) and bn[0].get("obj_type") == tn[0].get("obj_type")):
            # a partition (an object with stats) added on the branch that the target has too (added
            # there since the fork, or before and never seen by the branch): the branch's side
            # counts from nothing
            bb = ({}, bn[1], False)
        if bb is None or tn is None or bn[2] or bb[2] or tn[2]:
            # added on the branch, or a leaf replaced: the whole object goes over
            if tn is not None and (t_changed or bb is None):
                conflicts.append((tpath, f"{'added' if bb is None else 'replaced'} on both sides with "
                                         "different values"))
                continue
            if tn is None and bb is not None and tb is not None:
                conflicts.append((tpath, "removed on the target, changed on the branch"))
                continue
            if tn is not None:
                removes.append(tpath)
            if tpath != onto and not _parent_there(txn, tpath, present):
                conflicts.append((tpath, "added on the branch; its parent was removed on the target"))
                continue
            if bn[2]:
                writes.append(make_op("leafref", tpath, ref=cat._primary(ch.path, r)))
            else:
                writes.append(make_op("add", tpath, bn[0]))
            present[tpath] = True
            continue
        # an inner object changed on the branch and present on the target: merge field by field
        before = len(merger.conflicts)
        merger.stamp = False
        merged = merger.value(tpath, bb[0], bn[0], None if tb is None else tb[0], tn[0])
        if len(merger.conflicts) > before:
            continue
        present[tpath] = True
        merged_at[tpath] = (len(writes), merged, tn[0])
        writes.append(None)
        if merger.stamp:
            stamps.append(tpath)
    conflicts += merger.conflicts
    # an update of a merged object, with its stats corrected for leaves both sides added or removed
    for tpath, (i, merged, held) in merged_at.items():
        if tpath in shifts:
            merged = copy.deepcopy(merged)  # the merge shares unchanged parts with the stored values
            for contribution, sign in shifts[tpath]:
                _shift(merged.get("stats"), contribution, sign)
        writes[i] = make_op("update", tpath, merged) if merged != held else None
    writes = [w for w in writes if w is not None]
    for tpath, moves in shifts.items():  # an ancestor whose value the branch left as it was (its net change 0)
        if tpath in merged_at or present.get(tpath) is False:
            continue
        obj = txn.get(tpath)
        if obj is None or obj.leaf or not _has_stats(obj.value):
            continue
        value = copy.deepcopy(obj.value)
        for contribution, sign in moves:
            _shift(value["stats"], contribution, sign)
        writes.append(make_op("update", tpath, value))
    # a removed inner object must not hold children the target added since the fork
    gone = {p for p, there in present.items() if not there}
    for path in removed_inner:
        for child in txn.query(_exact(path) + "/*"):
            if child.path not in gone:
                conflicts.append((child.path, f"added on the target under {path}, which the branch removed"))
    if conflicts:
        return n, conflicts
    removing = set(removes)
    for path in removes:
        if not any(a in removing for a in _ancestors(path)):
            txn._record(make_op("remove", path))
    for op in writes:
        txn._record(op)
    for path in stamps:
        txn._record(make_op("merge", path, {"stats": {"last_data_commit": {
            "vid": {"op": "commit_vid", "val": 0}, "time": {"op": "commit_time", "val": 0}}}}))
    if keep:
        txn._record(make_op("merge", record_path(branch), {"fork_vid": {"op": "commit_vid", "val": 0},
                                                           "since_vid": {"op": "set", "val": r}}))
    else:
        txn._record(make_op("remove", branch))
        txn._record(make_op("remove", record_path(branch)))
    return n, []


def _has_stats(value: dict[str, Any]) -> bool:
    return isinstance(value.get("stats"), dict)


def _compensate(shifts: dict[str, list[tuple[dict[str, Any], int]]], onto: str, leaf_path: str, leaf: dict[str, Any],
                sign: int) -> None:
    """Both sides added (sign -1) or removed (+1) the same leaf, and each side already moved its
    ancestors' additive stats by the leaf's contribution: target + (branch - base) would count it
    twice. Record the correction for every ancestor under `onto` (those that hold stats are fixed
    when merged)."""
    rows = leaf.get("row_count")
    if not _num(rows):
        return  # a leaf that carries no row count contributes nothing countable
    cols = {c: s["null_count"] for c, s in (leaf.get("columns") or {}).items()
            if isinstance(s, dict) and _num(s.get("null_count"))}
    contribution = {"row_count": rows, "file_count": 1,
                    "size_bytes": leaf["size_bytes"] if _num(leaf.get("size_bytes")) else 0, "columns": cols}
    for a in _ancestors(leaf_path):
        if a == onto or a.startswith(onto + "/"):
            shifts.setdefault(a, []).append((contribution, sign))


def _shift(stats: Any, contribution: dict[str, Any], sign: int) -> None:
    """stats += sign * contribution, on the additive counts `stats` already holds."""
    if not isinstance(stats, dict):
        return
    for k in ("row_count", "file_count", "size_bytes"):
        if _num(stats.get(k, _MISSING)):
            stats[k] += sign * contribution[k]
    columns = stats.get("columns")
    if isinstance(columns, dict):
        for c, n in contribution["columns"].items():
            col = columns.get(c)
            if isinstance(col, dict) and _num(col.get("null_count", _MISSING)):
                col["null_count"] += sign * n


def _ancestors(path: str) -> list[str]:
    parts = split(path)
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _parent_there(txn: "Transaction", path: str, present: dict[str, bool]) -> bool:
    parent = parent_of(path)
    if parent in present:
        return present[parent]
    obj = txn.get(parent)
    present[parent] = obj is not None and not obj.leaf
    return present[parent]


def publish(cat: "Catalog", branch: str, onto: str, author: str, message: str, keep: bool,
            attempts: int = 20) -> int:
    split(branch)
    split(onto)
    cat._publishing.enter(branch)
    try:
        for attempt in range(attempts):
            txn = cat.transaction(author=author, message=message or f"publish {branch} -> {onto}",
                                  meta={"publish": {"branch": branch, "onto": onto, "keep": keep}})
            txn._stored = True  # the three-way merge compares stored values: paths as stored (relocate)
            try:
                n, conflicts = _plan(cat, txn, branch, onto, keep)
                if conflicts:
                    raise _conflict_error(branch, onto, conflicts, n)
                txn.meta["publish"]["changes"] = n
                return txn.commit()
            except ConflictError as exc:
                if not exc.retryable or attempt == attempts - 1:
                    raise
                time.sleep(min(0.2, 0.001 * 2 ** attempt) * (0.5 + random.random()))
            finally:
                txn.abort()
        raise AssertionError("unreachable")
    finally:
        cat._publishing.leave(branch)


def _conflict_error(branch: str, onto: str, conflicts: list[tuple[str, str]], n: int) -> ConflictError:
    conflicts = sorted(set(conflicts))
    paths = sorted({p for p, _why in conflicts})
    shown = "; ".join(f"{p}: {why}" for p, why in conflicts[:20])
    more = f"; and {len(conflicts) - 20} more" if len(conflicts) > 20 else ""
    err = ConflictError(f"cannot publish {branch!r} onto {onto!r}: {len(paths)} object(s) conflict: {shown}{more}. "
                         "Nothing was written; resolve them on the branch (or the target) and publish again",
                         path=paths[0], retryable=False, paths=paths,
                         reasons=[f"{p}: {why}" for p, why in conflicts], changes=n)
    err.paths = paths  # type: ignore[attr-defined]  # as a client rebuilt from the details has it
    return err


def drop(cat: "Catalog", branch: str, author: str, message: str) -> int:
    """Remove a branch: its subtree (if still there) and its record, in one commit."""
    with cat.transaction(author=author, message=message or f"drop branch {branch}") as txn:
        _require_branch(txn, branch)
        if txn.get(branch) is not None:
            txn._record(make_op("remove", branch))
        txn._record(make_op("remove", record_path(branch)))
    assert txn.vid is not None  # committed on exit
    return txn.vid

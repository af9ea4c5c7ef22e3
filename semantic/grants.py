"""Grants: who may see and do what, kept in the catalog itself (issue 48; DESIGN.md, Grants and audit).

A grant object lives in the reserved `_grants` folder of a catalog, namespace or table, one per
principal, and is versioned like every object (who could read X at vid N is `GrantSet.at(cat, N)`):

    /acme/hr/_grants                        obj_type grants
    /acme/hr/_grants/group:finance          {"obj_type": "grant", "principal": "group:finance",
                                             "privileges": ["select"], "by": "alice", "time": ...}

    sm_grants.grant(cat, "select", "acme.hr", "group:finance", author="alice")      # -> vid
    sm_grants.revoke(cat, "select", "acme.hr", "group:finance", author="alice")
    sm_grants.list_grants(cat, principal="group:finance")                           # -> [GrantRow]
    gs = GrantSet.at(cat, vid)          # every grant at a vid (cached: a vid never changes)
    gs.allows(("user:bob", "group:finance"), "select", "/acme/hr/salaries")

Rules: a grant on a catalog or namespace holds for everything below it. Privileges: `describe`
(metadata), `select` (metadata and data), `annotate`, `review`, `commit`, `admin` (all of them);
every privilege implies `describe`. A catalog with no grant at all (`GrantSet.active` False) is open
as before; once it holds one, a principal sees only what is granted to it or to one of its groups.
Who is exempt (admin tokens, the local operator) is the caller's business, not this module's.
"""

from __future__ import annotations

import re
import threading
import time as _time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import InvalidValueError, NotFoundError

__all__ = ["PRIVILEGES", "GRANTS", "GrantRow", "GrantSet", "grant", "revoke", "list_grants", "principal_ids", "latest",
           "changed",
           "check_principal", "check_privilege", "securable_path"]

PRIVILEGES = ("describe", "select", "annotate", "review", "commit", "admin")
GRANTS = "_grants"
_PRINCIPAL = re.compile(r"(user|group):[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


def check_privilege(priv: str) -> str:
    p = priv.strip().lower() if isinstance(priv, str) else priv
    if p not in PRIVILEGES:
        raise InvalidValueError(f"privilege {priv!r} is not one of {', '.join(PRIVILEGES)}", privilege=priv)
    return str(p)


def check_principal(principal: str) -> str:
    if not isinstance(principal, str) or not _PRINCIPAL.fullmatch(principal.strip()):
        raise InvalidValueError(f"principal {principal!r} must be user:NAME or group:NAME (NAME: letters, digits, "
                                ". _ @ + -), e.g. user:alice or group:finance", principal=principal)
    return principal.strip()


def securable_path(securable: str) -> str:
    """`acme`, `acme.core` or `acme.core.orders` -> its path (InvalidValueError otherwise)."""
    return lake.object_path(securable)


def principal_ids(name: str, groups: Iterable[str] = ()) -> tuple[str, ...]:
    """What grants may name a caller by: `user:<name>` (an OAuth principal `oauth:<sub>` is `user:<sub>`)
    and `group:<g>` per group."""
    user = name.split(":", 1)[1] if name.startswith("oauth:") else name
    return (f"user:{user}", *(f"group:{g}" for g in groups))


@dataclass(frozen=True)
class GrantRow:
    """One grant object: `privileges` of `principal` on `securable` (dotted name), as of `vid`."""

    securable: str
    principal: str
    privileges: tuple[str, ...]
    vid: int
    by: str | None = None
    time: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"securable": self.securable, "principal": self.principal, "privileges": list(self.privileges),
                "vid": self.vid, "by": self.by, "time": self.time}


_LEVELS = ('/*/[obj_id = "_grants"]/*', '/*/*/[obj_id = "_grants"]/*', '/*/*/*/[obj_id = "_grants"]/*')


def _rows(cat: CatalogAPI, vid: SnapshotRef) -> list[GrantRow]:
    out: list[GrantRow] = []
    for q in _LEVELS:
        for o in cat.query(q, vid=vid):
            v = o.value
            if not isinstance(v, dict) or v.get("obj_type") != "grant":
                continue
            parts = o.path.strip("/").split("/")
            privs = tuple(p for p in v.get("privileges") or () if p in PRIVILEGES)
            out.append(GrantRow(".".join(parts[:-2]), str(v.get("principal") or parts[-1]), privs, o.vid,
                                v.get("by") if isinstance(v.get("by"), str) else None,
                                v.get("time") if isinstance(v.get("time"), (int, float)) else None))
    return sorted(out, key=lambda r: (r.securable, r.principal))


@dataclass
class GrantSet:
    """Every grant of a catalog at one vid, indexed for `allows` (a dict lookup per level of the path)."""

    rows: list[GrantRow]
    vid: int = -1  # the vid they are the grants of
    _by: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for r in self.rows:
            self._by[("/" + r.securable.replace(".", "/"), r.principal)] = frozenset(r.privileges)

    @property
    def active(self) -> bool:
        """Whether the catalog holds any grant (none: everything is open, as before grants)."""
        return bool(self.rows)

    def allows(self, principals: Iterable[str], priv: str, path: str) -> bool:
        """Whether one of `principals` holds `priv` on the object at `path` or an ancestor of it
        (`admin` holds every privilege; every privilege holds `describe`). Only the first three
        levels count (catalog, namespace, table): a partition or file is its table's."""
        if not self.rows:
            return True
        ids = path.strip("/").split("/")[:3]
        prefix = ""
        names = tuple(principals)
        for part in ids:
            prefix += "/" + part
            for p in names:
                held = self._by.get((prefix, p))
                if held and (priv in held or "admin" in held or priv == "describe"):
                    return True
        return False

    @classmethod
    def at(cls, cat: CatalogAPI, vid: int) -> GrantSet:
        """The grants at `vid` (cached per catalog object and vid: a vid never changes; keyed by the
        catalog object itself, weakly, not by its id, which a later catalog may reuse)."""
        try:
            with _lock:
                per = _CACHE.setdefault(cat, {})
                hit = per.get(vid)
        except TypeError:  # not weak-referenceable: no cache
            return cls(_rows(cat, vid), vid)
        if hit is not None:
            return hit
        made = cls(_rows(cat, vid), vid)
        with _lock:
            if len(per) > 256:
                per.clear()
            per[vid] = made
        return made


_lock = threading.Lock()
_CACHE: weakref.WeakKeyDictionary[Any, dict[int, GrantSet]] = weakref.WeakKeyDictionary()
# catalog -> (the vid checked through, the grants that decide there): reused for later vids while no
# commit after it wrote a path under a `_grants` folder (every commit lists each path it wrote, so a
# grant written by another process or straight through the catalog is noticed, not only ours)
_LATEST: weakref.WeakKeyDictionary[Any, tuple[int, GrantSet]] = weakref.WeakKeyDictionary()
_SCAN_MAX = 256  # more new commits than this since the last check: read the grants again instead


def _touches_grants(cat: CatalogAPI, after: int, upto: int) -> bool:
    """Whether a commit in (after, upto] wrote a path in a `_grants` folder (a removal or clone of a
    subtree lists each object it removed or copied, grants too)."""
    if upto - after > _SCAN_MAX:
        return True
    for c in cat.commits(since=after + 1, until=upto):
        for p in c.paths:
            if f"/{GRANTS}" in p:
                return True
    return False


def latest(cat: CatalogAPI) -> GrantSet:
    """The grants that decide now: those of the latest vid. Read once and reused for later vids
    while no commit after the one they were read at wrote a grant: each call reads only the commit
    records written since the last call (none on a quiet catalog), whichever process wrote them."""
    now = cat.latest_vid
    try:
        hit = _LATEST.get(cat)
    except TypeError:  # not weak-referenceable: no reuse
        return GrantSet.at(cat, now)
    if hit is not None:
        seen, gs = hit
        if seen == now:
            return gs
        if now > seen and not _touches_grants(cat, seen, now):
            _LATEST[cat] = (now, gs)
            return gs
    made = GrantSet.at(cat, now)
    _LATEST[cat] = (now, made)
    return made


def changed(cat: CatalogAPI) -> None:
    """Forget the reused grants of `cat`: a grant object was (or is about to be) written (`latest`
    notices it from the commit log anyway; this only saves it the look)."""
    try:
        _LATEST.pop(cat, None)
    except TypeError:
        pass


def list_grants(cat: CatalogAPI, vid: SnapshotRef = None, principal: str | None = None) -> list[GrantRow]:
    """The grants at `vid` (latest when None), only `principal`'s when given."""
    rows = _rows(cat, cat.resolve(vid))
    if principal is not None:
        p = check_principal(principal)
        rows = [r for r in rows if r.principal == p]
    return rows


def _change(cat: CatalogAPI, priv: str, securable: str, principal: str, author: str, add: bool) -> int:
    priv, principal = check_privilege(priv), check_principal(principal)
    base = securable_path(securable)
    folder = f"{base}/{GRANTS}"
    path = f"{folder}/{principal}"
    with cat.transaction(author=author or "semcat", message=f"{'grant' if add else 'revoke'} {priv} on {securable} "
                         f"{'to' if add else 'from'} {principal}"[:500], meta={"grants": True}) as txn:
        target = txn.get(base)
        if target is None or not isinstance(target.value, dict) or \
                target.value.get("obj_type") not in ("catalog", "namespace", "table"):
            raise NotFoundError(f"{securable!r} is not a catalog, namespace or table of this catalog; grants go on "
                                "one of those (e.g. acme, acme.core, acme.core.orders)", securable=securable)
        current = txn.get(path)
        held = list(current.value.get("privileges") or []) if current is not None else []
        if add:
            if priv in held:
                return cat.latest_vid  # nothing to do: already granted
            held.append(priv)
            if txn.get(folder) is None:
                txn.update(folder, {"obj_type": "grants"})
            txn.update(path, {"obj_type": "grant", "principal": principal,
                              "privileges": sorted(held, key=PRIVILEGES.index), "by": author, "time": _time.time()})
        else:
            if priv not in held:
                raise NotFoundError(f"{principal} holds no {priv} on {securable}; `semcat grants --principal "
                                    f"{principal}` lists what it holds", securable=securable, principal=principal)
            held.remove(priv)
            if held:
                txn.update(path, {"obj_type": "grant", "principal": principal, "privileges": held, "by": author,
                                  "time": _time.time()})
            else:
                txn.remove(path)
    changed(cat)
    vid: int | None = txn.vid
    assert vid is not None
    return int(vid)


def grant(cat: CatalogAPI, priv: str, securable: str, principal: str, author: str = "") -> int:
    """Grant `priv` on `securable` (catalog, namespace or table by dotted name) to `principal`
    (`user:NAME` / `group:NAME`); the commit's vid (the latest vid when it was already granted)."""
    return _change(cat, priv, securable, principal, author, True)


def revoke(cat: CatalogAPI, priv: str, securable: str, principal: str, author: str = "") -> int:
    """Revoke `priv` on `securable` from `principal`; NotFoundError when it does not hold it there."""
    return _change(cat, priv, securable, principal, author, False)

"""`cat.diff(from, to, prefix)`: what changed between two vids, found through the commit log.

Every commit record lists the paths it wrote (a subtree removal lists each removed object, a
clone each copied one), so the objects that may differ between vids `a` and `b` are exactly the
paths of the commits in (a, b]. Each is then read twice, at `a` and at `b`, through the version
and leaf-lifetime stores (point reads). The work follows the number of changes in the range,
never the size of the tree. An object written in the range but equal at both ends (removed and
added back with the same value, updated to what it was) is not a change."""

from __future__ import annotations

from collections.abc import Iterator

from catalog_core._engine.storage import Store
from catalog_core.model import Change
from catalog_core.paths import ROOT, split

__all__ = ["diff", "changed_paths", "under"]


def under(path: str, prefix: str | None) -> bool:
    """`path` is `prefix` or below it (every path is under None or the root)."""
    if prefix is None or prefix == ROOT:
        return True
    return path == prefix or path.startswith(prefix + "/")


def changed_paths(store: Store, lo: int, hi: int, prefix: str | None) -> dict[str, int]:
    """Path -> the last vid in (lo, hi] whose commit wrote it, for paths under `prefix`."""
    last: dict[str, int] = {}
    if hi <= lo:
        return last
    for vid, rec in store.commit_records(lo + 1, hi):
        for path in rec.get("paths", ()):
            if under(path, prefix):
                last[path] = vid
    return last


def diff(store: Store, lo: int, hi: int, prefix: str | None) -> Iterator[Change]:
    """Changes between vid `lo` and vid `hi` (lo <= hi) under `prefix`, parents before children
    and siblings in id order."""
    last = changed_paths(store, lo, hi, prefix)
    for path in sorted(last, key=split):
        before = store.get(path, lo)
        after = store.get(path, hi)
        if before is None and after is None:
            continue  # added and removed again inside the range
        if before is not None and after is not None:
            if before[0] == after[0] and before[2] == after[2]:
                continue  # written, but the same at both ends
            yield Change(path, "updated", before[0], after[0], last[path], after[2])
        elif after is not None:
            yield Change(path, "added", None, after[0], last[path], after[2])
        else:
            assert before is not None
            yield Change(path, "removed", before[0], None, last[path], before[2])
